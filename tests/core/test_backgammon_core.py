"""The backgammon slow-play clock (İSTAVDER rules 2.3, 2.4, 4, 6.1 and common
clock practice, docs/rules.md §3; design in docs/backgammon.md).
MicroPython-compatible: also run inside the MicroPython VM."""
from hallclock_fw.core.backgammon import BREAK_MS, BackgammonClock
from hallclock_fw.display import next_change
from hallclock_fw.events import (
    BTN_A, BTN_B, BTN_GONG, BTN_PAUSE, BTN_START, EV_BREAK, EV_BREAK_END, EV_EXPIRED,
    EV_REFUSED, LONG, REFUSED_BREAK)
from hallclock_fw.settings import SettingsError, bank_ms, parse
from hallclock_fw.signals import signal_for

from .harness import WRAP_START, Sim


class Panel:
    """Records what each display was last told to show."""

    def __init__(self):
        self.ms = [None, None]

    def show(self, side, ms):
        self.ms[side] = ms


def make(pairs=(), base=0):
    return Sim(BackgammonClock, parse("backgammon", list(pairs)), base)


def shown(sim, ms):
    panel = Panel()
    sim.core.refresh(panel, sim.t(ms))
    return panel.ms


def fields(rec, name):
    return [e[2] for e in rec.of(name)]


def timed(rec, name):
    return [(e[0], e[2]) for e in rec.of(name)]


# -- the bank (rule 2.4) -----------------------------------------------------
def test_bank_from_the_score_trailing_player_needs():
    # 7-point match: the trailing player's missing points × 150 s
    assert bank_ms(parse("backgammon", ["match=7", "score=3-5"])) == 4 * 150000
    assert bank_ms(parse("backgammon", ["match=7", "score=5-3"])) == 4 * 150000
    assert bank_ms(parse("backgammon", ["match=7", "score=6-0"])) == 7 * 150000
    assert bank_ms(parse("backgammon", ["match=7", "score=4-4"])) == 3 * 150000
    assert bank_ms(parse("backgammon", ["match=7", "score=6-6"])) == 1 * 150000
    assert bank_ms(parse("backgammon", [])) == 7 * 150000  # 0-0 in a 7-point match
    assert bank_ms(parse("backgammon", ["match=11", "score=2-9", "per_point_s=120"])) \
        == 9 * 120000
    assert bank_ms(parse("backgammon", ["match=11", "score=2-9", "bank_s=900"])) == 900000


def test_bad_settings_are_refused():
    for pairs in (["match=7", "score=7-2"], ["match=5", "score=1-9"], ["score=-1-2"],
                  ["delay_s=-1"], ["delay=hourglass"], ["match=0"], ["per_point_s=0"],
                  ["bank_s=0"], ["score=3"]):
        try:
            parse("backgammon", pairs)
        except SettingsError:
            continue
        assert False, "accepted %r" % (pairs,)


def test_both_banks_shown_before_play_and_first_press_picks_the_first_mover():
    sim = make(["match=7", "score=3-5"])
    assert shown(sim, 0) == [600000, 600000]
    sim.press(100, BTN_PAUSE)  # nothing runs: nothing to stop
    sim.press(200, BTN_START)
    sim.press(300, BTN_GONG)
    assert sim.rec.events == []
    # B won the opening roll: A presses, B's move 1 starts; no move ends
    sim.press(1000, BTN_A)
    assert timed(sim.rec, "turn") == [(1000, {"player": 1, "move": 1, "bank_ms": 600000})]
    assert sim.rec.of("press") == []
    assert sim.core.player == 1 and sim.core.running()


def test_press_by_the_waiting_player_and_long_presses_change_nothing():
    sim = make(["bank_s=100"])
    sim.press(0, BTN_B)  # A moves first
    n = len(sim.rec.events)
    sim.press(5000, BTN_B)
    sim.press(6000, BTN_A | LONG)
    sim.press(6000, BTN_B | LONG)
    sim.press(7000, BTN_START)
    assert len(sim.rec.events) == n
    assert sim.core.player == 0


