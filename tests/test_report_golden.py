"""The report as a referee reads it, pinned whole: for five logs (kept in
tests/golden/report_*.jsonl) the printed report and the claims view on both
sides of the narrow layout (109 and 110 columns: below ``report.NARROW`` the
end column and the notes go below the table), the CSV, and every drawn plot
described artist by artist (bars, labels, markers, lines, axes, legend) --
docs/host.md, *report*.  Each golden was read through once by hand against
the game that made it (tests/test_report.py's GAME, the README's game, the
samples); a change of the layout is renewed with
``HALLCLOCK_GOLDEN=write .venv/bin/python -m pytest tests/test_report_golden.py``
(which also makes the logs again from their scripts, ``make_logs``).

The text goldens come first and import no matplotlib (the plots come after
them). In-process and quick (no simulation at test time): this is the first file
``make mutate`` runs against hallclock.views.report."""
import csv
import io
import json
import os
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest

from hallclock.views import report


def Figure():
    """A matplotlib Figure, imported when a test draws (collecting this file
    stays quick: ``make mutate`` collects it once per mutant)."""
    from matplotlib.figure import Figure as _Figure
    return _Figure()

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
WRITE = os.environ.get("HALLCLOCK_GOLDEN") == "write"
LOGS = ("scrabble", "other_modes", "faults", "accelerated", "unstamped")
README_GAME = "0       press START\n1500    press B\n47200   press A\n300000  end\n"
# A's move 3 (290 s - 450 s) is the play-out's "finish the round" (the end
# gong at 5:00 sounds in it) and runs 40 s over: a claim in the play-out
PLAYOUT_OVER = ("0 press START\n1000 press B\n200000 press A\n290000 press B\n"
                "450000 press A\n460000 press B\n470000 press A\n480000 press B\n"
                "490000 end\n")


# times of day are the report machine's local time: UTC here (conftest.utc)
pytestmark = pytest.mark.usefixtures("utc")


