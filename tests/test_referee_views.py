"""What the referee reads agrees with itself: the report's text, its CSV, the
round's report and its CSV read one set of figures (hallclock.views.figures), in one
vocabulary (hallclock.views.words: gongs named by their settings, the play-out in
the words of ČAS 16.3), tables in natural order, readable at 80 columns; and
every view refuses a file that is not a log as ``report`` does.

The golden texts are the README's round of eight virtual tables
(``virtual-clocks``, ``configure --set round_min=10 --set round_warn_min=2``,
``round start --round 3``, ``report --round 3``), its log kept in
tests/golden/readme_round3.jsonl, printed at 80 and 160 columns in UTC.  To
renew them after a deliberate change of the layout:
``HALLCLOCK_GOLDEN=write .venv/bin/python -m pytest tests/test_referee_views.py``."""
import csv
import io
import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from conftest import run_cli

from hallclock.views import figures, report, roundreport, words
from hallclock_fw.settings import parse
from hallclock.views.model import restore_for

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
LOG = os.path.join(GOLDEN, "readme_round3.jsonl")


# (the utc fixture: tests/conftest.py)


def round_text(width):
    from rich.console import Console
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, force_terminal=False)
    tables = roundreport.load_round(3, [LOG])
    roundreport.print_round(3, tables, console)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


@pytest.mark.parametrize("width", [80, 160])
def test_the_readme_round_report_golden(width, utc):
    text = round_text(width)
    path = os.path.join(GOLDEN, "readme_round3_%d.txt" % width)
    if os.environ.get("HALLCLOCK_GOLDEN") == "write":
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    with open(path, encoding="utf-8") as f:
        assert text == f.read()
    lines = text.splitlines()
    # readable at the width: no line wider, nothing cut short inside a name or a figure
    assert max(len(line) for line in lines) <= width
    assert "…" not in text
    # no log key on screen
    for key in ("ten_minutes", "finish_round", "one_more_move", "last_move", "table(s)",
                "game(s)", "1 moves"):
        assert key not in text, key


def test_the_readme_round_report_agrees_with_itself(utc):
    """One answer: the round table's moves and time used per player are the
    table's own section's totals, and the sums of its move rows."""
    text = round_text(160)
    tables = roundreport.load_round(3, [LOG])
    assert [tg.clock for tg in tables] == ["table-%d" % k for k in range(1, 9)]
    for tg in tables:
        (game,) = tg.games
        row = next(ln for ln in text.splitlines() if re.match(r"\W*%s\W" % tg.clock, ln))
        a = sum(m.used for m in game.counted_moves("A"))
        b = sum(m.used for m in game.counted_moves("B"))
        assert report.fmt_short(a) in row and report.fmt_short(b) in row
        assert re.search(r"\b%d\b" % len(game.counted_moves()), row)
        section = text[text.index("%s · scrabble" % tg.clock):]
        assert "A: %s, %s used" % (words.plural(len(game.counted_moves("A")), "move"),
                                   report.fmt_short(a)) in section
        assert "B: %s, %s used" % (words.plural(len(game.counted_moves("B")), "move"),
                                   report.fmt_short(b)) in section
    # the warning gong two minutes before the end is the 2-min gong (round_warn_min=2)
    assert "2-min gong" in text and "10-min gong" not in text and "10 min" not in text
    # the play-out in the rules' words (ČAS 16.3)
    assert "(a) finish the round" in text and "(b) one more move each" in text
    # one time base: the overtime's limit ran out inside its move's start and end
    for tg in tables:
        for m in tg.overtimes:
            assert m.start_at <= m.expired_at <= m.end_at
    # the simulation ran faster than real time, and the header says so
    assert "accelerated simulation" in text.splitlines()[1]


def test_a_file_that_is_not_a_log_is_refused_alike(tmp_path):
    """report, hall-display and console give the same one-line refusal."""
    bad = tmp_path / "notalog.txt"
    bad.write_text("hello, this is not a log\n")
    answers = []
    for argv in (["report", str(bad)], ["hall-display", "--log", str(bad), "--http-port", "0"],
                 ["console", "--log", str(bad), "--http-port", "0"]):
        res = run_cli(*argv, timeout=60)
        assert res.returncode == 2, (argv, res.stdout, res.stderr)
        answers.append(res.stderr.strip())
    assert len(set(answers)) == 1 and "holds no records" in answers[0], answers
    assert len(answers[0].splitlines()) == 1


