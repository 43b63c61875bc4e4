"""The round's report: ``hallclock report --round N LOG…`` across every table.

A game belongs to round N when its records carry ``round`` N (the host tags
every record of a game from the clock's ``round`` event on: hostlink.tag_round).
The moves come from :mod:`hallclock.report` (one reading of a game, shared with
the per-log report); this module adds what the referee needs for the round
as a whole:

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
from dataclasses import dataclass, field

from . import report
from .errors import BadInput
from .logfile import read_records
from .modes import view_for

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
class Pause:
    clock: str
    session: str
    seq: int
    move: int | None
    player: str | None
    t_ms: int
    host_time: str | None = None
    end_t: int | None = None
    reason: str | None = None
    restart: str | None = None  # who the time ran for after it, and the rule

    @property
    def ms(self):
        return None if self.end_t is None else self.end_t - self.t_ms


@dataclass
class Overtime:
    clock: str
    move: int
    player: str
    over_ms: int | None  # how far over the limit (report.Move.overtime_ms)
    expired_t: int | None
    expired_time: str | None
    press_time: str | None
    unfinished: bool = False  # never pressed: the overtime runs to the session's last record


@dataclass
class TableGame:
    clock: str
    sessions: list
    mode: str
    games: list  # report.Game, one per session (a reboot makes two)
    overtimes: list = field(default_factory=list)
    pauses: list = field(default_factory=list)
    end_gong_move: object = None  # the move in progress at the end gong; None: no end gong
    playout: list = field(default_factory=list)  # (step, move)
    over: bool = False  # the play-out reached its end (B ended the last move)
    ended: bool = False


def _restart_rule(mode, paused_player, after):
    """The rule the restart followed, from the records after the pause
    (Scrabble): the opponent pressed -> the time runs again for the player it
    stopped (ČAS 9.1, 10.1: after a challenge the clock runs for the
    challenger); the paused player pressed -> that move is over and the
    opponent's time runs (11.2: a STOP ruled for the stopping player)."""
    pressed = False
    for r in after:
        ev = r.get("event")
        if ev == "press":
            pressed = True
        elif ev == "resume":
            who = r.get("player")
            if not view_for(mode).restart_rules:
                return f"time ran again for {who}" if who else "time ran again"
            if who == paused_player and not pressed:
                return f"9.1/10.1: time ran again for {who}"
            if pressed:
                return f"11.2: {paused_player}'s move ended, time ran for {who}"
            return f"time ran for {who}"
        elif ev in ("end", "power_loss"):
            return "the session ended while paused"
    return "still paused"


def _session_key(r):
    return (str(r.get("clock")), str(r.get("session")))


def load_round(n, logs):
    """Every table's game of round ``n`` in ``logs`` (and their referee logs)."""
    records, tags = [], []
    for log in logs:
        if not os.path.exists(log):
            raise BadInput(f"{log}: no such log file")
        try:
            got = read_records(log)
        except OSError as exc:
            raise BadInput(f"{log}: cannot read the log ({exc.strerror})") from None
        records += [r for r in got if isinstance(r, dict)]
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
    for k in keys:
        clock = k[0]
        recs = sorted(by_session[k], key=lambda r: r.get("seq") or 0)
        game = report.games_from_records(recs)[0]
        tg = tables.get(clock)
        if tg is None:
            tg = tables[clock] = TableGame(clock, [], game.mode, [])
        tg.sessions.append(k[1])
        tg.games.append(game)
        tg.ended = game.ended
        _scan(tg, game, recs, reason_of)
    return [tables[c] for c in sorted(tables, key=_natural)]


def _natural(name):
    import re
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _scan(tg, game, recs, reason_of):
    expired_at = {}
    for i, r in enumerate(recs):
        ev = r.get("event")
        if ev == "expired":
            expired_at[r.get("move")] = (r.get("t_ms"), r.get("host_time"))
        elif ev == "pause":
            p = Pause(tg.clock, str(r.get("session")), r.get("seq"), r.get("move"),
                      r.get("player"), r.get("t_ms"), r.get("host_time"))
            for later in recs[i + 1:]:
                if later.get("event") in ("resume", "end"):
                    p.end_t = later.get("t_ms")
                    break
            p.reason = reason_of.get((tg.clock, p.session, p.seq))
            p.restart = _restart_rule(game.mode, p.player, recs[i + 1:])
            tg.pauses.append(p)
        elif ev == "gong" and r.get("kind") == "end":
            tg.end_gong_move = r.get("move") if r.get("move") is not None else 0
        elif ev == "playout":
            tg.playout.append((r.get("step"), r.get("move")))
            if r.get("step") == "over":
                tg.over = True
    press_time = {r.get("move"): r.get("host_time") for r in recs if r.get("event") == "press"}
    for m in game.moves:
        if not m.expired:
            continue
        t, when = expired_at.get(m.move, (None, None))
        # how far over: read off the firmware's core by the report (to the press, or
        # for a move never pressed to the session's last record)
        over = m.overtime_ms
        unfinished = getattr(m, "unfinished", False) or m.used_ms is None
        o = Overtime(tg.clock, m.move, m.player, over, t, when, press_time.get(m.move))
        o.unfinished = unfinished
        tg.overtimes.append(o)


def _used(tg, player):
    return sum(m.used_ms for g in tg.games for m in g.moves
               if m.player == player and m.used_ms is not None)


def _moves(tg):
    return sum(1 for g in tg.games for m in g.moves if m.used_ms is not None)


