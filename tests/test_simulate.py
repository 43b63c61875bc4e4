"""End to end: scenario -> virtual device -> pty -> host logger -> log."""
import os
import re

import pytest

from conftest import read_log, run_cli, strip_host

GAME = """\
0       press START
1000    press B
50000   press A
60000   press A      # not A's time: nothing
70000   press B
200000  press A      # 130 s: warnings and overtime
210000  press PAUSE
230000  press A      # B's time again, fresh limit
240000  press B
250000  end
"""


def events(records):
    return [(r["t_ms"], r["event"], {k: v for k, v in r.items() if k not in (
        "clock", "seq", "t_ms", "event", "host_time", "session")}) for r in records]


def test_scenario_to_log_over_the_pty(tmp_path, script):
    log = tmp_path / "game.jsonl"
    res = run_cli("simulate", "--script", script(GAME), "--out", str(log), "--clock", "table-7")
    assert res.returncode == 0, res.stderr
    recs = read_log(log)
    assert [r["seq"] for r in recs] == list(range(1, len(recs) + 1))
    assert {r["clock"] for r in recs} == {"table-7"}
    for r in recs:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["host_time"])
    lim = {"limit_ms": 120000}
    assert events(recs) == [
        (0, "boot", {"mode": "scrabble", "settings": {
            "move_s": 120, "warn_s": [30, 20, 10], "round_min": 40, "round_warn_min": 10}}),
        # the first pass's health report (docs/hardware.md): CPython has no heap
        (0, "health", {"gc_used": None, "gc_free": None, "gc_largest": None,
                       "longest_pass_ms": 0}),
        (0, "gong", {"kind": "start", "move": None}),
        (1000, "turn", {"player": "A", "move": 1, **lim}),
        (50000, "press", {"player": "A", "move": 1, "used_ms": 49000}),
        (50000, "turn", {"player": "B", "move": 2, **lim}),
        (70000, "press", {"player": "B", "move": 2, "used_ms": 20000}),
        (70000, "turn", {"player": "A", "move": 3, **lim}),
        (160000, "warn", {"player": "A", "move": 3, "left_s": 30}),
        (170000, "warn", {"player": "A", "move": 3, "left_s": 20}),
        (180000, "warn", {"player": "A", "move": 3, "left_s": 10}),
        (190000, "expired", {"player": "A", "move": 3}),
        (200000, "press", {"player": "A", "move": 3, "used_ms": 130000}),
        (200000, "turn", {"player": "B", "move": 4, **lim}),
        (210000, "pause", {"player": "B", "move": 4}),
        (230000, "resume", {"player": "B", "move": 4, **lim}),
        (240000, "press", {"player": "B", "move": 4, "used_ms": 20000}),
        (240000, "turn", {"player": "A", "move": 5, **lim}),
        (250000, "end", {}),
    ]
    # the report reads it back: overtime of move 3 is 10 s
    res = run_cli("report", str(log), "--csv", str(tmp_path / "t.csv"))
    assert res.returncode == 0, res.stderr
    assert "0:10.0" in res.stdout
    rows = (tmp_path / "t.csv").read_text().splitlines()
    assert rows[0].startswith("clock,session,move,player")
    assert any(",3,A,2:10.000,130000,120000,30 20 10,10000," in r for r in rows)


def test_same_log_across_the_tick_wrap(tmp_path, script):
    s = script(GAME)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert run_cli("simulate", "--script", s, "--out", str(a)).returncode == 0
    res = run_cli("simulate", "--script", s, "--out", str(b), "--start-ticks", "0x3fffff00")
    assert res.returncode == 0, res.stderr
    assert strip_host(read_log(a)) == strip_host(read_log(b))


def test_jittered_loop_warnings_within_one_period(tmp_path, script):
    log = tmp_path / "j.jsonl"
    res = run_cli("simulate", "--script", script(GAME), "--out", str(log),
                  "--loop", "jitter:1-20", "--start-ticks", "0x3ffe0000")
    assert res.returncode == 0, res.stderr
    recs = read_log(log)
    turns = {r["move"]: r["t_ms"] for r in recs if r["event"] == "turn"}
    warns = [r for r in recs if r["event"] == "warn"]
    assert [w["left_s"] for w in warns] == [30, 20, 10]
    for w in warns:
        ideal = turns[w["move"]] + 120000 - w["left_s"] * 1000
        assert 0 <= w["t_ms"] - ideal < 20
    exp = [r for r in recs if r["event"] == "expired"][0]
    assert 0 <= exp["t_ms"] - (turns[3] + 120000) < 20
    # presses are seen within one period of the contact closing
    presses = [r["t_ms"] for r in recs if r["event"] == "press"]
    for got, want in zip(presses, (50000, 70000, 200000, 240000)):
        assert 0 <= got - want < 20


def test_bounce_counts_once(tmp_path, script):
    log = tmp_path / "b.jsonl"
    s = script("0 press START\n1000 press B\n5000 bounce A\n9000 bounce B\n9500 end\n")
    assert run_cli("simulate", "--script", s, "--out", str(log)).returncode == 0
    presses = [r for r in read_log(log) if r["event"] == "press"]
    assert [(p["player"], p["move"]) for p in presses] == [("A", 1), ("B", 2)]


BAD = [
    (["--bogus"], "unrecognized arguments"),
    (["--set", "move_s=abc"], "bad --set: move_s"),
    (["--set", "colour=red"], "bad --set: colour is not a setting"),
    (["--mode", "chess"], "unknown mode 'chess'"),
    (["--loop", "sometimes"], "--loop"),
]


@pytest.mark.parametrize("extra, words", BAD)
def test_bad_options_exit_2_with_one_line(tmp_path, script, extra, words):
    log = tmp_path / "x.jsonl"
    res = run_cli("simulate", "--script", script(GAME), "--out", str(log), *extra)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hallclock: ")
    assert words in lines[0]
    assert "Traceback" not in res.stderr
    assert not log.exists()


@pytest.mark.parametrize("text, line, words", [
    ("0 press START\n10 prss B\n20 end\n", 2, "unknown action"),
    ("0 press START\n100 press B\n50 press A\n200 end\n", 3, "comes before"),
])
def test_bad_script_exit_2_names_file_and_line(tmp_path, script, text, line, words):
    log = tmp_path / "x.jsonl"
    path = script(text, "bad.txt")
    res = run_cli("simulate", "--script", path, "--out", str(log))
    assert res.returncode == 2
    assert res.stderr.strip() == res.stderr.strip().splitlines()[0]
    assert f"hallclock: {path}:{line}: " in res.stderr and words in res.stderr
    assert not log.exists()


def test_existing_log_is_never_overwritten(tmp_path, script):
    log = tmp_path / "x.jsonl"
    log.write_text('{"keep": 1}\n')
    res = run_cli("simulate", "--script", script(GAME), "--out", str(log))
    assert res.returncode == 2 and "already exists" in res.stderr
    assert log.read_text() == '{"keep": 1}\n'


def test_demo_prints_a_report(tmp_path):
    res = run_cli("demo", "--out", str(tmp_path / "demo"))
    assert res.returncode == 0, res.stderr
    assert "move" in res.stdout and "overtime" in res.stdout
    assert os.path.exists(tmp_path / "demo" / "demo-game.jsonl")
    recs = read_log(tmp_path / "demo" / "demo-game.jsonl")
    assert recs[0]["event"] == "boot" and recs[-1]["event"] == "end"
    assert any(r["event"] == "expired" for r in recs)
