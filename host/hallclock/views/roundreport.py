"""The round's report: ``hallclock report --round N LOG…`` across every table.

A game belongs to round N when its records carry ``round`` N (the host tags
every record of a game from the clock's ``round`` event on: hostlink.tag_round).
Every figure comes from :mod:`hallclock.views.figures` (one reading of a game,
shared with the per-log report, the console and the plots); this module adds
them up per table and formats what the referee needs for the round as a whole:

* per table the game (moves, time used per player, the end gong's move);
* every overtime: move, player, by how much, and when (device time and time of
  day) -- the evidence for a claim under ČAS 10.2.6;
* the games still running at the end gong and their play-out (16.3);
* every pause with the reason the referee tagged in the console (the referee
  log beside the game log) and, for Scrabble, the rule the restart followed
  (ČAS 9.1/10.1 or 11.2, inferred from who pressed);
* one CSV (a row per game, overtime, pause), one hall-wide plot (the time
  used per move on every table).
"""
import csv
import os
from dataclasses import dataclass

from . import figures, report
from ..errors import BadInput, shown
from .figures import restart_rule
from ..link.logfile import read_records
from .terminal import styled
from .words import by_name, natural, playout_letter, playout_step, plural

REASONS = ("challenge", "stop", "dispute", "referee", "break")
REASON_TEXT = {"challenge": "challenge", "stop": "STOP", "dispute": "dispute",
               "referee": "referee called", "break": "break"}
REFEREE_CLOCK = "referee"


def referee_log_of(log):
    """The referee log beside a game log: ``round3.jsonl`` -> ``round3.referee.jsonl``."""
    base = os.fspath(log)
    stem = base[:-6] if base.endswith(".jsonl") else base
    return stem + ".referee.jsonl"


@dataclass
class TableGame:
    """One table's game of the round: its sessions' figures (hallclock.views.figures),
    added up here and nowhere else."""
    clock: str
    sessions: list
    mode: str
    games: list  # figures.Game, one per session (a reboot makes two)
    ended: bool = False

    @property
    def overtimes(self):
        return [m for g in self.games for m in g.overtimes]

    @property
    def pauses(self):
        return [p for g in self.games for p in g.pause_list]

    @property
    def playout(self):
        return [(step, move) for g in self.games for step, move, _t in g.playout]

    @property
    def over(self):
        return any(g.playout_over for g in self.games)

    @property
    def end_gong_move(self):
        moves = [g.end_gong_move for g in self.games if g.end_gong_move is not None]
        return moves[-1] if moves else None

    @property
    def warn_min(self):
        return self.games[-1].warn_min

    def moves(self):
        return sum(s["moves"] for g in self.games for s in g.totals.values())

    def used(self, player):
        return sum(g.totals[player]["total_ms"] for g in self.games if player in g.totals)

    def reboots(self):
        """The sessions of this table's game that lost power (figures.Game)."""
        return [g for g in self.games if g.power_loss]

    def finished(self):
        if self.over:
            return "yes"
        # a game cut by a power loss and not restored did not finish, whatever
        # its new session did (the players began again at move 1)
        if any(g.next_game is None or not g.next_game.restored for g in self.reboots()):
            return "no"
        if self.ended and self.end_gong_move is None:
            return "yes"
        return "session ended" if self.ended else "no"


_restart_rule = restart_rule  # the console's name for it


def _session_key(r):
    return (str(r.get("clock")), str(r.get("session")))


