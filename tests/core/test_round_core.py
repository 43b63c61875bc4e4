"""The round's hall signals for Scrabble: start, ten-minute and end gongs, and
the play-out (ČAS 4.1, 6.1, 16.3; docs/rules.md §1).
MicroPython-compatible: also run inside the MicroPython VM."""
from hallclock_fw.core.round import Round
from hallclock_fw.core.scrabble import ScrabbleClock
from hallclock_fw.events import BTN_A, BTN_B, BTN_GONG, BTN_PAUSE, BTN_START, NULL
from hallclock_fw.settings import parse
from hallclock_fw.signals import signal_for
from hallclock_fw.events import EV_GONG, EV_PLAYOUT, GONG_END, GONG_MANUAL, GONG_START, GONG_TEN

from .harness import WRAP_START, Recorder, Sim

MIN = 60000


def make(base=0, pairs=("round_min=40", "round_warn_min=10")):
    return Sim(ScrabbleClock, parse("scrabble", list(pairs)), base)


def gongs(sim):
    return [(e[0], e[2]["kind"], e[2]["move"]) for e in sim.rec.of("gong")]


def steps(sim):
    return [(e[0], e[2]["step"], e[2]["move"]) for e in sim.rec.of("playout")]


def play_moves(sim, t, n, each_ms):
    """Alternate presses from time ``t``: ``n`` moves of ``each_ms`` each
    (the move in progress at ``t`` is ended first).  Returns the time after."""
    for _ in range(n):
        t += each_ms
        who = sim.core.player
        sim.press(t, BTN_A if who == 0 else BTN_B)
    return t


def test_start_gong_begins_the_basic_time():
    # 4.1: the start signal, then the basic time (40 min) is measured from it
    sim = make()
    sim.press(5000, BTN_START)
    assert gongs(sim) == [(5000, 0, NULL)]
    sim.run_to(5000 + 40 * MIN + 1)
    kinds = [g[1] for g in gongs(sim)]
    assert kinds == [GONG_START, GONG_TEN, GONG_END]


def test_ten_minute_and_end_gongs_at_their_times():
    # 6.1: 10 minutes of basic time left, and the end of basic time
    sim = make()
    sim.press(0, BTN_START)
    sim.press(1000, BTN_B)
    sim.run_to(30 * MIN - 1)
    assert [g[1] for g in gongs(sim)] == [GONG_START]
    sim.run_to(30 * MIN)
    assert gongs(sim)[-1][:2] == (30 * MIN, GONG_TEN)
    sim.run_to(40 * MIN - 1)
    assert len(gongs(sim)) == 2
    sim.run_to(40 * MIN)
    assert gongs(sim)[-1][:2] == (40 * MIN, GONG_END)


def test_gongs_sound_once_even_when_ticked_late_or_often():
    for period in (None, 7, 1000):
        sim = make(pairs=("round_min=3", "round_warn_min=1"))
        sim.press(0, BTN_START)
        sim.run_to(10 * MIN, period)
        assert [g[1] for g in gongs(sim)] == [GONG_START, GONG_TEN, GONG_END]


def test_gongs_carry_the_move_in_progress():
    # 16.3: the end gong names the move in progress (the move players circle)
    sim = make(pairs=("round_min=3", "round_warn_min=1", "move_s=120"))
    sim.press(0, BTN_START)
    sim.press(1000, BTN_B)  # move 1 (A)
    t = play_moves(sim, 1000, 4, 25000)  # moves 2..5 start; 5 runs from 101000
    assert sim.core.move == 5
    sim.run_to(3 * MIN)
    assert gongs(sim) == [(0, GONG_START, NULL), (2 * MIN, GONG_TEN, 5), (3 * MIN, GONG_END, 5)]
    assert t < 2 * MIN


def test_manual_gong_any_time_and_start_only_once():
    sim = make()
    sim.press(100, BTN_GONG)  # before START: move null
    sim.press(200, BTN_START)
    sim.press(300, BTN_START)  # a second start (e.g. relayed twice) changes nothing
    sim.press(1000, BTN_B)
    sim.press(2000, BTN_GONG)
    assert gongs(sim) == [(100, GONG_MANUAL, NULL), (200, GONG_START, NULL),
                          (2000, GONG_MANUAL, 1)]
    # the basic time runs from the first START
    sim.run_to(200 + 40 * MIN)
    assert gongs(sim)[-1] == (200 + 40 * MIN, GONG_END, 1)


def test_no_ten_minute_gong_when_switched_off():
    sim = make(pairs=("round_min=5", "round_warn_min=0"))
    sim.press(0, BTN_START)
    sim.run_to(6 * MIN)
    assert [g[1] for g in gongs(sim)] == [GONG_START, GONG_END]


def test_no_round_gong_without_start():
    sim = make()
    sim.press(1000, BTN_B)
    sim.run_to(60 * MIN, 5000)
    assert gongs(sim) == []
    assert steps(sim) == []