# -- the logs (made once; kept as files) ------------------------------------------
def make_logs(tmp):
    """The logs from their scripts: each record's host time is its
    device time after a fixed start plus a link delay (real clocks), or the
    device time at 100 x and 20 x the host's pace (accelerated simulations),
    or none."""
    from hallclock import cli
    from test_report import GAME
    samples = os.path.join(os.path.dirname(report.__file__), "..", "samples")

    def sim(name, text, *extra):
        script, log = os.path.join(tmp, name + ".txt"), os.path.join(tmp, name + ".jsonl")
        with open(script, "w") as f:
            f.write(text)
        assert cli.main(["simulate", "--script", script, "--out", log, *extra]) == 0
        with open(log) as f:
            return [json.loads(line) for line in f]

    def stamp(recs, start, delay=30, fast=None, pace=1.0):
        base = datetime.fromisoformat(start)
        for r in recs:
            d = (fast or {}).get(r["seq"], delay)
            at = base + timedelta(milliseconds=r["t_ms"] / pace + d)
            r["host_time"] = at.isoformat(timespec="milliseconds") + "Z"
        return recs

    def sample(name):
        with open(os.path.join(samples, name)) as f:
            return f.read()

    playout = ("--set", "round_min=5", "--set", "round_warn_min=2")
    hall = [{"clock": "hall", "seq": 1, "t_ms": 0, "event": "boot", "mode": "scrabble",
             "settings": {"move_s": 120}, "session": "a0000001"},
            {"clock": "hall", "seq": 2, "t_ms": 10, "event": "gong", "kind": "start",
             "move": None, "session": "a0000001"},
            {"clock": "hall", "seq": 3, "t_ms": 20, "event": "end", "session": "a0000001"}]
    logs = {
        "scrabble": stamp(sim("game", GAME, *playout, "--clock", "table-2"),
                          "2026-03-01T14:30:00")
        + stamp(sim("readme", README_GAME, "--clock", "table-1"), "2026-03-01T14:40:00",
                delay=40, fast={3: 5})
        + stamp(hall, "2026-03-01T14:29:00"),
        "other_modes": stamp(sim("bg", sample("backgammon_match.txt"), "--mode", "backgammon",
                                 "--set", "match=7", "--set", "score=3-5", "--clock", "bg"),
                             "2026-03-01T10:00:00")
        + stamp(sim("dup", sample("duplicate_game.txt"), "--mode", "duplicate",
                    "--clock", "dup"), "2026-03-01T11:00:00"),
    }
    # faults: a log cut at the front (no boot); a session with lost events and
    # a power loss; a record the clock's own code does not give
    readme = sim("readme_x", README_GAME, "--clock", "x")
    cut = [dict(r, clock="cut") for r in readme[1:]]
    lost = [dict(r, clock="lost") for r in readme[:6] if r["seq"] not in (4, 5)]
    lost.insert(3, {"clock": "lost", "seq": 4, "t_ms": lost[2]["t_ms"], "event": "gap",
                    "missing": [4, 5], "session": readme[0]["session"]})
    lost.append({"clock": "lost", "seq": 7, "t_ms": lost[-1]["t_ms"], "event": "power_loss",
                 "session": readme[0]["session"], "last_seq": 6, "next_session": "00000002"})
    odd = [dict(r, clock="odd") for r in readme]
    for r in odd:
        if r["event"] == "press":
            r["used_ms"] += 1
            break
    # ... and a session cut off (no end record: still running, or the log cut)
    cutoff = [dict(r, clock="cutoff") for r in readme if r["event"] != "end"]
    logs["faults"] = stamp(cut, "2026-03-01T15:00:00") + stamp(lost, "2026-03-01T15:10:00") \
        + stamp(odd, "2026-03-01T15:20:00") + stamp(cutoff, "2026-03-01T15:30:00")
    logs["accelerated"] = stamp(sim("fast", GAME, *playout, "--clock", "fast"),
                                "2026-03-01T16:00:00", pace=100.0) \
        + stamp(sim("slow", PLAYOUT_OVER, *playout, "--clock", "slow-table-24-characters"),
                "2026-03-01T16:00:00",
                pace=20.0)
    # no host time at all (a log written by a tool that kept none): device times
    logs["unstamped"] = [{k: v for k, v in r.items() if k != "host_time"}
                         for r in logs["other_modes"] + logs["scrabble"]]
    for name, recs in logs.items():
        with open(os.path.join(GOLDEN, "report_%s.jsonl" % name), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in recs))


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    if WRITE:
        make_logs(str(tmp_path_factory.mktemp("logs")))
    return {n: os.path.join(GOLDEN, "report_%s.jsonl" % n) for n in LOGS}


# -- the views as text ------------------------------------------------------------
def printed(fn, games, width, colour=False):
    """What ``fn`` prints at ``width`` columns (``colour``: with the styles, as
    ANSI codes: overtime rows bold red, play-out rows magenta, warnings yellow)."""
    from rich.console import Console
    out = io.StringIO()
    fn(games, Console(file=out, width=width, color_system="standard" if colour else None,
                      force_terminal=colour, legacy_windows=False))
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def _num(x):
    return round(float(x), 3)


def _color(c):
    from matplotlib.colors import to_hex
    return to_hex(c, keep_alpha=True)


