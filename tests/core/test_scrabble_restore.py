"""ScrabbleClock.snapshot/restore: the game sent back after a power loss
(docs/rules.md: ČAS 16.8, 5.1.4, 4.1, 6.1, 16.3).  MicroPython-compatible:
plain asserts, no pytest."""
from hallclock_fw.core.scrabble import SNAPSHOT, ScrabbleClock
from hallclock_fw.events import BTN_A, BTN_B, BTN_PAUSE, BTN_START
from hallclock_fw.settings import parse

from .harness import WRAP_START, Sim

MIN = 60000


def _sim(base=0):
    return Sim(ScrabbleClock, parse("scrabble", []), base)


def _snap(move, player, left, paused=0, number=0, elapsed=-1, step=-1, last=0):
    return (move, player, left, paused, number, elapsed, step, last)


def test_restore_runs_the_move_with_the_time_left():
    s = _sim(WRAP_START)  # the restored deadline crosses the tick wrap
    assert s.core.restore(_snap(7, 1, 25000), s.t(0))
    assert s.rec.names() == ["resume"]
    assert s.rec.events[0][2] == {"player": 1, "move": 7, "limit_ms": 25000}
    assert s.core.running() and s.core.player == 1
    assert s.core.left_ms(s.t(1000)) == 24000
    s.run_to(30000)
    # 16.8: the 30 s warning had passed before the power loss: only 20 and 10 s come
    warns = s.rec.of("warn")
    assert [(e[0], e[2]["left_s"]) for e in warns] == [(5000, 20), (15000, 10)]
    assert [e[0] for e in s.rec.of("expired")] == [25000]
    s.press(40000, BTN_B)
    press = s.rec.of("press")[0][2]
    assert press["move"] == 7 and press["used_ms"] == 95000 + 40000
    assert s.rec.of("turn")[-1][2]["move"] == 8


def test_restore_in_overtime_does_not_expire_again():
    s = _sim()
    assert s.core.restore(_snap(3, 0, -4000), s.t(0))
    assert s.core.overtime()
    s.run_to(10000)
    assert s.rec.of("expired") == [] and s.rec.of("warn") == []
    assert s.core.left_ms(s.t(10000)) == -14000


def test_restore_only_before_the_first_move():
    s = _sim()
    s.press(0, BTN_START)
    s.press(1000, BTN_B)
    assert not s.core.restore(_snap(5, 0, 60000), s.t(2000))
    assert s.core.move == 1
    fresh = _sim()
    assert not fresh.core.restore(_snap(0, -1, 60000), fresh.t(0))  # nothing had started
    assert not fresh.core.restore(_snap(4, 2, 60000), fresh.t(0))  # no such player
    assert not fresh.core.restore((4, 1, 60000), fresh.t(0))  # not a Scrabble snapshot
    assert fresh.rec.events == []
    assert fresh.core.restore(_snap(4, 1, 999999), fresh.t(0))  # never more than the limit
    assert fresh.core.left_ms(fresh.t(0)) == 120000
    fresh.press(1000, BTN_A)  # the player whose time does not run: nothing
    assert fresh.rec.names() == ["resume"]
    # a repeated restore later changes nothing
    assert not fresh.core.restore(_snap(9, 0, 5000), fresh.t(2000))
    assert fresh.core.move == 4 and fresh.rec.names() == ["resume"]


def test_a_paused_move_comes_back_paused():
    s = _sim()
    assert s.core.restore(_snap(6, 1, 70000, paused=1), s.t(0))
    assert s.rec.names() == ["resume", "pause"] and s.core.paused()
    s.press(50000, BTN_PAUSE)  # ČAS 8.7.1: goes on with the time as it stood
    assert s.core.left_ms(s.t(60000)) == 60000


def test_the_round_goes_on_from_its_start():
    # 4.1, 6.1: START at 0; power lost at 25 min; the clock is back 2 min later
    s = _sim()
    assert s.core.restore(_snap(9, 0, 80000, number=3, elapsed=27 * MIN), s.t(0))
    assert s.rec.names() == ["resume", "round"]
    assert s.rec.of("round")[0][2] == {"round": 3, "elapsed_ms": 27 * MIN}
    s.run_to(20 * MIN)
    gongs = s.rec.of("gong")
    # the ten-minute gong at START + 30 min, the end gong at START + 40 min
    assert [(e[0], e[2]["kind"]) for e in gongs] == [(3 * MIN, 1), (13 * MIN, 2)]
    assert [e[0] for e in s.rec.of("gong")] == [3 * MIN, 13 * MIN]


