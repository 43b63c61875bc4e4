"""The link's, the settings' and the command line's thresholds one step below,
on, and one step above their exact value (docs/testing.md, "Thresholds and
the tests that pin them"): acks and resends (docs/protocol.md), the ring of
unacknowledged events, the gap frame, setting and option ceilings."""
import contextlib
import io

import pytest

from hallclock import cli
from hallclock.errors import BadInput
from hallclock.link.hostlink import HostLink
from hallclock.link.logfile import LogWriter, read_records
from hallclock.hall.relay import check_table_count
from hallclock.vboard.vdev.fakes import FakeUART
from hallclock_fw import link as link_mod, protocol
from hallclock import hostframes
from hallclock_fw.events import EV_SETTINGS, EV_TURN, LONG
from hallclock_fw.link import _SRTT, BURST_GAP_MS, HELLO_MS, RESEND_MS, DeviceLink
from hallclock_fw.settings import (
    SettingsError, bank_ms, format_text, parse, parse_text, validate)

SID = "0000abcd"
SETTINGS = "move_s=120;warn_s=30,20,10;round_min=40;round_warn_min=10"


def device(capacity=link_mod.CAPACITY, now=1000):
    return DeviceLink(FakeUART(), SID, "table-1", "scrabble", SETTINGS, "t", now,
                      capacity=capacity)


def emit(dev, n):
    for i in range(n):
        dev.emit(i, EV_TURN, i & 1, i + 1, 120000, 0)


def sent_seqs(dev):
    """The seq of every E frame the device wrote since the last call."""
    out = []
    for line in dev.uart.take().split(b"\n"):
        tokens = protocol.unframe(line) if line else None
        if tokens and tokens[0] == "E":
            out.append(int(tokens[2]))
    return out


def flush(dev, now):
    """Passes of the loop at ``now`` until nothing more goes out (a pass sends
    at most a burst of frames)."""
    for _ in range(8):
        dev.send(now)


def host_says(dev, data, now):
    """The host's bytes reach the device; its passes read them all (a pass
    reads one chunk)."""
    dev.uart.feed(data)
    while dev.uart.any():
        dev.receive(now)


# -- acks ------------------------------------------------------------------

def test_an_ack_beyond_the_last_event_acknowledges_only_what_exists():
    # docs/protocol.md: A <sid> <seq> acknowledges every event up to seq; the
    # host cannot have stored an event the clock has not numbered yet
    for extra in (0, 1, 50):
        dev = device()
        emit(dev, 5)
        flush(dev, 1000)
        sent_seqs(dev)
        host_says(dev, hostframes.ack(SID, 5 + extra), 1100)
        assert dev.acked == 5 and dev.all_acked()
        emit(dev, 3)  # events numbered after the ack are still owed to the host
        assert not dev.all_acked()
        flush(dev, 1200)
        assert sent_seqs(dev) == [6, 7, 8]


def test_an_ack_of_the_next_to_last_event_leaves_the_last_owed():
    dev = device()
    emit(dev, 5)
    flush(dev, 1000)
    assert sent_seqs(dev) == [1, 2, 3, 4, 5]
    host_says(dev, hostframes.ack(SID, 4), 1100)
    assert dev.acked == 4 and not dev.all_acked()
    wait = dev.rto  # the resend wait in force (three round trips of 100 ms)
    assert wait == 303
    dev.send(1100 + wait - 1)
    assert sent_seqs(dev) == []
    dev.send(1100 + wait)
    assert sent_seqs(dev) == [5]


def test_an_ack_restarts_the_resend_wait():
    # the clock resends RESEND_MS after the host last acknowledged something
    # new, not RESEND_MS after the first send: a host that keeps up sees no resend
    dev = device()
    emit(dev, 2)
    flush(dev, 1000)
    assert sent_seqs(dev) == [1, 2]
    host_says(dev, hostframes.ack(SID, 1), 1000 + RESEND_MS - 100)
    dev.send(1000 + RESEND_MS)  # a full wait since the first send, not since the ack
    assert sent_seqs(dev) == []
    assert dev.next_deadline(1000 + RESEND_MS) == 1000 + 2 * RESEND_MS - 100
    dev.send(1000 + 2 * RESEND_MS - 101)
    assert sent_seqs(dev) == []
    dev.send(1000 + 2 * RESEND_MS - 100)
    assert sent_seqs(dev) == [2]


def test_clean_traffic_for_ten_seconds_sends_every_event_once(tmp_path):
    writer = LogWriter(str(tmp_path / "log.jsonl"))
    replies = []
    host = HostLink(writer, replies.append)
    dev = device()
    now = 1000
    for i in range(100):  # an event every 100 ms, the host answering each pass
        now += 100
        emit(dev, 1)
        dev.send(now)
        host.feed(dev.uart.take())
        for frame in replies:
            dev.uart.feed(frame)
        del replies[:]
        dev.receive(now)
    assert host.dups == 0  # nothing was sent twice
    assert [r["seq"] for r in read_records(writer.path)] == list(range(1, 101))


