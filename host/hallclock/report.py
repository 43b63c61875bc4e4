"""Reports from a log: per game (one device session) a table of moves -- player,
used time, warnings reached, overtime, pauses with their durations, the hall's
gongs, play-out moves marked -- totals per player, the same table as CSV, and
a plot of the move times against the limit (matplotlib, no display needed)."""
import csv
from dataclasses import dataclass, field

from .errors import BadInput
from .logfile import read_records


@dataclass
class Move:
    player: str
    move: int
    limit_ms: int | None = None
    bank_ms: int | None = None
    used_ms: int | None = None
    warnings: list = field(default_factory=list)
    expired: bool = False
    pauses: list = field(default_factory=list)  # ms each pause lasted
    playout: str | None = None
    start_t: int | None = None
    end_t: int | None = None
    bank_after_ms: int | None = None
    gongs: list = field(default_factory=list)  # kinds of the gongs during the move
    announces: list = field(default_factory=list)  # duplicate: left_s announced
    after_game: bool = False  # started after the play-out was over
    breaks: list = field(default_factory=list)  # backgammon: [player, number, t0, t1]
    refused: list = field(default_factory=list)  # (player, what)

    @property
    def overtime_ms(self):
        if self.expired and self.used_ms is not None and self.limit_ms:
            return max(0, self.used_ms - self.limit_ms)
        return 0


@dataclass
class Game:
    clock: str
    session: str
    mode: str = "?"
    settings: dict = field(default_factory=dict)
    moves: list = field(default_factory=list)
    gongs: list = field(default_factory=list)  # (t_ms, kind, move)
    announces: list = field(default_factory=list)
    ended: bool = False
    end_t: int | None = None
    gaps: list = field(default_factory=list)
    step: str | None = None  # play-out step in force
    current: int | None = None  # move in progress


def games_from_records(records):
    games = {}
    order = []
    for rec in records:
        key = (rec.get("clock"), rec.get("session"))
        game = games.get(key)
        if game is None:
            game = Game(str(rec.get("clock")), str(rec.get("session")))
            games[key] = game
            order.append(key)
        _apply(game, rec)
    return [games[k] for k in order]


def _move(game, number, player=None):
    for m in reversed(game.moves):
        if m.move == number:
            return m
    m = Move(player or "?", number)
    game.moves.append(m)
    return m


def _apply(game, rec):
    ev = rec.get("event")
    t = rec.get("t_ms")
    if ev == "boot":
        game.mode = rec.get("mode", "?")
        game.settings = rec.get("settings", {})
    elif ev in ("turn", "dup_start"):
        m = _move(game, rec["move"], rec.get("player"))
        m.player = rec.get("player") or m.player
        m.limit_ms = rec.get("limit_ms")
        m.bank_ms = rec.get("bank_ms")
        m.start_t = t
        game.current = m.move
        if game.step is not None and game.step != "over" and m.playout is None:
            m.playout = game.step
        m.after_game = game.step == "over"
    elif ev == "press":
        m = _move(game, rec["move"], rec.get("player"))
        m.used_ms = rec.get("used_ms")
        m.bank_after_ms = rec.get("bank_ms")
        m.end_t = t
    elif ev == "dup_end":
        m = _move(game, rec["move"])
        m.end_t = t
        if m.start_t is not None and t is not None:
            m.used_ms = t - m.start_t - sum(pause_ms(m))
        game.current = None
    elif ev == "warn":
        _move(game, rec["move"], rec.get("player")).warnings.append(rec.get("left_s"))
    elif ev == "expired":
        _move(game, rec["move"], rec.get("player")).expired = True
    elif ev == "pause":
        if rec.get("move") is not None:
            _move(game, rec["move"], rec.get("player")).pauses.append([t, None])
    elif ev == "resume":
        for m in reversed(game.moves):
            if m.pauses and m.pauses[-1][1] is None:
                m.pauses[-1][1] = t
                break
    elif ev == "gong":
        move = rec.get("move")
        game.gongs.append((t, rec.get("kind"), move))
        if move is not None:
            _move(game, move).gongs.append(rec.get("kind"))
    elif ev == "playout":
        step = rec.get("step")
        game.step = step
        move = rec.get("move")
        if move is not None and step != "over":
            m = _move(game, move)
            if m.playout is None or step != "finish_round":
                m.playout = step
    elif ev == "announce":
        game.announces.append((t, rec.get("move"), rec.get("left_s")))
        if rec.get("move") is not None:
            _move(game, rec["move"]).announces.append(rec.get("left_s"))
    elif ev == "break":
        if game.moves:
            game.moves[-1].breaks.append([rec.get("player"), rec.get("number"), t, None])
    elif ev == "break_end":
        for m in reversed(game.moves):
            open_ = [b for b in m.breaks if b[3] is None and b[0] == rec.get("player")]
            if open_:
                open_[-1][3] = t
                break
    elif ev == "refused":
        if game.moves:
            game.moves[-1].refused.append((rec.get("player"), rec.get("what")))
    elif ev == "end":
        game.ended = True
        game.end_t = t
        for m in game.moves:  # a pause still open when the session ended
            if m.pauses and m.pauses[-1][1] is None and t is not None:
                m.pauses[-1][1] = t
    elif ev == "gap":
        game.gaps.append(rec.get("missing"))