def test_natural_order():
    names = ["table-10", "table-2", "Table-1", "hall", "table-21", "table-3b", "table-3"]
    assert words.by_name(names) == ["hall", "Table-1", "table-2", "table-3", "table-3b",
                                    "table-10", "table-21"]


def test_gong_names_follow_the_settings():
    assert words.gong_name("ten_minutes", 2) == "2-min gong"
    assert words.gong_name("ten_minutes", words.warn_min_of({})) == "10-min gong"
    assert words.gong_name("end") == "end gong"
    assert words.plural(1, "move") == "1 move" and words.plural(0, "table") == "0 tables"


def test_pty_pair_links_a_clock_and_a_logger(tmp_path):
    """The README's way to try the [board] lines without a board."""
    exe = os.path.join(os.path.dirname(sys.executable), "hallclock")
    ports = tmp_path / "pair.txt"
    pair = subprocess.Popen([exe, "pty-pair", "--ports-file", str(ports)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = pair.stdout.readline()  # printed once both ports exist
        a, b = ports.read_text().split()
        assert a in line and b in line
        script = tmp_path / "short.txt"
        script.write_text("0 press START\n500 press B\n1500 press A\n2500 end\n")
        log = tmp_path / "t.jsonl"
        logger = subprocess.Popen([exe, "log", "--port", b, "--out", str(log), "--exit-on-end",
                                   "--plain"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        dev = run_cli("device", "--script", str(script), "--port", a, timeout=60)
        assert dev.returncode == 0, dev.stderr
        out, err = logger.communicate(timeout=60)
        assert logger.returncode == 0, err
        events = [r["event"] for r in figures.read_log(str(log))[0]]
        assert events[0] == "boot" and events[-1] == "end" and "press" in events
    finally:
        pair.terminate()
        pair.wait(timeout=10)


# -- the property: every view of a game reads the same figures -------------------------
@st.composite
def table_game(draw):
    """A Scrabble table of a round: presses, pauses, reboots (the host sends
    the game back with --restore) and a short round, so the end gong and the
    play-out fall inside the game."""
    move = draw(st.integers(8, 40))
    pairs = ["move_s=%d" % move, "warn_s=%d" % draw(st.integers(1, move - 1)),
             "round_min=1", "round_warn_min=%d" % draw(st.integers(0, 0))]
    actions = [(0, "press", "START")]
    t = 0
    for _ in range(draw(st.integers(3, 14))):
        t += draw(st.integers(200, 30000))
        what = draw(st.sampled_from(("A", "B") * 4 + ("PAUSE", "PAUSE", "reboot")))
        if what == "reboot":
            actions.append((t, "reboot", None))
        else:
            actions.append((t, "press", what))
        t += 150
    actions.append((t + draw(st.integers(1000, 40000)), "end", None))
    return pairs, actions


def check_agree(pairs, actions):
    from rich.console import Console
    from lockstep import Lockstep
    run = Lockstep("scrabble", parse("scrabble", pairs), actions, restore=restore_for, clock="table-1")
    for _ in run.changes():
        pass
    records = [dict(r, round=1) for r in run.records]
    games = figures.games_from_records(records)
    tables = [roundreport.TableGame("table-1", [g.session for g in games], "scrabble", games)]
    tg = tables[0]
    # the round table's figures are the sums of the games' move rows
    rows = [m for g in games for m in g.moves]
    counted = [m for m in rows if m.counted]
    assert tg.moves() == len(counted)
    for player in "AB":
        assert tg.used(player) == sum(m.used for m in counted if m.player == player)
    # each counted row's time is the clock's own: the used_ms its press logged
    pressed = {(r["session"], r["move"]): r["used_ms"] for r in records if r["event"] == "press"}
    for g in games:
        for m in g.counted_moves():
            assert m.used == pressed[(g.session, m.move)]
    # the CSV: one row per move, the same used time, the same overtime
    csv_rows = [r for g in games for r in report.rows(g) if r["row"] == "move"]
    assert len(csv_rows) == len(rows)
    for r, m in zip(csv_rows, rows):
        assert r["used_ms"] == ("" if m.used is None else m.used)
        assert r["used"] == report.fmt_ms(m.used)
    game_row = next(r for r in roundreport.csv_rows(1, tables) if r["kind"] == "game")
    assert game_row["ms"] == tg.used("A") + tg.used("B")
    over_rows = [r for r in roundreport.csv_rows(1, tables) if r["kind"] == "overtime"]
    assert [(r["move"], r["ms"]) for r in over_rows] == [
        (m.move, "" if m.overtime_ms is None or m.flag else m.overtime_ms) for m in tg.overtimes]
    assert len([r for r in roundreport.csv_rows(1, tables) if r["kind"] == "pause"]) == \
        sum(len(g.pause_list) for g in games)
    # the printed texts say the same figures, at 80 and at 160 columns
    for width in (80, 160):
        out = io.StringIO()
        roundreport.print_round(1, tables, Console(file=out, width=width, color_system=None))
        text = out.getvalue()
        flat = " ".join(text.split())
        assert "…" not in text
        for g in games:
            for player, s in g.totals.items():
                assert "%s: %s, %s used" % (player, words.plural(s["moves"], "move"),
                                            report.fmt_short(s["total_ms"])) in flat
    return len(counted)


@seed(20261201)
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(table_game())
def test_every_view_reads_the_same_figures(case):
    check_agree(*case)


def _fed(pairs):
    """A ClockModel fed (host epoch s, t_ms) pairs as a session's records."""
    from datetime import datetime, timezone

    from hallclock.views.model import ClockModel
    c = ClockModel("table-1")
    for i, (at, t) in enumerate(pairs):
        stamp = datetime.fromtimestamp(at, timezone.utc).isoformat(
            timespec="milliseconds").replace("+00:00", "Z")
        rec = {"clock": "table-1", "seq": i + 1, "t_ms": t, "session": "1", "host_time": stamp,
               "event": "boot" if i == 0 else "warn", "mode": "scrabble", "settings": {}}
        c.feed(rec, at)
    return c


def test_one_time_base_tells_a_simulation_from_a_backlog():
    """A clock whose time runs 100x the host's is a simulation (the report
    says so); a backlog the host got at once, then live records at 1x, is a
    real clock: its times of day come from the record that came fastest."""
    t0 = 1800000000.0
    fast = _fed([(t0 + k * 0.1, k * 10000) for k in range(40)])
    assert fast.accelerated and 90 < fast.pace < 110
    backlog = [(t0, k * 10000) for k in range(60)]  # 10 minutes of records, sent at once
    live = [(t0 + 0.03 + k, 600000 + k * 1000) for k in range(1, 30)]
    real = _fed(backlog + live)
    assert not real.accelerated
    assert abs(real.time_of_day(600000) - t0) < 0.05  # anchored by the fastest record


def test_console_and_projector_of_the_readme_round_speak_alike(tmp_path):
    """The README's round as the console's grid and the projector's answer
    give it: tables in natural order, counted without the hall unit, the
    round's number, a finished card that says why it stands, the play-out
    and the gongs in the report's words."""
    from hallclock.hall import display as projector, referee as refconsole
    from hallclock.views.model import Clocks, epoch_of
    log = tmp_path / "round3.jsonl"
    log.write_bytes(open(LOG, "rb").read())
    records = figures.read_log(str(log))[0]
    end = max(epoch_of(r["host_time"]) for r in records) + 5
    tail = refconsole.RoundTail(str(log), wall=lambda: end)
    g = refconsole.grid(tail, end)
    assert [t["clock"] for t in g["tables"]] == ["table-%d" % k for k in range(1, 9)]
    assert g["count"] == "8 tables" and g["round"] == 3
    for t in g["tables"]:
        assert t["finished"] and t["left"] == "play-out over"
    d = refconsole.detail(tail, "table-1")
    assert [p["number"] for p in d["pauses"]] == [1]
    notes = " ".join(m["notes"] for m in d["moves"])
    assert "2-min gong" in notes and "(a) finish the round" in notes
    clocks = Clocks()
    for r in records:
        clocks.feed(r, epoch_of(r["host_time"]))
    f = projector.face(clocks, None, end)
    assert [t["clock"] for t in f["tables"]] == ["table-%d" % k for k in range(1, 9)]
    assert [x["text"] for x in f["gongs"]] == ["end gong", "2-min gong", "start gong"]
    # the gongs' times of day are the report's (one anchoring)
    lead = next(tg for tg in roundreport.load_round(3, [str(log)]) if tg.clock == f["clock"])
    assert [x["at"] for x in f["gongs"]][::-1] == [
        report.time_of_day(gg.at) for gg in lead.games[0].gong_list]


@pytest.mark.parametrize("mode,script,sets", [
    ("scrabble", "game.txt", []),
    ("duplicate", "duplicate_game.txt", []),
    ("backgammon", "backgammon_match.txt", ["--set", "match=7", "--set", "score=3-5"])])
def test_every_sample_report_and_claims_fit_80_columns(mode, script, sets, tmp_path):
    """The tour's games, report and claims at 80 columns: a narrower layout,
    nothing cut inside a figure or a name."""
    from rich.console import Console

    from hallclock import cli
    samples = os.path.join(os.path.dirname(os.path.dirname(figures.__file__)), "samples")
    log = tmp_path / "g.jsonl"
    assert cli.main(["simulate", "--mode", mode, "--script", os.path.join(samples, script),
                     "--out", str(log), *sets]) == 0
    games = figures.load_games(str(log))
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    report.print_report(games, console)
    report.print_claims(games, console)
    text = out.getvalue()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    for key in ("ten_minutes", "finish_round", "one_more_move", "last_move", "1 moves"):
        assert key not in text


def test_the_hall_unit_is_never_counted_as_a_table(tmp_path):
    import json as json_
    from rich.console import Console
    settings_ = {"move_s": 120, "warn_s": [30], "round_min": 40, "round_warn_min": 10}
    recs = []
    for clock, sid, events in (
            ("hall", "a", [(0, "boot", {"mode": "scrabble", "settings": settings_}),
                           (100, "gong", {"kind": "start", "move": None})]),
            ("table-1", "b", [(0, "boot", {"mode": "scrabble", "settings": settings_}),
                              (100, "gong", {"kind": "start", "move": None}),
                              (1000, "turn", {"player": "A", "move": 1, "limit_ms": 120000}),
                              (31000, "press", {"player": "A", "move": 1, "used_ms": 30000}),
                              (31000, "turn", {"player": "B", "move": 2, "limit_ms": 120000}),
                              (40000, "end", {})])):
        for seq, (t, ev, extra) in enumerate(events, 1):
            recs.append(dict(clock=clock, seq=seq, t_ms=t, event=ev, session=sid, round=1,
                             host_time="2026-05-16T09:00:%02d.%03dZ" % (t // 1000, t % 1000),
                             **extra))
    log = tmp_path / "r.jsonl"
    log.write_text("".join(json_.dumps(r) + "\n" for r in recs))
    tables = roundreport.load_round(1, [str(log)])
    out = io.StringIO()
    roundreport.print_round(1, tables, Console(file=out, width=100, color_system=None),
                            games=False)
    text = out.getvalue()
    assert text.startswith("Round 1: 1 table of scrabble")
    assert "hall unit hall: start gong at" in text
    assert not re.search(r"^\W*hall\W.*\d:\d\d\.\d", text, re.M)  # no row of its own


def test_a_table_whose_players_never_pressed_is_in_the_round_s_report(tmp_path):
    """round start: table-2 took the round (its round event, its start gong)
    and its players never pressed: a table with no move, not a hall unit."""
    import json as json_
    from rich.console import Console
    settings_ = {"move_s": 120, "warn_s": [30], "round_min": 40, "round_warn_min": 10}
    recs = []
    took = [(0, "boot", {"mode": "scrabble", "settings": settings_}),
            (100, "round", {"round": 1, "elapsed_ms": 0}),
            (100, "gong", {"kind": "start", "move": None})]
    for clock, sid, events in (
            ("table-1", "a", took + [
                (1000, "turn", {"player": "A", "move": 1, "limit_ms": 120000}),
                (31000, "press", {"player": "A", "move": 1, "used_ms": 30000}),
                (40000, "end", {})]),
            ("table-2", "b", took + [(40000, "end", {})])):
        for seq, (t, ev, extra) in enumerate(events, 1):
            rec = dict(clock=clock, seq=seq, t_ms=t, event=ev, session=sid,
                       host_time="2026-05-16T09:00:%02d.%03dZ" % (t // 1000, t % 1000))
            rec.update(extra)
            if seq > 1:
                rec["round"] = 1
            recs.append(rec)
    log = tmp_path / "r.jsonl"
    log.write_text("".join(json_.dumps(r) + "\n" for r in recs))
    tables = roundreport.load_round(1, [str(log)])
    assert roundreport.hall_units(tables) == []
    out = io.StringIO()
    roundreport.print_round(1, tables, Console(file=out, width=100, color_system=None),
                            games=False)
    text = out.getvalue()
    assert text.startswith("Round 1: 2 tables of scrabble"), text
    assert "hall unit" not in text
