"""The Scrabble move clock, clause by clause (ČAS rules, docs/rules.md §1).
MicroPython-compatible: also run inside the MicroPython VM."""
from hallclock_fw.core.scrabble import ScrabbleClock
from hallclock_fw.events import BTN_A, BTN_B, BTN_PAUSE, BTN_START, LONG
from hallclock_fw.settings import parse

from .harness import WRAP_START, Sim


def make(base=0, pairs=()):
    return Sim(ScrabbleClock, parse("scrabble", list(pairs)), base)


def started(base=0, pairs=()):
    sim = make(base, pairs)
    sim.press(0, BTN_START)
    sim.press(1000, BTN_B)  # 4.2: B starts A's first move
    return sim


def test_b_starts_first_move_after_start_signal():
    # 4.2, 5.1.2: after START, B's press starts A's move 1 and ends no move
    sim = make()
    sim.press(0, BTN_START)
    sim.press(1000, BTN_B)
    turns = sim.rec.of("turn")
    assert len(turns) == 1
    assert turns[0][0] == 1000
    assert turns[0][2] == {"player": 0, "move": 1, "limit_ms": 120000}
    assert sim.rec.of("press") == []


def test_a_press_before_first_move_changes_nothing():
    sim = make()
    sim.press(0, BTN_START)
    sim.press(500, BTN_A)
    assert sim.rec.of("turn") == []
    sim.press(900, BTN_B)
    assert sim.rec.of("turn")[0][2]["player"] == 0


def test_every_press_starts_a_fresh_limit():
    # 16.8: every press starts a new limit; 5.1.3: a move's time runs from the opponent's press
    sim = started()
    sim.press(50000, BTN_A)  # A used 49 s; B's limit starts now
    press = sim.rec.of("press")[0]
    assert press[2] == {"player": 0, "move": 1, "used_ms": 49000}
    turn = sim.rec.of("turn")[1]
    assert turn[0] == 50000 and turn[2]["player"] == 1 and turn[2]["move"] == 2
    # B's limit is a full 120 s from B's turn, not what A left over
    assert sim.core.left_ms(sim.t(50000)) == 120000
    sim.run_to(50000 + 89999)
    assert sim.rec.of("warn") == []
    sim.run_to(50000 + 90000)
    assert sim.rec.of("warn")[0][0] == 140000


def test_warnings_at_30_20_10_once_per_limit():
    sim = started()
    sim.run_to(1000 + 119999)
    warns = sim.rec.of("warn")
    assert [(w[0], w[2]["left_s"]) for w in warns] == [(91000, 30), (101000, 20), (111000, 10)]
    for w in warns:
        assert w[2]["player"] == 0 and w[2]["move"] == 1
    # ticking again at the same or later times never repeats a warning
    sim.run_to(1000 + 119999, period=1)
    assert len(sim.rec.of("warn")) == 3
    assert sim.rec.of("expired") == []


def test_custom_warnings_and_limit():
    sim = started(pairs=["move_s=60", "warn_s=15,5"])
    sim.run_to(70000)
    assert [(w[0], w[2]["left_s"]) for w in sim.rec.of("warn")] == [(46000, 15), (56000, 5)]
    assert sim.rec.of("expired")[0][0] == 61000


def test_expiry_long_signal_and_overtime_until_press():
    # 5.1.4, 10.2.6: the limit runs out -> expired; the clock shows the overtime
    sim = started()
    sim.run_to(121000)
    exp = sim.rec.of("expired")
    assert len(exp) == 1 and exp[0][0] == 121000
    assert exp[0][2] == {"player": 0, "move": 1}
    assert sim.core.overtime()
    sim.run_to(126500)
    assert sim.core.left_ms(sim.t(126500)) == -5500  # overtime counts up
    assert len(sim.rec.of("expired")) == 1
    sim.press(127000, BTN_A)
    assert sim.rec.of("press")[0][2]["used_ms"] == 126000
    assert not sim.core.overtime()
    assert sim.rec.of("turn")[-1][2]["player"] == 1


def test_press_by_waiting_player_changes_nothing():
    sim = started()
    before = len(sim.rec.events)
    sim.press(5000, BTN_B)  # B's time is not running
    assert len(sim.rec.events) == before
    assert sim.core.player == 0
    assert sim.core.left_ms(sim.t(5000)) == 116000


def test_move_numbering_alternates():
    sim = started()
    t = 1000
    for _ in range(5):
        t += 3000
        sim.press(t, BTN_A if sim.core.player == 0 else BTN_B)
    turns = sim.rec.of("turn")
    assert [x[2]["move"] for x in turns] == [1, 2, 3, 4, 5, 6]
    assert [x[2]["player"] for x in turns] == [0, 1, 0, 1, 0, 1]
    presses = sim.rec.of("press")
    assert [p[2]["used_ms"] for p in presses] == [3000] * 5


