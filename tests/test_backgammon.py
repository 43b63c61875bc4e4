"""The backgammon clock end to end (İSTAVDER rules, docs/rules.md §3;
docs/backgammon.md): the referee's commands, scenario -> virtual device ->
pty -> logger -> log, and bad settings.  The clock's rules move by move are
in tests/core/test_backgammon_core.py."""
import os
import shlex

import pytest

from conftest import ROOT, read_log, run_cli, strip_host
from hallclock.commands.backgammon import forfeited, penalty_points
from hallclock.vboard.vdev.runner import RUNNING, Runner
from hallclock_fw.hw.buttons import DEBOUNCE_MS
from hallclock_fw.settings import parse
from hallclock_fw.events import EV_BREAK, EV_BREAK_END, EV_EXPIRED, EV_REFUSED
from hallclock_fw.signals import signal_for

# the patterns the clock plays for these events (signals.py's own table)
P_BREAK, P_BREAK_END, P_EXPIRED, P_REFUSED = (
    signal_for(code, 0, 1, 0)[0] for code in (EV_BREAK, EV_BREAK_END, EV_EXPIRED, EV_REFUSED))

SAMPLE = os.path.join(ROOT, "host", "hallclock", "samples", "backgammon_match.txt")
HOST = ("clock", "seq", "host_time", "session")


def events(records):
    """The rules' events (the clock's own health reports: tests/test_health.py)."""
    return [(r["t_ms"], r["event"], {k: v for k, v in r.items()
                                     if k not in HOST + ("t_ms", "event")})
            for r in records if r["event"] != "health"]


def simulate(tmp_path, script_path, *sets, name="bg.jsonl", extra=()):
    log = tmp_path / name
    args = ["simulate", "--mode", "backgammon", "--script", script_path, "--out", str(log)]
    for s in sets:
        args += ["--set", s]
    res = run_cli(*args, *extra)
    assert res.returncode == 0, res.stderr
    return read_log(log)


# -- hallclock backgammon-time ---------------------------------------------------
def settings_line(stdout):
    lines = [x for x in stdout.splitlines() if x.startswith("Settings:")]
    assert len(lines) == 1, stdout
    return shlex.split(lines[0][len("Settings:"):])


@pytest.mark.parametrize("match,score,bank", [
    (7, "3-5", "10:00"),  # A trails, needs 4
    (7, "5-3", "10:00"),  # B trails, needs 4
    (7, "4-4", "7:30"),  # level: 3 each
    (7, "0-0", "17:30"),
    (25, "0-3", "1:02:30"),
])
def test_backgammon_time_prints_the_banks_and_a_settings_line_that_works(
        tmp_path, script, match, score, bank):
    res = run_cli("backgammon-time", "--match", str(match), "--score", score)
    assert res.returncode == 0, res.stderr
    assert f"  A: {bank}\n  B: {bank}\n" in res.stdout
    line = settings_line(res.stdout)
    assert line[:2] == ["--mode", "backgammon"]
    # the referee pastes the line: the clock starts both players on that bank
    log = tmp_path / "x.jsonl"
    s = script("0 press B\n1000 press A\n2000 end\n")
    res = run_cli("simulate", "--script", s, "--out", str(log), *line)
    assert res.returncode == 0, res.stderr
    recs = read_log(log)
    a, b = (int(x) for x in score.split("-"))
    want = (match - min(a, b)) * 150000
    assert [r["bank_ms"] for r in recs if r["event"] == "turn"] == [want, want]
    assert recs[0]["settings"]["score"] == score


def test_backgammon_time_options_reach_the_settings_line():
    res = run_cli("backgammon-time", "--match", "11", "--score", "2-9", "--per-point-s", "120",
                  "--delay", "fischer", "--delay-s", "10")
    assert res.returncode == 0, res.stderr
    assert "18:00 (1080 s) per player" in res.stdout
    assert "10 s Fischer increment" in res.stdout
    line = settings_line(res.stdout)
    values = parse("backgammon", [line[i + 1] for i in range(len(line)) if line[i] == "--set"])
    assert values["per_point_s"] == 120 and values["delay"] == "fischer"
    assert values["delay_s"] == 10


