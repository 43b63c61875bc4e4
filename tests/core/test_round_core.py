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


def _round(pairs=("round_min=3", "round_warn_min=1")):
    rec = Recorder(0)
    return Round(parse("scrabble", list(pairs)), rec), rec


def _gongs_of(rec):
    return [(e[0], e[2]["kind"], e[2]["move"]) for e in rec.of("gong")]


def _steps_of(rec):
    return [(e[0], e[2]["step"], e[2]["move"]) for e in rec.of("playout")]


def _tick_to(r, t0, t1, move):
    """Tick ``r`` at each deadline it names up to ``t1``, then at ``t1``."""
    t = t0
    while True:
        due = r.next_deadline(t)
        if due is None or due > t1:
            break
        t = due if due > t else t + 1
        r.tick(t, move)
    r.tick(t1, move)


def test_a_round_frame_of_elapsed_zero_is_the_start_signal():
    # docs/protocol.md, N: "round <round> started <elapsed_ms> ago (0: now, the
    # START)": 0 gives the start gong (4.1); 1 ms ago is a START already past
    r, rec = _round()
    assert r.join(1000, 4, 0, 0) is True
    assert _gongs_of(rec) == [(1000, GONG_START, NULL)]  # before the first move: null
    assert [e[2] for e in rec.of("round")] == [{"round": 4, "elapsed_ms": 0}]
    _tick_to(r, 1000, 1000 + 3 * MIN, NULL)
    assert _gongs_of(rec)[-1] == (1000 + 3 * MIN, GONG_END, NULL)
    r, rec = _round()
    assert r.join(1000, 4, 1, 0) is True
    assert rec.of("gong") == []  # no start gong for a START in the past
    r.tick(998 + 2 * MIN, NULL)
    assert rec.of("gong") == []
    r.tick(999 + 2 * MIN, NULL)
    r.tick(998 + 3 * MIN, NULL)
    assert _gongs_of(rec) == [(999 + 2 * MIN, GONG_TEN, NULL)]
    r.tick(999 + 3 * MIN, NULL)
    assert [g[:2] for g in _gongs_of(rec)] == [(999 + 2 * MIN, GONG_TEN),
                                                 (999 + 3 * MIN, GONG_END)]


def test_a_round_frame_is_taken_once():
    # one start signal per round (4.1): a second round frame, or one after a
    # START, is refused (False: the clock logs ``refused``) and changes nothing
    r, rec = _round()
    assert r.join(0, 4, 0, 0) is True
    assert r.join(500, 5, 0, 0) is False
    assert r.join(600, 5, 30000, 0) is False
    assert len(rec.of("round")) == 1 and len(rec.of("gong")) == 1
    r, rec = _round()
    assert r.join(0, 4, 30000, 0) is True
    assert r.join(500, 4, 30500, 0) is False
    r, rec = _round()
    r.start(0, NULL)
    assert r.join(500, 4, 0, 0) is False
    assert len(rec.of("gong")) == 1 and rec.of("round") == []


def test_joined_after_the_end_gong_the_play_out_names_the_move_in_progress():
    # 16.3: the players circle the move in progress; before the first move
    # (move 0 on the wire) it is logged as null
    r, rec = _round()
    assert r.join(0, 2, 3 * MIN + 5000, 0)
    assert _steps_of(rec) == [(0, 0, NULL)]
    assert rec.of("gong") == []
    r, rec = _round()
    assert r.join(0, 2, 3 * MIN + 5000, 5)
    assert _steps_of(rec) == [(0, 0, 5)]
    assert r.round_last == 6
    r, rec = _round()
    assert r.join(0, 2, 0, 5)
    assert _gongs_of(rec) == [(0, GONG_START, 5)]


def test_a_round_joined_days_after_its_start_stays_past_its_end():
    # an N frame may carry any elapsed_ms up to 2**31 - 1: the basic time stays
    # run out (4.1) for days, across the tick range's half (2**29 ms), and no
    # gong sounds
    r, rec = _round()
    assert r.join(0, 1, 2000000000, 7)
    day = 86400000
    for t in (0, 1000, 3 * MIN + 1, day, 3 * day):
        r.tick(t, 7)
        assert r.left_ms(t) < 0
        assert r.elapsed_ms(t) > 3 * MIN
    assert rec.of("gong") == []
    assert _steps_of(rec) == [(0, 0, 7)]