# -- the three delay kinds, move by move --------------------------------------
def play(kind, used, pairs=("bank_s=600", "delay_s=15")):
    """A starts (B's first press at 0); each entry of ``used`` is a move's
    length in ms; returns the sim and the press events."""
    sim = make(list(pairs) + ["delay=" + kind])
    sim.press(0, BTN_B)
    t = 0
    for u in used:
        t += u
        sim.press(t, BTN_A if sim.core.player == 0 else BTN_B)
    return sim, fields(sim.rec, "press")


MOVES = (10000, 20000, 15000, 15001, 0, 47500)  # A, B, A, B, A, B


def test_simple_delay_move_by_move():
    # US delay: the first 15 s of each move do not come off the bank
    sim, presses = play("simple", MOVES)
    assert [(p["player"], p["move"], p["used_ms"], p["bank_ms"]) for p in presses] == [
        (0, 1, 10000, 600000),
        (1, 2, 20000, 595000),
        (0, 3, 15000, 600000),
        (1, 4, 15001, 594999),
        (0, 5, 0, 600000),
        (1, 6, 47500, 562499),
    ]
    # each turn carries the bank the move starts with
    assert [t["bank_ms"] for t in fields(sim.rec, "turn")] == [
        600000, 600000, 600000, 595000, 600000, 594999, 600000]


def test_bronstein_delay_move_by_move():
    # the time used, up to 15 s, is given back after the move: same banks as simple
    sim, presses = play("bronstein", MOVES)
    assert [p["bank_ms"] for p in presses] == [
        600000, 595000, 600000, 594999, 600000, 562499]
    assert [p["used_ms"] for p in presses] == list(MOVES)


def test_fischer_increment_move_by_move():
    # 15 s added after every move, whatever it took
    sim, presses = play("fischer", MOVES)
    assert [p["bank_ms"] for p in presses] == [
        605000, 595000, 605000, 594999, 620000, 562499]


def test_zero_delay_is_a_plain_bank():
    for kind in ("simple", "bronstein", "fischer"):
        sim, presses = play(kind, MOVES, ("bank_s=600", "delay_s=0"))
        assert [p["bank_ms"] for p in presses] == [
            590000, 580000, 575000, 564999, 575000, 517499], kind


def test_simple_delay_display_dash_countdown_then_bank():
    sim = make(["bank_s=600", "delay_s=15"])
    sim.press(1000, BTN_B)  # A's move 1 from 1000
    assert shown(sim, 1000) == [-15000, 600000]  # "-0:15" on A, B's bank
    assert shown(sim, 1500) == [-15000, 600000]  # rounded up to whole seconds
    assert shown(sim, 2000) == [-14000, 600000]
    assert shown(sim, 15999) == [-1000, 600000]  # "-0:01"
    assert shown(sim, 16000) == [600000, 600000]  # the delay is over: the bank
    assert shown(sim, 17500) == [598500, 600000]
    # the app wakes when the shown second changes: left_ms is the countdown on show
    assert sim.core.left_ms(sim.t(1500)) == 14500
    assert next_change(sim.core.left_ms(sim.t(1500))) == 500
    assert sim.core.left_ms(sim.t(17500)) == 598500
    assert sim.core.bank_left(sim.t(1500), 0) == 600000
    assert sim.core.bank_left(sim.t(17500), 0) == 598500


def test_bronstein_and_fischer_display_the_bank_running_from_the_press():
    for kind in ("bronstein", "fischer"):
        sim = make(["bank_s=600", "delay_s=15", "delay=" + kind])
        sim.press(1000, BTN_B)
        assert shown(sim, 1000) == [600000, 600000]
        assert shown(sim, 6000) == [595000, 600000]
        sim.press(11000, BTN_A)  # 10 s used
        expect = 600000 if kind == "bronstein" else 605000
        assert shown(sim, 11000) == [expect, 600000]


# -- expiry, exact to the ms ------------------------------------------------
def expiry_of(kind, pairs=(), period=None, base=0):
    sim = make(["bank_s=10", "delay_s=15", "delay=" + kind] + list(pairs), base)
    sim.press(1000, BTN_B)
    sim.run_to(60000, period)
    return sim