def test_a_resend_request_goes_back_exactly_to_the_asked_event():
    dev = device()
    emit(dev, 6)
    flush(dev, 1000)
    assert sent_seqs(dev) == [1, 2, 3, 4, 5, 6]
    host_says(dev, hostframes.ack(SID, 2), 1030)
    host_says(dev, hostframes.resend(SID, 4), 1040)
    flush(dev, 1050)
    assert sent_seqs(dev) == [4, 5, 6]
    host_says(dev, hostframes.resend(SID, 7), 1060)  # beyond the last: nothing to resend
    dev.send(1070)
    assert sent_seqs(dev) == []


# -- the ring of unacknowledged events ------------------------------------

def test_a_full_ring_loses_nothing_until_one_more_event():
    cap = 8
    dev = device(capacity=cap)
    emit(dev, cap - 1)
    assert dev.lost == 0 and dev.first == 1
    emit(dev, 1)  # exactly full
    assert dev.lost == 0 and dev.first == 1
    emit(dev, 1)  # one more: the oldest, never stored, is overwritten
    assert dev.lost == 1 and dev.first == 2
    flush(dev, 1000)
    assert sent_seqs(dev) == list(range(2, cap + 2))


def test_a_full_ring_of_stored_events_loses_nothing():
    cap = 8
    dev = device(capacity=cap)
    emit(dev, cap)
    host_says(dev, hostframes.ack(SID, 1), 1100)
    emit(dev, 1)  # overwrites event 1, which the host has stored
    assert dev.lost == 0 and dev.first == 2


def test_the_gap_frame_is_recorded_once(tmp_path):
    # docs/protocol.md: G <sid> <first> says events before first are gone; a
    # repeated G (a resend) must not write a second, empty gap
    writer = LogWriter(str(tmp_path / "log.jsonl"))
    host = HostLink(writer, lambda frame: None)
    host.feed(protocol.hello(SID, "table-1", "scrabble", "t"))
    host.feed(protocol.event(SID, 1, 0, 0, 0, 0, 0, 0, "scrabble:" + SETTINGS))
    host.feed(protocol.gap(SID, 2))  # nothing missing: the next is 2
    host.feed(protocol.gap(SID, 5))
    host.feed(protocol.gap(SID, 5))
    host.feed(protocol.gap(SID, 4))
    writer.flush()
    gaps = [r for r in read_records(writer.path) if r["event"] == "gap"]
    assert [g["missing"] for g in gaps] == [[2, 4]]


# -- settings at their bounds (docs/rules.md: each setting's range) -------

@pytest.mark.parametrize("mode, key, low, high", [
    ("scrabble", "move_s", 1, 86400),
    ("scrabble", "round_min", 1, 1440),
    ("duplicate", "move_s", 1, 86400),
    ("backgammon", "match", 1, 99),
    ("backgammon", "per_point_s", 1, 3600),
    ("backgammon", "delay_s", 0, 3600),
    ("backgammon", "bank_s", 1, 86400),
])
def test_a_setting_on_its_bounds_is_taken_and_one_beyond_refused(mode, key, low, high):
    extra = {"scrabble": ["warn_s=", "round_warn_min=0"], "duplicate": ["announce_s="],
             "backgammon": ["per_point_s=1"] if key != "per_point_s" else []}[mode]
    for v in (low, high):
        assert parse(mode, extra + [f"{key}={v}"])[key] == v
    for v in (low - 1, high + 1):
        with pytest.raises(SettingsError, match=key):
            parse(mode, extra + [f"{key}={v}"])


@pytest.mark.parametrize("mode, key", [("scrabble", "warn_s"), ("duplicate", "announce_s")])
def test_a_warning_must_lie_inside_the_limit(mode, key):
    assert parse(mode, ["move_s=60", f"{key}=59,1"])[key] == (59, 1)
    for bad in ("60", "0", "61", "-1"):
        with pytest.raises(SettingsError, match=key):
            parse(mode, ["move_s=60", f"{key}={bad}"])
    with pytest.raises(SettingsError, match=f"{key}: 60 is not between 1 and move_s-1 \\(59\\)"):
        parse(mode, ["move_s=60", f"{key}=60"])
    with pytest.raises(SettingsError, match="twice"):
        parse(mode, ["move_s=60", f"{key}=30,30"])


def test_the_ten_minute_gong_must_come_before_the_end():
    assert parse("scrabble", ["round_min=10", "round_warn_min=9"])["round_warn_min"] == 9
    assert parse("scrabble", ["round_min=10", "round_warn_min=0"])["round_warn_min"] == 0
    for bad in ("10", "11", "-1"):
        with pytest.raises(SettingsError, match="round_warn_min"):
            parse("scrabble", ["round_min=10", f"round_warn_min={bad}"])


