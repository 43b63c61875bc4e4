"""The duplicate hall countdown (Polish rules II.3, II.13; docs/rules.md §2).
MicroPython-compatible: also run inside the MicroPython VM."""
from hallclock_fw.core.duplicate import DuplicateTimer
from hallclock_fw.events import (
    BTN_A, BTN_B, BTN_GONG, BTN_PAUSE, BTN_START, EV_ANNOUNCE, EV_DUP_END,
    EV_DUP_START, LONG, NULL)
from hallclock_fw.settings import parse
from hallclock_fw.signals import signal_for

from .harness import WRAP_START, Sim


def make(base=0, pairs=()):
    return Sim(DuplicateTimer, parse("duplicate", list(pairs)), base)


def anns(sim):
    return [(e[0], e[2]["move"], e[2]["left_s"]) for e in sim.rec.of("announce")]


class Panel:
    def __init__(self):
        self.ms = [None, None]

    def show(self, side, ms):
        self.ms[side] = ms


def test_start_begins_a_three_minute_countdown():
    # II.13: the referee starts the clock right after announcing the tiles
    sim = make()
    sim.run_to(10000)
    assert sim.rec.events == []
    sim.press(10000, BTN_START)
    assert sim.rec.events == [(10000, "dup_start", {"move": 1, "limit_ms": 180000})]
    assert sim.core.running()
    sim.run_to(10000 + 180000 - 1)
    assert sim.rec.of("dup_end") == []
    sim.run_to(10000 + 180000)
    assert sim.rec.of("dup_end") == [(190000, "dup_end", {"move": 1})]
    assert not sim.core.running()


def test_the_hall_is_told_every_minute_and_the_last_30_s():
    # II.3: 2 minutes left, 1 minute left, the last 30 seconds
    sim = make()
    sim.press(0, BTN_START)
    sim.run_to(200000)
    assert anns(sim) == [(60000, 1, 120), (120000, 1, 60), (150000, 1, 30)]
    assert sim.rec.names() == ["dup_start", "announce", "announce", "announce", "dup_end"]


def test_announcements_once_whatever_the_loop_period():
    for period in (None, 1, 999, 7000):
        sim = make()
        sim.press(0, BTN_START)
        sim.run_to(190000, period)
        assert [a[2] for a in anns(sim)] == [120, 60, 30]
        assert len(sim.rec.of("dup_end")) == 1


def test_settings_change_the_countdown():
    sim = make(pairs=("move_s=90", "announce_s=10,60"))
    sim.press(0, BTN_START)
    sim.run_to(100000)
    assert anns(sim) == [(30000, 1, 60), (80000, 1, 10)]
    assert sim.rec.of("dup_end")[0][0] == 90000


