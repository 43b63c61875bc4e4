"""The host's end of the link frame by frame, its clock under the test's
control (hallclock.link.hostlink; docs/protocol.md): each event stored exactly
once and acknowledged only once it is on disk, a missing one asked for at
most every RESEND_ASK_S, an unknown session asked who it is at most every
WHO_ASK_S, noise counted and never a crash, a gap recorded for what the clock
overwrote, a power loss noticed and the game sent back (the S frame, again
every RESTORE_RETRY_S, at most RESTORE_TRIES times, until the clock takes
it), and the round tag.  Every timer on both sides and on its exact value."""
import json

from hallclock.link import hostlink
from hallclock.link.hostlink import (RESEND_ASK_S, RESTORE_RETRY_S, RESTORE_TRIES, WHO_ASK_S,
                                     HostLink, tag_round)
from hallclock.link.logfile import LogWriter, read_records
from hallclock_fw import protocol
from hallclock import hostframes
from hallclock_fw.events import (EV_BOOT, EV_END, EV_GONG, EV_HEALTH, EV_PRESS, EV_RESUME,
                                 EV_ROUND, EV_SETTINGS, EV_TURN, EV_WARN)

SID = "0000abcd"
SETTINGS = "move_s=120;warn_s=30,20,10;round_min=40;round_warn_min=10"
VALUES = (14, 1, 45000, 0, 3, 1620000, -1, 0)


class Clock:
    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


def host_at(tmp_path, restore=None, name="log.jsonl"):
    clock = Clock()
    w = LogWriter(str(tmp_path / name))
    sent = []
    host = HostLink(w, sent.append, restore=restore, clock=clock)
    host.said = []
    host.say = host.said.append
    return host, sent, clock


def ev(seq, code=EV_TURN, t=0, v=(0, 1, 120000, 0), text=None, sid=SID):
    return protocol.event(sid, seq, t, code, *v, text)


def boot(seq=1, sid=SID):
    return ev(seq, EV_BOOT, text="scrabble:" + SETTINGS, sid=sid)


def hello(sid=SID, clock="t1"):
    return protocol.hello(sid, clock, "scrabble", "v")


def stored(host):
    host.writer.flush()
    return read_records(host.writer.path)


# -- bytes in -----------------------------------------------------------------
def test_a_frame_in_pieces_is_taken_once(tmp_path):
    host, sent, _ = host_at(tmp_path)
    data = hello() + boot()
    for i in range(len(data)):
        host.feed(data[i:i + 1])
    assert [r["event"] for r in stored(host)] == ["boot"] and host.bad == 0
    assert sent[-1] == hostframes.ack(SID, 1)


def test_noise_without_newlines_is_kept_to_a_line_and_counted(tmp_path):
    """Bytes that never end a line: at most MAX_LINE + 2 of them are kept (a
    frame and its CR LF), the rest dropped and counted; the next frame after a
    newline is taken."""
    keep = protocol.MAX_LINE + 2
    host, sent, _ = host_at(tmp_path)
    host.feed(b"x" * keep)
    assert host.bad == 0 and len(host.buf) == keep
    host.feed(b"y")
    assert host.bad == 1 and bytes(host.buf) == b"x" * (keep - 1) + b"y"
    host.feed(b"z" * 500)
    assert host.bad == 2 and bytes(host.buf) == b"z" * keep
    host.feed(b"\n" + hello() + boot())
    assert host.bad == 3  # the noise's own line
    assert [r["event"] for r in stored(host)] == ["boot"]
    assert len(host.buf) == 0


def test_a_blank_line_is_not_noise_a_bad_one_and_an_echoed_host_frame_are(tmp_path):
    host, sent, _ = host_at(tmp_path)
    host.feed(b"\n\r\n  \n")
    assert host.bad == 0
    host.feed(boot()[:-4] + b"0000\n")  # a bad CRC
    assert host.bad == 1
    host.feed(hostframes.ack(SID, 3) + protocol.who())  # our own frames echoed back
    assert host.bad == 3 and sent == []