def test_a_score_must_leave_the_match_open():
    assert parse("backgammon", ["match=7", "score=6-0"])["score"] == (6, 0)
    assert parse("backgammon", ["match=7", "score=0-6"])["score"] == (0, 6)
    for bad in ("7-0", "0-7", "-1-0"):
        with pytest.raises(SettingsError, match="score"):
            parse("backgammon", ["match=7", f"score={bad}"])
    with pytest.raises(SettingsError, match="each score must be 0 to 6"):
        parse("backgammon", ["match=7", "score=7-0"])
    for score in ((-1, 0), (0, -1)):  # values from elsewhere than the text form
        values = parse("backgammon", ["match=7"])
        values["score"] = score
        with pytest.raises(SettingsError, match="score"):
            validate("backgammon", values)


def test_the_bank_from_the_points_the_trailing_player_needs():
    # İSTAVDER 2.4: (match - the trailing player's points) x per_point_s
    assert bank_ms(parse("backgammon", ["match=7", "score=2-5"])) == 5 * 150 * 1000
    assert bank_ms(parse("backgammon", ["match=7", "score=5-2"])) == 5 * 150 * 1000
    assert bank_ms(parse("backgammon", ["match=7", "score=3-3"])) == 4 * 150 * 1000
    assert bank_ms(parse("backgammon", ["bank_s=600", "score=3-3"])) == 600000


def test_the_bank_is_at_most_a_day():
    # İSTAVDER 2.4: (match - trailing) x per_point_s; 24 h at most
    assert parse("backgammon", ["match=24", "per_point_s=3600"])  # 24 h exactly
    with pytest.raises(SettingsError, match="bank would be 90000 s; at most 86400 s"):
        parse("backgammon", ["match=25", "per_point_s=3600"])


# -- command-line ceilings ------------------------------------------------

def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, err.getvalue()


def test_the_table_count_of_a_hall():
    for n in (1, 64):
        assert check_table_count(n) == n
    for n in (0, 65):
        with pytest.raises(BadInput, match="--tables"):
            check_table_count(n)


def test_the_table_count_of_virtual_clocks(tmp_path):
    missing = str(tmp_path / "missing.txt")
    for n in ("0", "65"):
        code, err = run(["virtual-clocks", "--tables", n, "--script", missing,
                         "--ports-file", str(tmp_path / "ports.txt")])
        assert code == 2 and "--tables" in err, err
    for n in ("1", "64"):  # taken: the next complaint is the missing script
        code, err = run(["virtual-clocks", "--tables", n, "--script", missing,
                         "--ports-file", str(tmp_path / "ports.txt")])
        assert code == 2 and "--tables" not in err and "missing.txt" in err, err


def test_the_device_silence_limit(tmp_path):
    game = tmp_path / "game.txt"
    game.write_text("0 press START\n1500 press B\n100000 end\n")
    for s in ("0", "3600.001"):
        code, err = run(["device", "--script", str(game), "--port", "/nonexistent",
                         "--silence-s", s])
        assert code == 2 and "--silence-s" in err, err
    for s in ("0.001", "3600"):  # taken: the next complaint is the port
        code, err = run(["device", "--script", str(game), "--port", "/nonexistent",
                         "--silence-s", s])
        assert code != 0 and "--silence-s" not in err and "/nonexistent" in err, err


def test_a_bank_just_over_a_day_is_refused():
    # 98 points x 882 s = 86 436 s: 36 s over the 24 h a bank may hold
    with pytest.raises(SettingsError, match="bank would be 86436 s"):
        parse("backgammon", ["match=98", "per_point_s=882"])


def test_the_text_form_of_every_kind_of_value():
    values = parse("backgammon", ["match=9", "score=3-5", "delay=fischer"])
    text = format_text("backgammon", values)
    assert "score=3-5" in text.split(";") and "delay=fischer" in text.split(";")
    assert parse_text("backgammon", text) == values


def test_a_bad_pair_is_named_with_the_settings_there_are():
    with pytest.raises(SettingsError, match="move_s: '1=2' is not a whole number"):
        parse("scrabble", ["move_s=1=2"])
    with pytest.raises(SettingsError,
                       match="settings: move_s, warn_s, round_min, round_warn_min"):
        parse("scrabble", ["limit=3"])


def test_a_resend_from_the_oldest_held_event_needs_no_gap_frame():
    # docs/protocol.md: G goes out only when the host asks for events the
    # clock no longer holds
    def frames(dev):
        return [protocol.unframe(ln)[0] for ln in dev.uart.take().split(b"\n") if ln]
    cap = 8
    for asked, gap in ((3, False), (2, False), (1, True)):
        dev = device(capacity=cap)
        emit(dev, cap + 1)  # event 1 is gone: the oldest held is 2
        flush(dev, 1000)
        dev.uart.take()
        host_says(dev, hostframes.resend(SID, asked), 1100)
        flush(dev, 1100)
        sent = frames(dev)
        assert ("G" in sent) == gap, (asked, sent)
        assert sent.count("E") == cap + 1 - max(asked, 2) + 1