def load_round(n, logs, pairings=None):
    """Every table's game of round ``n`` in ``logs`` (and their referee logs);
    the players' names from ``pairings`` (hallclock.views.pairings), if given."""
    records, tags = [], []
    for log in logs:
        got = load_records(log)
        records += got
        side = referee_log_of(log)
        if os.path.exists(side):
            tags += [r for r in read_records(side)
                     if isinstance(r, dict) and r.get("event") == "pause_reason"]
    keys = []
    for r in records:
        if r.get("round") == n:
            k = _session_key(r)
            if k not in keys:
                keys.append(k)
    if not keys:
        found = sorted({r["round"] for r in records if isinstance(r.get("round"), int)})
        have = (f"rounds in these logs: {', '.join(map(str, found))}" if found else
                "no record carries a round (was the round started with 'hallclock round start'?)")
        raise BadInput(f"no game of round {n} in {', '.join(map(str, logs))}; {have}")
    by_session = {k: [] for k in keys}
    for r in records:
        k = _session_key(r)
        if k in by_session:
            by_session[k].append(r)
    reason_of = {}
    for t in tags:  # the latest tag of a pause wins (the referee may correct it)
        reason_of[(str(t.get("table")), str(t.get("table_session")), t.get("pause_seq"))] = \
            t.get("reason")
    tables = {}
    for clock in dict.fromkeys(k[0] for k in keys):
        # a table's sessions replayed together: a session after a power loss
        # is told of the one before (its time of day, whether it took the game back)
        recs = []
        for k in keys:
            if k[0] == clock:
                recs += sorted(by_session[k], key=lambda r: r.get("seq") or 0)
        games = figures.games_from_records(recs)
        figures.tag_pauses(games, reason_of)
        tg = tables[clock] = TableGame(clock, [], games[0].mode, [])
        for game in games:
            if pairings is not None:
                game.names = pairings.names(clock, n)
            tg.sessions.append(game.session)
            tg.games.append(game)
            tg.ended = game.ended
    return [tables[c] for c in by_name(tables)]


def load_records(log):
    """The records of a log, refused as ``hallclock report`` refuses it
    (figures.read_log: missing, a folder, no record in it)."""
    return figures.read_log(log)[0]


def _natural(name):
    return natural(name)


def _indented(console, text, indent=2):
    """A line of the report that may wrap: every line of it indented."""
    from rich.padding import Padding
    console.print(Padding(text, (0, 0, 0, indent)))


def print_round(n, tables, console=None, games=True):
    console = console or report.report_console()
    _print_summary(n, tables, console)
    if games:
        console.print(styled(console, f"The games of round {n}, table by table", "bold"))
        report.print_report([g for tg in tables for g in tg.games], console, header=False)


def hall_units(tables):
    """The clocks of the round that are no table: the hall unit, if the round
    has one (``figures.hall_unit_of``, the projector's rule); a table whose
    game has not begun is a table all the same."""
    from .model import epoch_of

    def start(tg):
        for g in tg.games:
            for r in g.records:
                if r.get("event") == "gong" and r.get("kind") == "start":
                    return epoch_of(r.get("host_time")) or 0.0
        return None
    unit = figures.hall_unit_of([
        (start(tg), any(g.moves for g in tg.games),
         any(r.get("event") == "round" for g in tg.games for r in g.records))
        for tg in tables])
    return [] if unit is None else [tables[unit]]