# -- sessions and acks -----------------------------------------------------------
def test_an_ack_covers_what_is_on_disk_and_no_more(tmp_path):
    host, sent, _ = host_at(tmp_path)
    host.feed(hello())
    assert sent == [hostframes.ack(SID, 0)]  # a new session: nothing yet
    host.feed(boot() + ev(2), flush=False)
    assert sent[-1] == hostframes.ack(SID, 0)  # nothing flushed yet: nothing acked
    host.send_acks()  # the records are queued, not on disk: still 0
    assert sent == [hostframes.ack(SID, 0)] * 2
    host.send_acks()  # no frame since: no ack
    host.feed(b"")
    assert len(sent) == 2
    host.feed(ev(3))
    assert sent[-1] == hostframes.ack(SID, 3)
    host.feed(ev(2))  # a repeat: dropped, counted, and acked again
    assert host.dups == 1 and sent[-1] == hostframes.ack(SID, 3)
    assert [r["seq"] for r in stored(host)] == [1, 2, 3]


def test_the_live_view_hears_each_stored_record_once_after_its_ack(tmp_path):
    host, sent, _ = host_at(tmp_path)
    heard = []
    host.on_record = lambda r: heard.append((r["seq"], len(sent)))
    host.feed(hello() + boot() + ev(2))
    assert heard == [(1, 1), (2, 1)]  # after the one ack that covers both
    host.feed(ev(3), flush=False)
    assert len(heard) == 2
    host.writer.flush()
    host.send_acks()
    host.send_acks()
    assert heard[2:] == [(3, 2)]
    host.on_record = None
    host.feed(ev(4))
    assert host.stored == []


def test_a_new_hole_is_asked_for_at_once_and_the_same_one_after_three_round_trips(tmp_path):
    """Catch-up at line speed: a second hole right after the first is asked
    for at once (not RESEND_ASK_S after the first request), and once a
    request's round trip is measured the same hole is asked for again after
    three of them (docs/protocol.md)."""
    host, sent, clock = host_at(tmp_path)
    host.feed(hello() + boot())
    t = clock.now
    host.feed(ev(3))  # 2 lost
    assert hostframes.resend(SID, 2) in sent
    clock.now = t + 0.04
    host.feed(ev(2) + ev(3))  # the request's round trip: 40 ms
    del sent[:]
    clock.now = t + 0.05
    host.feed(ev(5))  # 4 lost: a new hole, asked for at once
    assert sent.count(hostframes.resend(SID, 4)) == 1
    for dt, asks in ((0.05 + 0.119, 0), (0.05 + 0.121, 1)):
        del sent[:]
        clock.now = t + dt
        host.feed(ev(6))
        assert sent.count(hostframes.resend(SID, 4)) == asks, dt
    assert [r["seq"] for r in stored(host)] == [1, 2, 3]


def test_a_missing_event_is_asked_for_at_most_every_resend_ask_s(tmp_path):
    assert RESEND_ASK_S == 0.5
    host, sent, clock = host_at(tmp_path)
    host.feed(hello() + boot())
    del sent[:]
    start = clock.now
    host.feed(ev(3))
    assert sent == [hostframes.resend(SID, 2), hostframes.ack(SID, 1)]
    for dt, asks in ((RESEND_ASK_S - 0.001, 0), (RESEND_ASK_S, 0), (RESEND_ASK_S + 0.001, 1)):
        del sent[:]
        clock.now = start + dt
        host.feed(ev(4))
        assert sent.count(hostframes.resend(SID, 2)) == asks, dt
    assert [r["seq"] for r in stored(host)] == [1]
    host.feed(ev(2) + ev(3))
    assert [r["seq"] for r in stored(host)] == [1, 2, 3]


def test_an_unknown_session_is_asked_who_it_is_at_most_every_who_ask_s(tmp_path):
    assert WHO_ASK_S == 0.5
    host, sent, clock = host_at(tmp_path)
    start = clock.now
    host.feed(ev(5))
    assert sent == [protocol.who()]
    for dt, asks in ((WHO_ASK_S - 0.001, 0), (WHO_ASK_S, 0), (WHO_ASK_S + 0.001, 1)):
        del sent[:]
        clock.now = start + dt
        host.feed(ev(5))
        assert sent == [protocol.who()] * asks, dt
    assert stored(host) == []
    host.feed(protocol.gap(SID, 7))  # a gap of a session not known: nothing to record
    assert stored(host) == []