def test_an_ack_overtaking_a_resend_skips_nothing_and_repeats_nothing():
    dev = device()
    emit(dev, 6)
    flush(dev, 1000)
    assert sent_seqs(dev) == [1, 2, 3, 4, 5, 6]
    dev.send(1000 + RESEND_MS)  # no ack for a while: the oldest again, alone (hello + 1)
    assert sent_seqs(dev) == [1]
    host_says(dev, hostframes.ack(SID, 5), 1000 + RESEND_MS + 10)  # the host had 1..5
    flush(dev, 1000 + RESEND_MS + 20)
    assert sent_seqs(dev) == []  # 6 is on its way: not sent twice at once
    flush(dev, 1000 + RESEND_MS + 10 + dev.rto)  # ... until its own resend wait
    assert sent_seqs(dev) == [6]


def test_overwriting_stored_events_keeps_their_acknowledgement():
    cap = 8
    dev = device(capacity=cap)
    emit(dev, cap)
    flush(dev, 1000)
    sent_seqs(dev)
    host_says(dev, hostframes.ack(SID, cap), 1100)
    emit(dev, 2)  # events 1 and 2 overwritten, both stored
    assert dev.acked == cap and dev.lost == 0
    flush(dev, 1200)
    assert sent_seqs(dev) == [cap + 1, cap + 2]


def test_a_button_code_outside_the_buttons_is_line_noise():
    # C <button> <long>: the buttons are 0..4 (A, B, PAUSE, START, GONG)
    for code, taken in ((-1, False), (0, True), (4, True), (5, False)):
        dev = device()
        body = ("C %d 0" % code).encode()
        host_says(dev, protocol.frame(body), 1000)
        assert (dev.next_command() is not None) == taken, code
        assert dev.bad == (0 if taken else 1)


# -- the device's frames, its wake-ups and its budget (docs/protocol.md) ------

def kinds(dev):
    return [protocol.unframe(ln)[0] for ln in dev.uart.take().split(b"\n") if ln]


def test_an_event_frame_carries_all_four_values_and_the_settings_text():
    dev = device()
    dev.emit(7, EV_TURN, 1, 2, 3, 4)
    dev.emit(8, EV_SETTINGS, 0, 0, 0, 0)
    flush(dev, 1000)
    frames = [protocol.unframe(ln) for ln in dev.uart.take().split(b"\n") if ln]
    events = [f for f in frames if f[0] == "E"]
    assert events[0][2:] == ["1", "7", str(EV_TURN), "1", "2", "3", "4"]  # no text
    assert events[1][9] == "scrabble:" + SETTINGS


def test_the_link_wakes_the_loop_only_for_what_it_owes():
    dev = device(now=1000)
    assert dev.next_deadline(1000) == 1000 + BURST_GAP_MS  # the first hello is owed
    flush(dev, 1000)
    assert kinds(dev) == ["H"] and dev.next_deadline(1010) is None  # nothing owed
    emit(dev, 1)
    assert dev.next_deadline(1020) == 1020 + BURST_GAP_MS
    flush(dev, 1020)
    assert kinds(dev) == ["E"]
    assert dev.next_deadline(1030) == 1020 + RESEND_MS  # unacknowledged: the resend, from its sending
    host_says(dev, hostframes.ack(SID, 1), 1040)
    assert dev.next_deadline(1050) is None
    host_says(dev, protocol.who(), 1060)  # W: a hello is owed
    assert dev.next_deadline(1070) == 1070 + BURST_GAP_MS
    flush(dev, 1070)
    assert kinds(dev) == ["H"]
    cap = 4
    dev = device(capacity=cap)
    emit(dev, cap + 2)
    flush(dev, 1000)
    dev.uart.take()
    host_says(dev, hostframes.ack(SID, cap + 2), 1010)
    host_says(dev, hostframes.resend(SID, 1), 1020)  # gone: a gap frame is owed
    assert dev.next_deadline(1030) == 1030 + BURST_GAP_MS
    dev.send(1030)
    assert "G" in kinds(dev)
    dev.send(1040)
    assert "G" not in kinds(dev)  # one gap frame per request


def test_nothing_goes_out_once_everything_is_acknowledged():
    dev = device()
    emit(dev, 2)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 2), 1000)
    dev.uart.take()
    for t in (1000 + RESEND_MS, 1000 + HELLO_MS, 1000 + 3 * HELLO_MS):
        dev.send(t)
    assert kinds(dev) == []


def test_a_silent_host_is_greeted_again_at_the_first_resend():
    # until the host has answered anything, each resend starts with a hello
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    assert kinds(dev) == ["H", "E"]
    dev.send(1000 + RESEND_MS)
    assert kinds(dev) == ["H", "E"]


def test_a_host_that_answered_is_greeted_again_after_hello_ms():
    for last, hello in ((5999, False), (6000, True)):
        dev = device()
        emit(dev, 1)
        flush(dev, 1000)  # the hello at 1000
        host_says(dev, hostframes.ack(SID, 0), 1000)  # the host is there
        emit(dev, 1)
        dev.uart.take()
        for t in (2500, 4000 + (last - 5500), last):  # resends, the last at `last`
            dev.send(t)
        sent = kinds(dev)
        assert ("H" in sent) == hello, (last, sent)
        assert dev.next_deadline(last + 1) == last + dev.rto  # the next resend wait