# -- bad settings: exit 2, one clear line, no log ---------------------------------
BAD = [
    (["match=7", "score=8-2"], "score: A has 8 points"),
    (["match=5", "score=2-5"], "score: B has 5 points"),
    (["delay_s=-1"], "delay_s must be at least 0"),
    (["delay=hourglass"], "delay: 'hourglass' is not one of simple, bronstein, fischer"),
    (["per_point_s=0"], "per_point_s must be at least 1"),
]


@pytest.mark.parametrize("sets,message", BAD)
def test_bad_settings_exit_2_before_anything_runs(tmp_path, script, sets, message):
    log = tmp_path / "never.jsonl"
    args = ["simulate", "--mode", "backgammon", "--script", script("0 press B\n10 end\n"),
            "--out", str(log)]
    for s in sets:
        args += ["--set", s]
    res = run_cli(*args)
    assert res.returncode == 2
    assert res.stderr.startswith("hallclock: bad --set: ") and message in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not log.exists()


@pytest.mark.parametrize("args,message", [
    (["--match", "7", "--score", "8-2"], "score: A has 8 points"),
    (["--match", "7", "--score", "3-5", "--delay-s", "-1"], "delay_s must be at least 0"),
    (["--match", "7", "--score", "3-5", "--delay", "sandglass"], "'sandglass' is not one of"),
    (["--match", "7", "--score", "35"], "is not a score like 3-5"),
    (["--match", "seven", "--score", "3-5"], "--match"),
])
def test_backgammon_time_bad_input_exit_2(args, message):
    res = run_cli("backgammon-time", *args)
    assert res.returncode == 2
    assert message in res.stderr and res.stdout == ""


# -- hallclock lateness (rule 2.2) --------------------------------------------------
LATENESS = [  # minutes late -> penalty points
    (0, 0), (14, 0), (15, 1), (19, 1), (20, 2), (24, 2), (25, 3), (27, 3), (29, 3),
    (30, 4), (34, 4), (35, 5), (60, 10),
]


def test_lateness_table():
    assert [penalty_points(m) for m, _ in LATENESS] == [p for _, p in LATENESS]
    # lost when the points exceed half the match length
    assert [forfeited(p, 7) for p in range(6)] == [False, False, False, False, True, True]
    assert [forfeited(p, 1) for p in range(3)] == [False, True, True]
    assert [forfeited(p, 4) for p in range(4)] == [False, False, False, True]


@pytest.mark.parametrize("match,late,points,lost", [
    (7, 27, 3, False), (7, 30, 4, True), (7, 14, 0, False), (5, 25, 3, True),
    (5, 24, 2, False), (1, 15, 1, True), (11, 40, 6, True), (11, 39, 5, False),
])
def test_lateness_command(match, late, points, lost):
    res = run_cli("lateness", "--match", str(match), "--late-min", str(late))
    assert res.returncode == 0, res.stderr
    plural = "s" if points != 1 else ""
    assert res.stdout.startswith(f"{late} min late: {points} penalty point{plural} ")
    assert ("loses the match" in res.stdout) == lost
    assert ("not forfeited" in res.stdout) == (not lost)


def test_lateness_table_command():
    res = run_cli("lateness", "--match", "7")
    assert res.returncode == 0, res.stderr
    rows = [x.split() for x in res.stdout.splitlines()[2:]]
    assert rows == [["15", "1"], ["20", "2"], ["25", "3"], ["30", "4", "match", "lost"]]


@pytest.mark.parametrize("args", [
    ["--match", "0", "--late-min", "20"], ["--match", "7", "--late-min", "-5"],
    ["--match", "7", "--late-min", "soon"], ["--late-min", "20"],
])
def test_lateness_bad_input_exit_2(args):
    res = run_cli("lateness", *args)
    assert res.returncode == 2 and res.stderr.startswith("hallclock: ")


# -- the three delay kinds, end to end ----------------------------------------------
MOVES = """\
0      press B
10000  press A    # A 10 s
30000  press B    # B 20 s
45000  press A    # A 15 s
45100  press B    # B 0.1 s
90000  press A    # A 44.9 s
91000  end
"""