def test_a_clock_in_an_unknown_protocol_is_never_acked_nor_asked(tmp_path):
    host, sent, _ = host_at(tmp_path)
    host.feed(protocol.frame(("H %s t1 scrabble v 3" % SID).encode()))
    host.feed(ev(1) + ev(2) + protocol.gap(SID, 5))
    assert sent == [] and stored(host) == [] and len(host.said) == 1


def test_a_host_that_holds_enough_leaves_new_events_with_the_clock(tmp_path):
    """A full disk: past MAX_HELD records new events are not taken (the clock
    keeps them), but what is on disk is still acknowledged."""
    host, sent, _ = host_at(tmp_path)
    host.feed(hello() + boot())
    host.writer.accepting = lambda: False
    host.feed(ev(2) + ev(4))
    assert sent[-1] == hostframes.ack(SID, 1) and hostframes.resend(SID, 2) not in sent
    assert host.dups == 0 and [r["seq"] for r in stored(host)] == [1]


def test_a_gap_records_what_the_clock_overwrote_once(tmp_path):
    host, sent, _ = host_at(tmp_path)
    heard = []
    host.on_record = heard.append
    host.feed(hello() + boot() + ev(2, t=700))
    host.feed(protocol.gap(SID, 3))  # nothing missing
    assert [r["event"] for r in heard] == ["boot", "turn"]
    del sent[:]
    host.feed(protocol.gap(SID, 6))
    gap = heard[-1]
    assert {k: v for k, v in gap.items() if k != "host_time"} == {
        "clock": "t1", "seq": 3, "t_ms": 700, "event": "gap", "missing": [3, 5], "session": SID}
    assert sent == [hostframes.ack(SID, 5)]  # the gap stands for what it names
    host.feed(ev(6))
    assert [r["seq"] for r in stored(host)] == [1, 2, 3, 6]


# -- power loss and the restore ------------------------------------------------------
OLD, NEW = "0000aaaa", "0000bbbb"


def old_game(tmp_path, end=False, rnd=None):
    """A log whose clock t1 played session OLD (without its end, unless end)."""
    w = LogWriter(str(tmp_path / "log.jsonl"))
    for seq, event in enumerate(["boot", "turn", "press"] + (["end"] if end else []), 1):
        r = {"clock": "t1", "seq": seq, "t_ms": 1000 * seq, "event": event, "session": OLD}
        if event == "boot":
            r.update(mode="scrabble", settings={})
        if rnd is not None:
            r["round"] = rnd
        w.add(r)
    w.flush()
    w.close()


def test_a_new_session_of_a_clock_whose_game_never_ended_is_a_power_loss(tmp_path):
    old_game(tmp_path, rnd=4)
    host, sent, _ = host_at(tmp_path)
    heard = []
    host.on_record = heard.append
    host.feed(hello(NEW))
    loss = [r for r in stored(host) if r["event"] == "power_loss"]
    assert len(loss) == 1 and host.power_losses == 1 and heard == loss
    assert {k: v for k, v in loss[0].items() if k != "host_time"} == {
        "clock": "t1", "seq": 4, "t_ms": 3000, "event": "power_loss", "session": OLD,
        "last_seq": 3, "next_session": NEW, "round": 4}
    assert sent == [hostframes.ack(NEW, 0)]  # no restore asked for: none sent
    host.feed(hello(NEW))  # the same session again: nothing more
    host.feed(hello(OLD))  # the old one, closed by the power loss
    assert host.power_losses == 1


def test_a_new_session_after_an_end_or_of_another_clock_is_no_power_loss(tmp_path):
    old_game(tmp_path, end=True)
    host, sent, _ = host_at(tmp_path)
    host.feed(hello(NEW) + hello("0000cccc", clock="t2"))
    assert host.power_losses == 0
    assert [r["event"] for r in stored(host)] == ["boot", "turn", "press", "end"]


def restorer(calls, answer=("scrabble", SETTINGS, VALUES)):
    def restore(records, restored=None, say=None):
        calls.append(([r["seq"] for r in records], restored))
        return answer
    return restore


