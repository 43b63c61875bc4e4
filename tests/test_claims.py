"""Reports that settle a claim: a move's start and end as time of day, the
overtime of a move no press ended (read off the firmware's own core, replayed
by hallclock.views.model), a backgammon flag fall as a loss on time, breaks on the
player who took them, the claims view (ČAS 10.2.6: the opponent may claim a
move that ran over; the evidence is the move, the player, the amount and the
time of day), and plots a referee can read."""
import csv
import json
import re

import pytest

import hallclock
from hallclock import cli
from hallclock.views import report


def Figure():
    """A matplotlib Figure, imported when a test draws (collecting this file
    stays quick: ``make mutate`` collects it once per mutant)."""
    from matplotlib.figure import Figure as _Figure
    return _Figure()

SAMPLES = __import__("os").path.join(__import__("os").path.dirname(hallclock.__file__), "samples")

# the README's (and the contract's) example: B's limit runs out at 2:47.2
README_GAME = "0       press START\n1500    press B\n47200   press A\n300000  end\n"


# times of day are the report machine's local time: UTC here (conftest.utc)
pytestmark = pytest.mark.usefixtures("utc")


def simulate(tmp_path, text, *extra, name="game"):
    script = tmp_path / f"{name}.txt"
    script.write_text(text)
    log = tmp_path / f"{name}.jsonl"
    assert cli.main(["simulate", "--script", str(script), "--out", str(log), *extra]) == 0
    return log


def restamp(log, start="2026-03-01T14:30:00", delay_ms=30, fast=None):
    """Give a log's records the host times a real laptop would: the device's
    t_ms after ``start`` plus a link delay (``fast``: {seq: delay} for some)."""
    from datetime import datetime, timedelta
    base = datetime.fromisoformat(start)
    out = []
    for line in log.read_text().splitlines():
        r = json.loads(line)
        d = (fast or {}).get(r["seq"], delay_ms)
        at = base + timedelta(milliseconds=r["t_ms"] + d)
        r["host_time"] = at.isoformat(timespec="milliseconds") + "Z"
        out.append(json.dumps(r))
    log.write_text("\n".join(out) + "\n")
    return log