def test_challenge_pause_then_fresh_limit_for_challenger():
    # 9.1, 10.1: A ends the move, B challenges (PAUSE); after the ruling A
    # presses and B's time runs again with a fresh limit.
    sim = started()
    sim.press(11000, BTN_A)  # B's move 2 from 11000
    sim.press(41000, BTN_PAUSE)  # 30 s into B's move
    pause = sim.rec.of("pause")[0]
    assert pause[2] == {"player": 1, "move": 2}
    assert sim.core.paused()
    sim.run_to(200000)  # time stopped: no warning, no expiry while paused
    assert sim.rec.of("warn") == [] and sim.rec.of("expired") == []
    assert sim.core.left_ms(sim.t(200000)) == 90000  # as it stood
    sim.press(200000, BTN_A)
    resume = sim.rec.of("resume")[0]
    assert resume[0] == 200000 and resume[2]["player"] == 1 and resume[2]["move"] == 2
    assert resume[2]["limit_ms"] == 120000
    assert sim.core.left_ms(sim.t(200000)) == 120000  # a fresh limit
    sim.run_to(290000)
    assert sim.rec.of("warn")[0][0] == 290000  # 30 s left of the fresh limit
    sim.press(300000, BTN_B)
    # used_ms excludes the pause: 30 s before, 100 s after
    assert sim.rec.of("press")[-1][2] == {"player": 1, "move": 2, "used_ms": 130000}


def test_stop_pause_then_time_for_the_other_player():
    # 11.1, 11.2: after a STOP the time may run for the stopping player:
    # B presses while paused -> A's time... here A's move is stopped by B and
    # the ruling gives the time to B: A presses -> B's time runs.
    sim = started()
    sim.press(21000, BTN_PAUSE)  # A's move 1 stopped after 20 s
    sim.press(60000, BTN_A)  # A's press while paused starts B's time
    presses = sim.rec.of("press")
    assert presses[-1][2] == {"player": 0, "move": 1, "used_ms": 20000}
    turn = sim.rec.of("turn")[-1]
    assert turn[0] == 60000 and turn[2]["player"] == 1 and turn[2]["move"] == 2
    assert sim.rec.of("resume")[-1][2]["player"] == 1
    assert sim.core.player == 1 and not sim.core.paused()


def test_pause_toggles_and_is_ignored_before_play():
    sim = make()
    sim.press(0, BTN_PAUSE)
    assert sim.rec.of("pause") == []
    sim.press(100, BTN_B)
    sim.press(5000, BTN_PAUSE)
    sim.press(9000, BTN_PAUSE)  # a second PAUSE: the same player goes on (ČAS 8.7.1)
    assert sim.rec.of("resume")[-1][2]["player"] == 0
    assert sim.core.left_ms(sim.t(9000)) == 115100  # 4.9 s used before the pause


def test_long_press_codes_do_not_act_as_presses():
    sim = started()
    n = len(sim.rec.events)
    sim.press(3000, BTN_B | LONG)
    sim.press(3000, BTN_A | LONG)
    assert len(sim.rec.events) == n


def test_next_deadline_is_the_next_warning_then_expiry():
    sim = started()
    core = sim.core
    assert core.next_deadline(sim.t(2000)) == sim.t(91000)
    sim.run_to(91000)
    assert core.next_deadline(sim.t(91000)) == sim.t(101000)
    sim.run_to(111000)
    assert core.next_deadline(sim.t(111000)) == sim.t(121000)


def test_across_the_tick_wrap():
    # ticks wrap at 2**30 on the ESP32: start 5 s below it
    sim = started(base=WRAP_START)
    assert sim.t(0) > sim.t(10000)  # the raw tick value really wraps
    sim.run_to(130000)
    assert [w[0] for w in sim.rec.of("warn")] == [91000, 101000, 111000]
    assert sim.rec.of("expired")[0][0] == 121000
    sim.press(130000, BTN_A)
    assert sim.rec.of("press")[0][2]["used_ms"] == 129000


def test_jittery_loop_no_drift_each_warning_within_one_period():
    # 1-20 ms loop periods: every warning within one loop period of its ideal
    # time, and no drift: after 12 moves each ideal time is still met.
    for base in (0, WRAP_START):
        sim = started(base=base)
        x = 7 + base % 11  # the loop periods: a fixed pseudo-random 1..20 ms
        ideal = []
        turn_at = 1000
        for move in range(12):
            for left in (30, 20, 10):
                ideal.append(turn_at + 120000 - left * 1000)
            ideal.append(turn_at + 120000)  # expiry
            press_at = turn_at + 125000
            while True:
                x = (x * 75 + 74) % 65537
                step = 1 + x % 20
                if sim.ms + step > press_at:
                    break
                sim.ms += step
                sim.core.tick(sim.t(sim.ms))
            # the press lands on a loop pass too
            sim.ms = press_at
            sim.core.tick(sim.t(press_at))
            sim.core.button(BTN_A if move % 2 == 0 else BTN_B, sim.t(press_at))
            turn_at = press_at
        actual = [e[0] for e in sim.rec.events if e[1] in ("warn", "expired")]
        assert len(actual) == len(ideal) == 48
        for got, want in zip(actual, ideal):
            assert 0 <= got - want < 20, (got, want)
        assert sim.rec.of("turn")[-1][0] == 1000 + 12 * 125000  # no drift