def _print_summary(n, tables, console):
    from rich import box
    from rich.table import Table

    narrow = console.width < report.NARROW
    units = hall_units(tables)
    tables = [tg for tg in tables if tg not in units]
    modes = sorted({tg.mode for tg in tables})
    note = report.time_note([g for tg in tables for g in tg.games])
    console.print(styled(console, f"Round {n}: {plural(len(tables), 'table')}"
                         + (f" of {shown(modes[0])}" if len(modes) == 1 else ""),
                         "bold", 0, len(f"Round {n}")))
    if note:
        console.print(styled(console, note, "yellow"))
    for tg in units:
        console.print(f"hall unit {tg.clock}: " + ", ".join(
            f"{gg.name} at {report.time_of_day(gg.at) or report.fmt_short(gg.t_ms)}"
            for g in tg.games for gg in g.gong_list))
    kw = {"box": box.SIMPLE_HEAD, "padding": (0, 1, 0, 0), "pad_edge": False, "show_edge": False,
          "collapse_padding": True} if narrow else {}
    t = Table(title=f"round {n}: the games", title_justify="left", **kw)
    named = any(g.names for tg in tables for g in tg.games)
    cols = ["table"] + (["players"] if named else []) + (["mode"] if len(modes) > 1 else []) + [
        "moves", "A used", "B used", "over-\ntimes" if narrow else "overtimes", "pauses",
        "end gong in move" if not narrow else "end\ngong", "play-out", "finished"]
    rebooted = [tg for tg in tables if tg.reboots()]
    # a column only when a clock rebooted (docs/hall.md "When a clock reboots"),
    # and not at 80 columns (the table would be cut): then a line under it
    column = bool(rebooted) and not narrow
    if column:
        cols.insert(-1, "reboots")
    for col in cols:
        t.add_column(col, justify="left" if col in ("table", "mode", "play-out") else "right",
                     no_wrap=True)
    for tg in tables:
        steps = [s for s, _m in tg.playout]
        playout = " ".join(playout_letter(s) for s in steps) if steps else "-"
        cells = [tg.clock] + ([report.players(tg.games[0])] if named else []) + (
            [tg.mode] if len(modes) > 1 else []) + [
            str(tg.moves()), report.fmt_short(tg.used("A")), report.fmt_short(tg.used("B")),
            str(len(tg.overtimes)), str(len(tg.pauses)),
            "-" if tg.end_gong_move is None else str(tg.end_gong_move or "-"),
            playout, tg.finished()]
        if column:
            cells.insert(-1, str(len(tg.reboots())))
        t.add_row(*cells, style="bold red" if tg.overtimes else None)
    report.print_table(console, t)
    if rebooted and not column:
        _indented(console, styled(console, "reboots: " + ", ".join(
            "%s %d" % (tg.clock, len(tg.reboots())) for tg in rebooted), "yellow"))
    for tg in rebooted:
        for g in tg.reboots():
            said = g.reboot_text()
            if said:
                _indented(console, styled(console, said, "yellow"))
    if any(tg.playout for tg in tables):
        _indented(console, "play-out (ČAS 16.3): " + ", ".join(
            playout_step(s) for s in ("finish_round", "one_more_move", "last_move", "over")))
    over = [(tg, m) for tg in tables for m in tg.overtimes]
    if over:
        t = Table(title="overtimes (ČAS 10.2.6: the evidence for a claim)", title_justify="left",
                  **kw)
        for col in ("table", "move", "player", "over by", "limit ran\nout at",
                    "device\ntime", "pressed\nat"):
            t.add_column(col, no_wrap=True)
        for tg, m in over:
            t.add_row(tg.clock, str(m.move), report.player_named(tg.games[0], m.player),
                      "flag" if m.flag else (report.fmt_short(m.overtime_ms) +
                                             ("+" if m.unfinished else "")),
                      report.time_of_day(m.expired_at, True) or "-",
                      report.fmt_short(m.expired_t),
                      report.time_of_day(m.end_at, True) if not m.unfinished else "never",
                      style="red")
        report.print_table(console, t)
        if any(m.unfinished for _tg, m in over):
            console.print("  +: never pressed; over the limit up to the session's last record")
    else:
        console.print("No overtime in this round.")
    late = [tg for tg in tables if tg.end_gong_move is not None]
    if late:
        console.print(styled(console, "Still playing at the end gong (ČAS 16.3): "
                             f"{plural(len(late), 'game')}", "bold", 0,
                             len("Still playing at the end gong")))
        for tg in late:
            steps = ", ".join(
                (f"over after move {m}" if s == "over" else f"{playout_letter(s)} from move {m}")
                for s, m in tg.playout)
            state = "" if tg.over else "; play-out NOT finished"
            _indented(console, f"{tg.clock}: move {tg.end_gong_move or '-'} in progress at "
                      f"the end gong; {steps or 'no play-out step'}{state}")
    pauses = [p for tg in tables for p in tg.pauses]
    if pauses:
        t = Table(title="pauses (why time stopped)", title_justify="left", **kw)
        for col in ("table", "move", "player", "at", "length", "reason", "restart"):
            t.add_column(col, no_wrap=col != "restart")
        for p in pauses:
            t.add_row(p.clock, "-" if p.move is None else str(p.move), p.player or "-",
                      report.time_of_day(p.at) or f"device {report.fmt_short(p.t_ms)}",
                      report.fmt_short(p.ms) if p.ms is not None else "-",
                      REASON_TEXT.get(p.reason, p.reason) if p.reason else "(not tagged)",
                      p.restart or "")
        report.print_table(console, t)