def test_playout_when_a_move_is_in_progress():
    # end gong during A's move 5: (a) 6 finishes the round, (b) 7-8, (c) 9-10
    sim = make(pairs=("round_min=3", "round_warn_min=1"))
    sim.press(0, BTN_START)
    sim.press(1000, BTN_B)
    play_moves(sim, 1000, 4, 25000)  # move 5 from 101000
    sim.run_to(3 * MIN)
    assert steps(sim) == [(3 * MIN, 0, 5)]
    t = 3 * MIN
    t = play_moves(sim, t, 1, 1000)  # 5 ends, 6 starts: still finishing the round
    assert [s[1] for s in steps(sim)] == [0]
    t = play_moves(sim, t, 1, 1000)  # 6 ends, 7 starts: (b)
    assert steps(sim)[-1] == (t, 1, 7)
    t = play_moves(sim, t, 1, 1000)  # 8: still (b)
    assert len(steps(sim)) == 2
    t = play_moves(sim, t, 1, 1000)  # 9 starts: (c)
    assert steps(sim)[-1] == (t, 2, 9)
    t = play_moves(sim, t, 1, 1000)  # 10: still (c)
    assert len(steps(sim)) == 3
    t = play_moves(sim, t, 1, 1000)  # B ends 10: over
    assert steps(sim)[-1] == (t, 3, 10)
    play_moves(sim, t, 2, 1000)
    assert len(steps(sim)) == 4  # nothing after over


def test_playout_when_b_is_on_move():
    # end gong during B's move 6: it finishes the round; (b) is 7-8, (c) 9-10
    sim = make(pairs=("round_min=3", "round_warn_min=1"))
    sim.press(0, BTN_START)
    sim.press(1000, BTN_B)
    play_moves(sim, 1000, 5, 20000)  # move 6 from 101000
    assert sim.core.move == 6
    sim.run_to(3 * MIN)
    assert gongs(sim)[-1] == (3 * MIN, GONG_END, 6)
    t = play_moves(sim, 3 * MIN, 1, 500)  # 7 starts: (b)
    assert steps(sim) == [(3 * MIN, 0, 6), (t, 1, 7)]
    t = play_moves(sim, t, 2, 500)  # 9 starts: (c)
    assert steps(sim)[-1] == (t, 2, 9)
    t = play_moves(sim, t, 2, 500)  # 10 ends
    assert steps(sim)[-1] == (t, 3, 10)


def test_playout_counts_through_a_challenge():
    # a challenge (PAUSE, then the challenger's press) does not upset the count
    sim = make(pairs=("round_min=2", "round_warn_min=1"))
    sim.press(0, BTN_START)
    sim.press(1000, BTN_B)  # move 1
    sim.run_to(2 * MIN)  # end gong during move 1
    assert gongs(sim)[-1][1:] == (GONG_END, 1)
    sim.press(2 * MIN + 500, BTN_A)  # move 2 (B): finishes the round
    sim.press(2 * MIN + 900, BTN_PAUSE)  # A challenges B's move
    sim.press(2 * MIN + 5000, BTN_A)  # after the ruling: B's time runs again
    assert [s[1] for s in steps(sim)] == [0]
    sim.press(2 * MIN + 6000, BTN_B)  # move 3: (b)
    assert steps(sim)[-1][1:] == (1, 3)


def test_playout_before_the_first_move():
    # no move started at the end gong: (b) begins with move 1
    sim = make(pairs=("round_min=1", "round_warn_min=0"))
    sim.press(0, BTN_START)
    sim.run_to(MIN)
    assert gongs(sim)[-1] == (MIN, GONG_END, NULL)
    assert steps(sim) == [(MIN, 0, NULL)]
    sim.press(MIN + 100, BTN_B)
    assert steps(sim)[-1] == (MIN + 100, 1, 1)


def test_gongs_across_the_tick_wrap():
    sim = make(base=WRAP_START - 2 * MIN, pairs=("round_min=3", "round_warn_min=1"))
    sim.press(0, BTN_START)
    sim.press(1000, BTN_B)
    sim.run_to(4 * MIN, 250)
    assert gongs(sim) == [(0, GONG_START, NULL), (2 * MIN, GONG_TEN, 1), (3 * MIN, GONG_END, 1)]


def test_next_deadline_names_the_gongs():
    rec = Recorder(0)
    r = Round(parse("scrabble", ["round_min=3", "round_warn_min=1"]), rec)
    assert r.next_deadline(0) is None
    assert r.left_ms(0) == 3 * MIN
    r.start(1000, NULL)
    assert r.next_deadline(1000) == 1000 + 2 * MIN
    r.tick(1000 + 2 * MIN, 4)
    assert r.next_deadline(1000 + 2 * MIN) == 1000 + 3 * MIN
    assert r.left_ms(1000 + 2 * MIN) == MIN
    r.tick(1000 + 3 * MIN, 4)
    assert r.next_deadline(1000 + 3 * MIN) is None
    assert r.left_ms(2000 + 3 * MIN) == -1000


def test_gong_and_playout_signals_are_distinct():
    # each gong is its own loud pattern on the hall output; the play-out steps
    # (b), (c), over blink both LEDs differently; (a) is the end gong itself
    pats = []
    for kind in (GONG_START, GONG_TEN, GONG_END, GONG_MANUAL):
        pattern, outs = signal_for(EV_GONG, kind, 1, 0)
        assert outs & 4  # OUT_HALL
        pats.append(pattern)
    for step in (1, 2, 3):
        pattern, outs = signal_for(EV_PLAYOUT, step, 7, 0)
        assert outs & 8  # OUT_BOTH_LEDS
        pats.append(pattern)
    assert signal_for(EV_PLAYOUT, 0, 5, 0) is None  # must not cut the end gong short
    for i in range(len(pats)):
        for j in range(i + 1, len(pats)):
            assert pats[i] != pats[j]