def test_expiry_exact_to_the_ms_for_each_delay_kind():
    # simple: the bank runs out 15 s + 10 s after the press; bronstein and
    # fischer: after the 10 s of the bank (nothing is given back mid-move)
    for kind, at in (("simple", 26000), ("bronstein", 11000), ("fischer", 11000)):
        sim = make(["bank_s=10", "delay_s=15", "delay=" + kind])
        sim.press(1000, BTN_B)
        sim.run_to(at - 1, 1)  # ticked every ms up to 1 ms before
        assert sim.rec.of("expired") == [], kind
        sim.run_to(at, 1)
        assert timed(sim.rec, "expired") == [(at, {"player": 0, "move": 1})], kind
        for period in (None, 7, 997):  # event-driven or late, coarse loops
            sim = expiry_of(kind, period=period)
            assert timed(sim.rec, "expired") == [(at, {"player": 0, "move": 1})], (kind, period)


def test_expiry_after_moves_and_a_pause_counts_only_running_time():
    sim = make(["bank_s=60", "delay_s=15"])
    sim.press(0, BTN_B)
    sim.press(40000, BTN_A)  # A: 40 s used, 25 s off the bank -> 35 s
    sim.press(41000, BTN_B)  # B: 1 s
    assert fields(sim.rec, "turn")[-1] == {"player": 0, "move": 3, "bank_ms": 35000}
    sim.press(51000, BTN_PAUSE)  # 10 s into A's move (delay left: 5 s)
    sim.run_to(500000)
    assert sim.rec.of("expired") == []
    sim.press(500000, BTN_B)  # A's time runs again: 5 s delay + 35 s bank
    sim.run_to(540000 - 1)
    assert sim.rec.of("expired") == []
    sim.run_to(600000)
    assert timed(sim.rec, "expired") == [(540000, {"player": 0, "move": 3})]


def test_a_late_press_after_the_bank_ran_out_is_too_late():
    # the loop comes late: the press at 26005 finds the bank out since 26000
    sim = make(["bank_s=10", "delay_s=15"])
    sim.press(1000, BTN_B)
    sim.core.button(BTN_A, sim.t(26005))
    assert timed(sim.rec, "expired") == [(26000, {"player": 0, "move": 1})]
    assert sim.rec.of("press") == []
    # ... but a press 1 ms before is in time
    sim = make(["bank_s=10", "delay_s=15"])
    sim.press(1000, BTN_B)
    sim.core.button(BTN_A, sim.t(25999))
    assert fields(sim.rec, "press") == [{"player": 0, "move": 1, "used_ms": 24999, "bank_ms": 1}]
    assert sim.rec.of("expired") == []


def test_flag_freezes_the_clock_until_reset():
    sim = expiry_of("simple")
    core = sim.core
    assert core.overtime() and not core.running()
    assert core.next_deadline(sim.t(60000)) is None
    n = len(sim.rec.events)
    for code in (BTN_A, BTN_B, BTN_PAUSE, BTN_PAUSE | LONG, BTN_A, BTN_START):
        sim.press(70000, code)
    sim.run_to(900000)
    assert len(sim.rec.events) == n
    assert shown(sim, 900000) == [0, 10000]  # 0:00 is the flag
    assert core.left_ms(sim.t(900000)) == 0
    assert core.bank_left(sim.t(900000), 0) == 0
    # the long final signal (ČAS 16.8): one tone, longer than any warning's
    final = signal_for(EV_EXPIRED, 0, 1, 0)[0]
    assert len(final) == 2 and final[1] >= 2000


# -- pause (rule 6.1) ----------------------------------------------------------
def test_pause_and_resume_on_the_bank_as_it_stood():
    sim = make(["bank_s=600", "delay_s=15", "delay=bronstein"])
    sim.press(0, BTN_B)
    sim.press(30000, BTN_PAUSE)  # A's move 1 stopped after 30 s: bank 570 s
    assert timed(sim.rec, "pause") == [(30000, {"player": 0, "move": 1})]
    assert sim.core.paused() and not sim.core.running()
    assert sim.core.next_deadline(sim.t(30000)) is None
    sim.press(40000, BTN_PAUSE)  # a second PAUSE does not restart time
    assert sim.core.paused() and sim.rec.of("resume") == []
    sim.run_to(200000)
    assert shown(sim, 200000) == [570000, 600000]
    sim.press(200000, BTN_B)  # B's press starts A's time again
    assert timed(sim.rec, "resume") == [(200000, {"player": 0, "move": 1, "bank_ms": 570000})]
    assert shown(sim, 205000) == [565000, 600000]
    sim.press(210000, BTN_A)
    # used_ms excludes the pause: 30 s + 10 s; bronstein gives 15 s back
    assert fields(sim.rec, "press") == [
        {"player": 0, "move": 1, "used_ms": 40000, "bank_ms": 575000}]