def pause_ms(m):
    return [b - a for a, b in m.pauses if a is not None and b is not None]


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


LEFT_COLUMNS = ("warnings", "announced", "notes")
PLAYOUT_LABEL = {"finish_round": "(a) finish round", "one_more_move": "(b) one more move",
                 "last_move": "(c) last move"}
GONG_LABEL = {"start": "start", "ten_minutes": "10 min", "end": "END", "manual": "manual"}


def fmt_short(ms):
    """The table's times: m:ss.t"""
    return fmt_ms(ms, 1)


def note(game, m):
    """What the table says about a move beyond its numbers."""
    if m.after_game:
        return "after the play-out"
    if m.used_ms is None and m is game.moves[-1] and game.ended:
        return "unfinished"
    if m.used_ms is None:
        return "not ended"
    return ""


def notes(game, m):
    """The table's last column: gongs during the move, its play-out step, note."""
    parts = [f"{GONG_LABEL.get(k, k)} gong" for k in m.gongs]
    if m.playout:
        parts.append("play-out " + PLAYOUT_LABEL.get(m.playout, str(m.playout)))
    for player, number, t0, t1 in m.breaks:
        length = fmt_short(t1 - t0) if t0 is not None and t1 is not None else "not ended"
        parts.append(f"{player} break {number}: {length}")
    for player, what in m.refused:
        parts.append(f"{player}: {what} refused")
    if note(game, m):
        parts.append(note(game, m))
    return ", ".join(parts)


COLUMNS = ["clock", "session", "move", "player", "used", "used_ms", "limit_ms", "warnings",
           "overtime_ms", "pauses_ms", "playout", "gongs", "bank_ms", "note"]


def rows(game):
    for m in game.moves:
        warned = m.warnings if m.warnings else m.announces
        yield {
            "clock": game.clock, "session": game.session, "move": m.move,
            "player": m.player if m.player != "?" or game.mode != "duplicate" else "",
            "used": fmt_ms(m.used_ms), "used_ms": m.used_ms if m.used_ms is not None else "",
            "limit_ms": m.limit_ms if m.limit_ms is not None else "",
            "warnings": " ".join(str(w) for w in warned),
            "overtime_ms": m.overtime_ms if m.expired else "",
            "pauses_ms": " ".join(str(p) for p in pause_ms(m)),
            "playout": m.playout or "",
            "gongs": " ".join(str(k) for k in m.gongs),
            "bank_ms": m.bank_after_ms if m.bank_after_ms is not None else "",
            "note": note(game, m),
        }


def players(game):
    found = sorted({m.player for m in game.moves if m.player in ("A", "B")})
    return found or (["A", "B"] if game.mode != "duplicate" else [])


def totals(game):
    out = {}
    for player in players(game):
        used = [m.used_ms for m in game.moves if m.player == player and m.used_ms is not None]
        out[player] = {
            "moves": len(used),
            "total_ms": sum(used),
            "average_ms": sum(used) // len(used) if used else 0,
            "longest_ms": max(used) if used else 0,
            "overtimes": sum(1 for m in game.moves if m.player == player and m.expired),
            "pauses": sum(len(m.pauses) for m in game.moves if m.player == player),
            "pause_ms": sum(sum(pause_ms(m)) for m in game.moves if m.player == player),
        }
    return out


def load_log(path):
    """(games, skipped) of a log file: skipped = [(line number, why)] of the
    lines that are not log records.  BadInput if nothing can be read."""
    import os
    from .logfile import scan
    if not os.path.exists(path):
        raise BadInput(f"{path}: no such log file")
    if os.path.isdir(path):
        raise BadInput(f"{path}: is a folder; give a log file (JSON Lines)")
    try:
        records, skipped = scan(path)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the log ({exc.strerror})") from None
    if not records:
        why = f" ({len(skipped)} line{'s' if len(skipped) != 1 else ''}, none a log " \
              f"record: line {skipped[0][0]}: {skipped[0][1]})" if skipped else ""
        raise BadInput(f"{path}: the log holds no records{why}")
    return games_from_records(records), skipped


def load_games(path):
    return load_log(path)[0]


def skipped_text(path, skipped, shown=5):
    """One line for the lines of a log that are not records."""
    first = "; ".join(f"line {n}: {why}" for n, why in skipped[:shown])
    more = f"; and {len(skipped) - shown} more" if len(skipped) > shown else ""
    return (f"{len(skipped)} line{'s' if len(skipped) != 1 else ''} of {path} "
            f"skipped, not log records ({first}{more})")


def write_csv(games, path, force=False):
    from .outfiles import write_file

    def fill(f):
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for g in games:
            for r in rows(g):
                w.writerow(r)
    write_file(path, fill, force=force, what="CSV")