def _day(host_time):
    """The time of day of a host_time (UTC, as logged): 14:03:27.120."""
    if not host_time or "T" not in str(host_time):
        return "-"
    return str(host_time).split("T", 1)[1].rstrip("Z")


def print_round(n, tables, console=None, games=True):
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    _print_summary(n, tables, console, Table)
    if games:
        console.print(f"[bold]The games of round {n}, table by table[/bold]")
        report.print_report([g for tg in tables for g in tg.games], console)


def _print_summary(n, tables, console, Table):
    console.print(f"[bold]Round {n}[/bold]: {len(tables)} table(s)")
    t = Table(title=f"round {n}: the games", title_justify="left")
    for col in ("table", "mode", "moves", "A used", "B used", "overtimes", "pauses",
                "end gong (move)", "play-out", "finished"):
        t.add_column(col, justify="left" if col in ("table", "mode", "play-out") else "right")
    for tg in tables:
        steps = [s for s, _m in tg.playout]
        t.add_row(tg.clock, tg.mode, str(_moves(tg)), report.fmt_short(_used(tg, "A")),
                  report.fmt_short(_used(tg, "B")), str(len(tg.overtimes)),
                  str(len(tg.pauses)),
                  "-" if tg.end_gong_move is None else str(tg.end_gong_move or "-"),
                  " > ".join(steps) if steps else "-",
                  "yes" if tg.over or (tg.ended and tg.end_gong_move is None) else
                  ("session ended" if tg.ended else "no"),
                  style="bold red" if tg.overtimes else None)
    console.print(t)
    over = [o for tg in tables for o in tg.overtimes]
    if over:
        t = Table(title="overtimes (ČAS 10.2.6: the evidence for a claim)", title_justify="left")
        for col in ("table", "move", "player", "over by", "limit ran out at", "time of day",
                    "pressed at (time of day)"):
            t.add_column(col)
        for o in over:
            t.add_row(o.clock, str(o.move), o.player,
                      report.fmt_ms(o.over_ms) + (" (never pressed)" if o.unfinished else ""),
                      report.fmt_short(o.expired_t), _day(o.expired_time), _day(o.press_time),
                      style="red")
        console.print(t)
    else:
        console.print("No overtime in this round.")
    late = [tg for tg in tables if tg.end_gong_move is not None]
    if late:
        console.print(f"[bold]Still playing at the end gong[/bold] (ČAS 16.3): {len(late)} game(s)")
        for tg in late:
            steps = ", ".join(f"{s} (move {m})" for s, m in tg.playout)
            state = "play-out over" if tg.over else "play-out NOT finished"
            console.print(f"  {tg.clock}: move {tg.end_gong_move or '-'} in progress at the "
                          f"end gong; {steps or 'no play-out step'}; {state}", soft_wrap=True)
    pauses = [p for tg in tables for p in tg.pauses]
    if pauses:
        t = Table(title="pauses (why time stopped)", title_justify="left")
        for col in ("table", "move", "player", "at", "length", "reason", "restart"):
            t.add_column(col)
        for p in pauses:
            t.add_row(p.clock, "-" if p.move is None else str(p.move), p.player or "-",
                      report.fmt_short(p.t_ms), report.fmt_short(p.ms) if p.ms is not None else "-",
                      REASON_TEXT.get(p.reason, p.reason) if p.reason else "(not tagged)",
                      p.restart or "")
        console.print(t)


CSV_COLUMNS = ["round", "kind", "table", "session", "move", "player", "ms", "text",
               "t_ms", "time_of_day"]


def csv_rows(n, tables):
    for tg in tables:
        steps = " > ".join(s for s, _m in tg.playout)
        yield {"round": n, "kind": "game", "table": tg.clock, "session": " ".join(tg.sessions),
               "move": "" if tg.end_gong_move is None else tg.end_gong_move, "player": "",
               "ms": _used(tg, "A") + _used(tg, "B"),
               "text": f"{tg.mode}; {_moves(tg)} moves; A {_used(tg, 'A')} ms; "
                       f"B {_used(tg, 'B')} ms; play-out: {steps or '-'}; "
                       f"{'over' if tg.over else 'ended' if tg.ended else 'not ended'}",
               "t_ms": "", "time_of_day": ""}
        for o in tg.overtimes:
            yield {"round": n, "kind": "overtime", "table": tg.clock, "session": "",
                   "move": o.move, "player": o.player,
                   "ms": "" if o.over_ms is None else o.over_ms,
                   "text": "never pressed: over the limit up to the session's last record"
                   if o.unfinished else "over the limit",
                   "t_ms": "" if o.expired_t is None else o.expired_t,
                   "time_of_day": _day(o.expired_time)}
        for p in tg.pauses:
            yield {"round": n, "kind": "pause", "table": tg.clock, "session": p.session,
                   "move": "" if p.move is None else p.move, "player": p.player or "",
                   "ms": "" if p.ms is None else p.ms,
                   "text": f"{p.reason or 'not tagged'}; {p.restart or ''}",
                   "t_ms": p.t_ms, "time_of_day": _day(p.host_time)}


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
        moves = [m for g in tg.games for m in g.moves if m.used_ms is not None]
        if not moves:
            continue
        ax.plot([m.move for m in moves], [m.used_ms / 1000 for m in moves], marker="o",
                markersize=3, linewidth=1, label=tg.clock)
        over = [m for m in moves if m.expired]
        if over:
            ax.plot([m.move for m in over], [m.used_ms / 1000 for m in over], marker="o",
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
