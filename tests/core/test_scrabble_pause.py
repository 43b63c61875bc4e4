"""ČAS 8.7.1 (a player may not stop and restart the time to gain time), with
9.1/10.1 (a challenge: the time restarts for the challenger) and 11.2 (STOP:
the time runs for the player the rule names), clause by clause
(docs/rules.md).  MicroPython-compatible: plain asserts, no pytest."""
from hallclock_fw.core.scrabble import ScrabbleClock
from hallclock_fw.events import BTN_A, BTN_B, BTN_PAUSE
from hallclock_fw.settings import parse

from .harness import WRAP_START, Sim


def _started(base=0):
    s = Sim(ScrabbleClock, parse("scrabble", []), base)
    s.press(0, BTN_B)  # 4.2: B starts A's move 1 at 0
    return s


def test_871_pause_undone_by_pause_goes_on_with_the_time_left():
    s = _started()
    s.press(50000, BTN_PAUSE)
    s.press(200000, BTN_PAUSE)  # however long the stop, the move has 70 s left
    assert s.rec.of("resume")[-1][2] == {"player": 0, "move": 1, "limit_ms": 70000}
    assert s.core.left_ms(s.t(200000)) == 70000
    s.run_to(270000)
    assert [e[0] for e in s.rec.of("expired")] == [270000]


def test_871_pausing_twice_in_a_row_buys_nothing():
    s = _started(WRAP_START)
    for t in range(10000, 100000, 10000):  # stop and restart nine times
        s.press(t, BTN_PAUSE)
        s.press(t + 5000, BTN_PAUSE)
    # 120 s of limit, 9 × 5 s stopped: the limit ends at 165 s, not later
    s.run_to(400000)
    assert [e[0] for e in s.rec.of("expired")] == [165000]


def test_871_warnings_already_given_are_not_repeated():
    s = _started()
    s.run_to(95000)  # the 30 s warning at 90 s
    s.press(95000, BTN_PAUSE)
    s.press(99000, BTN_PAUSE)
    s.run_to(200000)
    assert [(e[0], e[2]["left_s"]) for e in s.rec.of("warn")] == [
        (90000, 30), (104000, 20), (114000, 10)]


def test_871_a_pause_in_overtime_goes_on_counting_the_overtime():
    s = _started()
    s.run_to(130000)  # 10 s over
    s.press(130000, BTN_PAUSE)
    s.press(150000, BTN_PAUSE)
    assert s.core.overtime() and s.core.left_ms(s.t(155000)) == -15000
    assert len(s.rec.of("expired")) == 1  # 5.1.4: one long final signal


def test_91_101_the_challengers_restart_is_a_fresh_limit():
    s = _started()
    s.press(30000, BTN_A)  # A ends move 1: B's move 2 from 30 s
    s.press(40000, BTN_PAUSE)  # B challenges A's word: time stops
    s.press(100000, BTN_A)  # after the ruling A (the opponent) restarts B's time
    assert s.rec.of("resume")[-1][2] == {"player": 1, "move": 2, "limit_ms": 120000}
    assert s.core.left_ms(s.t(100000)) == 120000


def test_112_stop_ruled_for_the_stopping_player_starts_the_opponents_move():
    s = _started()
    s.press(20000, BTN_PAUSE)  # STOP during A's move 1
    s.press(30000, BTN_A)  # the paused player A presses: move 1 ends, B's move 2 runs
    assert s.rec.names()[-3:] == ["press", "turn", "resume"]
    assert s.rec.of("turn")[-1][2] == {"player": 1, "move": 2, "limit_ms": 120000}
    assert s.core.player == 1 and s.core.left_ms(s.t(30000)) == 120000
