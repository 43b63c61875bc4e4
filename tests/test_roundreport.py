"""The round's report across tables (``hallclock report --round N LOG…``): per
table the game, every overtime with move, player and amount (the evidence for
a ČAS 10.2.6 claim), the games still running at the end gong and their
play-out (16.3), the pauses with the referee's reasons and the rule the
restart followed (9.1/10.1 or 11.2); CSV; one hall-wide plot.

The games are simulated end to end on the virtual clock (5-minute rounds);
their records carry ``round`` from the start gong on, as the host tags them
after the clock took the round number (hostlink.tag_round)."""
import csv
import json
import re

import pytest

from conftest import run_cli

from hallclock.vboard import device as virtual
from hallclock.link.hostlink import Session, tag_round
from hallclock.link.logfile import read_records
from hallclock.views.roundreport import referee_log_of
from hallclock.scenario import parse_text
from hallclock_fw.settings import parse

SETS = ["round_min=5", "round_warn_min=1"]
# table-1: B's move 2 runs 50 s over (ČAS 10.2.6), A's move 3 stopped by a
# challenge, B's press restarts A (9.1, 10.1); the end gong (300 s) falls in
# A's move 3; the session ends in play-out step (a)
T1 = """0 press START
1000 press B
30000 press A
200000 press B
250000 press PAUSE
280000 press B
330000 press A
340000 end
"""
# table-2: over before the end gong
T2 = """0 press START
1000 press B
20000 press A
40000 press B
60000 end
"""
# table-3: a STOP in move 2: B stops his own time, then B's press ends move 2 (11.2);
# the end gong in move 6 (B's) finishes the round, 7-8 are (b), 9-10 (c), then over
T3 = """0 press START
1000 press B
50000 press A
60000 press PAUSE
70000 press B
150000 press A
200000 press B
290000 press A
310000 press B
312000 press A
314000 press B
316000 press A
318000 press B
320000 press A
330000 end
"""


def _game(tmp_path, name, text, number):
    raw = tmp_path / f"{name}.raw.jsonl"
    virtual.simulate(parse_text(text), "scrabble", parse("scrabble", SETS), str(raw),
                     clock=name)
    s = Session("x", name, "scrabble")
    out = []
    for r in read_records(raw):
        if r["event"] == "gong" and r["kind"] == "start":
            s.round = number  # the clock took the round with its START
        tag_round(s, r)
        out.append(r)
    return out


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("round")
    hall = tmp / "round3.jsonl"
    other = tmp / "late.jsonl"
    r1 = _game(tmp, "table-1", T1, 3)
    r2 = _game(tmp, "table-2", T2, 3)
    r3 = _game(tmp, "table-3", T3, 3)
    r4 = _game(tmp, "table-4", T2, 2)  # the round before, in the same log
    # table-5: A's move 1 runs out at 121 s and is never pressed: the session ends at 150 s
    r5 = _game(tmp, "table-5", "0 press START\n1000 press B\n150000 end\n", 3)
    hall.write_text("".join(json.dumps(r) + "\n" for r in r4 + r1 + r2 + r5))
    other.write_text("".join(json.dumps(r) + "\n" for r in r3))
    pause = next(r for r in r1 if r["event"] == "pause")
    stop = next(r for r in r3 if r["event"] == "pause")
    side = [{"clock": "referee", "seq": 1, "t_ms": 5, "event": "pause_reason",
             "table": "table-1", "table_session": pause["session"], "pause_seq": pause["seq"],
             "move": pause["move"], "player": pause["player"], "reason": "dispute",
             "session": "0000beef", "host_time": "2026-12-01T10:00:00.000Z"},
            {"clock": "referee", "seq": 2, "t_ms": 9, "event": "pause_reason",
             "table": "table-1", "table_session": pause["session"], "pause_seq": pause["seq"],
             "move": pause["move"], "player": pause["player"], "reason": "challenge",
             "session": "0000beef", "host_time": "2026-12-01T10:00:01.000Z"}]
    referee = referee_log_of(str(hall))
    with open(referee, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in side))
    with open(referee_log_of(str(other)), "w") as f:
        f.write(json.dumps({"clock": "referee", "seq": 1, "t_ms": 1, "event": "pause_reason",
                            "table": "table-3", "table_session": stop["session"],
                            "pause_seq": stop["seq"], "reason": "stop", "session": "0000cafe",
                            "host_time": "2026-12-01T10:00:00.000Z"}) + "\n")
    return str(hall), str(other)