def test_a_burst_is_two_frames_whatever_they_are():
    # docs/protocol.md: at most two frames a pass, hellos and gap frames included
    assert link_mod._BURST == 2
    cap = 8
    dev = device(capacity=cap)
    emit(dev, cap + 2)  # 1 and 2 gone
    dev.send(1000)
    assert kinds(dev) == ["H", "E"]
    host_says(dev, hostframes.resend(SID, 1), 1010)
    dev.send(1010)
    assert kinds(dev) == ["G", "E"]


def test_an_ack_of_the_event_about_to_be_sent_moves_past_it():
    dev = device()
    emit(dev, 6)
    flush(dev, 1000)
    dev.uart.take()
    dev.send(1000 + RESEND_MS)  # the oldest again: hello, 1
    assert sent_seqs(dev) == [1]
    host_says(dev, hostframes.ack(SID, 4), 1000 + RESEND_MS + 10)
    flush(dev, 1000 + RESEND_MS + 20)
    assert sent_seqs(dev) == []  # 5 and 6 are on their way
    host_says(dev, hostframes.resend(SID, 5), 1000 + RESEND_MS + 30)  # the host misses 5
    flush(dev, 1000 + RESEND_MS + 30)
    assert sent_seqs(dev) == [5, 6]


def test_overwriting_an_event_after_the_acknowledged_one_keeps_the_ack():
    cap = 8
    dev = device(capacity=cap)
    emit(dev, cap)
    host_says(dev, hostframes.ack(SID, 2), 1000)
    emit(dev, 1)  # overwrites event 1 (stored): the oldest held is 2, acked
    assert dev.acked == 2 and dev.first == 2 and dev.lost == 0
    dev = device(capacity=cap)
    emit(dev, cap + 1)  # nothing stored: event 1 lost
    assert dev.acked == 1 and dev.lost == 1


def test_the_command_queue_holds_sixteen_and_counts_the_rest():
    dev = device()
    for i in range(17):
        host_says(dev, hostframes.command(i % 5, long=(i == 3)), 1000)
    cmds = []
    while True:
        c = dev.next_command()
        if c is None:
            break
        cmds.append(c)
    assert cmds == [(i % 5) | (LONG if i == 3 else 0) for i in range(16)]
    assert dev.bad == 1


def test_an_overlong_line_is_dropped_and_counted_once():
    dev = device()
    host_says(dev, b"x" * (protocol.MAX_LINE + 10) + b"\n", 1000)
    host_says(dev, hostframes.command(2), 1000)
    assert dev.bad == 1 and dev.next_command() == 2


def test_only_the_m_frame_asks_for_the_console():
    dev = device()
    for frame in (protocol.who(), hostframes.command(1), protocol.lost()):
        host_says(dev, frame, 1000)
    assert not dev.maintenance
    host_says(dev, hostframes.maintenance(), 1000)
    assert dev.maintenance


def test_the_link_keeps_the_protocol_timings():
    # docs/protocol.md: a burst gap of 20 ms, a resend 1.5 s after the last
    # progress, a hello every 5 s to a host that stays silent, 128 events kept
    # (a 5-minute host outage at a move every 5 s)
    dev = device(now=0)
    assert dev.next_deadline(0) == 20
    emit(dev, 1)
    flush(dev, 0)
    assert kinds(dev) == ["H", "E"]
    assert dev.next_deadline(1) == 1500
    dev.send(1499)
    assert kinds(dev) == []
    dev.send(1500)
    assert kinds(dev) == ["H", "E"]
    dev = device()
    emit(dev, 128)
    assert dev.lost == 0
    emit(dev, 1)
    assert dev.lost == 1


def test_a_repeated_ack_is_no_progress():
    dev = device()
    emit(dev, 2)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 1), 1000)
    wait = dev.rto
    host_says(dev, hostframes.ack(SID, 1), 1000 + wait - 10)  # nothing new
    assert dev.next_deadline(1000 + wait - 5) == 1000 + wait


def test_a_resend_request_for_the_last_event_resends_it():
    dev = device()
    emit(dev, 3)
    flush(dev, 1000)
    sent_seqs(dev)
    host_says(dev, hostframes.resend(SID, 3), 1010)
    flush(dev, 1010)
    assert sent_seqs(dev) == [3]


def test_who_resends_at_once():
    # W: the host wants to know who we are; unacknowledged events follow at once
    dev = device()
    emit(dev, 2)
    flush(dev, 1000)
    dev.uart.take()
    host_says(dev, protocol.who(), 1100)
    flush(dev, 1100)
    assert kinds(dev) == ["H", "E", "E"]


def test_a_frame_for_an_earlier_session_gets_a_hello():
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    dev.uart.take()
    host_says(dev, hostframes.ack("0000ffff", 1), 1010)  # the host talks to an old session
    assert dev.acked == 0
    dev.send(1020)
    assert kinds(dev) == ["H"]


