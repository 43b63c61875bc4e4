"""Reports from a log: per game (one device session) a table of moves -- player,
start and end as time of day, used time, warnings reached, overtime, pauses
with their durations, the hall's gongs, play-out moves marked -- totals per
player, breaks (backgammon) on the player who took them, the claims view
(every overtime and flag fall with its time of day: the evidence for a ČAS
10.2.6 claim), the same table as CSV, and a plot (matplotlib, no display).

Figures that are clock rules -- the overtime of a move, how far a move that
no press ended ran over, a flag fall, a bank -- are not computed here: the
session is replayed into the firmware's own core (``hallclock.model``) and
read off it at the moment in question (the press, the session's end).  The
report adds only what the log's times say (a move's length, a pause's).

Time of day: the log's ``host_time`` is when the host stored a record; the
device's ``t_ms`` is exact.  A session's device time is anchored by the record
that came fastest (``ClockModel.time_of_day``: the smallest host_time − t_ms),
so a record that was resent after an outage does not shift the others.
Shown in the local time zone of the machine running the report (``TZ``); the
CSV gives ISO 8601 with the offset."""
import csv
from dataclasses import dataclass, field
from datetime import datetime

from .errors import BadInput
from .modes import view_for


@dataclass
class Move:
    player: str
    move: int
    limit_ms: int | None = None
    bank_ms: int | None = None
    used_ms: int | None = None
    warnings: list = field(default_factory=list)
    expired: bool = False
    pauses: list = field(default_factory=list)  # [t0, t1] of each stop of the time
    playout: str | None = None
    start_t: int | None = None
    end_t: int | None = None
    bank_after_ms: int | None = None
    gongs: list = field(default_factory=list)  # kinds of the gongs during the move
    announces: list = field(default_factory=list)  # duplicate: left_s announced
    announce_t: list = field(default_factory=list)  # duplicate: (t_ms, left_s)
    after_game: bool = False  # started after the play-out was over
    refused: list = field(default_factory=list)  # (player, what)
    expired_t: int | None = None  # when the limit (or bank) ran out
    # from the replay in the firmware's core (None: no model, see overtime_ms)
    core_overtime_ms: int | None = None
    flag: bool = False  # backgammon: the bank ran out (a loss on time)
    unfinished: bool = False  # no press ended it: it ran to the session's last record
    # time of day (epoch s) of start_t, end_t, expired_t
    start_at: float | None = None
    end_at: float | None = None
    expired_at: float | None = None

    @property
    def overtime_ms(self):
        """How far the move ran past its limit: read off the firmware's core at
        the press (or the session's end); without a model (a log that lost its
        boot record) the log's used_ms − limit_ms of an expired move."""
        if self.core_overtime_ms is not None:
            return self.core_overtime_ms
        if self.expired and self.used_ms is not None and self.limit_ms:
            return max(0, self.used_ms - self.limit_ms)
        if self.expired:
            return None  # ran over, no press, no core to say how far: unknown, not 0
        return 0


