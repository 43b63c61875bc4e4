"""The duplicate countdown's state as the app and the host see it: the time
shown, the snapshot, a restore taken once (Polish rules II.3, II.5, II.13).
MicroPython-compatible: plain asserts."""
from hallclock_fw.core.duplicate import DuplicateTimer
from hallclock_fw.events import BTN_PAUSE, BTN_START
from hallclock_fw.settings import parse

from .harness import Sim

DUP = 180000


def _sim():
    return Sim(DuplicateTimer, parse("duplicate", []), 0)


def test_the_time_shown_never_goes_below_zero():
    # II.5: at 0 the time is up; a display asked past the deadline before the
    # loop's tick shows 0:00, not a negative time
    s = _sim()
    s.press(0, BTN_START)
    s.run_to(DUP - 1)
    assert s.core.left_ms(s.t(DUP - 1)) == 1
    assert s.core.left_ms(s.t(DUP)) == 0
    assert s.core.left_ms(s.t(DUP + 7)) == 0


def test_a_snapshot_says_whether_the_countdown_stood_paused():
    s = _sim()
    s.press(0, BTN_START)
    assert s.core.snapshot(s.t(1000)) == (1, DUP - 1000, 0)
    s.press(1000, BTN_PAUSE)
    assert s.core.snapshot(s.t(4000)) == (1, DUP - 1000, 1)
    r = _sim()
    assert r.core.restore(s.core.snapshot(s.t(4000)), r.t(0))
    assert r.core.paused() and r.core.left_ms(r.t(3000)) == DUP - 1000


def test_a_restore_is_taken_once_and_the_hall_game_never_ends():
    s = _sim()
    assert s.core.fresh() and not s.core.over()
    assert s.core.restore((3, 50000, 0), s.t(0))
    assert not s.core.fresh() and not s.core.over()
    assert not s.core.restore((7, 90000, 0), s.t(10))
    assert s.core.move == 3 and s.core.left_ms(s.t(10)) == 49990
    assert not _sim().core.restore((0, 50000, 0), 0)  # no move had started


def test_a_countdown_that_started_is_no_fresh_timer():
    s = _sim()
    s.press(0, BTN_START)
    assert not s.core.fresh()
    assert not s.core.restore((3, 50000, 0), s.t(10))


def test_a_restore_before_every_announcement_keeps_them_all():
    s = Sim(DuplicateTimer, parse("duplicate", []), 0)
    assert s.core.restore((2, 150000, 0), s.t(0))
    s.run_to(150000)
    assert [(e[0], e[2]["left_s"]) for e in s.rec.of("announce")] == [
        (30000, 120), (90000, 60), (120000, 30)]


def test_a_restore_of_a_move_whose_time_was_up_logs_no_time_left():
    s = Sim(DuplicateTimer, parse("duplicate", []), 0)
    assert s.core.restore((4, 0, 0), s.t(0))
    assert s.rec.events == [(0, "resume", {"player": -1, "move": 4, "limit_ms": 0})]