def test_pause_in_the_simple_delay_keeps_the_rest_of_the_delay():
    sim = make(["bank_s=600", "delay_s=15"])
    sim.press(0, BTN_B)
    sim.press(6000, BTN_PAUSE)
    assert shown(sim, 50000) == [-9000, 600000]
    sim.press(50000, BTN_B)
    assert fields(sim.rec, "resume")[-1]["bank_ms"] == 600000
    assert shown(sim, 58999) == [-1000, 600000]
    assert shown(sim, 60000) == [599000, 600000]
    sim.press(60000, BTN_A)  # 16 s used: 1 s off the bank
    assert fields(sim.rec, "press")[-1]["bank_ms"] == 599000


def test_mover_press_while_paused_starts_the_opponent():
    sim = make(["bank_s=600", "delay_s=15"])
    sim.press(0, BTN_B)
    sim.press(20000, BTN_PAUSE)  # A's move stopped after 20 s
    sim.press(90000, BTN_A)  # A picks up the dice: B's time starts
    assert [e[1] for e in sim.rec.events] == ["turn", "pause", "press", "turn", "resume"]
    assert fields(sim.rec, "press") == [
        {"player": 0, "move": 1, "used_ms": 20000, "bank_ms": 595000}]
    assert timed(sim.rec, "turn")[-1] == (90000, {"player": 1, "move": 2, "bank_ms": 600000})
    assert fields(sim.rec, "resume") == [{"player": 1, "move": 2, "bank_ms": 600000}]
    assert sim.core.player == 1 and sim.core.running()


# -- breaks (rule 2.3) ---------------------------------------------------------
def take_break(sim, t, who):
    """Hold PAUSE at ``t`` (a press, then the long press 1.5 s later), then
    ``who`` names the player at ``t + 3000``."""
    sim.press(t, BTN_PAUSE)
    sim.press(t + 1500, BTN_PAUSE | LONG)
    sim.press(t + 3000, who)


def test_two_breaks_each_then_the_third_is_refused():
    sim = make(["bank_s=600", "delay_s=15"])
    sim.press(0, BTN_B)
    sim.press(20000, BTN_A)  # B's move 2 runs
    take_break(sim, 100000, BTN_A)  # game over: the clock stopped, A takes a break
    assert timed(sim.rec, "pause") == [(100000, {"player": 1, "move": 2})]
    assert timed(sim.rec, "break") == [(103000, {"player": 0, "number": 1, "break_ms": BREAK_MS})]
    assert sim.core.running() and sim.core.paused()
    assert sim.core.next_deadline(sim.t(103000)) == sim.t(403000)
    # the taker's display counts the break down, the other shows its bank
    assert shown(sim, 103000) == [300000, 535000]  # B: 80 s used, 65 s off the bank
    assert shown(sim, 402500) == [500, 535000]
    sim.run_to(402999)
    assert sim.rec.of("break_end") == []
    sim.run_to(403000)
    assert timed(sim.rec, "break_end") == [(403000, {"player": 0, "number": 1})]
    assert sim.core.paused() and not sim.core.running()  # time stays stopped
    take_break(sim, 500000, BTN_B)
    take_break(sim, 900000, BTN_A)
    sim.run_to(1300000)
    assert [(e[2]["player"], e[2]["number"]) for e in sim.rec.of("break")] == [
        (0, 1), (1, 1), (0, 2)]
    assert [(e[2]["player"], e[2]["number"]) for e in sim.rec.of("break_end")] == [
        (0, 1), (1, 1), (0, 2)]
    # A's third break is refused; B still has one
    take_break(sim, 1400000, BTN_A)
    assert timed(sim.rec, "refused") == [(1403000, {"player": 0, "what": REFUSED_BREAK})]
    assert len(sim.rec.of("break")) == 3 and sim.core.breaks_used(0) == 2
    assert sim.core.paused() and not sim.core.running()
    take_break(sim, 1500000, BTN_B)
    assert fields(sim.rec, "break")[-1] == {"player": 1, "number": 2, "break_ms": BREAK_MS}
    sim.run_to(1803000)
    take_break(sim, 1900000, BTN_B)
    assert fields(sim.rec, "refused")[-1] == {"player": 1, "what": REFUSED_BREAK}
    # after all that B's move 2 resumes on its bank as it stood
    sim.press(2000000, BTN_A)
    assert fields(sim.rec, "resume") == [{"player": 1, "move": 2, "bank_ms": 535000}]
    # each break sounds at its start and end; a refusal has its own signal
    assert signal_for(EV_BREAK, 0, 1, BREAK_MS) is not None
    ends = signal_for(EV_BREAK_END, 0, 1, 0)
    refused = signal_for(EV_REFUSED, 0, REFUSED_BREAK, 0)
    assert ends is not None and refused is not None
    assert ends[0] != refused[0] and ends[0] != signal_for(EV_BREAK, 0, 1, 0)[0]