def plot_text(game):
    """Every artist draw_game puts on the Axes, one line each."""
    ax = Figure().add_subplot()
    report.draw_game(ax, game)
    out = []
    for p in ax.patches:
        out.append("bar x=%s y=%s w=%s h=%s face=%s edge=%s hatch=%s ls=%s label=%s" % (
            _num(p.get_x()), _num(p.get_y()), _num(p.get_width()), _num(p.get_height()),
            _color(p.get_facecolor()), _color(p.get_edgecolor()), p.get_hatch(),
            p.get_linestyle(), p.get_label()))
    for t in ax.texts:
        out.append("text %r xy=%s offset=%s coords=%s size=%s color=%s weight=%s ha=%s va=%s"
                   % (t.get_text(), tuple(_num(v) for v in t.xy),
                      tuple(_num(v) for v in t.xyann), t.anncoords, t.get_fontsize(),
                      _color(t.get_color()), t.get_fontweight(), t.get_ha(), t.get_va()))
    for line in ax.lines:
        out.append("line x=%s y=%s color=%s ls=%s lw=%s marker=%s ms=%s drawstyle=%s label=%s"
                   % ([_num(v) for v in line.get_xdata()], [_num(v) for v in line.get_ydata()],
                      _color(line.get_color()), line.get_linestyle(), line.get_linewidth(),
                      line.get_marker(), line.get_markersize(), line.get_drawstyle(),
                      line.get_label()))
    legend = ax.get_legend()
    out.append("axes ylim=%s xlim=%s xticks=%s xlabel=%r ylabel=%r title-left=%r" % (
        tuple(_num(v) for v in ax.get_ylim()), tuple(_num(v) for v in ax.get_xlim()),
        [_num(v) for v in ax.get_xticks()], ax.get_xlabel(), ax.get_ylabel(),
        ax.get_title(loc="left")))
    out.append("legend %s size=%s ncols=%s loc=%s" % (
        [t.get_text() for t in legend.get_texts()], legend.get_texts()[0].get_fontsize(),
        legend._ncols, legend._loc))
    return "\n".join(out) + "\n"


def csv_text(games, tmp_path):
    path = tmp_path / "moves.csv"
    report.write_csv(games, str(path))
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", LOGS)
def test_the_report_of_each_log_is_its_golden(name, logs, tmp_path):
    games = report.load_games(logs[name])
    parts = []
    for width in (report.NARROW - 1, report.NARROW):
        parts += ["== report at %d columns" % width, printed(report.print_report, games, width)]
        parts += ["== claims at %d columns" % width, printed(report.print_claims, games, width)]
    parts += ["== report in colour", printed(report.print_report, games, report.NARROW,
                                             colour=True)]
    parts += ["== csv", csv_text(games, tmp_path)]
    golden("report_%s.txt" % name, "\n".join(parts))


def golden(name, text):
    path = os.path.join(GOLDEN, name)
    if WRITE:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    with open(path, encoding="utf-8") as f:
        assert text == f.read()


# -- the small pieces, on their edges ---------------------------------------------
def test_times_are_cut_not_rounded():
    """A clock shows 0:34.9 until 35 s have passed (docs/host.md, report)."""
    assert report.fmt_ms(34999) == "0:34.999"
    assert report.fmt_ms(34999, 1) == "0:34.9" and report.fmt_short(59999) == "0:59.9"
    assert report.fmt_ms(60000, 0) == "1:00" and report.fmt_ms(3599999) == "59:59.999"
    assert report.fmt_ms(-1500, 1) == "-0:01.5" and report.fmt_ms(0) == "0:00.000"
    assert report.fmt_ms(-1) == "-0:00.001"
    assert report.fmt_ms(None) == "-"
    assert report.time_of_day(None) == "" and report.iso_time(None) == ""
    assert report.time_of_day(1772375405.19, True) == "14:30:05.1"
    assert report.time_of_day(1772375405.99) == "14:30:05"
    assert report.time_of_day(1772375405.9, True) == "14:30:05.9"
    assert report.time_of_day(1772375405.999999, True) == "14:30:05.9"
    assert report.time_of_day(1772375405.099999, True) == "14:30:05.0"
    assert report.iso_time(1772375405.5) == "2026-03-01T14:30:05.500+00:00"