def test_readme_example_unfinished_move_runs_over(tmp_path, capsys):
    """B's limit ran out at 2:47.2 and nobody pressed until the session ended
    at 5:00: 2:12.8 of overtime, not 0:00.0; B's time used to the end."""
    log = restamp(simulate(tmp_path, README_GAME))
    (game,) = report.load_games(str(log))
    m = {mv.move: mv for mv in game.moves}
    assert m[2].unfinished and m[2].expired
    assert m[2].overtime_ms == 300000 - 167200
    assert report.used_ms(m[2], game) == 300000 - 47200
    out_csv = tmp_path / "g.csv"
    assert cli.main(["report", str(log), "--csv", str(out_csv), "--claims"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\s2\s+B\s+14:30:47\s+14:35:00\s+4:12\.8\s+30s 20s 10s\s+2:12\.8\+", out)
    assert "unfinished (session ended)" in out
    assert re.search(r"virtual-1\s+2\s+B\s+2:12\.8\+\s+14:32:47\.2\s+2:47\.2\s+14:35:00\.0\s+no press",
                     out)
    rows = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    assert rows[1]["overtime_ms"] == "132800" and rows[1]["used_ms"] == "252800"
    # every record came 30 ms after it happened: the device's ms, 30 ms late
    assert rows[1]["start_time"] == "2026-03-01T14:30:47.230+00:00"
    assert rows[1]["end_time"] == "2026-03-01T14:35:00.030+00:00"
    assert rows[1]["expired_time"] == "2026-03-01T14:32:47.230+00:00"


def test_time_of_day_anchored_by_the_fastest_record(tmp_path):
    """The record that came with the least delay anchors the device time; a
    record resent 20 s late (after an outage) does not move the others."""
    log = restamp(simulate(tmp_path, README_GAME), delay_ms=40, fast={3: 5, 9: 20000})
    (game,) = report.load_games(str(log))
    rows = list(report.rows(game))
    assert rows[0]["start_time"] == "2026-03-01T14:30:01.505+00:00"  # t=1500 + 5 ms
    assert rows[1]["expired_time"] == "2026-03-01T14:32:47.205+00:00"


def test_overtime_after_a_challenge_counts_from_the_fresh_limit(tmp_path):
    """ČAS 10.1: after a challenge the time runs again with a fresh limit, so
    B's move of 100 s + 130 s ran over by 10 s (not used − limit = 110 s):
    the figure is the core's, at the press."""
    log = simulate(tmp_path, "0 press START\n1000 press B\n2000 press A\n102000 press PAUSE\n"
                   "110000 press A\n240000 press B\n250000 end\n")
    (game,) = report.load_games(str(log))
    m = {mv.move: mv for mv in game.moves}
    assert m[2].used_ms == 230000 and m[2].expired
    assert m[2].overtime_ms == 10000


def test_backgammon_flag_is_a_loss_on_time_and_breaks_are_the_takers(tmp_path, capsys):
    text = open(f"{SAMPLES}/backgammon_match.txt").read()
    log = simulate(tmp_path, text, "--mode", "backgammon", "--set", "match=7",
                   "--set", "score=3-5")
    (game,) = report.load_games(str(log))
    last = game.moves[-1]
    assert last.flag and last.player == "B"
    assert report.note(game, last) == "B lost on time"
    assert last.end_t == last.expired_t  # the clock stands from the flag on
    t = report.totals(game)
    assert t["B"]["lost_on_time"] and not t["A"]["lost_on_time"]
    # İSTAVDER 2.3: A's two breaks are A's, though B's move 8 stood during them
    assert (t["A"]["breaks"], t["A"]["break_ms"]) == (2, 600000)
    assert (t["B"]["breaks"], t["B"]["break_ms"]) == (1, 195000)
    m8 = next(mv for mv in game.moves if mv.move == 8)
    # B's stop of move 8 without A's 10 minutes of breaks: 12:30 − 10:00
    assert report.pause_ms(m8, game.breaks) == [150000]
    assert cli.main(["report", str(log), "--claims"]) == 0
    out = capsys.readouterr().out
    assert "unfinished, overtime 0:00.0" not in out
    assert re.search(r"\s10\s+B\s.*flag.*B lost on time", out)
    assert "A break 1: 5:00.0" in out and "A break 2: 5:00.0" in out
    assert re.search(r"virtual-1\s+10\s+B\s+flag\s", out)


def test_claims_view_lists_every_overtime_and_says_when_there_is_none(tmp_path, capsys):
    log = simulate(tmp_path, open(f"{SAMPLES}/scrabble_game.txt").read())
    found = report.claims(report.load_games(str(log)))
    # A's move 5: pressed (a bounced contact, timed when it closed for good,
    # 9 ms after the first touch) 125.009 s after it began
    assert [(c["move"], c["player"], c["overtime_ms"]) for c in found] == [(5, "A", 5009)]
    quiet = simulate(tmp_path, "0 press START\n1000 press B\n5000 press A\n9000 end\n",
                     name="quiet")
    assert cli.main(["report", str(quiet), "--claims"]) == 0
    assert "no overtime and no flag fall in this log" in capsys.readouterr().out


def texts(ax):
    return [t.get_text() for t in ax.texts]


def test_plot_labels_overtime_and_playout_and_draws_unfinished_moves(tmp_path):
    log = simulate(tmp_path, README_GAME)
    ax = Figure().add_subplot()
    report.draw_game(ax, report.load_games(str(log))[0])
    bars = [(round(p.get_x() + p.get_width() / 2), round(p.get_y(), 1), round(p.get_height(), 1))
            for p in ax.patches if p.get_height() > 0]
    assert (2, 0, 120.0) in bars and (2, 120.0, 132.8) in bars  # in the limit, then over
    assert "+2:12.8…" in texts(ax)
    from test_report import GAME  # overtime in move 3, play-out (a), (b), (c)
    game_log = simulate(tmp_path, GAME, "--set", "round_min=5", "--set", "round_warn_min=2",
                        name="playout")
    ax = Figure().add_subplot()
    report.draw_game(ax, report.load_games(str(game_log))[0])
    labels = texts(ax)
    assert "+0:07.0" in labels
    assert labels.count("(a)") == 1 and labels.count("(b)") == 2 and labels.count("(c)") == 2


def test_no_empty_panels(tmp_path):
    """A hall unit's session has gongs but no moves: it gets no panel; a log
    with no move at all is refused before any file is written."""
    log = tmp_path / "hall.jsonl"
    recs = [{"clock": "hall", "seq": 1, "t_ms": 0, "event": "boot", "mode": "scrabble",
             "settings": {"move_s": 120}},
            {"clock": "hall", "seq": 2, "t_ms": 10, "event": "gong", "kind": "start", "move": None},
            {"clock": "hall", "seq": 3, "t_ms": 20, "event": "end"}]
    table = simulate(tmp_path, README_GAME, name="table").read_text()
    log.write_text("".join(json.dumps(dict(r, session="a0000001")) + "\n" for r in recs) + table)
    png = tmp_path / "p.png"
    assert cli.main(["report", str(log), "--plot", str(png)]) == 0
    data = png.read_bytes()
    assert int.from_bytes(data[20:24], "big") == 400  # one panel: the table's
    only_hall = tmp_path / "only.jsonl"
    only_hall.write_text("".join(json.dumps(dict(r, session="a0000001")) + "\n" for r in recs))
    out_csv = tmp_path / "only.csv"
    assert cli.main(["report", str(only_hall), "--csv", str(out_csv), "--plot",
                     str(tmp_path / "only.png")]) == 2
    assert not out_csv.exists()


def test_duplicate_plot_shows_stops_and_announcements_per_move(tmp_path):
    log = simulate(tmp_path, open(f"{SAMPLES}/duplicate_game.txt").read(), "--mode", "duplicate")
    (game,) = report.load_games(str(log))
    ax = Figure().add_subplot()
    report.draw_game(ax, game)
    stopped = [(round(p.get_x() + p.get_width() / 2), round(p.get_height()))
               for p in ax.patches if p.get_facecolor()[:3] != (0.12156862745098039,
                                                              0.4666666666666667,
                                                              0.7058823529411765)
               and p.get_height() > 0]
    assert (2, 60) in stopped  # the dispute stopped move 2 for a minute
    labels = texts(ax)
    assert labels.count("2:00 left") == 3 and "stop 1:00" in labels
    legend = ax.get_legend_handles_labels()[1]
    assert "time stopped" in legend and "announced" in legend


def test_a_session_without_its_boot_is_reported_from_the_records(tmp_path, capsys):
    """No boot record (a log cut at the front): no core to replay, so an
    overtime no press ended is unknown ('?'), never 0:00.0; the report says why."""
    log = simulate(tmp_path, README_GAME)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(log.read_text().splitlines(keepends=True)[1:]))
    (game,) = report.load_games(str(cut))
    assert game.modelled and game.moves[1].overtime_ms is None
    assert cli.main(["report", str(cut), "--claims"]) == 0
    out = capsys.readouterr().out
    assert "not replayed on the clock's core" in out
    assert re.search(r"\s2\s+B\s.*\s\?\s+unfinished", out)