def test_break_select_shows_the_break_length_and_pause_withdraws_it():
    sim = make(["bank_s=600"])
    sim.press(0, BTN_B)
    sim.press(10000, BTN_PAUSE)
    sim.press(11500, BTN_PAUSE | LONG)
    assert shown(sim, 12000) == [BREAK_MS, BREAK_MS]
    sim.press(13000, BTN_PAUSE)  # withdrawn: still paused, no break counted
    assert sim.rec.of("break") == [] and sim.core.paused()
    assert shown(sim, 13000) == [-5000, 600000]  # stopped 5 s before the delay's end
    sim.press(20000, BTN_B)  # resumes A
    assert fields(sim.rec, "resume") == [{"player": 0, "move": 1, "bank_ms": 600000}]


def test_a_press_during_a_break_ends_it_early_and_time_stays_stopped():
    sim = make(["bank_s=600"])
    sim.press(0, BTN_B)
    take_break(sim, 10000, BTN_B)
    sim.press(100000, BTN_B)  # B is back after 87 s
    assert timed(sim.rec, "break_end") == [(100000, {"player": 1, "number": 1})]
    assert sim.rec.of("resume") == [] and sim.core.paused()
    assert sim.core.next_deadline(sim.t(100000)) is None
    sim.press(110000, BTN_B)
    assert fields(sim.rec, "resume") == [{"player": 0, "move": 1, "bank_ms": 600000}]


def test_break_before_the_first_move_and_by_host_command_while_running():
    sim = make(["bank_s=600"])
    sim.press(0, BTN_PAUSE | LONG)  # before play: a break can be given at once
    sim.press(1000, BTN_A)
    sim.run_to(301000)
    assert [e[1] for e in sim.rec.events] == ["break", "break_end"]
    sim.press(302000, BTN_A)  # play starts as usual: B moves first
    assert fields(sim.rec, "turn") == [{"player": 1, "move": 1, "bank_ms": 600000}]
    # a host's long PAUSE command with time running stops the time first
    sim.press(312000, BTN_PAUSE | LONG)
    sim.press(313000, BTN_B)
    assert [e[1] for e in sim.rec.events][-2:] == ["pause", "break"]
    assert fields(sim.rec, "break")[-1]["number"] == 1  # B's first


# -- ticks wrap, restore --------------------------------------------------------
def script(sim):
    sim.press(0, BTN_B)
    sim.press(3000, BTN_A)
    sim.press(30000, BTN_B)
    sim.press(31000, BTN_PAUSE)
    sim.press(40000, BTN_B)
    sim.press(50000, BTN_A)
    take_break(sim, 60000, BTN_A)
    sim.press(400000, BTN_A)
    sim.run_to(2000000)