def test_after_a_power_loss_the_game_is_sent_back_until_the_clock_takes_it(tmp_path):
    assert RESTORE_RETRY_S == 2.0 and RESTORE_TRIES == 5
    old_game(tmp_path)
    calls = []
    host, sent, clock = host_at(tmp_path, restore=restorer(calls))
    S = hostframes.restore("scrabble", SETTINGS, *VALUES)
    start = clock.now
    host.feed(hello(NEW))
    assert sent == [S, hostframes.ack(NEW, 0)]  # the S before the ack of the hello
    assert calls == [([1, 2, 3], None)]
    loss = [r for r in stored(host) if r["event"] == "power_loss"][0]
    assert loss["restore"] == {"mode": "scrabble", "settings": SETTINGS, "values": list(VALUES)}
    del sent[:]
    clock.now = start + RESTORE_RETRY_S - 0.001
    host.poll()
    assert sent == []
    clock.now = start + RESTORE_RETRY_S  # on the exact time: again
    host.poll()
    assert sent == [S]
    for k in range(2, RESTORE_TRIES):
        clock.now = start + k * RESTORE_RETRY_S
        host.poll()
    assert sent == [S] * (RESTORE_TRIES - 1)  # the first and these: RESTORE_TRIES
    clock.now = start + RESTORE_TRIES * RESTORE_RETRY_S
    host.poll()
    clock.now += 100
    host.poll()
    assert sent == [S] * (RESTORE_TRIES - 1)  # no more
    assert host.sessions[NEW].restore is None


def test_a_restore_is_sent_no_more_once_the_game_goes_on(tmp_path):
    """Taken (resume), or the game went on without it (turn, press, end)."""
    for code in (EV_RESUME, EV_TURN, EV_PRESS, EV_END):
        sub = tmp_path / str(code)
        sub.mkdir()
        old_game(sub)
        host, sent, clock = host_at(sub, restore=restorer([]))
        host.feed(hello(NEW) + boot(sid=NEW) + ev(2, code, sid=NEW))
        del sent[:]
        clock.now += RESTORE_RETRY_S
        host.poll()
        assert sent == [], code
    for code in (EV_WARN, EV_GONG):  # events that do not take it
        sub = tmp_path / ("k%d" % code)
        sub.mkdir()
        old_game(sub)
        host, sent, clock = host_at(sub, restore=restorer([]))
        host.feed(hello(NEW) + boot(sid=NEW) + ev(2, code, v=(0, 1, 20, 0), sid=NEW))
        del sent[:]
        clock.now += RESTORE_RETRY_S
        host.poll()
        assert sent == [hostframes.restore("scrabble", SETTINGS, *VALUES)], code


def test_no_restore_when_the_restorer_has_none_or_the_session_went_on(tmp_path):
    old_game(tmp_path)
    calls = []
    host, sent, _ = host_at(tmp_path, restore=restorer(calls, answer=None))
    host.feed(hello(NEW))
    assert calls and sent == [hostframes.ack(NEW, 0)]
    loss = [r for r in stored(host) if r["event"] == "power_loss"][0]
    assert "restore" not in loss and host.power_losses == 1
    # a restarted host meeting a new session that already has events: too late
    sub = tmp_path / "later"
    sub.mkdir()
    old_game(sub)
    raw = (sub / "log.jsonl").read_bytes()
    (sub / "log.jsonl").write_bytes(json.dumps(
        {"clock": "t1", "seq": 1, "t_ms": 0, "event": "boot", "session": NEW, "mode": "scrabble",
         "settings": {}}).encode() + b"\n" + raw)  # NEW has an event; OLD spoke last
    calls = []
    host, sent, _ = host_at(sub, restore=restorer(calls))
    host.feed(hello(NEW))
    assert calls == [] and sent == [hostframes.ack(NEW, 1)] and host.power_losses == 1


def test_a_restored_session_that_loses_power_again_is_restored_from_what_it_was_sent(tmp_path):
    old_game(tmp_path)
    host, sent, _ = host_at(tmp_path, restore=restorer([]))
    host.feed(hello(NEW) + boot(sid=NEW))
    host.writer.close()
    calls = []
    host, sent, _ = host_at(tmp_path, restore=restorer(calls))
    host.feed(hello("0000cccc"))
    assert calls == [([1], ("scrabble", SETTINGS, list(VALUES)))]