@pytest.mark.parametrize("kind,banks", [
    ("simple", [600000, 595000, 600000, 595000, 570100]),
    ("bronstein", [600000, 595000, 600000, 595000, 570100]),
    ("fischer", [605000, 595000, 605000, 609900, 575100]),
])
def test_every_bank_in_the_log_for_each_delay_kind(tmp_path, script, kind, banks):
    recs = simulate(tmp_path, script(MOVES), "bank_s=600", "delay=" + kind)
    presses = [r for r in recs if r["event"] == "press"]
    assert [p["bank_ms"] for p in presses] == banks
    assert [p["used_ms"] for p in presses] == [10000, 20000, 15000, 100, 44900]
    # each turn starts on the bank the player's last press left
    turns = [r for r in recs if r["event"] == "turn"]
    assert [t["bank_ms"] for t in turns] == [600000, 600000] + banks[:4]


# -- the sample match: every bank, pause, breaks, refusal, expiry ----------------------
def test_sample_match_end_to_end_and_across_the_tick_wrap(tmp_path):
    sets = ("match=7", "score=3-5")
    recs = simulate(tmp_path, SAMPLE, *sets)
    ev = events(recs)
    assert ev[0] == (0, "boot", {"mode": "backgammon", "settings": {
        "match": 7, "score": "3-5", "per_point_s": 150, "delay_s": 15, "delay": "simple"}})
    assert ev[1:] == [
        (0, "turn", {"player": "A", "move": 1, "bank_ms": 600000}),
        (12000, "press", {"player": "A", "move": 1, "used_ms": 12000, "bank_ms": 600000}),
        (12000, "turn", {"player": "B", "move": 2, "bank_ms": 600000}),
        (40000, "press", {"player": "B", "move": 2, "used_ms": 28000, "bank_ms": 587000}),
        (40000, "turn", {"player": "A", "move": 3, "bank_ms": 600000}),
        (95000, "pause", {"player": "A", "move": 3}),
        (155000, "resume", {"player": "A", "move": 3, "bank_ms": 560000}),
        (160000, "press", {"player": "A", "move": 3, "used_ms": 60000, "bank_ms": 555000}),
        (160000, "turn", {"player": "B", "move": 4, "bank_ms": 587000}),
        (180000, "press", {"player": "B", "move": 4, "used_ms": 20000, "bank_ms": 582000}),
        (180000, "turn", {"player": "A", "move": 5, "bank_ms": 555000}),
        (200000, "press", {"player": "A", "move": 5, "used_ms": 20000, "bank_ms": 550000}),
        (200000, "turn", {"player": "B", "move": 6, "bank_ms": 582000}),
        (202000, "pause", {"player": "B", "move": 6}),
        (205000, "break", {"player": "B", "number": 1, "break_ms": 300000}),
        (400000, "break_end", {"player": "B", "number": 1}),
        (410000, "resume", {"player": "B", "move": 6, "bank_ms": 582000}),
        (430000, "press", {"player": "B", "move": 6, "used_ms": 22000, "bank_ms": 575000}),
        (430000, "turn", {"player": "A", "move": 7, "bank_ms": 550000}),
        (450000, "press", {"player": "A", "move": 7, "used_ms": 20000, "bank_ms": 545000}),
        (450000, "turn", {"player": "B", "move": 8, "bank_ms": 575000}),
        (460000, "pause", {"player": "B", "move": 8}),
        (463000, "break", {"player": "A", "number": 1, "break_ms": 300000}),
        (763000, "break_end", {"player": "A", "number": 1}),
        (803000, "break", {"player": "A", "number": 2, "break_ms": 300000}),
        (1103000, "break_end", {"player": "A", "number": 2}),
        (1203000, "refused", {"player": "A", "what": "break"}),
        (1210000, "press", {"player": "B", "move": 8, "used_ms": 10000, "bank_ms": 575000}),
        (1210000, "turn", {"player": "A", "move": 9, "bank_ms": 545000}),
        (1210000, "resume", {"player": "A", "move": 9, "bank_ms": 545000}),
        (1230000, "press", {"player": "A", "move": 9, "used_ms": 20000, "bank_ms": 540000}),
        (1230000, "turn", {"player": "B", "move": 10, "bank_ms": 575000}),
        # 15 s delay + 575 s bank after B's turn, to the ms
        (1820000, "expired", {"player": "B", "move": 10}),
        (1900000, "end", {}),
    ]
    # the same match with the device's ticks wrapping at 2**30 mid-game: the same log
    wrapped = simulate(tmp_path, SAMPLE, *sets, name="w.jsonl",
                       extra=("--start-ticks", str((1 << 30) - 300000)))
    assert strip_host(wrapped) == strip_host(recs)
    # a jittery 1-20 ms loop sees each press up to a pass late, but the banks
    # follow from the logged times exactly and the flag falls to the ms
    jitter = simulate(tmp_path, SAMPLE, *sets, name="j.jsonl",
                      extra=("--start-ticks", str((1 << 30) - 900000), "--loop", "jitter:1-20"))
    ev = events(jitter)
    assert [e[1] for e in ev] == [e[1] for e in events(recs)]
    assert ev[1][0] <= 20 and ev[1][2]["bank_ms"] == 600000
    banks = {"A": 600000, "B": 600000}
    for i, (t, name, f) in enumerate(ev):
        if name == "turn":
            assert f["bank_ms"] == banks[f["player"]]
            turn = (t, f["bank_ms"])
        elif name == "press":
            banks[f["player"]] = f["bank_ms"]
            assert f["bank_ms"] == min(turn[1], turn[1] + 15000 - f["used_ms"])
    assert ev[-2][1] == "expired"
    assert ev[-2][0] == turn[0] + 15000 + turn[1]