CSV_COLUMNS = ["round", "kind", "table", "session", "move", "player", "ms", "text",
               "t_ms", "time_of_day"]


def csv_rows(n, tables):
    units = hall_units(tables)
    for tg in tables:
        steps = " > ".join(playout_step(s) for s, _m in tg.playout)
        a, b = tg.used("A"), tg.used("B")
        yield {"round": n, "kind": "hall_unit" if tg in units else "game", "table": tg.clock,
               "session": " ".join(tg.sessions),
               "move": "" if tg.end_gong_move is None else tg.end_gong_move, "player": "",
               "ms": a + b,
               "text": (f"{g0.names[0]} vs {g0.names[1]}; " if (g0 := tg.games[0]).names
                        else "") + f"{tg.mode}; {plural(tg.moves(), 'move')}; A {a} ms; "
                       f"B {b} ms; play-out: {steps or '-'}; "
                       f"{'over' if tg.over else 'ended' if tg.ended else 'not ended'}",
               "t_ms": "", "time_of_day": ""}
        for m in tg.overtimes:
            yield {"round": n, "kind": "overtime", "table": tg.clock, "session": "",
                   "move": m.move, "player": m.player,
                   "ms": "" if m.overtime_ms is None or m.flag else m.overtime_ms,
                   "text": "flag fall" if m.flag else
                   "never pressed: over the limit up to the session's last record"
                   if m.unfinished else "over the limit",
                   "t_ms": "" if m.expired_t is None else m.expired_t,
                   "time_of_day": report.iso_time(m.expired_at)}
        for p in tg.pauses:
            yield {"round": n, "kind": "pause", "table": tg.clock, "session": p.session,
                   "move": "" if p.move is None else p.move, "player": p.player or "",
                   "ms": "" if p.ms is None else p.ms,
                   "text": f"{p.reason or 'not tagged'}; {p.restart or ''}",
                   "t_ms": p.t_ms, "time_of_day": report.iso_time(p.at)}


def write_csv(n, tables, path, force=False):
    """The CSV, written whole or not at all (outfiles.write_file)."""
    from .outfiles import write_file

    def write(f):
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for row in csv_rows(n, tables):
            w.writerow(row)
    write_file(path, write, force=force, what="CSV")


def write_plot(n, tables, path, force=False):
    """One hall-wide plot: the time used per move on every table (a line per
    table; overtime moves marked red), the move limit dashed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not str(path).lower().endswith(".png"):
        raise BadInput(f"--plot {path}: give a file name ending in .png")
    fig = Figure(figsize=(11, 5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    limits = set()
    for tg in tables:
        moves = [m for g in tg.games for m in g.counted_moves()]
        if not moves:
            continue
        ax.plot([m.move for m in moves], [m.used / 1000 for m in moves], marker="o",
                markersize=3, linewidth=1, label=tg.clock)
        over = [m for m in moves if m.over]
        if over:
            ax.plot([m.move for m in over], [m.used / 1000 for m in over], marker="o",
                    markersize=8, linestyle="none", markerfacecolor="none",
                    markeredgecolor="#d62728")
        limits |= {m.limit_ms for m in moves if m.limit_ms}
    for limit in sorted(limits):
        ax.axhline(limit / 1000, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("move")
    ax.set_ylabel("seconds used")
    ax.set_title(f"round {n}: time used per move, all tables (red rings: overtime)", loc="left")
    ax.legend(loc="upper left", fontsize=7, ncols=max(1, min(8, len(tables))))
    fig.tight_layout()
    from .outfiles import write_file
    write_file(path, lambda f: fig.savefig(f, format="png"), force=force, binary=True,
               what="plot")
