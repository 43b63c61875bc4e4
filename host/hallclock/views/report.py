"""The report's text, CSV and plot: they only format the figures of
:mod:`hallclock.views.figures` (one reading of each game, computed once), per game
(one device session) a table of moves -- player, start and end as time of
day, used time, warnings reached, overtime, pauses with their durations, the
hall's gongs, play-out moves marked -- totals per player, breaks (backgammon)
on the player who took them, the claims view (every overtime and flag fall
with its time of day and the device time beside it: the evidence for a ČAS
10.2.6 claim), the same table as CSV, and a plot (matplotlib, no display).

Time of day: one anchoring per session, ``ClockModel.time_of_day`` (see
hallclock.views.figures); shown in the local time zone of the machine running the
report (``TZ``); the CSV gives ISO 8601 with the offset.  A log of an
accelerated simulation says so in the report's header (``time_note``)."""
import csv
from datetime import datetime

from ..errors import BadInput, shown
from .figures import (Break, Game, Move, claims, games_from_records, load_games,  # noqa: F401
                      load_log, pause_ms, skipped_text, totals, used_ms)
from .model import typical_pace
from .modes import view_for
from .terminal import print_table, print_wrapped, styled  # noqa: F401 (print_table: roundreport)
from .words import clock_time, gong_name, playout_letter, playout_step, plural


def fmt_ms(ms, decimals=3):
    """m:ss.mmm (``decimals`` digits of the second, cut, not rounded: a clock
    shows 0:34.9 until 35 s have passed)."""
    if ms is None:
        return "-"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    text = f"{sign}{ms // 60000}:{ms % 60000 // 1000:02d}"
    if decimals:
        text += "." + f"{ms % 1000:03d}"[:decimals]
    return text