# -- what the players see and hear (virtual device, no host) ---------------------------
def run_device(text, *sets, until=None):
    from hallclock.scenario import parse_text
    actions = [a.as_tuple() for a in parse_text(text)]
    runner = Runner("backgammon", parse("backgammon", list(sets)), actions, record=True)
    while runner.step() == RUNNING:
        pass
    return runner


def test_displays_show_the_simple_delay_then_the_bank():
    # 5 s into A's move: the delay's 10 s left, with a dash; B's bank
    r = run_device("0 press B\n5000 end\n", "bank_s=600")
    assert [d.text for d in r.displays] == ["-0:10", "10:00"]
    r = run_device("0 press B\n14500 end\n", "bank_s=600")
    assert [d.text for d in r.displays] == ["-0:01", "10:00"]
    r = run_device("0 press B\n16500 end\n", "bank_s=600")  # the bank runs: 9:58.5
    assert [d.text for d in r.displays] == [" 9:59", "10:00"]
    r = run_device("0 press B\n16500 end\n", "bank_s=600", "delay=bronstein")
    assert [d.text for d in r.displays] == [" 9:44", "10:00"]


def test_flag_shows_after_expiry_until_reset():
    r = run_device("0 press B\n30000 press A\n31000 press PAUSE\n40000 end\n",
                   "bank_s=10", "delay_s=15")
    assert [d.text for d in r.displays] == [" 0:00", " 0:10"]


def test_break_signals_at_start_end_and_refusal_and_the_long_expiry_signal():
    text = """\
0       press B
10000   hold PAUSE 2000
13000   press B
330000  hold PAUSE 2000
333000  press B
650000  hold PAUSE 2000
653000  press B
700000  press B
1300000 end
"""
    r = run_device(text, "bank_s=600", "delay_s=0")
    buzz = r.buzzer
    tones = {}
    for t, f in buzz.changes:
        tones.setdefault(f, []).append(t)
    # B's breaks start at 13000 and 333000 and end, with their own signal, 5 min later
    assert P_BREAK[0] == P_BREAK_END[0] and len(P_BREAK) < len(P_BREAK_END)
    # (a press is known once its contact has settled: DEBOUNCE_MS after it closed)
    starts = [t for t in tones[P_BREAK[0]] if t % 1000 <= DEBOUNCE_MS]
    assert starts == [13000 + DEBOUNCE_MS, 313000, 333000 + DEBOUNCE_MS, 633000]
    # the start is one tone, the end the longer pattern of its own
    assert len([t for t in tones[P_BREAK[0]] if 13000 <= t < 14000]) == 1
    assert len([t for t in tones[P_BREAK[0]] if 313000 <= t < 314000]) == len(P_BREAK_END) // 2
    # B's third break is refused, with the refusal signal
    assert tones[P_REFUSED[0]][:1] == [653000 + DEBOUNCE_MS]
    # B's LED shows B's break signals, A's stays dark for them
    assert 313000 in [t for t, f in r.leds[1].changes if f]
    assert 313000 not in [t for t, f in r.leds[0].changes if f]
    # B's press resumes A's move: 590 s left, out at 1290000: the long signal
    assert tones[P_EXPIRED[0]] == [1290000]
    assert [d.text for d in r.displays] == [" 0:00", "10:00"]