# -- records --------------------------------------------------------------------
def test_boot_and_settings_records_carry_their_settings(tmp_path):
    host, sent, _ = host_at(tmp_path)
    host.feed(hello() + boot() + ev(2, EV_SETTINGS, text="scrabble:move_s=99")
              + ev(3, EV_SETTINGS, text="scrabble:move_s=abc")
              + ev(4, EV_SETTINGS, text="nomode"))
    recs = stored(host)
    assert recs[0]["mode"] == "scrabble" and recs[0]["settings"]["move_s"] == 120
    assert recs[1]["mode"] == "scrabble" and recs[1]["settings"]["move_s"] == 99
    assert recs[2]["settings"] == {"raw": "move_s=abc"}  # not settings: kept as they came
    assert recs[3]["mode"] == "nomode" and recs[3]["settings"] == {"raw": ""}
    assert host.records == 4


def test_a_health_record_carries_its_figures(tmp_path):
    host, sent, _ = host_at(tmp_path)
    host.feed(hello() + ev(1, EV_HEALTH, v=(0, 0, 0, 0), text="heap=1234"))
    recs = stored(host)
    assert recs[0]["event"] == "health"
    from hallclock.link.health import health_fields
    for k, v in health_fields("heap=1234").items():
        assert recs[0][k] == v


def test_a_session_has_ended_once_its_end_is_stored(tmp_path):
    host, sent, _ = host_at(tmp_path)
    host.feed(hello() + boot())
    assert not host.ended()
    host.feed(ev(3, EV_END))  # before event 2: not yet
    assert not host.ended()
    host.feed(ev(2) + ev(3, EV_END))
    assert host.ended()
    host.writer.close()  # the host stops ...
    host2, _, _ = host_at(tmp_path)  # ... and a restarted one knows it from the log
    host2.feed(hello())
    assert host2.ended()


def test_the_round_tag_from_the_round_event_to_the_end():
    """docs/contract.md: every record of a game from its clock's round event
    on carries round; the game after the end is untagged until it learns it."""
    s = hostlink.Session(SID, "t1", "scrabble")
    first = {"event": "turn"}
    tag_round(s, first)
    assert "round" not in first
    bad = {"event": "round", "round": "3"}
    tag_round(s, bad)
    assert s.round is None and bad["round"] == "3"
    rnd = {"event": "round", "round": 3}
    tag_round(s, rnd)
    turn = {"event": "turn"}
    tag_round(s, turn)
    assert rnd["round"] == 3 and turn["round"] == 3
    other = {"event": "press", "round": 9}
    tag_round(s, other)
    assert other["round"] == 3  # the session's round, whatever a field says
    end = {"event": "end"}
    tag_round(s, end)
    assert end["round"] == 3 and s.round is None
    after = {"event": "turn"}
    tag_round(s, after)
    assert "round" not in after


def test_a_round_event_tags_the_log_and_a_restarted_host_goes_on(tmp_path):
    host, sent, _ = host_at(tmp_path)
    host.feed(hello() + boot() + ev(2, EV_ROUND, v=(5, 0, 0, 0)) + ev(3))
    recs = stored(host)
    assert "round" not in recs[0] and recs[1]["round"] == 5 and recs[2]["round"] == 5
    host.writer.close()
    host2, _, _ = host_at(tmp_path)
    host2.feed(hello() + ev(4))
    assert stored(host2)[-1]["round"] == 5
    assert json.loads(open(host2.writer.path).read().splitlines()[-1])["seq"] == 4


def test_a_session_that_began_after_an_end_is_restored_from_its_own_events_only(tmp_path):
    """The snapshot sent before (a power loss's restore) counts only for the
    session it was sent to: a game begun after an end starts afresh."""
    old_game(tmp_path)
    host, sent, _ = host_at(tmp_path, restore=restorer([]))
    host.feed(hello(NEW) + boot(sid=NEW) + ev(2, EV_END, sid=NEW))  # restored, then ended
    third = "0000cccc"
    host.feed(hello(third) + boot(sid=third))  # after an end: no power loss
    assert host.power_losses == 1
    host.writer.close()
    calls = []
    host, sent, _ = host_at(tmp_path, restore=restorer(calls))
    host.feed(hello("0000dddd"))
    assert host.power_losses == 1
    assert calls == [([1], None)]  # the third session was sent nothing


