"""`hallclock report`: tables of moves, totals per player, CSV and the plot,
from logs made end to end by `hallclock simulate` from scenario scripts."""
import csv
import json
import re

import pytest

from hallclock import cli
from hallclock.views import report


def Figure():
    """A matplotlib Figure, imported when a test draws (collecting this file
    stays quick: ``make mutate`` collects it once per mutant)."""
    from matplotlib.figure import Figure as _Figure
    return _Figure()

# A Scrabble game (2:00 per move, 5-minute round with its warning gong 2 minutes
# before the end) whose every number is known from the script.
GAME = """\
0       press START
1000    press B
# 1 A 60 s
61000   press A
# 2 B 20 s, then B's time is stopped for a challenge (9.1) for 30 s ...
81000   press PAUSE
111000  press A
# ... and runs again for B with a fresh limit: B takes 25 s more
136000  press B
# 3 A runs over: 2:00 at 256000, pressed at 263000 (7 s overtime); the
#   warning gong (3:00) sounds during this move
263000  press A
# 4 B 37 s: the end gong (5:00) sounds during it -> play-out (a)
300000  press B
# 5-6 play-out (b), 7-8 play-out (c)
310000  press A
320000  press B
330000  press A
340000  press B
350000  end
"""


@pytest.fixture(scope="module")
def game_log(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    script = d / "game.txt"
    script.write_text(GAME)
    log = d / "game.jsonl"
    assert cli.main(["simulate", "--script", str(script), "--out", str(log),
                     "--set", "round_min=5", "--set", "round_warn_min=2",
                     "--clock", "table-2"]) == 0
    return log


# times of day are the report machine's local time: UTC here (conftest.utc)
pytestmark = pytest.mark.usefixtures("utc")


def moves_by_number(games):
    (game,) = games
    return game, {m.move: m for m in game.moves}


def test_moves_from_a_simulated_game(game_log):
    game, m = moves_by_number(report.load_games(str(game_log)))
    assert game.clock == "table-2" and game.mode == "scrabble" and game.ended
    assert [(n, m[n].player) for n in sorted(m)] == [
        (1, "A"), (2, "B"), (3, "A"), (4, "B"), (5, "A"), (6, "B"), (7, "A"), (8, "B"),
        (9, "A")]  # the clock starts A's time after B's last press: not part of the game
    assert m[1].used_ms == 60000
    assert m[2].used_ms == 45000 and report.pause_ms(m[2]) == [30000]
    assert m[3].used_ms == 127000 and m[3].expired and m[3].overtime_ms == 7000
    assert m[3].warnings == [30, 20, 10]
    assert m[3].gongs == ["ten_minutes"] and m[4].gongs == ["end"]
    assert [m[n].playout for n in range(1, 9)] == [
        None, None, None, "finish_round", "one_more_move", "one_more_move",
        "last_move", "last_move"]
    assert m[9].after_game and m[9].playout is None and m[9].used_ms is None


def test_totals_per_player(game_log):
    (game,) = report.load_games(str(game_log))
    t = report.totals(game)
    assert t["A"] == {"moves": 4, "total_ms": 60000 + 127000 + 10000 + 10000,
                      "average_ms": 207000 // 4, "longest_ms": 127000, "overtimes": 1,
                      "overtime_ms": 7000, "pauses": 0, "pause_ms": 0, "breaks": 0,
                      "break_ms": 0, "lost_on_time": False, "unfinished": 0}
    assert t["B"]["moves"] == 4 and t["B"]["total_ms"] == 45000 + 37000 + 10000 + 10000
    assert t["B"]["longest_ms"] == 45000 and t["B"]["overtimes"] == 0
    assert t["B"]["pauses"] == 1 and t["B"]["pause_ms"] == 30000


def row_of(lines, move):
    return next(line for line in lines if re.match(rf"\s+{move}\s+[AB]?\s", line))


def test_printed_report_and_csv(game_log, tmp_path, capsys):
    out_csv = tmp_path / "moves.csv"
    assert cli.main(["report", str(game_log), "--csv", str(out_csv)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    row3 = row_of(lines, 3)
    assert "2:07.0" in row3 and "30s 20s 10s" in row3 and "0:07.0" in row3
    row2 = row_of(lines, 2)
    assert "0:45.0" in row2 and "0:30.0" in row2  # used, and the pause's length
    assert re.search(r"end gong, play-out \(a\) finish", row_of(lines, 4))
    assert re.search(r"\s-\s+after the play-out", row_of(lines, 9))
    assert ("A: 4 moves, 3:27.0 used, average 0:51.7, longest 2:07.0, over the limit 1 time "
            "for 0:07.0") in out
    assert "paused 1 time for 0:30.0" in out
    assert re.search(r"end gong at \d\d:\d\d:\d\d, in move 4", out)
    assert f"CSV written to {out_csv}" in out

    rows = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    assert [r["move"] for r in rows] == [str(n) for n in range(1, 10)]
    assert rows[8]["note"] == "after the play-out"
    r3 = rows[2]
    assert (r3["player"], r3["used_ms"], r3["limit_ms"], r3["warnings"], r3["overtime_ms"],
            r3["gongs"]) == ("A", "127000", "120000", "30 20 10", "7000", "ten_minutes")
    assert rows[1]["pauses_ms"] == "30000"
    assert [r["playout"] for r in rows[3:]] == [
        "finish_round", "one_more_move", "one_more_move", "last_move", "last_move", ""]


def test_plot_file(game_log, tmp_path, capsys):
    png = tmp_path / "game.png"
    assert cli.main(["report", str(game_log), "--plot", str(png)]) == 0
    assert f"plot written to {png}" in capsys.readouterr().out
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1000, 400)  # one game: one panel


def test_plot_draws_moves_limit_pauses_and_gongs(game_log):
    games = report.load_games(str(game_log))
    ax = Figure().add_subplot()
    report.draw_game(ax, games[0])
    bars = [(round(p.get_x() + p.get_width() / 2), p.get_y(), p.get_height())
            for p in ax.patches if p.get_height() > 0]
    # each move's time up to the limit, and move 3's overtime stacked above the limit in red
    assert (1, 0, 60.0) in bars and (2, 0, 45.0) in bars and (3, 0, 120.0) in bars
    assert (3, 120.0, 7.0) in bars
    labels = ax.get_legend_handles_labels()[1]
    for label in ("player A", "player B", "overtime", "limit", "pause", "play-out move",
                  "start gong", "2-min gong", "end gong"):
        assert label in labels
    gong_x = sorted(line.get_xdata()[0] for line in ax.lines if line.get_label().endswith("gong"))
    assert gong_x == [0.5, 3, 4]  # start before move 1; the others at the move in progress


def test_duplicate_and_backgammon_logs(tmp_path, capsys):
    """Other modes' records (docs/contract.md) make their own tables."""
    log = tmp_path / "mixed.jsonl"
    recs = [
        ("hall", 1, 0, "boot", {"mode": "duplicate", "settings": {"move_s": 180}}),
        ("hall", 2, 1000, "dup_start", {"move": 1, "limit_ms": 180000}),
        ("hall", 3, 61000, "announce", {"move": 1, "left_s": 120}),
        ("hall", 4, 100000, "pause", {"player": None, "move": 1}),
        ("hall", 5, 110000, "resume", {"player": None, "move": 1}),
        ("hall", 6, 191000, "dup_end", {"move": 1}),
        ("hall", 7, 191500, "end", {}),
        ("bg", 1, 0, "boot", {"mode": "backgammon", "settings": {"bank_s": 600}}),
        ("bg", 2, 500, "turn", {"player": "A", "move": 1, "bank_ms": 600000}),
        ("bg", 3, 20500, "press", {"player": "A", "move": 1, "used_ms": 20000, "bank_ms": 595000}),
        ("bg", 4, 20500, "turn", {"player": "B", "move": 2, "bank_ms": 600000}),
        ("bg", 5, 21000, "pause", {"player": "B", "move": 2}),
        ("bg", 6, 22000, "break", {"player": "B", "number": 1, "break_ms": 300000}),
        ("bg", 7, 202000, "break_end", {"player": "B", "number": 1}),
    ]
    with log.open("w") as f:
        for clock, seq, t, ev, fields in recs:
            f.write(json.dumps(dict(clock=clock, seq=seq, t_ms=t, event=ev, session="1",
                                    host_time="2026-01-01T10:00:00.000Z", **fields)) + "\n")
    games = report.load_games(str(log))
    bg, dup = games  # in the natural order of the clocks' names
    assert dup.moves[0].used_ms == 180000 and dup.moves[0].announces == [120]
    assert bg.moves[0].bank_after_ms == 595000
    assert cli.main(["report", str(log)]) == 0
    out = capsys.readouterr().out
    assert "announced" in out and "120s" in out and "3:00.0" in out
    assert "bank" in out and "9:55.0" in out
    # every record was stored at 10:00:00.000 (all at once, after an outage):
    # the last one came fastest, so it anchors the session's device time
    assert "B break 1: 3:00.0, 09:57:00–10:00:00 (move 2's time stood)" in out
    assert "the session has no end record" in out  # the backgammon game was cut off


def test_bad_input(tmp_path, game_log, capsys):
    assert cli.main(["report", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such log file" in capsys.readouterr().err
    assert cli.main(["report", str(game_log), "--plot", str(tmp_path / "x.jpg")]) == 2
    assert "ending in .png" in capsys.readouterr().err
    assert cli.main(["report", str(game_log), "--plot", str(tmp_path / "no" / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "the folder" in err and "does not exist" in err


def test_plot_that_cannot_be_written_is_one_line(tmp_path, game_log, capsys):
    """A plot refused by the filesystem (here: a read-only folder, as root a
    file name too long) is one message, and leaves no file behind."""
    name = "x" * 300 + ".png"  # NAME_MAX is 255 on every Linux filesystem
    assert cli.main(["report", str(game_log), "--plot", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hallclock: ") and err.count("\n") == 1 and "plot" in err
    assert not any(p.name.endswith(".png") or p.name.endswith(".tmp") for p in tmp_path.iterdir())
