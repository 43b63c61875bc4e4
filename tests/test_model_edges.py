"""The host's model of a clock (hallclock.views.model) on its edges, in
process and quick: the words it gives the referee for inputs and records,
what it makes of records it cannot use, the clock's device time and time of
day from the host's clock (the record that came fastest; an accelerated
simulation from the round's start), sessions chained through a power loss,
and the restore it gives ``log --restore`` (docs/protocol.md, *Power loss
and restore*; ČAS 4.1, 6.1: the round's basic time runs on through an
outage)."""
from datetime import datetime, timedelta, timezone

import pytest

from hallclock.views import model as model_mod
from hallclock.views.model import (ACCELERATED_PACE, Clocks, ClockModel, Model, describe,
                                   epoch_of, input_name, record_text, restore_for, same,
                                   settings_from_json)
from hallclock.views.words import clock_time
from hallclock_fw.events import BTN_GONG, BTN_PAUSE, BTN_START, LONG
from hallclock_fw.settings import parse

T0 = datetime(2026, 3, 1, 14, 30, tzinfo=timezone.utc)
E0 = T0.timestamp()


def at(s):
    """The ISO host time ``s`` seconds after 14:30:00 UTC."""
    return (T0 + timedelta(seconds=s)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def rec(t_ms, event, host_s=None, session="00000001", clock="t1", **fields):
    r = {"clock": clock, "seq": 0, "t_ms": t_ms, "event": event}
    r.update(fields)
    r["session"] = session
    if host_s is not None:
        r["host_time"] = at(host_s)
    return r


def boot(mode="scrabble", host_s=None, session="00000001", **settings):
    from hallclock.catalog import settings_json
    values = parse(mode, ["%s=%s" % kv for kv in settings.items()])
    return rec(0, "boot", host_s, session, mode=mode, settings=settings_json(mode, values))


def game(*more, **settings):
    """A Scrabble game: START at 0 (start gong), A's move 1 from 2 s."""
    return [boot(**settings), rec(0, "gong", kind="start", move=None),
            rec(2000, "turn", player="A", move=1, limit_ms=120000)] + list(more)


# -- words ------------------------------------------------------------------------
def test_input_names():
    assert input_name(None) == "tick"
    assert input_name("restore") == "restore"
    assert input_name(0) == "A" and input_name(1) == "B"
    assert input_name(BTN_PAUSE | LONG) == "PAUSE long" and input_name(BTN_GONG) == "GONG"
    assert input_name(("K", "scrabble", "move_s=90")) == "settings"
    assert input_name(("N", 3, 0)) == "round" and input_name(("S", "scrabble")) == "restore"
    assert input_name(("end",)) == "end"


def test_record_text_names_every_part_a_referee_reads():
    assert record_text({"event": "turn", "player": "A", "move": 3, "limit_ms": 120000}) \
        == "turn A move 3 limit 2:00"
    assert record_text({"event": "gong", "kind": "end", "move": None}) == "gong end"
    assert record_text({"event": "boot", "mode": "duplicate", "move": 1}) == "boot duplicate"
    assert record_text({"event": "end", "move": 4}) == "end"
    assert record_text({"event": "boot"}) == "boot ?"
    assert record_text({}) == "?"
    assert record_text({"event": "press", "player": "B", "move": 0, "used_ms": 61500,
                        "bank_ms": 500000}) == "press B move 0 bank 8:20 used 1:02"  # the clock's digits
    assert record_text({"event": "break", "player": "A", "break_ms": 300000}) \
        == "break A break 5:00"
    assert record_text({"event": "warn", "move": 2, "left_s": 0}) == "warn move 2 0 s left"
    assert record_text({"event": "playout", "step": "last_move", "limit_ms": "x"}) \
        == "playout last_move"
    assert record_text({"event": "gap", "missing": [4, 9]}) == "gap missing [4, 9]"
    assert record_text({"event": "pause", "missing": [4, 9]}) == "pause"
    assert describe({"event": "end", "t_ms": 12000}) == "end at t=12000"


def test_same_is_every_field_of_the_clocks_event():
    assert same({"event": "turn", "t_ms": 5, "player": "A"},
                {"event": "turn", "t_ms": 5, "player": "A", "seq": 9, "clock": "x"})
    assert not same({"event": "turn", "t_ms": 5, "player": "A"},
                    {"event": "turn", "t_ms": 5, "player": "B"})
    assert not same({"event": "turn", "t_ms": 5}, {"event": "turn", "t_ms": 6})


def test_settings_and_host_times_that_cannot_be_read():
    with pytest.raises(ValueError):
        settings_from_json("scrabble", [("move_s", 90)])
    s = settings_from_json("scrabble", {"warn_s": [40, 5]})
    assert s["warn_s"] == (40, 5)
    assert epoch_of(None) is None and epoch_of("") is None and epoch_of(1772375400) is None
    assert epoch_of("yesterday") is None
    assert epoch_of("2026-03-01T14:30:00.250Z") == E0 + 0.25
    assert epoch_of("2026-03-01T15:30:00+01:00") == E0


# -- the model of one session -------------------------------------------------------
def test_a_boot_with_a_mode_no_clock_has_is_refused():
    with pytest.raises(ValueError):
        Model.from_boot({"event": "boot", "t_ms": 0, "mode": "chess", "settings": {}})
    with pytest.raises(ValueError):
        Model.from_records([rec(0, "turn")])
    with pytest.raises(ValueError):
        Model.from_records([])


def test_records_that_are_not_the_clocks_change_nothing():
    m = Model.from_records(game())
    bad = m.feed({"event": "turn", "t_ms": "soon"})
    assert [x.kind for x in bad] == ["bad_record"] and m.records == 3
    assert m.feed({"event": 7, "t_ms": 9000})[0].kind == "bad_record"
    # the clock's own figures, and the host's notes: nothing to replay, no mismatch
    assert m.feed(rec(9000, "health", loop_max_ms=3)) == []
    assert m.feed(rec(9500, "note", text="laptop lid closed")) == []
    assert m.records == 5 and m.t_ms == 9500 and m.mismatches == [bad[0]] + m.mismatches[1:]
    # an older record does not move the model's time back
    assert m.feed(rec(4000, "health")) == [] and m.t_ms == 9500
    f = m.face()
    assert f.t_ms == 9500 and f.displays == (" 1:53", " 2:00") and f.player == "A"


def test_the_face_before_any_move_and_at_the_end():
    m = Model.from_records([boot()])
    f = m.face()
    assert f.player is None and f.move is None and not f.running and not f.ended
    assert f.mode == "scrabble" and f.left_ms is None or isinstance(f.left_ms, int)
    m = Model.from_records(game())
    assert m.end_t_ms is None and not m.ended  # a session still running has no end
    m.feed(rec(32000, "end"))
    assert m.end_t_ms == 32000 and m.ended
    f = m.face(60000)
    assert f.t_ms == 32000 and f.ended and not f.running and f.move == 1
    assert f.as_dict()["displays"] == f.displays == (" 1:30", " 2:00")
    assert "Face(scrabble t=32000" in repr(f)


def test_a_face_asked_for_the_past_is_the_newest():
    """The model moves forward only: a time before the newest record is read as it."""
    m = Model.from_records(game(rec(12000, "pause", player="A", move=1)))
    assert m.face(5000).t_ms == 12000 and m.face(5000).displays == m.face().displays
    assert m.face(12000).paused


def test_a_warning_due_between_records_is_on_the_face():
    """Between records the model's clock runs as the device's loop: at 30 s
    left (92 000) A's display shows 0:30 on that very ms, 0:31 one ms before."""
    m = Model.from_records(game())
    assert m.face(91999).displays[0] == " 0:31"
    assert m.face(92000).displays[0] == " 0:30"
    assert m.face(92000).left_ms == 30000
    # nothing was fed: the model itself stands at its last record
    assert m.t_ms == 2000 and m.face().displays[0] == " 2:00"


def test_events_the_clock_gave_that_the_log_lacks_are_flushed_by_a_power_loss():
    m = Model.from_records(game())
    assert m.feed(rec(5000, "press", player="A", move=1, used_ms=3000)) == []
    bad = m.feed(rec(6000, "power_loss", last_seq=4, next_session="00000002"))
    assert [x.kind for x in bad] == ["not_logged"] and "turn B move 2" in bad[0].text
    assert m.power_lost and m.ended and m.end_t_ms == 6000 and m.queue == []
    late = m.feed(rec(7000, "press", player="B", move=2, used_ms=2000))
    assert [x.kind for x in late] == ["unexplained"] and "after the power loss" in late[0].text


def test_the_restore_sent_is_kept_from_the_power_loss_record():
    m = Model.from_records(game())
    m.feed(rec(6000, "power_loss", restore={"mode": "scrabble", "settings": "move_s=120",
                                            "values": [1, 0, 116000]}))
    assert m.restore_sent == ("scrabble", "move_s=120", [1, 0, 116000])
    m2 = Model.from_records(game())
    m2.feed(rec(6000, "power_loss", restore={"mode": "scrabble", "values": "1,0"}))
    assert m2.restore_sent is None


def test_the_inputs_found_are_named_in_order():
    """A press of A ends A's move (press, turn); the replay names it."""
    m = Model.from_records(game(rec(5000, "press", player="A", move=1, used_ms=3000),
                                rec(5000, "turn", player="B", move=2, limit_ms=120000)))
    assert m.mismatches == []
    assert m.inputs == [(0, "START"), (2000, "B"), (5000, "A")]


def test_a_restore_with_nothing_started_is_none():
    m = Model.from_records([boot()])
    assert m.snapshot() is None and m.restore_frame() is None


def test_the_snapshot_counts_the_round_at_the_halls_time():
    """The player's time stops when last heard; the round's runs on to the
    hall's time (ČAS 4.1, 6.1)."""
    m = Model.from_records(game(rec(12000, "pause", player="A", move=1)))
    plain = m.snapshot()
    later = m.snapshot(None, 72000)
    assert plain != later and plain[:2] == later[:2]
    assert m.restore_frame(None, 72000) != m.restore_frame()


# -- every clock of a log -----------------------------------------------------------
def test_the_device_time_now_runs_on_from_the_newest_record():
    clocks = Clocks()
    c = clocks.feed(boot(), 100.0)
    assert c.device_now(100.0) == 0
    clocks.feed(rec(2000, "turn", player="A", move=1, limit_ms=120000), 102.0)
    assert c.device_now(101.0) == 2000  # a host clock that went back counts nothing
    assert c.device_now(102.0004) == 2000 and c.device_now(102.0006) == 2001
    assert c.device_now(None) == 2000
    # an older record (a resend) neither moves the time back nor restarts it
    clocks.feed(rec(1000, "health"), 110.0)
    assert c.device_now(112.0) == 12000 and c.records == 3
    clocks.feed(rec(5000, "end"), 112.0)
    assert c.device_now(500.0) == 5000  # the session ended: it stands
    assert clocks.get("t1") is c and clocks.get("t2") is None and list(clocks) == [c]
    fresh = ClockModel("x")
    assert fresh.device_now(5.0) is None and fresh.face(5.0) is None


def test_a_bad_boot_is_kept_as_the_reason_and_the_next_boot_clears_it():
    clocks = Clocks()
    c = clocks.feed({"clock": "t1", "event": "boot", "t_ms": "x", "mode": "chess",
                     "session": "00000001"}, 1.0)
    assert c.model is None and "chess" in c.error and c.last_t == 0
    assert c.face(2.0) is None
    clocks.feed(rec(500, "turn", player="A", move=1, limit_ms=120000), 2.0)
    assert c.records == 2 and c.last_t == 500
    c = clocks.feed(boot(session="00000002"), 3.0)
    assert c.error is None and c.model is not None and c.session == "00000002"


def test_sessions_chain_through_a_power_loss():
    """A power loss's record comes with (or after) the next session's boot: it
    still belongs to the old session; other stragglers of it are dropped."""
    clocks = Clocks()
    for r in game():
        clocks.feed(r, 100.0)
    c = clocks.get("t1")
    old = c.model
    clocks.feed(boot(session="00000002"), 110.0)
    assert c.previous is None  # a boot without a power loss: no chain
    clocks = Clocks()
    for r in game():
        clocks.feed(r, 100.0)
    c = clocks.get("t1")
    old = c.model
    clocks.feed(rec(6000, "power_loss", restore={"mode": "scrabble", "settings": "move_s=120",
                                                 "values": [1, 0, 116000]}), 106.0)
    assert old.power_lost
    c = clocks.feed(boot(session="00000002"), 110.0)
    assert c.previous is old and c.model.restore_values == ("scrabble", "move_s=120",
                                                           [1, 0, 116000])
    # a straggler of the old session is not fed to the new one
    clocks.feed(rec(9000, "press", player="A", move=1, used_ms=7000), 111.0)
    assert c.model.records == 1 and c.records == 6


def test_a_power_loss_record_after_the_next_boot_still_ends_the_old_session():
    clocks = Clocks()
    for r in game():
        clocks.feed(r, 100.0)
    c = clocks.get("t1")
    c.feed(boot(session="00000002"), 110.0)
    new = c.model
    # the power loss of the session before, logged late: the current model is not it
    c.feed(rec(6000, "power_loss"), 111.0)
    assert not new.power_lost
    # ... but a power loss of the current session, named by its session, is fed
    c.feed(rec(7000, "power_loss", session="00000002"), 112.0)
    assert new.power_lost


def test_gongs_and_announcements_are_kept_with_their_host_time():
    clocks = Clocks()
    c = clocks.feed(boot("duplicate", 0.0), None)
    clocks.feed(rec(1000, "dup_start", 1.0, move=1, limit_ms=180000), None)
    clocks.feed(rec(61000, "announce", 61.0, move=1, left_s=120), None)
    clocks.feed(rec(70000, "gong", 70.0, kind="manual", move=1), None)
    assert c.announcements == [(61000, 1, 120, E0 + 61.0)]
    assert c.gongs == [(70000, "manual", 1, E0 + 70.0)]
    c = clocks.feed(boot("duplicate", 80.0, session="00000002"), None)
    assert c.gongs == [] and c.announcements == []


def clock_heard(*pairs, event="turn"):
    """A ClockModel that heard records at (host s after 14:30, device ms)."""
    c = ClockModel("t1")
    c.feed(boot(host_s=pairs[0][0]), None)
    for s, t in pairs[1:]:
        c.feed(rec(t, "health" if event != "round" else "round", s), None)
    return c


def test_the_time_of_day_is_anchored_by_the_fastest_record():
    """The record with the least link delay (smallest host time - device
    time) tells the device's time best."""
    c = clock_heard((0.05, 0), (10.02, 10000), (20.5, 20000))
    assert c.epoch_offset == pytest.approx(E0 + 0.02, abs=1e-6)
    assert c.time_of_day(30000) == pytest.approx(E0 + 30.02, abs=1e-6)
    assert c.time_of_day("x") is None and ClockModel("y").time_of_day(5) is None
    assert not c.accelerated and c.pace == pytest.approx((20.0 - 10.0) / (20.5 - 10.02), abs=1e-6)


def test_the_pace_is_measured_from_a_second_after_the_first_record():
    """A backlog sent at once says nothing of the pace; from the first record
    a second after the first, the device ran 100 s in the host's 1 s."""
    c = clock_heard((0.0, 0), (0.5, 60000), (1.0, 100000))
    assert c.pace_from == (E0 + 1.0, 100000) and c.pace is None  # no host second yet
    c.feed(rec(200000, "health", 1.999), None)
    assert c.pace is None
    c.feed(rec(200000, "health", 2.0), None)
    assert c.pace == pytest.approx(100.0, abs=1e-6) and c.accelerated
    assert c.first_heard == (E0, 0) and c.last_heard == (E0 + 2.0, 200000)
    slow = clock_heard((0.0, 0), (1.0, 1000), (2.0, 1500))  # half the host's pace
    assert slow.pace == pytest.approx(0.5, abs=1e-6) and not slow.accelerated
    stuck = clock_heard((0.0, 0), (1.0, 1000), (3.0, 1000))
    assert stuck.pace is None and not stuck.accelerated


def test_a_clock_twice_as_fast_as_the_host_is_a_simulation():
    """A real clock's time runs at the host's pace (1.0, give or take its
    crystal and the link); ``simulate --speed 2`` runs at 2: accelerated."""
    assert clock_heard((0.0, 0), (1.0, 1000), (3.0, 5000)).accelerated
    assert not clock_heard((0.0, 0), (1.0, 1000), (3.0, 3000)).accelerated
    assert not clock_heard((0.0, 0), (1.0, 1000), (3.0, 3800)).accelerated
    assert ACCELERATED_PACE == 1.5


def test_accelerated_is_beyond_one_and_a_half_times_the_host():
    at_limit = clock_heard((0.0, 0), (1.0, 1000), (3.0, 1000 + int(2000 * ACCELERATED_PACE)))
    assert at_limit.pace == ACCELERATED_PACE and not at_limit.accelerated
    beyond = clock_heard((0.0, 0), (1.0, 1000), (3.0, 1000 + int(2000 * ACCELERATED_PACE) + 2))
    assert beyond.accelerated


def test_an_accelerated_simulations_time_of_day_counts_from_the_rounds_start():
    """At 100 x: the host time of the round's record plus the clock's own
    time since it (the report's header says the times are simulated)."""
    c = ClockModel("t1")
    c.feed(boot(host_s=0.0), None)
    c.feed(rec(50000, "health", 0.5), None)
    c.feed(rec(100000, "round", 1.0, round=3, elapsed_ms=0), None)
    c.feed(rec(300000, "health", 3.0), None)
    c.feed(rec(350000, "round", 3.5, round=4, elapsed_ms=0), None)  # only the first counts
    assert c.accelerated and c.round_heard == (E0 + 1.0, 100000)
    assert c.time_of_day(160000) == pytest.approx(E0 + 1.0 + 60.0, abs=1e-6)
    d = clock_heard((0.0, 0), (0.5, 50000), (1.0, 100000), (2.0, 200000))  # no round: from the first record
    assert d.accelerated and d.time_of_day(160000) == pytest.approx(E0 + 160.0, abs=1e-6)


# -- log --restore -------------------------------------------------------------------
def test_restore_for_needs_a_session_with_its_boot():
    assert restore_for([]) is None
    assert restore_for([rec(0, "turn", player="A", move=1)]) is None
    assert restore_for([{"event": "boot", "t_ms": 0, "mode": "chess"}]) is None
    assert restore_for(game()[:1]) is None  # nothing had started


def test_restore_for_counts_the_round_on_through_the_outage():
    """The player's time as last heard; the round's at the last record plus
    the wall time since it was stored (ČAS 4.1, 6.1)."""
    recs = game(rec(12000, "pause", 12.0, player="A", move=1),
                rec(13000, "power_loss", 13.0))  # the power loss is not the clock's
    mode, stext, values = restore_for(recs, wall=E0 + 12.0 + 60.0)
    assert mode == "scrabble" and stext.startswith("move_s=120")
    m = Model.from_records(recs[:-1])
    assert values == list(m.snapshot(None, 12000 + 60000))
    assert restore_for(recs, wall=E0 + 72.0)[2] != restore_for(recs, wall=E0 + 12.0)[2]
    # a wall clock behind the record's host time counts no time back
    assert restore_for(recs, wall=E0)[2] == list(m.snapshot(None, 12000))
    # no host time stored: the round as last heard
    plain = [dict(r) for r in recs]
    for r in plain:
        r.pop("host_time", None)
    assert restore_for(plain, wall=E0 + 999.0)[2] == list(m.snapshot(None, None))


def test_restore_for_says_when_the_clocks_code_does_not_give_the_log():
    heard = []
    recs = game(rec(5000, "press", player="A", move=1, used_ms=2999))  # 3000 by the clock
    assert restore_for(recs, say=heard.append) is not None
    assert len(heard) == 1 and heard[0].startswith("clock t1: 1 record(s) ")
    assert "nothing explains press A" in heard[0]
    assert restore_for(recs) is not None  # nobody to tell: still the restore
    heard = []
    restore_for(recs + [rec(9000, "warn", player="B", move=2, left_s=30)], say=heard.append)
    assert heard[0].startswith("clock t1: 2 record(s) ") and "nothing explains press A" in heard[0]
    heard = []
    restore_for(game(), say=heard.append)
    assert heard == []


def test_likely_inputs_first_then_every_other_once():
    order = model_mod._likely_first({"event": "press", "player": "B"})
    assert order[:2] == (1, 0) and sorted(order) == sorted(model_mod.INPUTS)
    order = model_mod._likely_first({"event": "gong", "player": None})
    assert order[:2] == (BTN_START, BTN_GONG) and len(order) == len(model_mod.INPUTS)
    assert model_mod._likely_first({"event": "resume"})[0] == BTN_PAUSE
    assert model_mod._likely_first({"event": "x"}) == model_mod.INPUTS


def test_a_model_fed_nothing_stands_at_device_time_zero():
    m = Model("scrabble", parse("scrabble", []))
    assert m.t_ms == 0 and m.records == 0 and m.face().t_ms == 0
    assert m.inputs == [] and m.mismatches == [] and m.boot is None
    assert repr(model_mod.Mismatch("gap", 5, text="events lost")) == \
        "Mismatch(gap at 5: events lost)"


def test_the_limit_runs_out_on_its_exact_ms_between_records():
    """5.1.4: on the ms the limit runs out (2 000 + 120 000) the clock is in
    overtime, shown at 0:00; one ms before it is not."""
    m = Model.from_records(game())
    before, on = m.face(121999), m.face(122000)
    assert not before.overtime and before.running and before.left_ms == 1
    assert on.overtime and on.displays[0] == " 0:00"


def test_a_settings_or_round_record_the_clock_cannot_give_is_unexplained():
    m = Model.from_records(game())
    bad = m.feed(rec(3000, "settings", mode="scrabble", settings={"move_s": -5}))
    assert [x.kind for x in bad] == ["unexplained"]
    bad = m.feed(rec(3500, "settings", mode="chess", settings={}))
    assert [x.kind for x in bad] == ["unexplained"]
    bad = m.feed(rec(4000, "round", round=3))  # no elapsed_ms
    assert [x.kind for x in bad] == ["unexplained"]
    bad = m.feed(rec(4500, "round", round="3", elapsed_ms=0))
    assert [x.kind for x in bad] == ["unexplained"]
    assert m.face(5000).displays[0] == " 1:57"  # A's move ran on untouched


def test_records_of_one_device_ms_the_newest_host_time_counts():
    """Several records of one device ms (START: the boot, the start gong):
    the device time now runs from the newest's arrival; the session's first
    heard is the first that came, its last heard the newest."""
    clocks = Clocks()
    c = clocks.feed(dict(boot(host_s=0.0)), 100.0)
    clocks.feed(rec(0, "gong", 0.3, kind="start", move=None), 103.0)
    assert c.device_now(104.0) == 1000
    assert c.first_heard == (E0, 0) and c.last_heard == (E0 + 0.3, 0)
    assert c.epoch_offset == E0


def test_a_restore_after_settings_is_still_replayed():
    """docs/protocol.md, *Power loss and restore*: the host's restore (``S``)
    is taken by a fresh clock, also after settings (``K``) came first; the
    replay finds both, in the order the clock took them."""
    first = Model.from_records(game(rec(12000, "pause", player="A", move=1)))
    values = list(first.snapshot())
    stext = "move_s=120;warn_s=30,20,10;round_min=40;round_warn_min=10"
    sink = model_mod._Sink()
    app = model_mod._ModelApp(sink, "scrabble", parse("scrabble", []), 0)
    app.host_frame(["K", "scrabble", "move_s=90"], 1000)
    app.host_frame(["S", "scrabble", stext] + [str(v) for v in values], 1500)
    shape = Model("scrabble", parse("scrabble", []))
    recs = [dict(shape._as_record(e, app), session="00000002") for e in sink.events]
    # the restore's settings differ from the K's: the clock takes them back first
    assert [r["event"] for r in recs][:4] == ["boot", "settings", "settings", "resume"]
    m = Model.from_records(recs, restore=("scrabble", stext, values))
    assert m.mismatches == [] and [n for _t, n in m.inputs] == ["settings", "settings", "restore"]
    assert m.restore_values is None  # taken once


def test_a_straggler_after_a_boot_the_model_could_not_take_is_dropped():
    clocks = Clocks()
    for r in game():
        clocks.feed(r, 100.0)
    c = clocks.feed({"clock": "t1", "event": "boot", "t_ms": 0, "mode": "chess",
                     "session": "00000002"}, 110.0)
    assert c.model is None and c.previous is None
    assert clocks.feed(rec(6000, "power_loss"), 111.0) is c and c.model is None


def test_a_pause_after_the_play_out_is_over_is_replayed():
    """A player presses PAUSE after the play-out is over (ČAS 16.3): the
    clock arms its set-up (a long PAUSE after a game opens it), and the next
    pass finds PAUSE released.  The host's model replayed such a log (found
    by hallclock rehearse) and crashed in that pass; every view then failed."""
    import json
    import os
    from hallclock.views.model import Model
    path = os.path.join(os.path.dirname(__file__), "golden", "model_pause_after_over.jsonl")
    with open(path, encoding="utf-8") as f:
        records = [json.loads(ln) for ln in f]
    m = Model.from_records(records)
    assert not m.mismatches
    assert m.face().move == 38 and m.face().player == "B"


# -- a clock that rebooted (docs/hall.md "When a clock reboots") ----------------------
def _lost_power(c, t_ms, host_s, restore=None):
    """The logger's ``power_loss`` of ``c``'s session 00000001 (the next: 00000002)."""
    fields = {"last_seq": 3, "next_session": "00000002"}
    if restore is not None:
        fields["restore"] = restore
    return c.feed(rec(t_ms, "power_loss", host_s, **fields), None)


def test_a_reboot_is_said_lost_at_the_last_record_and_back_at_the_new_boot():
    """docs/hall.md "When a clock reboots": 'lost power at' is the time of the
    last record the laptop had from the old session, 'back at' the new
    session's boot; 'restoring the game' while the clock has not taken the
    restore sent, 'game restored' once its ``resume`` came."""
    from hallclock.views.words import reboot_words
    c = ClockModel("t1")
    assert c.reboot_text() is None  # never rebooted: nothing to say
    c.feed(boot(host_s=0.0), None)
    c.feed(rec(10000, "health", 10.0), None)
    c.feed(rec(20000, "health", 23.0), None)  # the last record came 3 s late
    _lost_power(c, 20000, 40.0, {"mode": "scrabble", "values": [1, 0, 116000]})
    r = c.reboots[-1]
    # the last record's device time, anchored by the fastest record (at 14:30:20)
    assert r["lost_at"] == E0 + 20.0 and r["lost_host"] == E0 + 23.0
    assert r["session"] == "00000002" and r["restore_sent"] and not r["restored"]
    assert not r["accelerated"] and r["back_at"] is None
    assert c.reboot_text() == reboot_words("t1", E0 + 20.0, None, False, True) \
        == "t1 lost power at %s, not back yet" % clock_time(E0 + 20.0)
    c.feed(boot(host_s=41.0, session="00000002"), None)
    assert c.reboot_text() == "t1 lost power at %s, back at %s, restoring the game" % (
        clock_time(E0 + 20.0), clock_time(E0 + 41.0))
    assert r["back_at"] == E0 + 41.0  # kept for every view that reads the reboot
    c.feed(rec(0, "resume", 41.1, session="00000002", player="A", move=1, limit_ms=116000),
           None)
    assert r["restored"] and c.reboot_text().endswith(", game restored")
    # an earlier reboot (another session's) keeps the back time it was given
    old = dict(r, session="00000000", back_at=None, restored=False, restore_sent=False)
    assert c.reboot_text(old) == "t1 lost power at %s, not back yet" % clock_time(E0 + 20.0)


def test_a_reboot_no_restore_was_sent_for_says_the_players_carry_on():
    """docs/hall.md: '... not restored: players carry on from move 1'; a
    session's ``resume`` before its reboot restores nothing of it."""
    c = ClockModel("t1")
    c.feed(boot(host_s=0.0), None)
    c.feed(rec(0, "resume", 0.1, player="A", move=1, limit_ms=116000), None)  # no reboot yet
    c.feed(rec(5000, "health", 5.0), None)
    _lost_power(c, 5000, 6.0)
    r = c.reboots[-1]
    assert not r["restore_sent"] and not r["restored"]
    c.feed(boot(host_s=8.0, session="00000002"), None)
    c.feed(rec(0, "resume", 8.1, session="00000001", player="A", move=1, limit_ms=1),
           None)  # a straggler of the old session restores nothing
    assert c.reboot_text() == "t1 lost power at %s, back at %s, not restored: players " \
        "carry on from move 1" % (clock_time(E0 + 5.0), clock_time(E0 + 8.0))


def test_two_reboots_in_a_row_the_newest_is_said():
    """docs/hall.md "When a clock reboots" (two reboots in a row): every view
    says the clock's last power loss, 'back at' its own new session's boot."""
    c = ClockModel("t1")
    c.feed(boot(host_s=0.0), None)
    c.feed(rec(5000, "health", 5.0), None)
    _lost_power(c, 5000, 6.0)
    c.feed(boot(host_s=8.0, session="00000002"), None)
    c.feed(rec(4000, "health", 12.0, session="00000002"), None)
    c.feed(rec(4000, "power_loss", 13.0, session="00000002", last_seq=2,
               next_session="00000003"), None)
    c.feed(boot(host_s=20.0, session="00000003"), None)
    assert [r["session"] for r in c.reboots] == ["00000002", "00000003"]
    assert c.reboot_text() == "t1 lost power at %s, back at %s, not restored: players " \
        "carry on from move 1" % (clock_time(E0 + 12.0), clock_time(E0 + 20.0))
    # anchored after the newest power loss: a backlog of the newest session
    # (both at once) never puts it before the second session's last record
    c.feed(rec(10000, "health", 21.0, session="00000003"), None)
    assert c.epoch_offset == E0 + 11.0 and c.time_of_day(0) == E0 + 12.0
    # the newest session's resume restores the newest reboot, not the first
    c.feed(rec(0, "resume", 20.1, session="00000003", player="A", move=1, limit_ms=1000),
           None)
    assert [r["restored"] for r in c.reboots] == [False, True]
    assert c.reboot_text().endswith(", game restored")


def test_a_reboot_before_anything_was_heard_has_no_times():
    """A power loss of a session the host heard no time of (no host_time):
    no 'lost at', and no anchoring of the next session after it."""
    c = ClockModel("t1")
    c.feed(boot(), None)
    _lost_power(c, 3000, None)
    assert c.reboots[-1]["lost_at"] is None and c.reboots[-1]["lost_host"] is None
    c.feed(boot(session="00000002"), None)
    assert c.after is None
    assert c.reboot_text() == "t1 lost power, not back yet"  # no host time: no 'back at'
    c.feed(rec(1000, "health", 5.0, session="00000002"), None)
    assert c.time_of_day(1000) == E0 + 5.0


def test_a_backlog_after_a_reboot_never_puts_the_new_session_before_the_old():
    """docs/hall.md "When a clock reboots": a session after a power loss never
    begins before the old session's last record, even when a backlog of it
    that arrived at once would anchor it earlier; its later moves run from
    where the backlog puts them when that is later."""
    c = ClockModel("t1")
    c.feed(boot(host_s=0.0), None)
    c.feed(rec(20000, "health", 20.0), None)
    _lost_power(c, 20000, 21.0)
    c.feed(boot(host_s=26.0, session="00000002"), None)
    c.feed(rec(15000, "health", 26.0, session="00000002"), None)  # both at once: a backlog
    assert c.epoch_offset == E0 + 11.0  # (the fastest record: 26 s - 15 s)
    assert c.after == (E0 + 20.0, E0 + 20.0, False)
    assert c.time_of_day(0) == E0 + 20.0  # not 14:30:11, before the old last record
    assert c.time_of_day(15000) == E0 + 35.0
    c.feed(rec(60000, "health", 60.5, session="00000002"), None)
    assert c.time_of_day(60000) == E0 + 80.0  # 20 s + 60 s: still after the old one
    # a boot with no power loss before it (a plain restart) anchors nothing after
    c.feed(boot(host_s=100.0, session="00000003"), None)
    assert c.after is None and c.time_of_day(0) == E0 + 100.0


def _fast_session(c, session="00000001", host0=0.0):
    """Records of an accelerated session (100 x the host's time)."""
    for k, t in enumerate((0, 50000, 100000, 200000)):
        c.feed(rec(t, "health" if t else "boot", host0 + t / 100000.0, session,
                   **({} if t else {"mode": "scrabble", "settings": {}})), None)
    return c


def test_after_an_accelerated_sessions_reboot_the_outage_is_the_hosts():
    """docs/hall.md "Simulated time": a simulation's times of day are
    simulated; after its power loss the new session begins at the old one's
    last (simulated) time of day plus the outage the host measured between
    the old session's last record and the new one's first."""
    c = _fast_session(ClockModel("t1"))
    assert c.accelerated and c.time_of_day(200000) == E0 + 200.0
    _lost_power(c, 200000, 2.5)
    r = c.reboots[-1]
    assert r["accelerated"] and r["lost_at"] == E0 + 200.0 and r["lost_host"] == E0 + 2.0
    c.feed(boot(host_s=5.0, session="00000002"), None)  # dark 3 s by the host's clock
    assert c.after == (E0 + 200.0, E0 + 2.0, True)
    assert c.time_of_day(0) == E0 + 203.0
    assert c.time_of_day(7000) == E0 + 210.0
    assert c.heard_at() == E0 + 203.0  # its newest record: the boot


def test_an_accelerated_sessions_reboot_counts_no_outage_below_zero():
    """The host's clock set back 1.5 s during the outage (NTP): the new
    session's boot came 'before' the old session's last record; the outage
    counts as none, never as time taken off the simulated time of day."""
    c = _fast_session(ClockModel("t1"))
    _lost_power(c, 200000, 2.5)
    c.feed(boot(host_s=0.5, session="00000002"), None)
    assert c.time_of_day(0) == E0 + 200.0 and c.time_of_day(5000) == E0 + 205.0


def test_an_accelerated_sessions_outage_runs_to_its_first_record_heard():
    """The new session's boot came with no host time: the outage the host
    measured runs to the first record it heard, less the clock's own time
    up to that record (5 s - 1 s of the clock's time - the old 2 s)."""
    c = _fast_session(ClockModel("t1"))
    _lost_power(c, 200000, 2.5)
    c.feed(boot(session="00000002"), None)
    c.feed(rec(1000, "health", 5.0, session="00000002"), None)
    assert c.first_heard == (E0 + 5.0, 1000)
    assert c.time_of_day(1000) == pytest.approx(E0 + 200.0 + 2.0 + 1.0, abs=1e-6)


def test_the_reports_replay_anchors_a_session_after_the_one_that_lost_power():
    """The report replays each session alone (figures._replay): ``follow``
    anchors the session after the old one's last record, as the live view's
    chaining does; a session the host heard nothing of leaves it unanchored."""
    prev = ClockModel("t1")
    prev.feed(boot(host_s=0.0), None)
    prev.feed(rec(20000, "health", 21.0), None)
    c = ClockModel("t1")
    c.follow(ClockModel("t1"))  # nothing heard
    assert c.after is None
    c.follow(prev)
    assert c.after == (E0 + 20.0, E0 + 21.0, False)
    c.feed(boot(host_s=14.0, session="00000002"), None)  # its first boot keeps the anchor
    assert c.after == (E0 + 20.0, E0 + 21.0, False) and c.time_of_day(0) == E0 + 20.0
    fast = _fast_session(ClockModel("t1"))
    c = ClockModel("t1")
    c.follow(fast)
    assert c.after == (E0 + 200.0, E0 + 2.0, True)


def test_the_time_a_gong_is_due_stays_put_as_the_host_time_passes():
    """docs/hall.md "Simulated time": a gong due is the device time now plus
    the time left, anchored as every other time of day, so it stays put as
    the host's seconds pass; the newest record's time of day is 'last heard'."""
    c = ClockModel("t1")
    assert c.due_at(5000, 100.0) is None and c.heard_at() is None
    c.feed(boot(host_s=0.0), 100.0)
    c.feed(rec(10000, "health", 10.0), 110.0)
    assert c.heard_at() == E0 + 10.0
    assert c.due_at(60000, 110.0) == c.due_at(55000, 115.0) == E0 + 70.0
    assert c.due_at(59999.9, 110.0) == pytest.approx(E0 + 69.999, abs=1e-6)  # whole ms


def test_a_simulation_is_named_by_its_typical_pace():
    """docs/hall.md "Simulated time": each screen says 'simulation at 20×:
    times of day simulated' when the clocks ran above 1.5× the host's pace
    (the median of the accelerated sessions'), nothing at real speed."""
    assert model_mod.simulation_text(20.4) == "simulation at 20×: times of day simulated"
    assert model_mod.simulation_text(ACCELERATED_PACE) == ""
    assert model_mod.simulation_text(None) == "" and model_mod.simulation_text(0) == ""
    assert model_mod.typical_pace([None, 1.0, 1.5, 30.0, 10.0, 20.0]) == 20.0
    assert model_mod.typical_pace([10.0, 20.0]) == 20.0
    assert model_mod.typical_pace([1.5, 1.0, None]) is None
    fast, real = _fast_session(ClockModel("t1")), clock_heard((0.0, 0), (1.0, 1000), (2.0, 2000))
    assert model_mod.simulation_note([fast, real]) == "simulation at 100×: times of day simulated"
    assert model_mod.simulation_note([real]) == ""


# -- a viewer's guess of the restore (no power_loss record) ----------------------------
STEXT = "move_s=120;warn_s=30,20,10;round_min=40;round_warn_min=10"  # the defaults


def rebooted(old, hall_ms, at_ms=5000, values=None):
    """The records of the session after ``old``'s power loss: a fresh clock
    (the defaults) that took the restore of ``old``'s game as last heard,
    its round measured at ``hall_ms`` (as ``log --restore`` sends it), at ``at_ms``."""
    values = old.snapshot(old.t_ms, hall_ms) if values is None else values
    sink = model_mod._Sink()
    app = model_mod._ModelApp(sink, "scrabble", parse("scrabble", []), 0)
    app.host_frame(["S", "scrabble", STEXT] + [str(v) for v in values], at_ms)
    shape = Model("scrabble", parse("scrabble", []))
    return [boot(session="00000002")] + [rec(session="00000002", **shape._as_record(e, app))
                                         for e in sink.events[1:]]


def viewer(records):
    """A second laptop's model of clock t1: every record but the logger's power_loss."""
    clocks = Clocks()
    for r in records:
        if r["event"] != "power_loss":
            clocks.feed(r, None)
    return clocks.get("t1").model


def test_a_viewer_takes_a_paused_games_round_from_the_record_after_the_pause():
    """docs/hall.md (a viewer's model): ČAS 4.1, 6.1: the round runs on
    through the outage, and the clock's ``round`` record names it.  A game
    rebooted while paused comes back as ``resume``, ``pause``, ``round``:
    the round is still taken from the clock's record (it was reported as
    two mismatches, the view's round 25 s behind the clock's)."""
    old_recs = game(rec(3000, "pause", player="A", move=1))
    old = Model.from_records(old_recs)
    new = rebooted(old, old.t_ms + 25000)
    assert [(r["event"], r.get("elapsed_ms")) for r in new[1:]] == \
        [("resume", None), ("pause", None), ("round", 28000)]
    m = viewer(old_recs + new)
    assert m.mismatches == [] and m.inputs == [(5000, "restore")]
    assert m.face(5000).paused and m.face(5000).facts["round_left_ms"] == 40 * 60000 - 28000


def test_a_viewer_guesses_a_restore_the_logger_took_later_into_overtime():
    """The logger heard the clock 8 s after the viewer's last record, 3 s
    into the move's overtime (5.1.4): the ``resume`` names the time left as
    -0:03, and the viewer's guess is the old game at that moment (it was
    left unexplained, the view a fresh clock's 2:00)."""
    old_recs = game(rec(117000, "health"))  # 5 s left when the viewer last heard it
    old = Model.from_records(old_recs)
    new = rebooted(old, 0, values=old.snapshot(125000, 145000))
    assert new[1]["event"] == "resume" and new[1]["limit_ms"] == -3000
    m = viewer(old_recs + new)
    assert m.mismatches == [] and m.inputs == [(5000, "restore")]
    f = m.face(6000)
    assert f.overtime and f.player == "A" and f.facts["round_left_ms"] == 40 * 60000 - 146000


def test_a_viewer_guesses_a_restore_taken_as_the_limit_ran_out():
    """The logger's moment was the very ms A's limit ran out: ``resume``
    names 0 left, which the old game reaches 5 s after the viewer's last record."""
    old_recs = game(rec(117000, "health"))
    old = Model.from_records(old_recs)
    new = rebooted(old, 0, values=old.snapshot(122000, 142000))
    assert new[1]["limit_ms"] == 0
    m = viewer(old_recs + new)
    assert m.mismatches == [] and m.face(5000).overtime and m.face(5000).facts[
        "round_left_ms"] == 40 * 60000 - 142000


def test_a_round_record_before_the_last_heard_round_is_not_guessed():
    """ČAS 4.1, 6.1: the round ran on through the outage, so the restore's
    round is never less than the old game's as last heard: a ``round``
    record 1 ms below it is reported, not taken as the restore's hall time."""
    old_recs = game(rec(9000, "health"))
    old = Model.from_records(old_recs)
    assert viewer(old_recs + rebooted(old, 9000)).mismatches == []
    early = rebooted(old, 8999, values=old.snapshot(9000, 8999))
    assert early[2]["elapsed_ms"] == 8999
    assert [x.kind for x in viewer(old_recs + early).mismatches] == ["not_logged", "unexplained"]


def test_a_viewer_replays_a_round_that_ran_out_during_the_outage():
    """ČAS 4.1, 6.1, 16.3: the round ran on through the outage past its end:
    the restored clock comes back in the play-out (``resume``, ``round``,
    ``playout``); the viewer takes the round's time from the ``round`` record
    and still has the play-out the clock gave after it."""
    old_recs = game(rec(9000, "health"))
    old = Model.from_records(old_recs)
    new = rebooted(old, 40 * 60000 + 5000)
    assert [r["event"] for r in new[1:]] == ["resume", "round", "playout"]
    m = viewer(old_recs + new)
    assert m.mismatches == [] and m.inputs == [(5000, "restore")]
    assert m.face(5000).facts["playout"] == "finish_round"


def test_a_game_restored_before_its_first_move_refuses_new_settings_in_the_model():
    """A clock rebooted after the round's START and before a move: the restore
    the logger sent (its power_loss record) gives the round back, which logs
    only a ``round`` -- as an N frame would -- and leaves the clock no longer
    fresh, so it refuses the host's new settings (docs/protocol.md "Power loss
    and restore").  The model takes the restore, not an N, and explains the
    refusal (the property at length found it: bench/display.py)."""
    new = "00010002"
    settings = {"move_s": 8, "warn_s": "", "round_min": 1, "round_warn_min": 0}
    records = [boot(**settings), rec(0, "round", round=1, elapsed_ms=0),
               rec(0, "power_loss", last_seq=3, next_session=new, restore={
                   "mode": "scrabble", "settings": "move_s=8;warn_s=;round_min=1;round_warn_min=0",
                   "values": [0, -1, 8000, 0, 1, 0, -1, 0]}),
               boot(session=new, **settings),
               rec(100, "round", session=new, round=1, elapsed_ms=1),
               rec(112, "refused", session=new, player=None, what="settings",
                   reason="game_running"),
               rec(5750, "end", session=new)]
    clocks = Clocks()
    for r in records:
        clocks.feed(r, None)
    m = clocks.get("t1").model
    assert m.mismatches == [], m.mismatches
    assert [name for _t, name in m.inputs][:1] == ["restore"], m.inputs