def print_report(games, console=None):
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    for g in games:
        title = f"{g.clock} · {g.mode} · session {g.session}"
        table = Table(title=title, title_justify="left")
        duplicate = g.mode == "duplicate"
        header = ["move"] + ([] if duplicate else ["player"]) + [
            "used", "announced" if duplicate else "warnings", "overtime", "pauses",
            "bank after", "notes"]
        body = []
        styles = []
        for m in g.moves:
            warned = m.warnings if m.warnings else m.announces
            cells = [str(m.move)] + ([] if duplicate else [m.player])
            cells += [fmt_short(m.used_ms), " ".join(f"{w}s" for w in warned),
                      fmt_short(m.overtime_ms) if m.expired else "",
                      " ".join(fmt_short(p) for p in pause_ms(m)),
                      fmt_short(m.bank_after_ms) if m.bank_after_ms is not None else "",
                      notes(g, m)]
            body.append(cells)
            styles.append("bold red" if m.expired else ("magenta" if m.playout else None))
        # the columns every move leaves empty are left out (always: move .. warnings)
        keep = [i for i, name in enumerate(header)
                if i < header.index("overtime") or any(r[i] for r in body)]
        for i in keep:
            table.add_column(header[i], justify="left" if header[i] in LEFT_COLUMNS else "right",
                             no_wrap=header[i] != "notes")
        for cells, style in zip(body, styles):
            table.add_row(*[cells[i] for i in keep], style=style)
        console.print(table)
        t = totals(g)
        for player, s in t.items():
            pauses = (f", paused {s['pauses']}× for {fmt_short(s['pause_ms'])}" if s["pauses"] else "")
            console.print(f"  {player}: {s['moves']} moves, {fmt_short(s['total_ms'])} used, "
                          f"average {fmt_short(s['average_ms'])}, longest {fmt_short(s['longest_ms'])}, "
                          f"overtime {s['overtimes']}×{pauses}", soft_wrap=True)
        if duplicate:
            used = [m.used_ms for m in g.moves if m.used_ms is not None]
            if used:
                console.print(f"  {len(used)} moves, average {fmt_short(sum(used) // len(used))}, "
                              f"longest {fmt_short(max(used))}")
        for t_ms, kind, move in g.gongs:
            console.print(f"  gong {kind} at {fmt_short(t_ms)} (move {move if move is not None else '-'})")
        for gap in g.gaps:
            console.print(f"  [red]events {gap[0]}–{gap[1]} were lost on the device[/red]")
        if not g.ended:
            console.print("  [yellow]the session has no end record (still running, or cut off)[/yellow]")


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


def draw_game(ax, game):
    """One game on a matplotlib Axes: bars of each move's used time by player
    (overtime stacked in red, play-out hatched), the limit as a step line,
    pauses as markers with their length, gongs as vertical lines."""
    seen = set()

    def label(text):
        if text in seen:
            return None
        seen.add(text)
        return text

    top = 0.0
    for m in game.moves:
        if m.used_ms is None:
            continue
        used = m.used_ms / 1000
        limit = m.limit_ms / 1000 if m.limit_ms else None
        in_limit = min(used, limit) if (limit and m.expired) else used
        color = COLORS.get(m.player, "#7f7f7f")
        name = f"player {m.player}" if m.player in COLORS else "move"
        ax.bar(m.move, in_limit, color=color, hatch="//" if m.playout else None,
               edgecolor="black" if m.playout else color, label=label(name))
        if m.expired and limit and used > limit:
            ax.bar(m.move, used - limit, bottom=limit, color="#d62728", label=label("overtime"))
        top = max(top, used)
        if m.playout:
            ax.bar(m.move, 0, hatch="//", color="white", edgecolor="black",
                   label=label("play-out move"))
        for p in pause_ms(m):
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
                   label=label(f"gong: {kind}"))
    ax.set_ylim(0, max(top * 1.35, 10))
    ax.set_xlabel("move")
    ax.set_ylabel("seconds")
    ax.set_title(f"{game.clock} · {game.mode} · session {game.session}", loc="left")
    if game.moves:
        ax.set_xticks([m.move for m in game.moves])
    ax.legend(loc="upper left", fontsize=8, ncols=4)


def check_plot_name(path):
    if not str(path).lower().endswith(".png"):
        raise BadInput(f"--plot {path}: give a file name ending in .png")


def write_plot(games, path, force=False):
    """Draw every game (one panel each) into a PNG (Agg: no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .outfiles import write_file

    check_plot_name(path)
    n = max(1, len(games))
    fig = Figure(figsize=(10, 4 * n), dpi=100)
    FigureCanvasAgg(fig)
    for i, game in enumerate(games or []):
        draw_game(fig.add_subplot(n, 1, i + 1), game)
    fig.tight_layout()
    write_file(path, lambda f: fig.savefig(f, format="png"), force=force, binary=True,
               what="plot")