def test_across_the_tick_wrap_the_same_events():
    for kind in ("simple", "bronstein", "fischer"):
        runs = []
        for base in (0, WRAP_START):
            sim = make(["bank_s=90", "delay_s=12", "delay=" + kind], base)
            script(sim)
            runs.append(sim.rec.events)
        assert runs[0] == runs[1], kind
        assert WRAP_START + 2000000 > (1 << 30)  # the second run really crosses the wrap
        assert runs[0][-1][1] == "expired"


def test_wrap_expiry_exact():
    sim = make(["bank_s=10", "delay_s=15"], WRAP_START)
    sim.press(1000, BTN_B)  # deadline at 26000: ticks wrapped 5 s in
    sim.run_to(25999, 3)
    assert sim.rec.of("expired") == []
    sim.run_to(40000, 3)
    assert timed(sim.rec, "expired") == [(26000, {"player": 0, "move": 1})]


def test_restore_puts_the_move_back_running():
    sim = make(["bank_s=600", "delay_s=15"])
    assert sim.core.restore((7, 1, 400000, 123456, 0, 0, 0, 0), sim.t(5000))
    assert timed(sim.rec, "resume") == [(5000, {"player": 1, "move": 7, "bank_ms": 123456})]
    assert shown(sim, 5000) == [400000, 123456]  # the delay of move 7 counts as spent
    sim.press(15000, BTN_B)
    assert fields(sim.rec, "press") == [{"player": 1, "move": 7, "used_ms": 10000, "bank_ms": 113456}]
    assert fields(sim.rec, "turn") == [{"player": 0, "move": 8, "bank_ms": 400000}]
    # a repeated restore later in the game changes nothing (only a fresh clock takes one)
    assert not sim.core.restore((9, 0, 5000, 5000, 0, 2, 2, 0), sim.t(16000))
    assert sim.core.bank == [400000, 113456] and sim.core.move == 8
    sim = make(["bank_s=600"])
    assert sim.core.restore((3, 0, 1000, 600000, 0, 0, 0, 0), sim.t(0))
    assert shown(sim, 0) == [1000, 600000]
    sim.run_to(5000)
    assert timed(sim.rec, "expired") == [(1000, {"player": 0, "move": 3})]


def test_restore_takes_both_banks_and_the_breaks_used():
    sim = make(["bank_s=600", "delay_s=15"])
    assert sim.core.restore((12, 0, 250000, 90000, 1, 2, 1, 0), sim.t(0))
    assert sim.core.paused() and sim.core.bank == [250000, 90000]
    assert [e[1] for e in sim.rec.events] == ["resume", "pause"]
    assert sim.core.breaks_used(0) == 2 and sim.core.breaks_used(1) == 1
    take_break(sim, 10000, BTN_A)  # rule 2.3: A had used both breaks before the outage
    assert fields(sim.rec, "refused")[-1]["player"] == 0
    sim.press(20000, BTN_B)  # 6.1: B's press restarts A's time on the bank as it stood
    assert sim.core.bank_left(sim.t(30000), 0) == 240000


def test_snapshot_then_restore_is_the_same_game():
    for kind in ("simple", "bronstein", "fischer"):
        a = make(["bank_s=300", "delay_s=10", "delay=" + kind])
        a.press(0, BTN_B)
        a.press(4000, BTN_A)
        a.press(30000, BTN_B)
        a.run_to(41000)
        snap = a.core.snapshot(a.t(41000))
        assert len(snap) == 8 and snap[:2] == (3, 0)
        b = make(["bank_s=300", "delay_s=10", "delay=" + kind])
        assert b.core.restore(snap, b.t(0))
        assert b.core.snapshot(b.t(0)) == snap
        assert not b.core.restore(snap, b.t(0))  # once
    flagged = make(["bank_s=5"])
    assert flagged.core.restore((2, 1, 100, 0, 0, 0, 0, 1), flagged.t(0))
    assert flagged.core.overtime() and flagged.rec.of("expired") == []
    assert not make([]).core.restore((0, -1, 1, 1, 0, 0, 0, 0), 0)  # nothing had started
    assert not make([]).core.restore((1, 0, 1), 0)  # not a backgammon snapshot