def time_of_day(epoch, tenths=False):
    """The report's time of day: 14:32:05 (local time, words.clock_time; with
    ``tenths`` 14:32:05.1, cut).  The CSV has the ms (``iso_time``)."""
    if epoch is None:
        return ""
    if not tenths:
        return clock_time(epoch)
    d = datetime.fromtimestamp(epoch)
    return clock_time(epoch) + ".%d" % (d.microsecond // 100000)


def iso_time(epoch):
    """The CSV's time of day: ISO 8601 with the local offset, to the ms."""
    if epoch is None:
        return ""
    return datetime.fromtimestamp(epoch).astimezone().isoformat(timespec="milliseconds")


LEFT_COLUMNS = ("warnings", "announced", "notes")


def fmt_short(ms):
    """The table's times: m:ss.t"""
    return fmt_ms(ms, 1)


def note(game, m):
    """What the table says about a move beyond its numbers."""
    if m.after_game:
        return "after the play-out"
    if m.flag:
        return f"{m.player} lost on time"
    if m.unfinished:
        how = "session ended" if game.ended else (
            "power lost" if game.power_loss else "log ends")
        return f"unfinished ({how})"
    if m.used_ms is None and view_for(game.mode).players:
        return "not ended"
    return ""


def notes(game, m):
    """The table's last column: gongs during the move, its play-out step, note
    (in the words of hallclock.views.words)."""
    parts = [gong_name(k, game.warn_min) for k in m.gongs]
    if m.playout:
        parts.append("play-out " + playout_step(m.playout))
    for player, what in m.refused:
        parts.append(f"{player}: {what} refused")
    if note(game, m):
        parts.append(note(game, m))
    return ", ".join(parts)


def time_note(games):
    """The report's header line for a log of an accelerated simulation (its
    clocks' time ran faster than the host's), or ''."""
    pace = typical_pace(g.pace for g in games)
    if not pace:
        return ""
    return (f"accelerated simulation (the clocks' time ran about {pace:.0f}× the host's): "
            "times of day are simulated, counted from the host's time at the round's start")


def overtime_text(m, short=True):
    if m.flag:
        return "flag"
    if not m.overtime_ms and not m.expired:
        return ""
    if m.overtime_ms is None:
        return "?"
    text = (fmt_short if short else fmt_ms)(m.overtime_ms)
    return text + ("+" if m.unfinished else "")


COLUMNS = ["clock", "session", "move", "player", "used", "used_ms", "limit_ms", "warnings",
           "overtime_ms", "pauses_ms", "playout", "gongs", "bank_ms", "note",
           # extensions: time of day, the limit's expiry, the row's kind
           "start_time", "end_time", "expired_time", "start_ms", "end_ms", "row"]


def rows(game):
    view = view_for(game.mode)
    for m in game.moves:
        warned = m.warnings if m.warnings else m.announces
        used = m.used
        yield {
            "clock": game.clock, "session": game.session, "move": m.move,
            "player": m.player if m.player != "?" or view.players else "",
            "used": fmt_ms(used), "used_ms": used if used is not None else "",
            "limit_ms": m.limit_ms if m.limit_ms is not None else "",
            "warnings": " ".join(str(w) for w in warned),
            "overtime_ms": m.overtime_ms if (m.expired or m.overtime_ms) and not m.flag else "",
            "pauses_ms": " ".join(str(p) for p in m.pause_list),
            "playout": m.playout or "",
            "gongs": " ".join(str(k) for k in m.gongs),
            "bank_ms": m.bank_after_ms if m.bank_after_ms is not None else "",
            "note": note(game, m),
            "start_time": iso_time(m.start_at), "end_time": iso_time(m.end_at),
            "expired_time": iso_time(m.expired_at),
            "start_ms": m.start_t if m.start_t is not None else "",
            "end_ms": m.end_t if m.end_t is not None else "", "row": "move",
        }
    for b in game.breaks:
        yield {"clock": game.clock, "session": game.session,
               "move": b.move if b.move is not None else "", "player": b.player or "",
               "used": "", "used_ms": "", "limit_ms": "", "warnings": "", "overtime_ms": "",
               "pauses_ms": "", "playout": "", "gongs": "", "bank_ms": "",
               "note": f"break {b.number}: {fmt_ms(b.length_ms)}",
               "start_time": iso_time(b.start_at), "end_time": iso_time(b.end_at),
               "expired_time": "", "start_ms": b.start_t if b.start_t is not None else "",
               "end_ms": b.end_t if b.end_t is not None else "", "row": "break"}


def write_csv(games, path, force=False):
    from .outfiles import write_file

    named = any(g.names for g in games)  # --pairings: each row's player's name

    def fill(f):
        w = csv.DictWriter(f, fieldnames=COLUMNS + (["name"] if named else []))
        w.writeheader()
        for g in games:
            for r in rows(g):
                if named:
                    r["name"] = g.names[0 if r["player"] == "A" else 1] \
                        if g.names and r["player"] in ("A", "B") else ""
                w.writerow(r)
    write_file(path, fill, force=force, what="CSV")


def players(g):
    """'Nováková vs Dvořák' of a game with names (--pairings), or ''."""
    from .pairings import short
    names = getattr(g, "names", None)  # a plot's game may be any object with the figures
    return f"{short(names[0])} vs {short(names[1])}" if names else ""


def player_named(g, player):
    """'B Dvořák' where the game has names (--pairings), else 'B'."""
    from .pairings import short
    if g.names and player in ("A", "B"):
        return f"{player} {short(g.names[0 if player == 'A' else 1])}"
    return player


def _title(g):
    who = players(g)
    return shown(f"{g.clock}{' · ' + who if who else ''} · {g.mode} · session {g.session}")


NARROW = 110  # below this many columns: no end time column, the notes below the table
PIPE_WIDTH = 120  # the report's width in a file or a pipe (a terminal: its own)


def report_console():
    """The report's console: a terminal's width, or PIPE_WIDTH in a file."""
    import os

    from .terminal import console as Console
    c = Console()
    if not c.is_terminal and not os.environ.get("COLUMNS"):
        c = Console(width=PIPE_WIDTH)
    return c


def _note_lines(g, body_notes):
    """The notes of a narrow table, below it: one line per move with notes,
    a run of moves with the same note as one line ('9–17: after the play-out')."""
    out = []
    for move, text in body_notes:
        if not text:
            continue
        if out and out[-1][2] == text and out[-1][1] == move - 1:
            out[-1][1] = move
        else:
            out.append([move, move, text])
    return [(f"{a}" if a == b else f"{a}–{b}", text) for a, b, text in out]


def print_report(games, console=None, header=True):
    from rich import box
    from rich.table import Table

    console = console or report_console()
    narrow = console.width < NARROW
    note_ = time_note(games)
    if header and note_:
        console.print(styled(console, note_, "yellow"))
    for g in games:
        view = view_for(g.mode)
        table = Table(title=_title(g), title_justify="left", box=box.SIMPLE_HEAD,
                      padding=(0, 1) if narrow else (0, 1, 0, 1), pad_edge=not narrow)
        hall = not view.players  # the duplicate countdown: moves of the hall, no player
        header_ = ["move"] + ([] if hall else ["player"]) + [
            "start", "end", "used", "announced" if hall else "warnings", "overtime",
            "pauses", "bank", "notes"]
        body = []
        styles = []
        moves_notes = []
        for m in g.moves:
            warned = m.warnings if m.warnings else m.announces
            cells = [str(m.move)] + ([] if hall else [m.player])
            cells += [time_of_day(m.start_at), time_of_day(m.end_at),
                      fmt_short(m.used), " ".join(f"{w}s" for w in warned),
                      overtime_text(m),
                      " ".join(fmt_short(p) for p in m.pause_list),
                      fmt_short(m.bank_after_ms) if m.bank_after_ms is not None else "",
                      notes(g, m)]
            body.append(cells)
            moves_notes.append((m.move, cells[-1]))
            styles.append("bold red" if m.over else ("magenta" if m.playout else None))
        # the columns every move leaves empty are left out (always: move .. warnings)
        keep = [i for i, name in enumerate(header_)
                if name in ("move", "player", "used") or any(r[i] for r in body)]
        if narrow:  # the end is the next move's start (CSV: end_time); notes below
            keep = [i for i in keep if header_[i] not in ("end", "notes")]
        for i in keep:
            table.add_column(header_[i], justify="left" if header_[i] in LEFT_COLUMNS else "right",
                             no_wrap=header_[i] != "notes")
        for cells, style in zip(body, styles):
            table.add_row(*[cells[i] for i in keep], style=style)
        if g.moves:
            print_table(console, table)
            if narrow:
                for moves, text in _note_lines(g, moves_notes):
                    console.print(f"  move {moves}: {text}")
        else:
            console.print(f"{_title(g)}: no moves")
        for player, s in g.totals.items():
            parts = [plural(s["moves"], "move"), f"{fmt_short(s['total_ms'])} used"]
            if s["moves"]:
                parts += [f"average {fmt_short(s['average_ms'])}",
                          f"longest {fmt_short(s['longest_ms'])}"]
            if s["unfinished"]:
                parts.append(f"{s['unfinished']} unfinished")
            parts.append(f"over the limit {plural(s['overtimes'], 'time')}" +
                         (f" for {fmt_short(s['overtime_ms'])}" if s["overtime_ms"] else "")
                         if s["overtimes"] else "no overtime")
            if s["pauses"]:
                parts.append(f"paused {plural(s['pauses'], 'time')} for "
                             f"{fmt_short(s['pause_ms'])}")
            if s["breaks"]:
                parts.append(f"{plural(s['breaks'], 'break')} for {fmt_short(s['break_ms'])}")
            if s["lost_on_time"]:
                parts.append("lost on time")
            text = ", ".join(parts)
            print_wrapped(console, f"  {player}:", text,
                          ("bold red", len(text) - len("lost on time")) if s["lost_on_time"]
                          else None)
        if hall:
            used = [m.used for m in g.counted_moves()]
            if used:
                console.print(f"  {plural(len(used), 'move')}, average "
                              f"{fmt_short(sum(used) // len(used))}, longest {fmt_short(max(used))}")
        for b in g.breaks:
            at = time_of_day(b.start_at) or fmt_short(b.start_t)
            until = time_of_day(b.end_at) or fmt_short(b.end_t)
            console.print(f"  {b.player} break {b.number}: {fmt_short(b.length_ms)}, "
                          f"{at}–{until} (move {b.move}'s time stood)")
        for gong in g.gong_list:
            at = time_of_day(gong.at) or f"device time {fmt_short(gong.t_ms)}"
            console.print(f"  {gong.name} at {at}" +
                          (f", in move {gong.move}" if gong.move is not None else ""))
        for gap in g.gaps:
            console.print(styled(console, f"  events {gap[0]}–{gap[1]} were lost on the device", "red", 2))
        if g.power_loss:
            said = g.reboot_text()
            console.print(styled(console, "  " + (said or "the clock lost power (or was reset) "
                                                  "during this session"), "yellow", 2))
        elif not g.ended:
            console.print(styled(console, "  the session has no end record (still running, or "
                                 "cut off)", "yellow", 2))
        if g.modelled:
            console.print(styled(console, f"  not replayed on the clock's core ({g.modelled}): "
                                 "overtime from the log's used_ms", "yellow", 2))
        elif g.mismatches:
            console.print(styled(console, f"  {plural(len(g.mismatches), 'record')} the clock's "
                                 f"core does not explain (first: {g.mismatches[0].text})",
                                 "yellow", 2))
    from ..link.health import print_health  # the clocks' own margins (health events)
    print_health(games, console)


def print_claims(games, console=None):
    """The claims view: every overtime and flag fall, with the time of day."""
    from rich import box
    from rich.table import Table

    console = console or report_console()
    found = claims(games)
    if not found:
        console.print("no overtime and no flag fall in this log")
        return
    narrow = console.width < NARROW
    table = Table(title="claims: every overtime and flag fall (ČAS 10.2.6, İSTAVDER)",
                  title_justify="left", box=box.SIMPLE_HEAD,
                  padding=(0, 1, 0, 0) if narrow else (0, 1), pad_edge=not narrow)
    named = any(g.names for g in games)
    names = ("clock",) + (("players",) if named else ()) + (
        "move", "player", "overtime", "limit ran\nout at", "device\ntime",
        "move\nended") + (() if narrow else ("notes",))
    for name in names:
        table.add_column(name, justify="left" if name in ("clock", "notes") else "right",
                         no_wrap=name != "notes")
    below = []
    for c in found:
        ran_out = time_of_day(c["expired_at"], True)
        device = fmt_short(c["expired_t"]) if c["expired_t"] is not None else ""
        ended = time_of_day(c["end_at"], True) or (fmt_short(c["end_t"])
                                             if c["end_t"] is not None else "")
        notes_ = []
        if c["flag"]:
            notes_.append(f"{c['player']} lost on time")
        if c["unfinished"]:
            notes_.append("no press")
        if c["playout"]:
            notes_.append("play-out " + playout_step(c["playout"]))
        cells = [c["clock"]] + ([players(c["game"])] if named else []) + [
                 str(c["move"]), c["player"],
                 "flag" if c["flag"] else "?" if c["overtime_ms"] is None else
                 fmt_short(c["overtime_ms"]) + ("+" if c["unfinished"] else ""),
                 ran_out, device, ended]
        if narrow:
            if notes_:
                below.append(f"  {c['clock']} move {c['move']}: {', '.join(notes_)}")
        else:
            cells.append(", ".join(notes_))
        table.add_row(*cells)
    print_table(console, table)
    for line in below:
        console.print(line)


COLORS = {"A": "#1f77b4", "B": "#ff7f0e"}
GONG_COLORS = {"start": "#2ca02c", "ten_minutes": "#bcbd22", "end": "#d62728", "manual": "#7f7f7f"}


def _gong_x(game, t_ms, move):
    """Where a gong goes on the move axis: its move, or by time between moves."""
    if move is not None:
        return move
    for m in game.moves:
        if m.start_t is not None and t_ms is not None and m.start_t > t_ms:
            return m.move - 0.5
    return (game.moves[-1].move + 0.5) if game.moves else 0.5


def drawable(game):
    """A game with a move to draw (the hall unit's session has only gongs)."""
    return any(m.used is not None for m in game.moves)


def draw_game(ax, game):
    """One game on a matplotlib Axes: bars of each move's used time by player
    (overtime stacked in red above the limit and labelled with its length,
    play-out moves hatched and labelled (a)/(b)/(c), a move no press ended
    drawn to the session's end), the limit as a step line, pauses as markers
    with their length, gongs as vertical lines.  The hall countdown: per
    move the running time and the stops stacked, the announcements marked at
    the moment they were made."""
    seen = set()

    def label(text):
        if text in seen:
            return None
        seen.add(text)
        return text

    if not view_for(game.mode).players:
        return _draw_countdown(ax, game, label)
    top = 0.0
    for m in game.moves:
        used_ = m.used
        if used_ is None:
            continue
        used = used_ / 1000
        over = m.overtime_ms / 1000 if m.overtime_ms and not m.flag else 0.0
        in_limit = used - over if over else used
        color = COLORS.get(m.player, "#7f7f7f")
        name = f"player {m.player}" if m.player in COLORS else "move"
        ax.bar(m.move, in_limit, color=color, hatch="//" if m.playout else None,
               edgecolor="black" if (m.playout or m.unfinished) else color,
               linestyle="--" if m.unfinished else "-", label=label(name))
        if over:
            ax.bar(m.move, over, bottom=in_limit, color="#d62728", label=label("overtime"))
            ax.annotate(f"+{fmt_ms(m.overtime_ms, 1)}" + ("…" if m.unfinished else ""),
                        (m.move, used), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color="#d62728",
                        fontweight="bold")
        if m.flag:
            ax.annotate("flag", (m.move, used), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color="#d62728",
                        fontweight="bold")
        top = max(top, used)
        if m.playout:
            ax.bar(m.move, 0, hatch="//", color="white", edgecolor="black",
                   label=label("play-out move"))
            ax.annotate(playout_letter(m.playout), (m.move, 0), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8)
        for p in m.pause_list:
            ax.plot([m.move], [used + 3], marker="v", color="#9467bd", markersize=9,
                    linestyle="none", label=label("pause"))
            ax.annotate(f"pause {fmt_ms(p, 0)}", (m.move, used + 6), ha="center",
                        fontsize=8, color="#9467bd")
    limits = [(m.move, m.limit_ms / 1000) for m in game.moves if m.limit_ms]
    if limits:
        xs = [x for x, _ in limits]
        ys = [y for _, y in limits]
        ax.step([xs[0] - 0.5] + [x + 0.5 for x in xs], [ys[0]] + ys, where="pre",
                color="black", linestyle="--", linewidth=1, label=label("limit"))
        top = max(top, max(ys))
    for t_ms, kind, move in game.gongs:
        x = _gong_x(game, t_ms, move)
        ax.axvline(x, color=GONG_COLORS.get(kind, "#7f7f7f"), linestyle=":", linewidth=2,
                   label=label(gong_name(kind, game.warn_min)))
    ax.set_ylim(0, max(top * 1.35, 10))
    ax.set_xlabel("move")
    ax.set_ylabel("seconds")
    ax.set_title(_title(game), loc="left")
    if game.moves:
        ax.set_xticks([m.move for m in game.moves])
    ax.legend(loc="upper left", fontsize=8, ncols=4)


def _draw_countdown(ax, game, label):
    """The hall countdown: each move as its timeline from the referee's start
    (seconds since the start, up): the time running, the stops where they
    happened, the announcements where they were made."""
    top = 0.0
    for m in game.moves:
        if m.start_t is None or m.end_t is None:
            continue
        t = m.start_t
        for a, b in [p for p in m.pauses if p[0] is not None and p[1] is not None] + [
                [m.end_t, m.end_t]]:
            if a > t:
                ax.bar(m.move, (a - t) / 1000, bottom=(t - m.start_t) / 1000, color="#1f77b4",
                       label=label("time running"))
            if b > a:
                ax.bar(m.move, (b - a) / 1000, bottom=(a - m.start_t) / 1000, color="#c7c7c7",
                       hatch="..", edgecolor="#7f7f7f", label=label("time stopped"))
                ax.annotate(f"stop {fmt_ms(b - a, 0)}", (m.move, ((a + b) / 2 - m.start_t) / 1000),
                            ha="center", va="center", fontsize=8)
            t = max(t, b)
        top = max(top, (m.end_t - m.start_t) / 1000)
        for at, left in m.announce_t:
            if at is None or left is None:
                continue
            y = (at - m.start_t) / 1000
            ax.plot([m.move + 0.42], [y], marker="<", color="#2ca02c", linestyle="none",
                    label=label("announced"))
            ax.annotate(f"{fmt_ms(left * 1000, 0)} left", (m.move + 0.45, y), va="center",
                        fontsize=7, color="#2ca02c")
        ax.annotate(f"{time_of_day(m.start_at)}", (m.move, 0), xytext=(0, -22),
                    textcoords="offset points", ha="center", fontsize=7)
    limits = [m.limit_ms / 1000 for m in game.moves if m.limit_ms]
    if limits:
        ax.axhline(max(limits), color="black", linestyle="--", linewidth=1,
                   label=label("move time (without stops)"))
        top = max(top, max(limits))
    for t_ms, kind, move in game.gongs:
        ax.axvline(_gong_x(game, t_ms, move), color=GONG_COLORS.get(kind, "#7f7f7f"),
                   linestyle=":", linewidth=2, label=label(gong_name(kind, game.warn_min)))
    ax.set_ylim(0, max(top * 1.25, 10))
    ax.set_xlabel("move (start time below)")
    ax.set_ylabel("seconds since the referee's start")
    ax.set_title(_title(game), loc="left")
    if game.moves:
        ax.set_xticks([m.move for m in game.moves])
        ax.set_xlim(min(m.move for m in game.moves) - 0.6, max(m.move for m in game.moves) + 1.0)
    ax.legend(loc="upper left", fontsize=8, ncols=4)


def check_plot_name(path):
    if not str(path).lower().endswith(".png"):
        raise BadInput(f"--plot {path}: give a file name ending in .png")


def check_plot(games, path):
    """A plot needs a game with moves (the hall unit's session has none)."""
    if not any(drawable(g) for g in games):
        raise BadInput(f"--plot {path}: no game in the log has a move to draw")


def write_plot(games, path, force=False):
    """Draw every game (one panel each) into a PNG (Agg: no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .outfiles import write_file

    check_plot_name(path)
    check_plot(games, path)
    games = [g for g in games if drawable(g)]  # no empty panels
    n = len(games)
    fig = Figure(figsize=(10, 4 * n), dpi=100)
    FigureCanvasAgg(fig)
    for i, game in enumerate(games):
        draw_game(fig.add_subplot(n, 1, i + 1), game)
    fig.tight_layout()
    write_file(path, lambda f: fig.savefig(f, format="png"), force=force, binary=True,
               what="plot")