def test_round_report_across_tables(logs, tmp_path):
    hall, other = logs
    csv_path = tmp_path / "round3.csv"
    plot = tmp_path / "round3.png"
    res = run_cli("report", "--round", "3", hall, other, "--csv", str(csv_path),
                  "--plot", str(plot))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "Round 3: 4 tables of scrabble" in out
    assert "table-4" not in out  # round 2
    # the overtime: table-1, move 2, B, 50 s over its 2 minutes
    line = next(ln for ln in out.splitlines() if "table-1" in ln and "0:50.0" in ln)
    assert " 2 " in line and " B " in line
    # still playing at the end gong: table-1 (move 3) and table-3 (move 6); not table-2
    assert "Still playing at the end gong (ČAS 16.3): 2 games" in out
    assert "table-1: move 3 in progress at the end gong" in out
    flat = " ".join(out.split())  # the report wraps long lines at words
    t3 = flat[flat.index("table-3: move 6"):].split(" table-")[0]
    assert "(c) from move 9" in t3 and "NOT finished" not in t3
    assert "table-2: move" not in out
    assert "over after move 10" in t3
    t1 = flat[flat.index("table-1: move 3"):].split(" table-")[0]
    assert "NOT finished" in t1
    # the pauses, with the referee's reason (the later tag wins) and the restart rule
    pauses = [ln for ln in out.splitlines() if "9.1/10.1" in ln or "11.2" in ln]
    assert len(pauses) == 2
    assert "challenge" in pauses[0] and "table-1" in pauses[0] and "dispute" not in pauses[0]
    assert "STOP" in pauses[1] and "11.2" in pauses[1] and "table-3" in pauses[1]

    rows = list(csv.DictReader(open(csv_path, encoding="utf-8")))
    kinds = [(r["kind"], r["table"]) for r in rows]
    assert kinds.count(("game", "table-1")) == 1 and ("game", "table-4") not in kinds
    over = [r for r in rows if r["kind"] == "overtime"]
    assert [(r["table"], r["move"], r["player"], r["ms"]) for r in over] == [
        ("table-1", "2", "B", "50000"), ("table-5", "1", "A", "29000")]
    assert "never pressed" in over[1]["text"] and "never" not in over[0]["text"]
    pause_rows = [r for r in rows if r["kind"] == "pause"]
    assert [(r["table"], r["ms"]) for r in pause_rows] == [("table-1", "30000"),
                                                           ("table-3", "10000")]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 20000


@pytest.mark.parametrize("width", [80, 60])
def test_a_narrow_report_never_cuts_a_value(logs, tmp_path, monkeypatch, width):
    """At 80 columns (and 60) no value is cut: every line fits, nothing ends
    in an ellipsis, every table's used times stand whole; a player's totals
    break between words, the broken line under the text; every duration is
    given in tenths (issue 33: "A us…", "1:16…", "0:50.000" beside "0:50.0")."""
    hall, other = logs
    monkeypatch.setenv("COLUMNS", str(width))
    res = run_cli("report", "--round", "3", hall, other, "--claims")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    lines = out.splitlines()
    assert all(len(ln) <= width for ln in lines), max(lines, key=len)
    assert "…" not in out
    assert not re.search(r"\d:\d\d\.\d\d\d", out)  # one precision: tenths
    from hallclock.views.report import fmt_short
    from hallclock.views.roundreport import load_round
    for tg in load_round(3, [hall, other]):
        for player in "AB":
            assert re.search(rf"\b{re.escape(fmt_short(tg.used(player)))}\b", out), (
                tg.clock, player)
    # a player's totals: continued lines start under the text, not under "A:"
    for i, ln in enumerate(lines[:-1]):
        if re.match(r"  [AB]: \d+ moves?,", ln) and lines[i + 1].startswith("     ") \
                and not lines[i + 1].strip().startswith(("move", "A:", "B:")):
            assert lines[i + 1][:5] == "     " and lines[i + 1][5] != " "


def test_round_report_bad_input(logs, tmp_path):
    hall, other = logs
    res = run_cli("report", "--round", "7", hall)
    assert res.returncode == 2
    assert "no game of round 7" in res.stderr and "rounds in these logs: 2, 3" in res.stderr
    res = run_cli("report", "--round", "3", hall, str(tmp_path / "missing.jsonl"))
    assert res.returncode == 2 and "no such log file" in res.stderr
    res = run_cli("report", hall, other)
    assert res.returncode == 2 and "--round N" in res.stderr
    res = run_cli("report", "--round", "0", hall)
    assert res.returncode == 2 and "1 to 999" in res.stderr
    assert "Traceback" not in res.stderr
    # nothing written over: an existing CSV stays unless --force
    old = tmp_path / "old.csv"
    old.write_text("keep me\n")
    res = run_cli("report", "--round", "3", hall, "--csv", str(old))
    assert res.returncode == 2 and "--force" in res.stderr
    assert old.read_text() == "keep me\n"
    res = run_cli("report", "--round", "3", hall, "--csv", str(old), "--force")
    assert res.returncode == 0 and old.read_text().startswith("round,kind,table")
    res = run_cli("report", "--round", "3", hall, "--csv", hall)
    assert res.returncode == 2 and "input" in res.stderr