@dataclass
class Break:
    player: str
    number: int
    start_t: int | None
    end_t: int | None = None
    move: int | None = None  # the move whose time stood during the break
    start_at: float | None = None
    end_at: float | None = None

    @property
    def length_ms(self):
        if self.start_t is None or self.end_t is None:
            return None
        return self.end_t - self.start_t


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
    last_t: int | None = None  # the newest device time of the session
    gaps: list = field(default_factory=list)
    step: str | None = None  # play-out step in force
    current: int | None = None  # move in progress
    breaks: list = field(default_factory=list)
    records: list = field(default_factory=list)
    power_loss: bool = False
    modelled: str | None = None  # why the firmware's core could not replay it (None: it did)
    mismatches: list = field(default_factory=list)
    clock_model: object = None  # the hallclock.model.ClockModel of the session

    def time_of_day(self, t_ms):
        if self.clock_model is None:
            return None
        return self.clock_model.time_of_day(t_ms)


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
        game.records.append(rec)
        _apply(game, rec)
    out = [games[k] for k in order]
    for g in out:
        _replay(g)
    return out


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
    if isinstance(t, int) and (game.last_t is None or t > game.last_t):
        game.last_t = t
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
        m = _move(game, rec["move"], rec.get("player"))
        m.expired = True
        m.expired_t = t
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
            m = _move(game, rec["move"])
            m.announces.append(rec.get("left_s"))
            m.announce_t.append((t, rec.get("left_s")))
    elif ev == "break":
        # İSTAVDER 2.3: the break is the named player's, whoever's move stood
        game.breaks.append(Break(rec.get("player"), rec.get("number"), t,
                                 move=game.moves[-1].move if game.moves else None))
    elif ev == "break_end":
        for b in reversed(game.breaks):
            if b.end_t is None and b.player == rec.get("player"):
                b.end_t = t
                break
    elif ev == "refused":
        if game.moves:
            game.moves[-1].refused.append((rec.get("player"), rec.get("what")))
    elif ev in ("end", "power_loss"):
        game.ended = ev == "end" or game.ended
        game.power_loss = ev == "power_loss" or game.power_loss
        game.end_t = t
    elif ev == "gap":
        game.gaps.append(rec.get("missing"))


def _close_open(game):
    """What the session's last record left open: a pause, a break, a move no
    press ended (it ran to the session's end, or to the last record heard)."""
    t = game.end_t if game.end_t is not None else game.last_t
    if t is None:
        return
    for m in game.moves:
        if m.pauses and m.pauses[-1][1] is None:
            m.pauses[-1][1] = t
    for b in game.breaks:
        if b.end_t is None:
            b.end_t = t
    if not view_for(game.mode).players:
        return  # the hall countdown: a move ends with its dup_end, never "unfinished"
    for m in game.moves:
        if m.used_ms is None and m.start_t is not None and not m.after_game:
            m.unfinished = True
            m.end_t = t


def _replay(game):
    """Replay the session into the firmware's own core: the overtime at each
    press and at the session's end, a flag fall; and the time of day of every
    move's start, end and expiry."""
    from .model import ClockModel, epoch_of
    _close_open(game)
    c = ClockModel(game.clock)
    presses = {}  # move -> left_ms just before its press (the core's face)
    last_face = None
    boot_seen = False
    for rec in game.records:
        ev = rec.get("event")
        if ev == "boot":
            boot_seen = True
        m = c.model
        if m is not None and boot_seen and ev in ("press", "end", "power_loss", "dup_end") \
                and isinstance(rec.get("t_ms"), int) and rec["t_ms"] >= m.t_ms and not m.ended:
            f = m.face(rec["t_ms"])
            if ev == "press":
                presses[rec.get("move")] = f
            else:
                last_face = f
        c.feed(rec, epoch_of(rec.get("host_time")))
    game.clock_model = c
    if c.model is None:
        game.modelled = c.error or "the log has no boot record for this session"
    else:
        game.mismatches = list(c.model.mismatches)
        if last_face is None and not c.model.ended:
            last_face = c.model.face()
        for mv in game.moves:
            f = presses.get(mv.move)
            if f is None and mv.unfinished and last_face is not None and \
                    last_face.move == mv.move:
                f = last_face
            if f is None:
                continue
            mv.flag, bank, mv.core_overtime_ms = view_for(game.mode).move_result(f)
            if mv.flag and mv.unfinished and mv.expired_t is not None:
                mv.end_t = mv.expired_t  # the clock stands from the flag on
            if mv.unfinished and bank is not None:
                mv.bank_after_ms = bank
    for mv in game.moves:
        mv.start_at = game.time_of_day(mv.start_t)
        mv.end_at = game.time_of_day(mv.end_t)
        mv.expired_at = game.time_of_day(mv.expired_t)
    for b in game.breaks:
        b.start_at = game.time_of_day(b.start_t)
        b.end_at = game.time_of_day(b.end_t)