def test_empty_lines_are_not_noise_and_echoed_device_frames_are():
    dev = device()
    host_says(dev, b"\n\n\r\n", 1000)
    assert dev.bad == 1  # the lone CR is a line, and not a frame
    dev = device()
    host_says(dev, b"\n\n", 1000)
    assert dev.bad == 0
    host_says(dev, protocol.hello(SID, "table-1", "scrabble", "t"), 1000)  # echoed back
    assert dev.bad == 1


def test_a_line_cut_at_the_longest_frame_is_dropped_whole():
    # a line longer than MAX_LINE is dropped, even if its first MAX_LINE
    # bytes would make a frame
    body = "S scrabble "
    body += "x" * (protocol.MAX_LINE - 9 - len(body) - 2) + " 1"
    frame = protocol.frame(body.encode())[:-1]
    assert len(frame) == protocol.MAX_LINE and protocol.unframe(frame) is not None
    dev = device()
    host_says(dev, frame + b"junk\n", 1000)
    assert dev.next_command() is None and dev.bad == 1
    host_says(dev, frame + b"\n", 1000)  # exactly MAX_LINE: taken
    assert dev.next_command() is not None


# -- the resend timer follows the round trip -------------------------------------
def test_the_resend_wait_is_three_round_trips_of_an_ack_within_its_bounds():
    """Until an ack's round trip is measured the clock waits RESEND_MS; then
    three smoothed round trips, never under 100 ms nor over RESEND_MS: a
    backlog behind a noisy line goes again in a time set by the line."""
    dev = device()
    assert dev.rto == RESEND_MS
    emit(dev, 3)
    flush(dev, 1000)
    assert sent_seqs(dev) == [1, 2, 3]
    host_says(dev, hostframes.ack(SID, 1), 1040)  # event 1 timed: 40 ms (+1: never 0)
    assert dev.rtt[_SRTT] == 41 and dev.rto == 123
    assert dev.next_deadline(1041) == 1040 + 123
    dev.send(1040 + 122)
    assert sent_seqs(dev) == []
    dev.send(1040 + 123)  # nothing new for three round trips: the first owed again
    assert sent_seqs(dev) == [2]
    dev2 = device()
    emit(dev2, 1)
    flush(dev2, 1000)
    host_says(dev2, hostframes.ack(SID, 1), 1005)
    assert dev2.rto == 100  # the floor: a host's fsync under load
    dev3 = device()
    emit(dev3, 1)
    flush(dev3, 1000)
    host_says(dev3, hostframes.ack(SID, 1), 1000 + RESEND_MS)  # a slow host
    assert dev3.rto == RESEND_MS


def test_timeouts_in_a_row_double_the_wait_and_a_resent_event_is_not_timed():
    """A host gone away: each resend waits twice the last, up to RESEND_MS
    (the old steady pace, airtime and garbage on the clock); the first
    progress ends the doubling; an ack of an event sent more than once says
    nothing of the round trip (which sending?)."""
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 1), 1040)
    assert dev.rto == 123
    emit(dev, 1)
    flush(dev, 1100)
    assert sent_seqs(dev) == [1, 2]
    t = 1100  # the wait counts from the sending: nothing was owed before it
    waits = []
    for _ in range(6):
        t += dev.rto
        dev.send(t)
        assert sent_seqs(dev) == [2], t
        waits.append(dev.rto)
    assert waits == [246, 492, 984, RESEND_MS, RESEND_MS, RESEND_MS]
    host_says(dev, hostframes.ack(SID, 2), t + 30)  # after the resends: not timed ...
    assert dev.rtt[_SRTT] == 41 and dev.rto == 123  # ... but progress: the doubling is over
    emit(dev, 1)
    flush(dev, t + 40)
    host_says(dev, hostframes.ack(SID, 3), t + 100)  # a fresh event: timed again
    assert dev.rtt[_SRTT] == 41 + (61 - 41) // 4 and dev.rto == 3 * dev.rtt[_SRTT]
    dev4 = device()
    emit(dev4, 1)
    flush(dev4, 1000)
    host_says(dev4, hostframes.ack(SID, 1), 1000)  # an ack in the same ms is measured too
    assert dev4.rtt[_SRTT] == 1 and dev4.rto == 100


def test_a_move_after_a_quiet_spell_is_not_a_timeout():
    """Everything acknowledged, then seconds without an event (between two
    moves): the next events go out all at once and their resend wait counts
    from their sending, not from the last ack (it was a timeout at once: a
    hello, a doubled wait and one event alone as a probe)."""
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    dev.uart.take()
    host_says(dev, hostframes.ack(SID, 1), 1030)
    rto = dev.rto
    emit(dev, 3)
    flush(dev, 1030 + 8 * HELLO_MS)  # the host silent for 40 s: it owed nothing
    assert kinds(dev) == ["E", "E", "E"] and dev.rto == rto
    dev.send(1030 + 8 * HELLO_MS + rto - 1)
    assert sent_seqs(dev) == []
    flush(dev, 1030 + 8 * HELLO_MS + rto)  # no ack for the resend wait: 2 again
    assert sent_seqs(dev) == [2]