def test_the_header_gives_the_middle_pace_of_the_accelerated_clocks():
    """A log of simulations says so once, with the median of the clocks'
    paces; a real clock (no pace) does not count."""
    def games(*paces):
        return [SimpleNamespace(pace=p) for p in paces]
    assert report.time_note(games(None, None)) == ""
    assert "about 100×" in report.time_note(games(20.0, None, 100.0))
    assert "about 50×" in report.time_note(games(100.0, 20.0, 50.0))
    assert "about 20×" in report.time_note(games(20.0))


def test_a_gong_between_moves_is_drawn_between_them():
    """A gong outside any move goes before the first move that began after
    it; one at the very start of a move is in that move's time (after the
    gap before it); after the last move's start: after it."""
    game = SimpleNamespace(moves=[SimpleNamespace(move=1, start_t=1000),
                                  SimpleNamespace(move=2, start_t=5000)])
    assert report._gong_x(game, 999, None) == 0.5
    assert report._gong_x(game, 1000, None) == 1.5
    assert report._gong_x(game, 4999, None) == 1.5
    assert report._gong_x(game, 5000, None) == 2.5
    assert report._gong_x(game, 10, 7) == 7
    assert report._gong_x(game, None, None) == 2.5
    assert report._gong_x(SimpleNamespace(moves=[]), 10, None) == 0.5
    three = SimpleNamespace(moves=game.moves + [SimpleNamespace(move=3, start_t=9000)])
    assert report._gong_x(three, 9500, None) == 3.5


def test_notes_of_a_narrow_table_join_runs_of_the_same_note():
    lines = report._note_lines(None, [(1, ""), (2, "x"), (3, "x"), (4, "x"), (5, "y"),
                                      (6, "x"), (8, "x")])
    assert lines == [("2–4", "x"), ("5", "y"), ("6", "x"), ("8", "x")]


def test_the_claims_view_of_a_log_with_no_claim_says_so():
    assert printed(report.print_claims, [], 110) == "no overtime and no flag fall in this log\n"


