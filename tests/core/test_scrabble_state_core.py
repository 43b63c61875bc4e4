"""The Scrabble clock's state as the app and the host see it: the displays
(ČAS 16.3: the waiting player's display shows the play-out step), the state
questions the app asks (running, paused, overtime, over, fresh) and the
snapshot/restore of a game and of a round alone (4.1, 6.1: the hall's time
runs on through a power loss).  MicroPython-compatible: plain asserts."""
from hallclock_fw.core.scrabble import ScrabbleClock
from hallclock_fw.events import BTN_A, BTN_B, BTN_PAUSE, BTN_START
from hallclock_fw.settings import parse

from .harness import Sim

LIMIT = 120000
MIN = 60000


class Panel:
    def __init__(self):
        self.shown = {}

    def show(self, side, ms):
        self.shown[side] = ("time", ms)

    def show_playout(self, side, step):
        self.shown[side] = ("playout", step)


def _sim():
    return Sim(ScrabbleClock, parse("scrabble", []), 0)


def _panel(s, ms):
    p = Panel()
    s.core.refresh(p, s.t(ms))
    return p.shown


def test_the_displays_before_during_and_after_the_end_gong():
    s = _sim()
    assert _panel(s, 0) == {0: ("time", LIMIT), 1: ("time", LIMIT)}
    s.press(0, BTN_START)
    s.press(0, BTN_B)  # A's move runs
    s.run_to(1000)
    assert _panel(s, 1000) == {0: ("time", LIMIT - 1000), 1: ("time", LIMIT)}
    s.press(2000, BTN_A)  # B's move runs
    assert _panel(s, 2500) == {1: ("time", LIMIT - 500), 0: ("time", LIMIT)}
    t = 2000
    while t < 40 * MIN:  # moves of 100 s up to the end gong
        t += 100000
        s.press(t, BTN_A if s.core.player == 0 else BTN_B)
    s.run_to(40 * MIN)
    assert s.core.round.step == 0  # finish the round (16.3 a)
    mover = s.core.player
    shown = _panel(s, 40 * MIN)
    assert shown[1 - mover] == ("playout", 0)
    assert shown[mover][0] == "time"


def test_the_state_questions_through_a_move():
    s = _sim()
    c = s.core
    assert c.fresh() and not c.running() and not c.paused() and not c.overtime()
    assert not c.over()
    s.press(0, BTN_START)
    s.press(0, BTN_B)
    assert not c.fresh() and c.running() and not c.paused() and not c.overtime()
    s.press(1000, BTN_PAUSE)
    assert c.paused() and not c.running() and not c.overtime()
    s.press(2000, BTN_PAUSE)
    s.run_to(2000 + LIMIT)
    assert c.overtime() and c.running() and not c.paused()
    assert not c.over()


def test_the_game_is_over_when_the_last_move_is_pressed():
    # 16.3: after the end gong, (b) one more move each and (c) a last move each
    s = _sim()
    s.press(0, BTN_START)
    s.press(0, BTN_B)
    s.run_to(40 * MIN)
    t = 40 * MIN
    while not s.core.over():
        assert s.core.round.step >= 0
        t += 1000
        s.press(t, BTN_A if s.core.player == 0 else BTN_B)
        assert t < 41 * MIN
    assert s.core.round.step == 3


def test_a_snapshot_says_whether_the_move_stood_paused():
    s = _sim()
    s.press(0, BTN_START)
    s.press(0, BTN_B)
    snap = s.core.snapshot(s.t(1000))
    assert snap[:4] == (1, 0, LIMIT - 1000, 0)
    s.press(1000, BTN_PAUSE)
    snap = s.core.snapshot(s.t(5000))
    assert snap[:4] == (1, 0, LIMIT - 1000, 1)
    assert snap[4:6] == (0, 5000)  # the round (number unknown) began 5 s ago
    r = _sim()
    assert r.core.restore(snap, r.t(0))
    assert r.core.paused() and r.core.left_ms(r.t(9000)) == LIMIT - 1000


def test_a_restore_is_taken_once():
    s = _sim()
    assert s.core.restore((3, 1, 50000, 0, 0, -1, -1, 0), s.t(0))
    assert not s.core.fresh()
    assert not s.core.restore((9, 0, 10000, 0, 0, -1, -1, 0), s.t(10))
    assert s.core.move == 3 and s.core.player == 1


def test_a_restore_of_the_round_alone_before_the_first_move():
    # 4.1, 6.1: the round had started (elapsed ms >= 0), no move had: the
    # gongs come at the hall's times, no move is started, no resume logged
    for elapsed in (0, 1, 5 * MIN):
        s = _sim()
        assert s.core.restore((0, -1, LIMIT, 0, 4, elapsed, -1, 0), s.t(0))
        assert s.rec.of("resume") == [] and s.core.move == 0
        assert not s.core.running() and not s.core.fresh()
        assert s.core.round.started and s.core.round.number == 4
        s.run_to(40 * MIN)
        ends = [e[0] for e in s.rec.of("gong") if e[2]["kind"] == 2]
        assert ends == [40 * MIN - (elapsed if elapsed else 1)]
    s = _sim()
    assert not s.core.restore((0, -1, LIMIT, 0, 4, -1, -1, 0), s.t(0))  # nothing had started
    assert s.core.fresh()
    assert not s.core.restore((-1, 0, LIMIT, 0, 4, 0, -1, 0), s.t(0))  # no such move
    assert not s.core.restore((2, -1, LIMIT, 0, 4, 0, -1, 0), s.t(0))  # a move needs its player
    assert not s.core.restore((1, 2, LIMIT, 0, 4, 0, -1, 0), s.t(0))  # A or B, even in move 1
    assert s.core.restore((2, 0, LIMIT, 0, 4, -1, -1, 0), s.t(0))  # a move, no round
    assert not s.core.round.started


def test_a_restore_before_the_first_warning_keeps_every_warning():
    s = _sim()
    assert s.core.restore((2, 0, 35000, 0, 0, -1, -1, 0), s.t(0))
    s.run_to(35000)
    assert [(e[0], e[2]["left_s"]) for e in s.rec.of("warn")] == [
        (5000, 30), (15000, 20), (25000, 10)]


def test_the_next_deadline_is_the_sooner_even_by_one_ms():
    # the move's 30 s warning 1 ms before the round's end gong: the loop is
    # woken for the warning first (the core tells its next deadline)
    s = _sim()
    left, elapsed = 40000, 40 * MIN - 10001  # warning at +10 000, end gong at +10 001
    assert s.core.restore((5, 0, left, 0, 1, elapsed, -1, 0), s.t(0))
    assert s.core.next_deadline(s.t(0)) == s.t(10000)
    s.run_to(10000)
    assert s.core.next_deadline(s.t(10000)) == s.t(10001)
