"""Every time threshold of the cores one ms below, on, and one ms above its
exact value (docs/testing.md, "Thresholds and the tests that pin them"):
warnings and expiry (ČAS 16.8, 5.1.4), a pause at expiry (8.7.1), a restore
on a threshold, the duplicate announcements and final signal (II.3, II.5),
and the tick wrap.  MicroPython-compatible: plain asserts, no pytest."""
from hallclock_fw.core.duplicate import DuplicateTimer
from hallclock_fw.core.scrabble import ScrabbleClock
from hallclock_fw.core.timing import TICKS_MAX, earliest, ticks_add, ticks_diff
from hallclock_fw.events import BTN_B, BTN_PAUSE, BTN_START, GONG_END, GONG_START, GONG_TEN
from hallclock_fw.settings import parse

from .harness import WRAP_START, Sim

LIMIT = 120000  # the default Scrabble limit (move_s=120)


def _scrabble(base=0):
    s = Sim(ScrabbleClock, parse("scrabble", []), base)
    s.press(0, BTN_START)
    s.press(0, BTN_B)  # A's first move runs from 0
    s.rec.clear()
    return s


def _warns(s):
    return [(e[0], e[2]["left_s"]) for e in s.rec.of("warn")]


def test_each_warning_sounds_on_its_exact_ms_not_one_before():
    # 16.8: the warnings at 30, 20 and 10 s left
    for left in (30000, 20000, 10000):
        s = _scrabble()
        s.run_to(LIMIT - left - 1)
        assert [w for w in _warns(s) if w[1] == left // 1000] == []
        s.run_to(LIMIT - left)
        assert (LIMIT - left, left // 1000) in _warns(s)
        s.run_to(LIMIT - left + 1)
        assert [w for w in _warns(s) if w[1] == left // 1000] == [(LIMIT - left, left // 1000)]


def test_the_limit_runs_out_on_its_exact_ms():
    # 5.1.4: the long final signal when the limit has run out, not a ms before
    s = _scrabble(WRAP_START)  # the deadline lies across the tick wrap
    s.run_to(LIMIT - 1)
    assert s.rec.of("expired") == [] and s.core.left_ms(s.t(LIMIT - 1)) == 1
    assert not s.core.overtime()
    s.run_to(LIMIT)
    assert [e[0] for e in s.rec.of("expired")] == [LIMIT]
    assert s.core.overtime() and s.core.left_ms(s.t(LIMIT)) == 0
    s.run_to(LIMIT + 1)
    assert len(s.rec.of("expired")) == 1 and s.core.left_ms(s.t(LIMIT + 1)) == -1


def test_a_pause_on_the_ms_of_expiry_gives_one_final_signal():
    # 8.7.1 / 5.1.4: the limit ran out on the pause's ms; going on counts the
    # overtime and the long final signal is not given a second time
    s = _scrabble()
    s.press(LIMIT, BTN_PAUSE)
    s.press(LIMIT + 5000, BTN_PAUSE)
    s.run_to(LIMIT + 20000)
    assert [e[0] for e in s.rec.of("expired")] == [LIMIT]
    assert s.core.overtime() and s.core.left_ms(s.t(LIMIT + 20000)) == -15000


def test_a_pause_read_before_the_expiry_tick_still_gives_the_final_signal():
    # 5.1.4: the loop reads the buttons before it ticks the core; a PAUSE whose
    # contact closed on (or after) the limit's last ms finds the limit run out:
    # the final signal comes first, once, and the move goes on in overtime
    for late in (0, 3):
        s = _scrabble()
        s.run_to(LIMIT - 1)
        s.core.button(BTN_PAUSE, s.t(LIMIT + late))  # no tick at the deadline
        assert [e[1] for e in s.rec.events if e[1] != "warn"] == ["expired", "pause"]
        s.core.button(BTN_PAUSE, s.t(LIMIT + 1000))
        s.ms = LIMIT + 1000
        s.run_to(LIMIT + 9000)
        assert len(s.rec.of("expired")) == 1 and s.core.overtime()


def test_a_pause_one_ms_before_expiry_keeps_that_ms():
    s = _scrabble()
    s.press(LIMIT - 1, BTN_PAUSE)
    assert s.rec.of("expired") == [] and s.core.left_ms(s.t(LIMIT + 500)) == 1
    s.press(LIMIT + 1000, BTN_PAUSE)
    s.run_to(LIMIT + 1000)
    assert s.rec.of("expired") == []
    s.run_to(LIMIT + 1001)
    assert [e[0] for e in s.rec.of("expired")] == [LIMIT + 1001]


def _restored(left, base=0):
    s = Sim(ScrabbleClock, parse("scrabble", []), base)
    assert s.core.restore((5, 0, left, 0, 0, -1, -1, 0), s.t(0))
    return s


def test_a_restore_on_a_warning_threshold_does_not_repeat_that_warning():
    # 16.8, 8.7.1: a warning already given is not repeated; 20 000 ms left is
    # the moment the 20 s warning was given
    s = _restored(20000)
    s.run_to(20000)
    assert _warns(s) == [(10000, 10)]
    s = _restored(20001)
    s.run_to(20001)
    assert _warns(s) == [(1, 20), (10001, 10)]
    s = _restored(19999)
    s.run_to(19999)
    assert _warns(s) == [(9999, 10)]


def test_a_restore_with_no_time_left_is_overtime_without_a_second_signal():
    s = _restored(0)
    s.run_to(5000)
    assert s.rec.of("expired") == [] and s.core.overtime()
    assert s.core.left_ms(s.t(5000)) == -5000
    s = _restored(1)
    s.run_to(1)
    assert [e[0] for e in s.rec.of("expired")] == [1]


def test_a_restore_never_gives_more_than_the_limit():
    for left, shown in ((LIMIT - 1, LIMIT - 1), (LIMIT, LIMIT), (LIMIT + 1, LIMIT)):
        s = _restored(left)
        assert s.core.left_ms(s.t(0)) == shown
        assert s.rec.events[0][2]["limit_ms"] == shown
        s.run_to(shown - 30000)
        assert _warns(s) == [(shown - 30000, 30)]


# -- duplicate (II.3: the time told at each announce_s left; II.5: the final signal)

DUP = 180000


def _dup():
    s = Sim(DuplicateTimer, parse("duplicate", []), 0)
    s.press(0, BTN_START)
    s.rec.clear()
    return s


def _anns(s):
    return [(e[0], e[2]["left_s"]) for e in s.rec.of("announce")]


def test_each_announcement_on_its_exact_ms():
    for left in (120000, 60000, 30000):
        s = _dup()
        s.run_to(DUP - left - 1)
        assert [a for a in _anns(s) if a[1] == left // 1000] == []
        s.run_to(DUP - left)
        assert (DUP - left, left // 1000) in _anns(s)
        s.run_to(DUP - left + 1)
        assert [a for a in _anns(s) if a[1] == left // 1000] == [(DUP - left, left // 1000)]


def test_the_final_signal_on_its_exact_ms():
    s = _dup()
    s.run_to(DUP - 1)
    assert s.rec.of("dup_end") == [] and s.core.left_ms(s.t(DUP - 1)) == 1
    s.run_to(DUP)
    assert [e[0] for e in s.rec.of("dup_end")] == [DUP]
    assert s.core.left_ms(s.t(DUP + 1)) == 0 and not s.core.running()


def test_a_pause_on_the_ms_of_the_final_signal_comes_too_late():
    # II.5: once the final signal has sounded no pause buys the hall time
    s = _dup()
    s.press(DUP, BTN_PAUSE)
    s.press(DUP + 1000, BTN_PAUSE)
    s.run_to(DUP + 5000)
    assert [e[0] for e in s.rec.of("dup_end")] == [DUP]
    assert s.rec.of("pause") == [] and s.rec.of("resume") == []


def test_a_pause_read_before_the_final_tick_gives_the_final_signal_first():
    s = _dup()
    s.run_to(DUP - 1)
    s.core.button(BTN_PAUSE, s.t(DUP))
    assert [e[1] for e in s.rec.events][-1:] == ["dup_end"]
    assert not s.core.paused()


def _dup_restored(left):
    s = Sim(DuplicateTimer, parse("duplicate", []), 0)
    assert s.core.restore((4, left, 0), s.t(0))
    return s


def test_a_restore_on_an_announcement_does_not_announce_it_again():
    s = _dup_restored(60000)
    s.run_to(60000)
    assert _anns(s) == [(30000, 30)]
    s = _dup_restored(60001)
    s.run_to(60001)
    assert _anns(s) == [(1, 60), (30001, 30)]
    s = _dup_restored(59999)
    s.run_to(59999)
    assert _anns(s) == [(29999, 30)]


def test_a_restore_with_no_time_left_waits_for_start():
    s = _dup_restored(0)
    s.run_to(5000)
    assert s.rec.of("dup_end") == [] and not s.core.running()
    assert s.core.left_ms(s.t(5000)) == 0
    s = _dup_restored(1)
    s.run_to(1)
    assert [e[0] for e in s.rec.of("dup_end")] == [1]
    s = _dup_restored(DUP + 1)
    assert s.core.left_ms(s.t(0)) == DUP


# -- the tick wrap (ticks wrap at 2**30 ms, as on the ESP32)

def test_ticks_wrap_at_two_to_the_thirty():
    assert TICKS_MAX == (1 << 30) - 1
    assert ticks_add(TICKS_MAX, 1) == 0
    assert ticks_add(TICKS_MAX - 1, 1) == TICKS_MAX
    assert ticks_add(0, -1) == TICKS_MAX
    assert ticks_diff(0, TICKS_MAX) == 1 and ticks_diff(TICKS_MAX, 0) == -1
    half = 1 << 29  # the farthest a deadline can lie ahead
    assert ticks_diff(half - 1, 0) == half - 1
    assert ticks_diff(half, 0) == -half
    assert ticks_diff(0, half) == -half
    assert ticks_diff(0, half + 1) == half - 1


def test_earliest_deadline_on_both_sides_of_the_wrap():
    now = TICKS_MAX - 10
    a = ticks_add(now, 20)  # past the wrap: a small number
    b = ticks_add(now, 5)
    assert earliest(now, a, b) == b and earliest(now, b, a) == b
    assert earliest(now, a, a) == a and earliest(now, None, a) == a
    assert earliest(now, b, None) == b and earliest(now, None, None) is None


# -- the round's gongs (ČAS 4.1, 6.1: the ten-minute gong at START + 30 min,
# the end gong at START + 40 min; a clock that joins late gives those still ahead)

MIN = 60000


_KIND = {GONG_START: "start", GONG_TEN: "ten", GONG_END: "end"}


def _gongs(s):
    return [(e[0], _KIND.get(e[2]["kind"], "manual")) for e in s.rec.of("gong")]


def test_the_ten_minute_and_end_gongs_on_their_exact_ms():
    s = Sim(ScrabbleClock, parse("scrabble", []), WRAP_START)
    s.press(0, BTN_START)
    s.run_to(30 * MIN - 1)
    assert [g[1] for g in _gongs(s)] == ["start"]
    s.run_to(30 * MIN)
    assert _gongs(s)[1:] == [(30 * MIN, "ten")]
    s.run_to(40 * MIN - 1)
    assert len(_gongs(s)) == 2
    s.run_to(40 * MIN)
    assert _gongs(s)[2:] == [(40 * MIN, "end")]
    assert s.core.round.step == 0  # 16.3: the play-out starts with the end gong


def _joined(elapsed):
    s = Sim(ScrabbleClock, parse("scrabble", []), 0)
    assert s.core.round.join(s.t(0), 3, elapsed, 0)
    s.run_to(41 * MIN)
    return [(t, kind) for t, kind in _gongs(s)]


def test_a_late_join_gives_only_the_gongs_still_ahead():
    ten, end = 30 * MIN, 40 * MIN
    assert _joined(ten - 1) == [(1, "ten"), (end - ten + 1, "end")]
    assert _joined(ten) == [(end - ten, "end")]  # the ten-minute gong's ms: given
    assert _joined(ten + 1) == [(end - ten - 1, "end")]
    assert _joined(end - 1) == [(1, "end")]
    assert _joined(end) == []  # the end gong's ms: given; the play-out counts from now
    assert _joined(end + 1) == []


def test_joined_on_the_end_gong_counts_the_play_out_from_then():
    s = Sim(ScrabbleClock, parse("scrabble", []), 0)
    assert s.core.round.join(s.t(0), 3, 40 * MIN, 0)
    assert s.core.round.step == 0
    s = Sim(ScrabbleClock, parse("scrabble", []), 0)
    assert s.core.round.join(s.t(0), 3, 40 * MIN - 1, 0)
    assert s.core.round.step < 0


def test_long_warnings_and_announcements_tell_whole_seconds():
    # 16.8, II.3: the time told is the setting in whole seconds, however long
    s = Sim(ScrabbleClock, parse("scrabble", ["move_s=3000", "warn_s=1000,999"]), 0)
    s.press(0, BTN_START)
    s.press(0, BTN_B)
    s.run_to(2001000)
    assert _warns(s) == [(2000000, 1000), (2001000, 999)]
    d = Sim(DuplicateTimer, parse("duplicate", ["move_s=3000", "announce_s=1000,999"]), 0)
    d.press(0, BTN_START)
    d.run_to(2001000)
    assert _anns(d) == [(2000000, 1000), (2001000, 999)]