# -- restore: the snapshot's values, each on its bounds ------------------------
def test_a_snapshot_names_each_players_bank():
    # (move, player, bank_A, bank_B, paused, breaks_A, breaks_B, flag): the
    # mover's bank live (without the unused delay), the other's as it stood
    sim = make(["bank_s=600", "delay_s=10"])
    sim.press(0, BTN_A)  # B's move 1
    sim.press(30000, BTN_B)  # B used 30 s: 20 s off the bank; A's move 2
    assert sim.core.snapshot(sim.t(45000)) == (2, 0, 595000, 580000, 0, 0, 0, 0)
    sim.press(50000, BTN_A)  # A used 20 s: 10 s off; B's move 3
    assert sim.core.snapshot(sim.t(50000)) == (3, 1, 590000, 580000, 0, 0, 0, 0)
    assert sim.core.snapshot(sim.t(75000)) == (3, 1, 590000, 565000, 0, 0, 0, 0)


def test_a_restore_from_the_first_move_on():
    # a game restores from move 1 (the first move made); move 0 had not started
    sim = make(["bank_s=600"])
    assert sim.core.restore((1, 1, 600000, 590000, 0, 0, 0, 0), sim.t(0))
    assert fields(sim.rec, "resume") == [{"player": 1, "move": 1, "bank_ms": 590000}]
    sim = make(["bank_s=600"])
    assert not sim.core.restore((0, 1, 600000, 590000, 0, 0, 0, 0), sim.t(0))
    assert not sim.core.restore((1, 2, 600000, 590000, 0, 0, 0, 0), sim.t(0))
    assert not sim.core.restore((1, -1, 600000, 590000, 0, 0, 0, 0), sim.t(0))
    assert sim.rec.events == [] and sim.core.fresh()


def test_a_restored_bank_is_never_below_zero():
    for a, kept in ((-5, 0), (0, 0), (1, 1)):
        sim = make(["bank_s=600"])
        assert sim.core.restore((4, 1, a, 300000, 0, 0, 0, 0), sim.t(0))
        assert sim.core.bank_left(sim.t(0), 0) == kept, a
        assert shown(sim, 0)[0] == kept
    for b, kept in ((-5, 0), (1, 1)):  # the mover's: 0 is the flag as it fell
        sim = make(["bank_s=600"])
        assert sim.core.restore((4, 1, 300000, b, 0, 0, 0, 0), sim.t(0))
        assert sim.core.bank_left(sim.t(0), 1) == kept, b


def test_a_restore_takes_the_breaks_used_within_two():
    # rule 2.3: two breaks per player; a count outside 0..2 is taken as both used
    for used, kept in ((-1, 2), (0, 0), (1, 1), (2, 2), (3, 2)):
        sim = make(["bank_s=600"])
        assert sim.core.restore((5, 0, 300000, 300000, 1, used, used, 0), sim.t(0))
        assert (sim.core.breaks_used(0), sim.core.breaks_used(1)) == (kept, kept), used


def test_a_restore_on_a_bank_run_out_is_the_flag_without_a_second_signal():
    # the flag as it fell (no second long final signal): the snapshot's flag,
    # or the mover's bank at 0 even without it; a bank of 1 ms still runs
    for bank, flag, frozen in ((0, 0, True), (5000, 1, True), (0, 1, True), (1, 0, False)):
        sim = make(["bank_s=600"])
        assert sim.core.restore((6, 0, bank, 300000, 0, 0, 0, flag), sim.t(0))
        assert sim.core.overtime() == frozen, (bank, flag)
        sim.run_to(10000)
        assert len(sim.rec.of("expired")) == (0 if frozen else 1), (bank, flag)
        if frozen:
            assert shown(sim, 10000) == [0, 300000]


def _stopped(sim, ms):
    """The snapshot's paused value, checked against paused() (the host's views
    read that: docs/backgammon.md)."""
    paused = sim.core.snapshot(sim.t(ms))[4]
    assert sim.core.paused() == (paused == 1)
    return paused