def test_the_console_is_the_pipes_width_in_a_file(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert report.report_console().width == report.PIPE_WIDTH == 120
    monkeypatch.setenv("COLUMNS", "90")
    assert report.report_console().width == 90


def test_the_round_report_prints_the_games_without_the_header(logs):
    """The round's report says once for all its tables that the times are
    simulated: each game's table then comes without that header line."""
    games = report.load_games(logs["accelerated"])
    assert "accelerated simulation" in printed(report.print_report, games, 120)
    from rich.console import Console
    out = io.StringIO()
    report.print_report(games, Console(file=out, width=120, color_system=None), header=False)
    assert "accelerated" not in out.getvalue() and "fast · scrabble" in out.getvalue()
    games = report.load_games(logs["scrabble"])
    out = io.StringIO()
    report.print_report(games, Console(file=out, width=120, color_system=None), header=False)
    text = "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"
    assert text == printed(report.print_report, games, 120)


def test_a_press_on_the_ms_the_limit_ran_out_is_an_overtime_of_nothing():
    """5.1.4: the limit ran out on the very ms of the press: the move is
    over its limit (the final signal sounded) by 0:00.0 -- shown, not blank;
    the CSV has 0.  A move that did not run out shows nothing."""
    on = fake_move(3, expired=True, overtime_ms=0, used=120000, limit_ms=120000,
                   after_game=False, unfinished=False)
    assert report.overtime_text(on) == "0:00.0" and report.overtime_text(on, False) == "0:00.000"
    assert report.overtime_text(fake_move(3, expired=False, overtime_ms=0)) == ""
    assert report.overtime_text(fake_move(3, expired=False, overtime_ms=None)) == ""
    assert report.overtime_text(fake_move(3, expired=True, overtime_ms=None)) == "?"
    assert report.overtime_text(fake_move(3, expired=True, overtime_ms=1500, unfinished=True),
                                False) == "0:01.500+"
    assert report.overtime_text(fake_move(3, expired=True, overtime_ms=5, flag=True)) == "flag"
    game = csv_game([dict(on.__dict__, player="?")])
    (row,) = report.rows(game)
    assert row["overtime_ms"] == 0 and row["player"] == "?" and row["used"] == "2:00.000"


def csv_game(moves, breaks=(), mode="scrabble", **kw):
    full = []
    for m in moves:
        base = dict(warnings=[], announces=[], pause_list=[], gongs=[], refused=[],
                    bank_after_ms=None, start_at=None, end_at=None, expired_at=None,
                    start_t=None, end_t=None, expired=False, overtime_ms=None, flag=False,
                    playout=None, after_game=False, unfinished=False, used_ms=None,
                    limit_ms=None)
        base.update(m)
        base.setdefault("used", base["used_ms"])
        full.append(SimpleNamespace(**base))
    return SimpleNamespace(mode=mode, moves=full, breaks=list(breaks), clock="c", session="1",
                           ended=kw.get("ended", True), power_loss=kw.get("power_loss", False),
                           warn_min=10)


def test_the_table_says_why_a_move_has_no_end():
    """A move no press ended: the session's end, a power loss, or the log
    ending; a move with no used time that was not cut off: not ended."""
    m = dict(move=1, player="A", unfinished=True)
    assert report.note(csv_game([m]), csv_game([m]).moves[0]) == "unfinished (session ended)"
    g = csv_game([m], ended=False, power_loss=True)
    assert report.note(g, g.moves[0]) == "unfinished (power lost)"
    g = csv_game([m], ended=False)
    assert report.note(g, g.moves[0]) == "unfinished (log ends)"
    g = csv_game([dict(move=2, player="B")])
    assert report.note(g, g.moves[0]) == "not ended"
    g = csv_game([dict(move=2, player="?")], mode="duplicate")
    assert report.note(g, g.moves[0]) == ""
    (row,) = report.rows(g)
    assert row["player"] == "" and row["used_ms"] == "" and row["used"] == "-"


def test_a_csv_is_not_written_over_an_existing_file_without_force(logs, tmp_path):
    """docs/host.md, *Nothing written over*: an existing file is replaced only
    with --force."""
    games = report.load_games(logs["scrabble"])
    path = tmp_path / "kept.csv"
    path.write_text("kept")
    with pytest.raises(report.BadInput):
        report.write_csv(games, str(path))
    assert path.read_text() == "kept"
    report.write_csv(games, str(path), force=True)
    assert path.read_text() == csv_text(games, tmp_path)


def test_a_break_row_of_the_csv():
    b = SimpleNamespace(move=None, player=None, number=2, length_ms=300000, start_at=None,
                        end_at=None, start_t=None, end_t=None)
    (row,) = report.rows(csv_game([], [b], mode="backgammon"))
    assert (row["move"], row["player"], row["note"], row["row"], row["start_ms"],
            row["end_ms"]) == ("", "", "break 2: 5:00.000", "break", "", "")
    b = SimpleNamespace(move=0, player="A", number=1, length_ms=1000, start_at=None,
                        end_at=None, start_t=0, end_t=1000)
    (row,) = report.rows(csv_game([], [b], mode="backgammon"))
    assert (row["move"], row["player"], row["start_ms"], row["end_ms"]) == (0, "A", 0, 1000)


# -- the plots (matplotlib is imported from here on) ----------------------------------
@pytest.mark.parametrize("name", LOGS)
def test_the_plot_of_each_log_is_its_golden(name, logs):
    parts = []
    for g in report.load_games(logs[name]):
        if report.drawable(g):
            parts += ["== plot of %s" % g.clock, plot_text(g)]
    golden("report_%s_plot.txt" % name, "\n".join(parts))


def test_the_plot_has_one_panel_per_game_with_moves(logs, tmp_path, monkeypatch):
    """One 10 x 4 inch panel (100 dpi) per game with a move to draw, one
    below the other in the order of the report; the hall unit's gong-only
    session gets none."""
    games = report.load_games(logs["scrabble"])
    assert [report.drawable(g) for g in games] == [False, True, True]  # hall, table-1, table-2
    panels = []
    draw = report.draw_game
    monkeypatch.setattr(report, "draw_game", lambda ax, g: (
        panels.append((ax.get_subplotspec().get_geometry(), g.clock)), draw(ax, g)))
    png = tmp_path / "p.png"
    report.write_plot(games, str(png))
    assert panels == [((2, 1, 0, 0), "table-1"), ((2, 1, 1, 1), "table-2")]
    png_bytes = png.read_bytes()
    with pytest.raises(report.BadInput):  # there already: replaced only with --force
        report.write_plot(games, str(png))
    assert png.read_bytes() == png_bytes
    data = png.read_bytes()
    assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (1000, 800)
    with pytest.raises(report.BadInput):
        report.write_plot(games[:1], str(tmp_path / "hall.png"))
    assert not (tmp_path / "hall.png").exists()
    with pytest.raises(report.BadInput):
        report.check_plot_name("p.PNG.jpg")
    report.check_plot_name("P.PNG")


def fake_move(move, **kw):
    base = dict(move=move, player="A", used=None, limit_ms=None, overtime_ms=None, flag=False,
                playout=None, unfinished=False, pause_list=[], start_t=None, end_t=None,
                pauses=[], announce_t=[], start_at=None, limit=None)
    base.update(kw)
    return SimpleNamespace(**base)


def fake_game(mode, moves, gongs=()):
    return SimpleNamespace(mode=mode, moves=moves, gongs=list(gongs), warn_min=10,
                           clock="c", session="1")


def test_a_plot_of_short_moves_is_at_least_ten_seconds_high():
    """Backgammon moves of a few seconds (no move limit): the axis still
    shows 10 s, so a bar is never the whole height."""
    ax = Figure().add_subplot()
    report.draw_game(ax, fake_game("backgammon", [fake_move(1, used=2000),
                                                  fake_move(2, used=3000, player="B")]))
    assert ax.get_ylim() == (0.0, 10.0)
    ax = Figure().add_subplot()
    report.draw_game(ax, fake_game("backgammon", [fake_move(1, used=7500)]))
    assert ax.get_ylim() == (0.0, 7.5 * 1.35)


def test_the_countdown_plot_draws_each_stop_where_it_happened():
    """The hall countdown (duplicate): the time running up to a stop, the
    stop, the time running again; a stop at the very start has no running
    part before it, a stop of no length draws nothing; a stop or an
    announcement with an unknown end is left out, as is a move with no end;
    a move after such a move is still drawn."""
    moves = [fake_move(1, start_t=0, end_t=10000, limit_ms=180000,
                       pauses=[[0, 2000], [5000, 5000], [None, 7000], [8000, None]],
                       announce_t=[(None, 60), (3000, None), (4000, 30)]),
             fake_move(2, start_t=None, end_t=12000),
             fake_move(3, start_t=20000, end_t=26000)]
    ax = Figure().add_subplot()
    report.draw_game(ax, fake_game("duplicate", moves))
    bars = [(round(p.get_x() + p.get_width() / 2, 1), round(p.get_y(), 1),
             round(p.get_height(), 1), _color(p.get_facecolor())) for p in ax.patches]
    run, stop = "#1f77b4ff", "#c7c7c7ff"
    assert bars == [(1, 0, 2, stop), (1, 2, 3, run), (1, 5, 5, run), (3, 0, 6, run)]
    assert [t.get_text() for t in ax.texts if t.get_text().startswith(("stop", "0:"))] == [
        "stop 0:02", "0:30 left"]
    (marker,) = [line for line in ax.lines if line.get_label() == "announced"]
    assert list(marker.get_xdata()) == [1.42] and list(marker.get_ydata()) == [4.0]
    assert ax.get_ylim() == (0.0, 180 * 1.25) and ax.get_xlim() == (0.4, 4.0)
    ax = Figure().add_subplot()
    report.draw_game(ax, fake_game("duplicate", [fake_move(1, start_t=0, end_t=4000)]))
    assert ax.get_ylim() == (0.0, 10.0)
    # an announcement of a long move's time: 1000 s left
    ax = Figure().add_subplot()
    report.draw_game(ax, fake_game("duplicate", [fake_move(1, start_t=0, end_t=9000,
                                                           announce_t=[(2000, 1000)])]))
    assert "16:40 left" in [t.get_text() for t in ax.texts]


def test_a_move_with_nothing_to_draw_leaves_the_others_drawn():
    ax = Figure().add_subplot()
    report.draw_game(ax, fake_game("backgammon", [fake_move(1, used=None),
                                                  fake_move(2, used=4000, player="B")]))
    assert [(p.get_x() + p.get_width() / 2, p.get_height()) for p in ax.patches] == [(2.0, 4.0)]


def test_the_limit_line_steps_where_the_limit_changed():
    """New settings between moves (ČAS 3.2: taken when no game runs) change
    the limit: the dashed line holds each move's limit across its bar, from
    half a move before the first."""
    ax = Figure().add_subplot()
    report.draw_game(ax, fake_game("scrabble", [fake_move(1, used=30000, limit_ms=120000),
                                                fake_move(2, used=20000, limit_ms=90000,
                                                          player="B")]))
    (line,) = [line for line in ax.lines if line.get_label() == "limit"]
    assert list(line.get_xdata()) == [0.5, 1.5, 2.5]
    assert list(line.get_ydata()) == [120.0, 120.0, 90.0] and line.get_drawstyle() == "steps-pre"


def test_the_players_names_are_in_the_titles_the_claims_and_the_csv(logs, tmp_path):
    """--pairings (contract 1.3, issue 33 item 2): a game with names says who
    plays in its title ('table-2 · Jana Nováková vs Petr Dvořák'), in the
    claims' players column and in the CSV's name column (A's name on A's rows,
    B's on B's); a game of a table the file does not name keeps its plain
    title and has empty names; a long name is shortened one way
    (pairings.short)."""
    from hallclock.views import pairings
    games = report.load_games(logs["scrabble"])
    hall, table1, table2 = games
    table2.names = ("Jana Nováková", "Petr Dvořák")
    text = printed(report.print_report, games, report.NARROW)
    assert "table-2 · Jana Nováková vs Petr Dvořák · scrabble · session 00000001" in text
    assert "table-1 · scrabble · session 00000001" in text
    claims = printed(report.print_claims, games, 140)  # wide enough for the whole table
    assert claims.splitlines()[3].split()[:3] == ["clock", "players", "move"]
    (row2,) = [line for line in claims.splitlines() if line.startswith("  table-2")]
    assert row2.split()[1:6] == ["Jana", "Nováková", "vs", "Petr", "Dvořák"]
    (row1,) = [line for line in claims.splitlines() if line.startswith("  table-1")]
    assert row1.split()[1:3] == ["2", "B"]  # no names: the players cell is empty
    rows = list(csv.DictReader(io.StringIO(csv_text(games, tmp_path))))
    assert {(r["clock"], r["player"], r["name"]) for r in rows} == {
        ("table-1", "A", ""), ("table-1", "B", ""), ("table-2", "A", "Jana Nováková"),
        ("table-2", "B", "Petr Dvořák")}
    # the round's overtimes name the player who ran over (roundreport)
    assert report.player_named(table2, "A") == "A Jana Nováková"
    assert report.player_named(table2, "B") == "B Petr Dvořák"
    assert report.player_named(table2, "?") == "?"
    assert report.player_named(table1, "B") == "B"
    long = "Jana Marie Nováková-Dvořáková"
    table1.names = (long, "Eva Malá")
    assert report.players(table1) == pairings.short(long) + " vs Eva Malá"
    assert report.player_named(table1, "A") == "A " + pairings.short(long)
    assert report.players(SimpleNamespace()) == ""  # a plot's game without names