def pause_ms(m, breaks=()):
    """The length of each stop of a move's time; the part of a stop that was a
    backgammon break is the break's, not the stop's (``breaks``)."""
    out = []
    for a, b in m.pauses:
        if a is None or b is None:
            continue
        length = b - a
        for br in breaks:
            if br.start_t is not None and br.end_t is not None:
                length -= max(0, min(b, br.end_t) - max(a, br.start_t))
        out.append(length)
    return out


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
    """The report's time of day: 14:32:05 (local time; with ``tenths``
    14:32:05.1, cut).  The CSV has the ms (``iso_time``)."""
    if epoch is None:
        return ""
    d = datetime.fromtimestamp(epoch)
    return d.strftime("%H:%M:%S") + (".%d" % (d.microsecond // 100000) if tenths else "")


def iso_time(epoch):
    """The CSV's time of day: ISO 8601 with the local offset, to the ms."""
    if epoch is None:
        return ""
    return datetime.fromtimestamp(epoch).astimezone().isoformat(timespec="milliseconds")


LEFT_COLUMNS = ("warnings", "announced", "notes")
PLAYOUT_LABEL = {"finish_round": "(a) finish round", "one_more_move": "(b) one more move",
                 "last_move": "(c) last move"}
PLAYOUT_SHORT = {"finish_round": "(a)", "one_more_move": "(b)", "last_move": "(c)"}
GONG_LABEL = {"start": "start", "ten_minutes": "10 min", "end": "END", "manual": "manual"}


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
    """The table's last column: gongs during the move, its play-out step, note."""
    parts = [f"{GONG_LABEL.get(k, k)} gong" for k in m.gongs]
    if m.playout:
        parts.append("play-out " + PLAYOUT_LABEL.get(m.playout, str(m.playout)))
    for player, what in m.refused:
        parts.append(f"{player}: {what} refused")
    if note(game, m):
        parts.append(note(game, m))
    return ", ".join(parts)


def used_ms(m, game):
    """The log's time of a move: its press's used_ms, or for a move no press
    ended, from its start to the session's end without its stops."""
    if m.used_ms is not None:
        return m.used_ms
    if m.unfinished and m.start_t is not None and m.end_t is not None:
        return m.end_t - m.start_t - sum(pause_ms(m))
    return None


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
        used = used_ms(m, game)
        yield {
            "clock": game.clock, "session": game.session, "move": m.move,
            "player": m.player if m.player != "?" or view.players else "",
            "used": fmt_ms(used), "used_ms": used if used is not None else "",
            "limit_ms": m.limit_ms if m.limit_ms is not None else "",
            "warnings": " ".join(str(w) for w in warned),
            "overtime_ms": m.overtime_ms if (m.expired or m.overtime_ms) and not m.flag else "",
            "pauses_ms": " ".join(str(p) for p in pause_ms(m, game.breaks)),
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


def players(game):
    view = view_for(game.mode)
    found = sorted({m.player for m in game.moves if m.player in ("A", "B")})
    return found or list(view.players)


def totals(game):
    out = {}
    for player in players(game):
        mine = [m for m in game.moves if m.player == player and not m.after_game]
        used = [m.used_ms for m in mine if m.used_ms is not None]
        breaks = [b for b in game.breaks if b.player == player]
        out[player] = {
            "moves": len(used),
            "total_ms": sum(used),
            "average_ms": sum(used) // len(used) if used else 0,
            "longest_ms": max(used) if used else 0,
            "overtimes": sum(1 for m in mine if m.expired or m.overtime_ms),
            "overtime_ms": sum(m.overtime_ms or 0 for m in mine if not m.flag),
            "pauses": sum(len(m.pauses) for m in mine),
            "pause_ms": sum(sum(pause_ms(m, game.breaks)) for m in mine),
            "breaks": len(breaks),
            "break_ms": sum(b.length_ms or 0 for b in breaks),
            "lost_on_time": any(m.flag for m in mine),
            "unfinished": sum(1 for m in mine if m.unfinished),
        }
    return out


def claims(games):
    """Every overtime and flag fall: the evidence for a claim (ČAS 10.2.6: the
    opponent may claim a move that ran over its limit; İSTAVDER: a fallen flag
    loses the match).  Each a dict; in the order of the log."""
    out = []
    for g in games:
        for m in g.moves:
            if m.after_game or not (m.expired or m.overtime_ms or m.flag):
                continue
            out.append({
                "clock": g.clock, "session": g.session, "move": m.move, "player": m.player,
                "overtime_ms": None if m.flag else m.overtime_ms, "flag": m.flag,
                "unfinished": m.unfinished, "playout": m.playout,
                "expired_t": m.expired_t, "expired_at": m.expired_at,
                "start_at": m.start_at, "end_t": m.end_t, "end_at": m.end_at,
                "limit_ms": m.limit_ms, "mode": g.mode})
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
        records, skipped = scan(path, strict=True)
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


def _title(g):
    return f"{g.clock} · {g.mode} · session {g.session}"


NARROW = 110  # below this many columns the table leaves out the move's end time
PIPE_WIDTH = 120  # the report's width in a file or a pipe (a terminal: its own)


def report_console():
    """The report's console: a terminal's width, or PIPE_WIDTH in a file."""
    from rich.console import Console
    c = Console()
    if not c.is_terminal:
        c = Console(width=PIPE_WIDTH)
    return c


def print_report(games, console=None):
    from rich import box
    from rich.table import Table

    console = console or report_console()
    for g in games:
        view = view_for(g.mode)
        table = Table(title=_title(g), title_justify="left", box=box.SIMPLE_HEAD)
        hall = not view.players  # the duplicate countdown: moves of the hall, no player
        header = ["move"] + ([] if hall else ["player"]) + [
            "start", "end", "used", "announced" if hall else "warnings", "overtime",
            "pauses", "bank", "notes"]
        body = []
        styles = []
        for m in g.moves:
            warned = m.warnings if m.warnings else m.announces
            cells = [str(m.move)] + ([] if hall else [m.player])
            cells += [time_of_day(m.start_at), time_of_day(m.end_at),
                      fmt_short(used_ms(m, g)), " ".join(f"{w}s" for w in warned),
                      overtime_text(m),
                      " ".join(fmt_short(p) for p in pause_ms(m, g.breaks)),
                      fmt_short(m.bank_after_ms) if m.bank_after_ms is not None else "",
                      notes(g, m)]
            body.append(cells)
            styles.append("bold red" if (m.expired or m.overtime_ms or m.flag)
                          else ("magenta" if m.playout else None))
        # the columns every move leaves empty are left out (always: move .. warnings)
        keep = [i for i, name in enumerate(header)
                if name in ("move", "player", "used") or any(r[i] for r in body)]
        if console.width < NARROW:  # the end is the next move's start (CSV: end_time)
            keep = [i for i in keep if header[i] != "end"]
        for i in keep:
            table.add_column(header[i], justify="left" if header[i] in LEFT_COLUMNS else "right",
                             no_wrap=header[i] != "notes")
        for cells, style in zip(body, styles):
            table.add_row(*[cells[i] for i in keep], style=style)
        if g.moves:
            console.print(table)
        else:
            console.print(f"{_title(g)}: no moves")
        for player, s in totals(g).items():
            extra = ""
            if s["overtime_ms"]:
                extra += f" for {fmt_short(s['overtime_ms'])}"
            if s["pauses"]:
                extra += f", paused {s['pauses']}× for {fmt_short(s['pause_ms'])}"
            if s["breaks"]:
                extra += f", {s['breaks']} break{'s' if s['breaks'] != 1 else ''} " \
                         f"for {fmt_short(s['break_ms'])}"
            if s["lost_on_time"]:
                extra += ", [bold red]lost on time[/bold red]"
            if s["unfinished"]:
                extra = f", {s['unfinished']} unfinished" + extra
            console.print(f"  {player}: {s['moves']} moves, {fmt_short(s['total_ms'])} used, "
                          f"average {fmt_short(s['average_ms'])}, longest {fmt_short(s['longest_ms'])}, "
                          f"overtime {s['overtimes']}×{extra}", soft_wrap=True)
        if hall:
            used = [m.used_ms for m in g.moves if m.used_ms is not None]
            if used:
                console.print(f"  {len(used)} moves, average {fmt_short(sum(used) // len(used))}, "
                              f"longest {fmt_short(max(used))}")
        for b in g.breaks:
            at = time_of_day(b.start_at) or fmt_short(b.start_t)
            until = time_of_day(b.end_at) or fmt_short(b.end_t)
            console.print(f"  {b.player} break {b.number}: {fmt_short(b.length_ms)}, "
                          f"{at}–{until} (move {b.move}'s time stood)", soft_wrap=True)
        for t_ms, kind, move in g.gongs:
            at = time_of_day(g.time_of_day(t_ms))
            console.print(f"  gong {kind} at {fmt_short(t_ms)}" + (f" ({at})" if at else "")
                          + f" (move {move if move is not None else '-'})")
        for gap in g.gaps:
            console.print(f"  [red]events {gap[0]}–{gap[1]} were lost on the device[/red]")
        if g.power_loss:
            console.print("  [yellow]the clock lost power (or was reset) during this session"
                          "[/yellow]")
        elif not g.ended:
            console.print("  [yellow]the session has no end record (still running, or cut off)"
                          "[/yellow]")
        if g.modelled:
            console.print(f"  [yellow]not replayed on the clock's core ({g.modelled}): "
                          "overtime from the log's used_ms[/yellow]", soft_wrap=True)
        elif g.mismatches:
            console.print(f"  [yellow]{len(g.mismatches)} record(s) the clock's core does not "
                          f"explain (first: {g.mismatches[0].text})[/yellow]", soft_wrap=True)
    from .health import print_health  # the clocks' own margins (health events)
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
    table = Table(title="claims: every overtime and flag fall (ČAS 10.2.6, İSTAVDER)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    for name in ("clock", "move", "player", "overtime", "limit ran out", "move ended", "notes"):
        table.add_column(name, justify="left" if name in ("clock", "notes") else "right",
                         no_wrap=name != "notes")
    for c in found:
        ran_out = time_of_day(c["expired_at"], True) or (fmt_short(c["expired_t"])
                                                   if c["expired_t"] is not None else "")
        ended = time_of_day(c["end_at"], True) or (fmt_short(c["end_t"])
                                             if c["end_t"] is not None else "")
        notes_ = []
        if c["flag"]:
            notes_.append(f"{c['player']} lost on time")
        if c["unfinished"]:
            notes_.append("no press")
        if c["playout"]:
            notes_.append("play-out " + PLAYOUT_LABEL.get(c["playout"], str(c["playout"])))
        table.add_row(c["clock"], str(c["move"]), c["player"],
                      "flag" if c["flag"] else "?" if c["overtime_ms"] is None else
                      fmt_short(c["overtime_ms"]) + ("+" if c["unfinished"] else ""),
                      ran_out, ended, ", ".join(notes_))
    console.print(table)


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
    return any(used_ms(m, game) is not None for m in game.moves)


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
        used_ = used_ms(m, game)
        if used_ is None:
            continue
        used = used_ / 1000
        limit = m.limit_ms / 1000 if m.limit_ms else None
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
            ax.annotate(PLAYOUT_SHORT.get(m.playout, "?"), (m.move, 0), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8)
        for p in pause_ms(m, game.breaks):
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
                   linestyle=":", linewidth=2, label=label(f"gong: {kind}"))
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