def test_a_slow_host_gets_one_event_again_per_timeout_not_the_whole_window():
    """A host slow to answer (a queue, a disk stall; the hall network at load)
    while it hears from the clock: each timeout sends the oldest owed event
    alone (200 clocks each sending their window again fed the logger's queue
    until nothing got through, docs/benchmarks.md); its answer says what else
    is missing: an ack, an R, or W (a reconnect: everything owed at once)."""
    dev = device()
    emit(dev, 40)
    for t in range(1000, 1300, 10):
        dev.send(t)
    assert sent_seqs(dev) == list(range(1, 41))
    host_says(dev, hostframes.ack(SID, 2), 1400)  # the host is there, slowly
    t = 1400
    for _ in range(4):
        t += dev.rto
        flush(dev, t)
        assert sent_seqs(dev) == [3], t
    host_says(dev, protocol.who(), t + 10)
    for k in range(30):  # two frames a pass
        dev.send(t + 10 + k * BURST_GAP_MS)
    assert sent_seqs(dev) == list(range(3, 41))


def test_a_damaged_line_from_the_host_sends_the_owed_events_again_at_once():
    """An ack or an R damaged on its way (docs/protocol.md "Resend"): what is
    owed goes again in the next pass, not after the resend wait; once per
    damaged line, and nothing when nothing is owed."""
    dev = device()
    emit(dev, 3)
    flush(dev, 1000)
    dev.uart.take()
    host_says(dev, b"A 0000abcd 1*ffffffff\n", 1010)  # a bad CRC
    flush(dev, 1010)
    assert sent_seqs(dev) == [1, 2, 3] and dev.bad == 1
    host_says(dev, hostframes.ack(SID, 3), 1020)
    host_says(dev, b"garbage\n", 1030)  # nothing owed: nothing sent
    flush(dev, 1030)
    assert sent_seqs(dev) == [] and dev.bad == 2


def test_the_hello_answer_gives_a_first_round_trip_when_no_event_was_timed():
    """Noise can keep every event from being timed (each one sent again):
    the host's ack of the hello is then the first round trip measured, not
    RESEND_MS; one already measured is kept."""
    dev = device()
    emit(dev, 2)
    flush(dev, 1000)  # the hello and 1, 2 at 1000
    host_says(dev, hostframes.resend(SID, 1), 1020)  # 1 goes again: not timed
    flush(dev, 1020)
    host_says(dev, hostframes.ack(SID, 2), 1060)
    assert dev.rtt[_SRTT] == 61 and dev.rto == 183  # from the hello at 1000
    host_says(dev, hostframes.ack(SID, 2), 1400)
    assert dev.rtt[_SRTT] == 61
    late = device()
    emit(late, 1)
    flush(late, 1000)
    host_says(late, hostframes.resend(SID, 1), 1020)
    flush(late, 1020)
    host_says(late, hostframes.ack(SID, 1), 1000 + RESEND_MS)  # too late to say
    assert late.rtt[_SRTT] == 0 and late.rto == RESEND_MS


def test_the_wait_of_ports_versions(tmp_path):
    """``ports --versions --wait-s S``: above 0 and at most 60, as deploy's."""
    missing = str(tmp_path / "no-such-port")
    for s in ("0", "60.5", "nan"):
        code, err = run(["ports", "--port", missing, "--wait-s", s])
        assert code == 2 and "--wait-s" in err, err
    for s in ("0.1", "60"):  # taken: the port itself is what is not there
        code, err = run(["ports", "--port", missing, "--wait-s", s])
        assert code == 0 and "--wait-s" not in err, err


def test_an_ack_after_a_damaged_line_is_not_timed():
    """A damaged line sends the owed events again: the ack that follows may
    answer either sending, so it is no round trip (the wait stays three of
    the last one measured)."""
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 1), 1040)
    assert dev.rtt[_SRTT] == 41 and dev.rto == 123
    emit(dev, 2)
    flush(dev, 1100)
    host_says(dev, b"garbage\n", 1110)  # an ack or an R damaged: 2 and 3 go again
    flush(dev, 1110)
    assert sent_seqs(dev) == [1, 2, 3, 2, 3]
    host_says(dev, hostframes.ack(SID, 3), 1400)
    assert dev.rtt[_SRTT] == 41 and dev.rto == 123


def test_a_damaged_line_with_nothing_sent_owed_keeps_where_the_host_asked_to_go_on():
    """Every event sent is acknowledged, and the host asked to go on from a
    later one: a damaged line then owes nothing again, the sending goes on
    where the host put it."""
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 1), 1040)
    dev.uart.take()
    emit(dev, 4)  # 2 to 5, not sent yet
    host_says(dev, hostframes.resend(SID, 4), 1050)
    host_says(dev, b"garbage\n", 1060)
    flush(dev, 1060)
    assert sent_seqs(dev) == [4, 5] and dev.bad == 1


