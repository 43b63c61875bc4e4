"""Reports from a log: per game (one device session) a table of moves, and
totals per player."""
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
    gaps: list = field(default_factory=list)


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
    elif ev == "turn":
        m = _move(game, rec["move"], rec.get("player"))
        m.player = rec.get("player") or m.player
        m.limit_ms = rec.get("limit_ms")
        m.bank_ms = rec.get("bank_ms")
        m.start_t = t
        if game.moves and len(game.moves) > 1:
            pass
    elif ev == "press":
        m = _move(game, rec["move"], rec.get("player"))
        m.used_ms = rec.get("used_ms")
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
        game.gongs.append((t, rec.get("kind"), rec.get("move")))
    elif ev == "playout":
        if rec.get("move") is not None:
            _move(game, rec["move"]).playout = rec.get("step")
    elif ev == "announce":
        game.announces.append((t, rec.get("move"), rec.get("left_s")))
    elif ev == "end":
        game.ended = True
    elif ev == "gap":
        game.gaps.append(rec.get("missing"))


def pause_ms(m):
    return [b - a for a, b in m.pauses if a is not None and b is not None]


def fmt_ms(ms):
    if ms is None:
        return "-"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    return f"{sign}{ms // 60000}:{ms % 60000 / 1000:06.3f}"


COLUMNS = ["clock", "session", "move", "player", "used", "used_ms", "limit_ms", "warnings",
           "overtime_ms", "pauses_ms", "playout"]


def rows(game):
    for m in game.moves:
        yield {
            "clock": game.clock, "session": game.session, "move": m.move, "player": m.player,
            "used": fmt_ms(m.used_ms), "used_ms": m.used_ms if m.used_ms is not None else "",
            "limit_ms": m.limit_ms if m.limit_ms is not None else "",
            "warnings": " ".join(str(w) for w in m.warnings),
            "overtime_ms": m.overtime_ms if m.expired else "",
            "pauses_ms": " ".join(str(p) for p in pause_ms(m)),
            "playout": m.playout or "",
        }


def totals(game):
    out = {}
    for player in ("A", "B"):
        used = [m.used_ms for m in game.moves if m.player == player and m.used_ms is not None]
        out[player] = {
            "moves": len(used),
            "total_ms": sum(used),
            "average_ms": sum(used) // len(used) if used else 0,
            "longest_ms": max(used) if used else 0,
            "overtimes": sum(1 for m in game.moves if m.player == player and m.expired),
        }
    return out


def load_games(path):
    import os
    if not os.path.exists(path):
        raise BadInput(f"{path}: no such log file")
    records = read_records(path)
    if not records:
        raise BadInput(f"{path}: the log holds no records")
    return games_from_records(records)


def write_csv(games, path):
    try:
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            for g in games:
                for r in rows(g):
                    w.writerow(r)
    except OSError as exc:
        raise BadInput(f"{path}: cannot write the CSV ({exc.strerror})") from None


def print_report(games, console=None):
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    for g in games:
        title = f"{g.clock} · {g.mode} · session {g.session}"
        table = Table(title=title, title_justify="left")
        for col, just in (("move", "right"), ("player", "center"), ("used", "right"),
                          ("warnings", "left"), ("overtime", "right"), ("pauses", "right"),
                          ("play-out", "left")):
            table.add_column(col, justify=just)
        for m in g.moves:
            over = fmt_ms(m.overtime_ms) if m.expired else ""
            style = "bold red" if m.expired else None
            table.add_row(str(m.move), m.player, fmt_ms(m.used_ms),
                          " ".join(f"{w}s" for w in m.warnings), over,
                          " ".join(fmt_ms(p) for p in pause_ms(m)), m.playout or "",
                          style=style)
        console.print(table)
        t = totals(g)
        for player in ("A", "B"):
            s = t[player]
            console.print(f"  {player}: {s['moves']} moves, {fmt_ms(s['total_ms'])} used, "
                          f"average {fmt_ms(s['average_ms'])}, longest {fmt_ms(s['longest_ms'])}, "
                          f"overtime {s['overtimes']}×")
        for t_ms, kind, move in g.gongs:
            console.print(f"  gong {kind} at {fmt_ms(t_ms)} (move {move if move is not None else '-'})")
        for gap in g.gaps:
            console.print(f"  [red]events {gap[0]}–{gap[1]} were lost on the device[/red]")
        if not g.ended:
            console.print("  [yellow]the session has no end record (still running, or cut off)[/yellow]")