def test_moves_are_numbered_from_one():
    sim = make()
    t = 0
    for move in (1, 2, 3):
        sim.press(t, BTN_START)
        sim.run_to(t + 180000)
        t += 240000
    assert [e[2]["move"] for e in sim.rec.of("dup_start")] == [1, 2, 3]
    assert [e[2]["move"] for e in sim.rec.of("dup_end")] == [1, 2, 3]
    assert [a[1] for a in anns(sim)] == [1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_start_during_a_countdown_changes_nothing():
    sim = make()
    sim.press(0, BTN_START)
    sim.press(5000, BTN_START)
    sim.press(6000, BTN_START | LONG)
    sim.press(7000, BTN_PAUSE)
    sim.press(8000, BTN_START)  # paused: still the same move
    assert len(sim.rec.of("dup_start")) == 1
    sim.press(9000, BTN_PAUSE)
    sim.run_to(200000)
    assert sim.rec.of("dup_end")[0][2]["move"] == 1


def test_pause_stops_and_restarts_the_countdown():
    sim = make()
    sim.press(0, BTN_START)
    sim.press(50000, BTN_PAUSE)  # 130 s left
    assert sim.rec.of("pause") == [(50000, "pause", {"player": NULL, "move": 1})]
    assert sim.core.paused() and not sim.core.running()
    sim.run_to(400000)  # nothing runs out while paused
    assert anns(sim) == []
    assert sim.rec.of("dup_end") == []
    assert sim.core.left_ms(sim.t(400000)) == 130000
    sim.press(400000, BTN_PAUSE)
    assert sim.rec.of("resume") == [(400000, "resume", {"player": NULL, "move": 1,
                                                        "limit_ms": 130000})]
    sim.run_to(400000 + 130000)
    assert anns(sim) == [(410000, 1, 120), (470000, 1, 60), (500000, 1, 30)]
    assert sim.rec.of("dup_end")[0][0] == 530000


def test_announcement_given_before_a_pause_is_not_repeated():
    sim = make()
    sim.press(0, BTN_START)
    sim.press(70000, BTN_PAUSE)  # after "2 minutes": 110 s left
    sim.press(80000, BTN_PAUSE)
    sim.run_to(300000)
    assert anns(sim) == [(60000, 1, 120), (130000, 1, 60), (160000, 1, 30)]


def test_pause_before_start_and_player_buttons_do_nothing():
    sim = make()
    for t, code in ((100, BTN_PAUSE), (200, BTN_A), (300, BTN_B)):
        sim.press(t, code)
    assert sim.rec.events == []
    sim.press(400, BTN_START)
    sim.press(500, BTN_A)
    sim.press(600, BTN_B)
    assert sim.rec.names() == ["dup_start"]


def test_manual_gong():
    sim = make()
    sim.press(100, BTN_GONG)
    sim.press(200, BTN_START)
    sim.press(300, BTN_GONG)
    gongs = [(e[0], e[2]["kind"], e[2]["move"]) for e in sim.rec.of("gong")]
    assert gongs == [(100, 3, NULL), (300, 3, 1)]


def test_countdown_across_the_tick_wrap():
    sim = make(base=WRAP_START - 60000)
    sim.press(0, BTN_START)
    sim.press(20000, BTN_PAUSE)
    sim.press(25000, BTN_PAUSE)
    sim.run_to(300000, 250)
    assert anns(sim) == [(65000, 1, 120), (125000, 1, 60), (155000, 1, 30)]
    assert sim.rec.of("dup_end")[0][0] == 185000


def test_next_deadline():
    sim = make()
    assert sim.core.next_deadline(sim.t(0)) is None
    sim.press(1000, BTN_START)
    assert sim.core.next_deadline(sim.t(1000)) == sim.t(61000)
    sim.run_to(151000)
    assert sim.core.next_deadline(sim.t(151000)) == sim.t(181000)
    sim.press(160000, BTN_PAUSE)
    assert sim.core.next_deadline(sim.t(160000)) is None
    sim.press(170000, BTN_PAUSE)
    assert sim.core.next_deadline(sim.t(170000)) == sim.t(191000)


def test_both_displays_show_the_countdown():
    sim = make()
    panel = Panel()
    sim.core.refresh(panel, sim.t(0))
    assert panel.ms == [180000, 180000]  # before the first move: the full time
    sim.press(1000, BTN_START)
    sim.run_to(61500)
    sim.core.refresh(panel, sim.t(61500))
    assert panel.ms == [119500, 119500]
    sim.press(61500, BTN_PAUSE)
    sim.core.refresh(panel, sim.t(99000))
    assert panel.ms == [119500, 119500]
    sim.press(99000, BTN_PAUSE)
    sim.run_to(99000 + 119500)
    sim.core.refresh(panel, sim.t(99000 + 119500))
    assert panel.ms == [0, 0]  # time is up: cards down
    sim.core.refresh(panel, sim.t(400000))
    assert panel.ms == [0, 0]
    assert not sim.core.overtime()


def test_announce_signals_are_distinct_and_loud():
    sigs = [signal_for(EV_ANNOUNCE, 1, s, 0) for s in (120, 60, 30)]
    sigs.append(signal_for(EV_DUP_START, 1, 180000, 0))
    sigs.append(signal_for(EV_DUP_END, 1, 0, 0))
    for pattern, outs in sigs:
        assert outs & 4  # the hall output
    pats = [s[0] for s in sigs]
    for i in range(len(pats)):
        for j in range(i + 1, len(pats)):
            assert pats[i] != pats[j]


# -- restore after a power loss ------------------------------------------------------
def test_restore_goes_on_with_the_countdown_left():
    sim = make(WRAP_START)
    assert sim.core.restore((4, 70000, 0), sim.t(0))
    assert [e[1] for e in sim.rec.events] == ["resume"]
    assert sim.rec.events[0][2] == {"player": NULL, "move": 4, "limit_ms": 70000}
    sim.run_to(80000)
    # II.3: the 120 s and 60 s announcements: only 60 and 30 s were still ahead
    assert anns(sim) == [(10000, 4, 60), (40000, 4, 30)]
    assert [e[0] for e in sim.rec.of("dup_end")] == [70000]
    sim.press(90000, BTN_START)  # II.13: the next move is 5
    assert sim.rec.of("dup_start")[0][2]["move"] == 5


def test_restore_of_a_paused_or_finished_move_and_only_once():
    sim = make()
    assert sim.core.restore((2, 45000, 1), sim.t(0))
    assert sim.core.paused() and sim.core.left_ms(sim.t(9000)) == 45000
    assert not sim.core.restore((7, 10000, 0), sim.t(1000))  # once
    done = make()
    assert done.core.restore((3, 0, 0), done.t(0))
    assert done.core.left_ms(done.t(0)) == 0 and not done.core.running()
    assert not make().core.restore((0, 180000, 0), 0)  # nothing had started
    assert not make().core.restore((1, 2), 0)  # not a duplicate snapshot


def test_snapshot_then_restore_is_the_same_countdown():
    a = make()
    a.press(0, BTN_START)
    a.run_to(50000)
    snap = a.core.snapshot(a.t(50000))
    assert snap == (1, 130000, 0)
    b = make()
    assert b.core.restore(snap, b.t(0))
    assert b.core.snapshot(b.t(0)) == snap