def test_the_first_event_is_timed_from_its_sending_not_from_the_boot():
    """A clock whose first event goes out seconds after it booted: the ack's
    round trip counts from that event's sending (the wait is three of it),
    not from when the link was made."""
    dev = device(now=1000)
    emit(dev, 1)
    flush(dev, 5000)  # the hello and event 1, 4 s after the boot
    host_says(dev, hostframes.ack(SID, 1), 5040)
    assert dev.rtt[_SRTT] == 41 and dev.rto == 123


def test_a_damaged_line_sends_a_single_owed_event_again_at_once():
    """One event sent and not yet acknowledged: a damaged line from the host
    (its ack, most likely) sends it again in the next pass, not after the
    resend wait."""
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    dev.uart.take()
    host_says(dev, b"A 0000abcd 1*ffffffff\n", 1010)
    flush(dev, 1010)
    assert sent_seqs(dev) == [1]


def test_an_ack_after_a_resend_request_is_not_timed():
    """The host asked for events again (R): the ack after it may answer
    either sending, so it is no round trip."""
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 1), 1040)
    emit(dev, 2)
    flush(dev, 1100)
    host_says(dev, hostframes.resend(SID, 2), 1110)
    flush(dev, 1110)
    assert sent_seqs(dev) == [1, 2, 3, 2, 3]
    host_says(dev, hostframes.ack(SID, 3), 1400)
    assert dev.rtt[_SRTT] == 41 and dev.rto == 123


def test_each_new_event_is_timed_from_its_own_sending():
    """Move after move: every ack of a fresh event is a round trip of its
    own, smoothed into the last (a quarter of the difference)."""
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 1), 1040)
    emit(dev, 1)
    flush(dev, 2000)
    host_says(dev, hostframes.ack(SID, 2), 2063)  # 63 ms: 64 counted (+1: never 0)
    assert dev.rtt[_SRTT] == 41 + (64 - 41) // 4 == 46 and dev.rto == 138


def test_a_doubled_wait_below_resend_ms_is_kept_whole():
    """Timeouts in a row double the wait while the double stays within
    RESEND_MS: 600 ms becomes 1 200, then the cap."""
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 1), 1199)  # 200 ms: a wait of 600
    assert dev.rto == 600
    emit(dev, 1)
    flush(dev, 1300)
    dev.send(1300 + 600)
    assert dev.rto == 1200
    dev.send(1300 + 600 + 1200)
    assert dev.rto == RESEND_MS


def test_one_frame_a_pass_a_timeout_owing_a_hello_sends_the_hello_alone():
    """A clock on the hall network sends one frame a pass: a timeout that
    owes a hello (no host heard yet) sends the hello in that pass and the
    oldest owed event in the next, never two frames in one pass."""
    class OneFrame(FakeUART):
        burst = 1
    dev = DeviceLink(OneFrame(), SID, "table-1", "scrabble", SETTINGS, "t", 1000)
    emit(dev, 2)
    for t in (1000, 1020, 1040):
        dev.send(t)
        assert len(kinds(dev)) == 1
    t = 1020 + dev.rto  # the wait counts from event 1's sending
    dev.send(t)
    assert kinds(dev) == ["H"]
    dev.send(t + BURST_GAP_MS)
    assert sent_seqs(dev) == [1]


@pytest.mark.parametrize("then", [b"garbage\n", protocol.who()])
def test_a_damaged_line_or_a_who_never_moves_the_sending_past_an_asked_event(then):
    """The host asked for an event it already acknowledged (a late R): a
    damaged line or a W after it only ever send from further back, so the
    asked event still goes out."""
    dev = device()
    emit(dev, 3)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 2), 1040)
    dev.uart.take()
    host_says(dev, hostframes.resend(SID, 2), 1050)
    host_says(dev, then, 1060)
    flush(dev, 1060)
    assert sent_seqs(dev) == [2, 3]


def test_a_timeout_pass_sends_the_oldest_and_one_new_event_at_most():
    """A timeout sends the oldest owed event again; new events waiting share
    the same pass's budget of two frames (the rest in the next passes)."""
    dev = device()
    emit(dev, 2)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 1), 1040)
    dev.uart.take()
    emit(dev, 2)  # 3 and 4, not sent yet
    dev.send(1040 + dev.rto)
    assert sent_seqs(dev) == [2, 3]
    dev.send(1040 + dev.rto + BURST_GAP_MS)
    assert sent_seqs(dev) == [4]


def test_an_ack_after_a_who_is_not_timed():
    """A W (a host that reconnected) has every owed event sent again: the ack
    after it may answer either sending, so it is no round trip."""
    dev = device()
    emit(dev, 1)
    flush(dev, 1000)
    host_says(dev, hostframes.ack(SID, 1), 1040)
    emit(dev, 2)
    flush(dev, 1100)
    host_says(dev, protocol.who(), 1110)
    flush(dev, 1110)
    assert sent_seqs(dev) == [1, 2, 3, 2, 3]
    host_says(dev, hostframes.ack(SID, 3), 1400)
    assert dev.rtt[_SRTT] == 41 and dev.rto == 123