def test_a_snapshot_says_whether_time_is_stopped():
    # paused: 1 while PAUSE holds the time (6.1), during a break select and a
    # break (2.3); 0 while a move runs, before the first move and with the flag
    sim = make(["bank_s=600"])
    assert _stopped(sim, 0) == 0
    sim.press(0, BTN_A)
    assert _stopped(sim, 1000) == 0
    sim.press(2000, BTN_PAUSE)
    assert _stopped(sim, 2000) == 1
    sim.press(3500, BTN_PAUSE | LONG)  # the break select
    assert _stopped(sim, 3500) == 1
    sim.press(5000, BTN_A)  # A takes a break
    assert sim.core.breaks_used(0) == 1 and _stopped(sim, 6000) == 1
    assert sim.core.snapshot(sim.t(6000))[5:7] == (1, 0)  # breaks used by A, by B
    sim.press(7000, BTN_A)  # back early: time stays stopped
    assert _stopped(sim, 7000) == 1
    sim.press(8000, BTN_A)  # A's press starts B's time again
    assert _stopped(sim, 8000) == 0
    sim.run_to(700000)  # B's bank and delay run out
    assert sim.core.overtime() and _stopped(sim, 700000) == 0


def test_the_match_is_over_on_the_clock_only_when_a_flag_fell():
    # over(): the clock takes new settings (the host's K frame) only while no
    # game runs, and a game decided by the flag has ended (docs/protocol.md)
    sim = make(["bank_s=5", "delay_s=0"])
    assert not sim.core.over()
    sim.press(0, BTN_A)  # B's move 1: 5 s of bank
    sim.run_to(3999)
    assert not sim.core.over()
    sim.press(4000, BTN_PAUSE)  # 1 s left
    assert not sim.core.over()
    sim.press(4500, BTN_A)  # A's press: B's time again
    sim.run_to(5499)
    assert not sim.core.over()
    sim.run_to(5500)
    assert sim.core.over() and sim.core.overtime()


def test_the_countdown_on_the_ms_the_simple_delay_ends():
    # docs/backgammon.md, "Display": the delay left, then the bank, which
    # starts to move only then: on the delay's last ms the countdown is 1 ms,
    # on its end the whole bank, a ms later the bank less 1 ms
    sim = make(["bank_s=600", "delay_s=15"])
    sim.press(1000, BTN_B)  # A's move 1 from 1000: the delay ends at 16000
    assert sim.core.left_ms(sim.t(15999)) == 1
    assert sim.core.left_ms(sim.t(16000)) == 600000
    assert sim.core.left_ms(sim.t(16001)) == 599999
    assert shown(sim, 16001) == [599999, 600000]


def test_a_clock_in_play_is_not_fresh_and_takes_no_restore():
    # a restore is taken only on a fresh clock, before its first move (modes.py)
    sim = make(["bank_s=600"])
    assert sim.core.fresh()
    sim.press(0, BTN_A)  # B's move 1
    assert not sim.core.fresh()
    assert not sim.core.restore((9, 0, 5000, 5000, 0, 0, 0, 0), sim.t(100))
    assert sim.core.move == 1 and sim.core.player == 1 and sim.rec.of("resume") == []


def test_a_snapshot_says_when_the_flag_fell():
    sim = make(["bank_s=5", "delay_s=0"])
    sim.press(0, BTN_A)
    sim.run_to(4999)
    assert sim.core.snapshot(sim.t(4999))[7] == 0
    sim.run_to(5000)
    assert sim.core.snapshot(sim.t(5000)) == (1, 1, 5000, 0, 0, 0, 0, 1)


def test_during_a_break_by_b_the_other_display_shows_as_bank():
    # docs/backgammon.md, "Breaks": the taker's display counts the break down,
    # the other shows its bank
    sim = make(["bank_s=600", "delay_s=0"])
    sim.press(0, BTN_A)  # B's move 1
    sim.press(10000, BTN_B)  # A's move 2
    sim.press(30000, BTN_A)  # B's move 3
    take_break(sim, 40000, BTN_B)  # B takes a break from 43000
    assert shown(sim, 43000) == [580000, BREAK_MS]
    assert shown(sim, 44000) == [580000, BREAK_MS - 1000]
    assert sim.core.snapshot(sim.t(44000))[5:7] == (0, 1)