def test_each_session_waiting_for_its_restore_gets_it_whatever_the_others_do(tmp_path):
    old_game(tmp_path)
    host, sent, clock = host_at(tmp_path, restore=restorer([]))
    S = hostframes.restore("scrabble", SETTINGS, *VALUES)
    host.feed(hello(NEW) + boot(sid=NEW))  # t = 100: the first of NEW's five
    clock.now = 102.0
    second = "0000cccc"
    host.feed(hello(second))  # NEW's second, and the first of this one's five
    assert host.power_losses == 2 and sent.count(S) == 3
    for t in (104.0, 106.0, 108.0, 110.0):
        clock.now = t
        host.poll()
    # NEW: 100, 102, 104, 106, 108 (five); the second: 102 ... 110 (five)
    assert sent.count(S) == 10
    assert host.sessions[NEW].restore is None and host.sessions[second].restore_tries == 5


def test_an_old_session_heard_after_its_power_loss_is_acked_only_its_own_events(tmp_path):
    """The power_loss record carries the old session's next seq, but it is the
    host's record, not one of the clock's events: an ack covers only events the
    clock sent and the host stored."""
    host, sent, _ = host_at(tmp_path)
    host.feed(hello(OLD) + boot(sid=OLD) + ev(2, sid=OLD))
    host.feed(hello(NEW))
    assert host.power_losses == 1 and host.writer.durable_seq("t1", OLD) == 3
    host.feed(hello(OLD))  # a late line of the old session
    assert sent[-1] == hostframes.ack(OLD, 2)


def test_a_gap_found_in_a_pass_of_several_frames_reaches_the_live_view(tmp_path):
    """The logger feeds every port, then flushes once: the gap record is heard
    with the events that came with it, each once, in order."""
    host, sent, _ = host_at(tmp_path)
    heard = []
    host.on_record = heard.append
    host.feed(hello() + boot() + ev(2) + protocol.gap(SID, 5) + ev(5), flush=False)
    host.writer.flush()
    host.send_acks()
    assert [(r["event"], r["seq"]) for r in heard] == [
        ("boot", 1), ("turn", 2), ("gap", 3), ("turn", 5)]
    assert sent[-1] == hostframes.ack(SID, 5)


def test_what_the_host_says_goes_to_stderr_as_hallclock_lines(tmp_path, capsys):
    host = HostLink(LogWriter(str(tmp_path / "log.jsonl")), lambda frame: None)
    host.feed(protocol.frame(("H %s t1 scrabble v 3" % SID).encode()))
    err = capsys.readouterr().err
    assert err.startswith("hallclock: port: clock t1 speaks protocol 3") and err.count("\n") == 1