def test_a_round_past_its_ten_minute_gong_gives_only_the_end_gong():
    s = _sim()
    assert s.core.restore(_snap(9, 0, 80000, elapsed=35 * MIN), s.t(0))
    s.run_to(10 * MIN)
    assert [(e[0], e[2]["kind"]) for e in s.rec.of("gong")] == [(5 * MIN, 2)]


def test_the_play_out_step_is_restored():
    s = _sim()
    assert s.core.restore(_snap(15, 0, 80000, elapsed=42 * MIN, step=1, last=14), s.t(0))
    assert s.rec.of("gong") == []  # the end gong was given before the outage
    assert s.rec.of("playout")[0][2]["step"] == 1
    assert s.core.round.step == 1 and s.core.round.round_last == 14
    s.press(1000, BTN_A)  # move 16: still (b)
    s.press(2000, BTN_B)  # move 17: (c) last move
    assert [e[2]["step"] for e in s.rec.of("playout")] == [1, 2]


def test_snapshot_then_restore_is_the_same_game():
    a = _sim()
    a.press(0, BTN_START)
    a.press(1000, BTN_B)
    a.press(50000, BTN_A)
    a.run_to(90000)  # B's move 2: 40 s used, the 30 s warning not yet
    snap = a.core.snapshot(a.t(90000))
    assert len(snap) == SNAPSHOT
    assert snap == (2, 1, 80000, 0, 0, 90000, -1, 0)
    # the hall's time runs on through the outage (measured at hall_now)
    assert a.core.snapshot(a.t(90000), a.t(150000))[5] == 150000
    b = _sim(WRAP_START)
    assert b.core.restore(snap, b.t(0))
    assert b.core.snapshot(b.t(0)) == snap
    b.run_to(2500000)  # the game goes on: the end gong at START + 40 min as before
    ends = [e[0] for e in b.rec.of("gong") if e[2]["kind"] == 2]
    assert ends == [40 * MIN - 90000]


def test_the_restored_round_wins_over_a_start_since_the_reboot():
    # 4.1, 6.1, 16.3: START pressed on the rebooted clock before the restore
    # came; the hall's round (past its end, play-out (a)) comes back, and the
    # START's round gives way: no second end gong a round's time later
    s = _sim()
    s.press(0, BTN_START)
    assert s.core.fresh()  # START starts no move
    assert s.core.restore(_snap(13, 0, 50000, number=2, elapsed=41 * MIN, step=0, last=14),
                          s.t(500))
    assert s.rec.names() == ["gong", "resume", "round", "playout"]
    assert s.rec.of("round")[0][2] == {"round": 2, "elapsed_ms": 41 * MIN}
    assert s.core.round.step == 0 and s.core.round.round_last == 14
    s.run_to(45 * MIN)
    assert [e[2]["kind"] for e in s.rec.of("gong")] == [0]  # only the START's own gong
    s.press(45 * MIN, BTN_A)  # move 14 finishes the round (a)
    s.press(45 * MIN + 1000, BTN_B)  # move 15: (b) one more move
    assert [e[2]["step"] for e in s.rec.of("playout")] == [0, 1]


def test_the_restored_round_places_the_gongs_after_a_start_or_join():
    # the round's START 25 min back: the ten-minute gong at + 30, the end at + 40
    for first in ("start", "join"):
        s = _sim()
        if first == "start":
            s.press(0, BTN_START)
        else:
            assert s.core.round.join(s.t(0), 3, 2 * MIN, 0)
        assert s.core.restore(_snap(9, 0, 80000, number=3, elapsed=25 * MIN), s.t(1000))
        s.run_to(20 * MIN)
        later = [(e[0], e[2]["kind"]) for e in s.rec.of("gong") if e[0] > 1000]
        assert later == [(1000 + 5 * MIN, 1), (1000 + 15 * MIN, 2)], (first, later)


def test_a_snapshot_without_a_round_keeps_the_start_since_the_reboot():
    s = _sim()
    s.press(0, BTN_START)
    assert s.core.restore(_snap(5, 1, 60000), s.t(1000))  # the old game had no START
    assert s.rec.names() == ["gong", "resume"]
    s.run_to(41 * MIN)
    assert [(e[0], e[2]["kind"]) for e in s.rec.of("gong")] == [(0, 0), (30 * MIN, 1),
                                                                (40 * MIN, 2)]
