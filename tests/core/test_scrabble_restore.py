"""ScrabbleClock.restore: the game sent back after a power loss (issue 6).
MicroPython-compatible: plain asserts, no pytest."""
from hallclock_fw.core.scrabble import ScrabbleClock
from hallclock_fw.events import BTN_A, BTN_B, BTN_START
from hallclock_fw.settings import parse

from .harness import WRAP_START, Sim


def _sim(base=0):
    return Sim(ScrabbleClock, parse("scrabble", []), base)


def test_restore_runs_the_move_with_the_time_left():
    s = _sim(WRAP_START)  # the restored deadline crosses the tick wrap
    assert s.core.restore(7, 1, 25000, s.t(0))
    assert s.rec.names() == ["resume"]
    assert s.rec.events[0][2] == {"player": 1, "move": 7, "limit_ms": 25000}
    assert s.core.running() and s.core.player == 1
    assert s.core.left_ms(s.t(1000)) == 24000
    s.run_to(30000)
    # the 30 s warning had passed before the power loss: only 20 and 10 s come
    warns = s.rec.of("warn")
    assert [(e[0], e[2]["left_s"]) for e in warns] == [(5000, 20), (15000, 10)]
    assert [e[0] for e in s.rec.of("expired")] == [25000]
    s.press(40000, BTN_B)
    press = s.rec.of("press")[0][2]
    assert press["move"] == 7 and press["used_ms"] == 95000 + 40000
    assert s.rec.of("turn")[-1][2]["move"] == 8


def test_restore_in_overtime_does_not_expire_again():
    s = _sim()
    assert s.core.restore(3, 0, -4000, s.t(0))
    assert s.core.overtime()
    s.run_to(10000)
    assert s.rec.of("expired") == [] and s.rec.of("warn") == []
    assert s.core.left_ms(s.t(10000)) == -14000


def test_restore_only_before_the_first_move():
    s = _sim()
    s.press(0, BTN_START)
    s.press(1000, BTN_B)
    assert not s.core.restore(5, 0, 60000, s.t(2000))
    assert s.core.move == 1
    fresh = _sim()
    assert not fresh.core.restore(0, 0, 60000, fresh.t(0))  # no move to resume
    assert not fresh.core.restore(4, 2, 60000, fresh.t(0))  # no such player
    assert fresh.rec.events == []
    assert fresh.core.restore(4, 1, 999999, fresh.t(0))  # never more than the limit
    assert fresh.core.left_ms(fresh.t(0)) == 120000
    fresh.press(1000, BTN_A)  # the player whose time does not run: nothing
    assert fresh.rec.names() == ["resume"]