def test_a_named_clock_not_heard_since_a_restart_has_ended_if_the_log_says_so(tmp_path):
    """The hall network's logger restarted on its log (a link per named clock):
    a clock whose newest session's end is in the log, silent since, counts as
    ended for --exit-on-end; one mid-game, or never logged, does not."""
    path = tmp_path / "log.jsonl"
    rows = [{"clock": "t1", "seq": 1, "t_ms": 0, "event": "boot", "session": "a"},
            {"clock": "t1", "seq": 2, "t_ms": 900, "event": "end", "session": "a"},
            {"clock": "t2", "seq": 1, "t_ms": 0, "event": "boot", "session": "b"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    w = LogWriter(str(path))
    try:
        links = {c: HostLink(w, lambda data: None, c, table=c) for c in ("t1", "t2", "t3")}
        assert [links[c].ended() for c in ("t1", "t2", "t3")] == [True, False, False]
        assert not HostLink(w, lambda data: None, "port").ended()  # a port: any clock
        # t1 began a new game (a reboot) since: its newest session has not ended
        w.add({"clock": "t1", "seq": 1, "t_ms": 0, "event": "boot", "session": "c"})
        assert not links["t1"].ended()
    finally:
        w.close()


def test_the_same_hole_is_asked_for_again_no_sooner_than_50_ms(tmp_path):
    """Three round trips of a request, but never under RESEND_ASK_MIN_S
    (50 ms): a 10 ms line does not get the same request every 30 ms."""
    host, sent, clock = host_at(tmp_path)
    host.feed(hello() + boot())
    t = clock.now
    host.feed(ev(3))  # 2 lost: asked for
    clock.now = t + 0.01
    host.feed(ev(2) + ev(3))  # the request's round trip: 10 ms
    clock.now = t + 0.02
    host.feed(ev(5))  # 4 lost: asked for at once
    for dt, asks in ((0.02 + 0.049, 0), (0.02 + 0.051, 1)):
        del sent[:]
        clock.now = t + dt
        host.feed(ev(6))
        assert sent.count(hostframes.resend(SID, 4)) == asks, dt


def test_the_round_trip_of_a_request_is_smoothed_a_quarter_at_a_time(tmp_path):
    """A second request's round trip moves the smoothed one a quarter of the
    way (40 ms, then 80 ms: 50 ms; the same hole again after 150 ms)."""
    host, sent, clock = host_at(tmp_path)
    host.feed(hello() + boot())
    t = clock.now
    host.feed(ev(3))
    clock.now = t + 0.04
    host.feed(ev(2) + ev(3))  # 40 ms
    clock.now = t + 0.05
    host.feed(ev(5))
    clock.now = t + 0.13
    host.feed(ev(4) + ev(5))  # 80 ms
    clock.now = t + 0.14
    host.feed(ev(7))  # 6 lost: asked for at once
    for dt, asks in ((0.14 + 0.149, 0), (0.14 + 0.151, 1)):
        del sent[:]
        clock.now = t + dt
        host.feed(ev(8))
        assert sent.count(hostframes.resend(SID, 6)) == asks, dt


def test_a_damaged_line_asks_for_the_next_event_at_once(tmp_path):
    """A damaged line may have been the clock's last event: the host asks
    for the event it expects at once, not after the clock's resend wait."""
    host, sent, clock = host_at(tmp_path)
    host.feed(hello() + boot())
    del sent[:]
    host.feed(b"E 0000abcd 2 garbage*00000000\n")
    assert sent == [hostframes.resend(SID, 2)] and host.bad == 1


def test_the_round_trip_is_the_asked_events_own_not_a_later_ones(tmp_path):
    """The request's round trip ends when the asked event arrives; the next
    event, coming much later, measures nothing (40 ms, not 300)."""
    host, sent, clock = host_at(tmp_path)
    host.feed(hello() + boot())
    t = clock.now
    host.feed(ev(3))  # 2 lost: asked for
    clock.now = t + 0.04
    host.feed(ev(2))  # the request's round trip: 40 ms
    clock.now = t + 0.30
    host.feed(ev(3))
    clock.now = t + 0.31
    host.feed(ev(5))  # 4 lost: asked for at once
    for dt, asks in ((0.31 + 0.119, 0), (0.31 + 0.121, 1)):
        del sent[:]
        clock.now = t + dt
        host.feed(ev(6))
        assert sent.count(hostframes.resend(SID, 4)) == asks, dt


def test_a_request_the_clock_answers_with_a_gap_measures_no_round_trip(tmp_path):
    """Asked for an event the clock no longer holds, the clock answers with a
    gap frame: the next event answers no request, so no round trip is taken
    from it (the same hole is asked again after RESEND_ASK_S)."""
    host, sent, clock = host_at(tmp_path)
    host.feed(hello() + boot())
    t = clock.now
    host.feed(ev(3))  # 2 lost: asked for
    clock.now = t + 0.01
    host.feed(protocol.gap(SID, 5))  # 2 to 4 overwritten on the clock
    clock.now = t + 0.02
    host.feed(ev(5))
    clock.now = t + 0.03
    host.feed(ev(7))  # 6 lost: asked for at once
    for dt, asks in ((0.03 + 0.1, 0), (0.03 + RESEND_ASK_S + 0.001, 1)):
        del sent[:]
        clock.now = t + dt
        host.feed(ev(8))
        assert sent.count(hostframes.resend(SID, 6)) == asks, dt