def test_a_restored_play_out_is_not_given_its_end_gong_again():
    # 6.1: the end signal is given once.  A restore whose step says the end
    # gong was given (step 0 or more) keeps it given, even when the hall's
    # elapsed time it carries falls short of the round's end; with no step
    # (-1) the gongs still ahead sound
    for step in (-1, 0, 1):
        r, rec = _round()
        assert r.join(0, 2, 3 * MIN - 1000, 9, step, 10)
        _tick_to(r, 0, 10 * MIN, 9)
        if step < 0:
            assert _gongs_of(rec) == [(1000, GONG_END, 9)]
            assert _steps_of(rec) == [(1000, 0, 9)]
        else:
            assert rec.of("gong") == []
            assert _steps_of(rec) == [(0, step, 9)]
        assert r.round_last == 10
        assert r.next_deadline(10 * MIN) is None
    r, rec = _round()
    r.join(0, 2, 3 * MIN + 1000, 9, 0, 10)
    r.move_started(100, 10)  # B's reply finishes the round
    r.move_started(200, 11)  # (b)
    assert _steps_of(rec) == [(0, 0, 9), (200, 1, 11)]


def test_each_play_out_step_on_both_sides_of_its_first_move():
    # 16.3, with the round's last move 6: 6 finishes it, 7-8 one more move
    # each, 9-10 the last moves; a move beyond 10 is past the game's end
    r, rec = _round()
    r.start(0, NULL)
    r.tick(3 * MIN, 5)
    assert r.round_last == 6
    for move, step in ((6, 0), (7, 1), (8, 1), (9, 2), (10, 2), (11, 3)):
        r.move_started(move * 1000, move)
        assert r.step == step, (move, r.step)
    assert [s[1:] for s in _steps_of(rec)] == [(0, 5), (1, 7), (2, 9), (3, 11)]
    r, rec = _round()
    r.start(0, NULL)
    r.tick(3 * MIN, 5)
    r.move_ended(1000, 9)  # 9 ended: 10 still to play
    assert r.step == 0
    r.move_ended(2000, 10)  # B ended the last move: over
    assert _steps_of(rec)[-1] == (2000, 3, 10)


def test_a_start_further_back_than_two_to_the_28_ms_is_held_there():
    # the round's START is kept at most 2**28 ms (3.1 days) in the past, half the
    # tick range's half: the time since START (the snapshot's round_elapsed_ms)
    # reads as it was sent up to that value, then holds there
    cap = 1 << 28
    for sent, kept in ((cap - 1, cap - 1), (cap, cap), (cap + 1, cap), (2147483647, cap)):
        r, rec = _round()
        assert r.join(0, 1, sent, 3)
        assert r.elapsed_ms(0) == kept, (sent, r.elapsed_ms(0))
        assert r.elapsed_ms(5000) == kept + 5000
        assert [e[2]["elapsed_ms"] for e in rec.of("round")] == [sent]  # logged as sent


def test_a_round_that_gives_way_is_forgotten_until_the_next_join():
    # a restore's round wins over one begun on this clock (4.1, 6.1): after
    # give_way the clock's round is as before its START (the snapshot's round
    # part: no elapsed time, no step, no last move), and the restored round,
    # joined with no step, counts its play-out afresh from its own end gong
    r, rec = _round(("round_min=1", "round_warn_min=0"))
    r.start(0, NULL)
    r.tick(MIN, 5)  # the clock's own end gong during move 5
    assert (r.step, r.round_last) == (0, 6)
    r.give_way()
    assert (r.elapsed_ms(MIN), r.step, r.round_last) == (NULL, NULL, 0)
    assert r.next_deadline(MIN) is None
    assert r.join(MIN, 2, 30000, 3)
    assert (r.step, r.round_last) == (NULL, 0)
    r.tick(MIN + 29999, 3)
    assert r.step == NULL
    r.tick(MIN + 30000, 3)
    assert (r.step, r.round_last) == (0, 4)
    assert _gongs_of(rec)[-1] == (MIN + 30000, GONG_END, 3)
