"""The figures of a game, computed once: every view reads them from here.

One device session of a log is folded into a :class:`Game` (its moves, with
player, limit, used time, warnings, pauses, gongs, play-out step) and then
replayed into the firmware's own core (``hallclock.views.model``) for what is a
clock rule -- the overtime of a move, how far a move that no press ended ran
over, a flag fall, a bank.  From that one reading, :func:`games_from_records`
also fixes every figure a referee reads:

* per move: ``used`` (the time a row shows), ``pause_list`` (each stop's
  length), ``counted`` (part of the game: pressed, not after the play-out),
  ``start_at`` / ``end_at`` / ``expired_at`` (time of day);
* per game: ``totals`` (per player: moves, time used, overtimes, pauses,
  breaks), ``overtimes`` (every move over its limit and every flag fall: the
  evidence for a claim, ČAS 10.2.6), ``pause_list`` (every stop of the time,
  with its record's ``seq``, who was stopped and the rule the restart
  followed), ``gong_list`` (every gong, named by its settings), ``playout``
  (the play-out steps reached, ČAS 16.3), ``end_gong_move``, ``playout_over``.

The report's text, its CSV and claims, the round's report, the plots, the
referee console's detail and the property tests read these, and compute no
figure of their own.

Time of day: the one anchoring of a session's device time to the host's
clock is ``ClockModel.time_of_day`` (hallclock.views.model): by the record that came
fastest, or for an accelerated simulation (the clock's time ran faster than
the host's: ``Game.pace``) from the round's start, which the report's header
says.
"""
import os
from dataclasses import dataclass, field

from ..errors import BadInput
from .modes import view_for
from .words import by_name, gong_name, warn_min_of


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
    # the figures of its row (set once by games_from_records)
    used: int | None = None  # the time its row shows (used_ms, or to the end for an unfinished move)
    pause_list: list = field(default_factory=list)  # the length of each stop
    counted: bool = False  # in the game's totals: ended by a press, not after the play-out

    @property
    def over(self):
        """It ran over its limit (or its bank: a flag fall)."""
        return bool(self.expired or self.overtime_ms or self.flag)

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
    clock_model: object = None  # the hallclock.views.model.ClockModel of the session
    next_game: object = None  # the session after its power loss (Game), if in the log
    restored: bool = False  # this session took the game back after a power loss (resume)
    # the figures (computed once, at the end of games_from_records)
    totals: dict = field(default_factory=dict)
    overtimes: list = field(default_factory=list)  # Move, in the order of the log
    pause_list: list = field(default_factory=list)  # Pause, in the order of the log
    gong_list: list = field(default_factory=list)  # Gong
    playout: list = field(default_factory=list)  # (step, move, t_ms)
    end_gong_move: object = None  # the move in progress at the end gong (0: none); None: no gong
    playout_over: bool = False  # B ended the last move of the play-out (ČAS 16.3 (c))
    round: int | None = None  # the round its records carry
    names: tuple | None = None  # (A, B) from --pairings (hallclock.views.pairings)

    def time_of_day(self, t_ms):
        if self.clock_model is None:
            return None
        return self.clock_model.time_of_day(t_ms)

    def reboot_text(self):
        """This session's power loss in words (views.words.reboot_words), with
        the next session's boot and whether it took the game back; None
        without a power loss."""
        from .words import reboot_words
        c = self.clock_model
        if not self.power_loss or c is None or not c.reboots:
            return None
        r = c.reboots[-1]
        nxt = self.next_game
        if nxt is not None:
            back = nxt.time_of_day(0)
        else:  # its new session is not in this log: when the host heard it
            from .model import epoch_of
            loss = next(r for r in self.records if r.get("event") == "power_loss")
            back = epoch_of(loss.get("host_time"))
        return reboot_words(self.clock, r["lost_at"], back,
                            nxt is not None and nxt.restored, r["restore_sent"])

    @property
    def pace(self):
        """How many times the host's the clock's time ran (None: a real clock
        or too short to tell; about 100 for a simulation at --speed 100)."""
        c = self.clock_model
        return c.pace if c is not None and c.accelerated else None

    @property
    def warn_min(self):
        return warn_min_of(self.settings)

    def counted_moves(self, player=None):
        return [m for m in self.moves if m.counted and (player is None or m.player == player)]


@dataclass
class Pause:
    """One stop of a move's time (a ``pause`` record to its ``resume``)."""
    clock: str
    session: str
    seq: int | None
    move: int | None
    player: str | None
    t_ms: int | None
    end_t: int | None = None
    ms: int | None = None  # its length (the part that was a backgammon break left out)
    at: float | None = None  # time of day of its start
    restart: str = ""  # who the time ran for after it, and the rule
    reason: str | None = None  # the referee's tag (hallclock.views.roundreport.REASONS), if any


@dataclass
class Gong:
    t_ms: int | None
    kind: str | None
    move: int | None
    name: str  # in the words of the settings: 'start gong', '2-min gong', 'end gong'
    at: float | None = None


def hall_unit_of(clocks):
    """The index of the hall unit among a round's clocks, or None; each clock
    given as (start, moved, took_round): when it gave its start gong (host
    epoch s; None: not yet), whether its game has had a move, whether it took
    the round's number from the laptop.  The hall unit (a relay hall's
    referee clock, ``hallclock hall``) gives the round's first start gong,
    which the tables copy, and never has a move nor takes a round number (a
    hall run by ``round start`` has none); before any start gong no clock can
    be told for it.  One rule for the projector and the round's report."""
    if len(clocks) < 2:
        return None
    started = [(start, i) for i, (start, _moved, _took) in enumerate(clocks)
               if start is not None]
    if not started:
        return None
    i = min(started)[1]
    _start, moved, took = clocks[i]
    return None if moved or took else i


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
        loss = next((r for r in g.records if r.get("event") == "power_loss"), None)
        if loss is not None:
            g.next_game = games.get((g.records[0].get("clock"), loss.get("next_session")))
    for g in out:
        prev = next((p for p in out if p.next_game is g), None)
        _replay(g, prev)
        _figures(g)
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
    if isinstance(rec.get("round"), int) and game.round is None:
        game.round = rec["round"]
    if ev == "boot":
        game.mode = rec.get("mode", "?")
        game.settings = rec.get("settings", {})
    elif ev == "settings" and isinstance(rec.get("settings"), dict):
        game.settings = rec["settings"]  # what the host sent (K): the clock took it
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
        m.player = rec.get("player") or m.player  # a restored move: its first record is its press
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
        game.pause_list.append(Pause(game.clock, game.session, rec.get("seq"), rec.get("move"),
                                     rec.get("player"), t))
        if rec.get("move") is not None:
            _move(game, rec["move"], rec.get("player")).pauses.append([t, None])
    elif ev == "resume":
        for p in reversed(game.pause_list):
            if p.end_t is None:
                p.end_t = t
                break
        for m in reversed(game.moves):
            if m.pauses and m.pauses[-1][1] is None:
                m.pauses[-1][1] = t
                break
    elif ev == "gong":
        move = rec.get("move")
        game.gongs.append((t, rec.get("kind"), move))
        game.gong_list.append(Gong(t, rec.get("kind"), move,
                                   gong_name(rec.get("kind"), game.warn_min)))
        if rec.get("kind") == "end":
            game.end_gong_move = move if move is not None else 0
        if move is not None:
            _move(game, move).gongs.append(rec.get("kind"))
    elif ev == "playout":
        step = rec.get("step")
        game.step = step
        game.playout.append((step, rec.get("move"), t))
        if step == "over":
            game.playout_over = True
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
    for p in game.pause_list:
        if p.end_t is None:
            p.end_t = t
    for b in game.breaks:
        if b.end_t is None:
            b.end_t = t
    if not view_for(game.mode).players:
        return  # the hall countdown: a move ends with its dup_end, never "unfinished"
    for m in game.moves:
        if m.used_ms is None and m.start_t is not None and not m.after_game:
            m.unfinished = True
            m.end_t = t


def _replay(game, prev=None):
    """Replay the session into the firmware's own core: the overtime at each
    press and at the session's end, a flag fall; and the time of day of every
    move's start, end and expiry.  ``prev``: the session (Game, replayed
    before) whose power loss this one followed: its time of day comes after
    that one's (ClockModel.follow)."""
    from .model import ClockModel, epoch_of
    _close_open(game)
    c = ClockModel(game.clock)
    if prev is not None and prev.clock_model is not None:
        c.follow(prev.clock_model)
    game.restored = prev is not None and any(r.get("event") == "resume"
                                             for r in game.records)
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



def used_ms(m, game):
    """The log's time of a move: its press's used_ms, or for a move no press
    ended, from its start to the session's end without its stops."""
    if m.used_ms is not None:
        return m.used_ms
    if m.unfinished and m.start_t is not None and m.end_t is not None:
        return m.end_t - m.start_t - sum(pause_ms(m))
    return None



def players(game):
    view = view_for(game.mode)
    found = sorted({m.player for m in game.moves if m.player in ("A", "B")})
    return found or list(view.players)


def totals(game):
    out = {}
    for player in players(game):
        mine = [m for m in game.moves if m.player == player and not m.after_game]
        used = [m.used for m in mine if m.counted]
        breaks = [b for b in game.breaks if b.player == player]
        out[player] = {
            "moves": len(used),
            "total_ms": sum(used),
            "average_ms": sum(used) // len(used) if used else 0,
            "longest_ms": max(used) if used else 0,
            "overtimes": sum(1 for m in mine if m.expired or m.overtime_ms),
            "overtime_ms": sum(m.overtime_ms or 0 for m in mine if not m.flag),
            "pauses": sum(len(m.pause_list) for m in mine),
            "pause_ms": sum(sum(m.pause_list) for m in mine),
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
            if m not in g.overtimes:
                continue
            out.append({
                "clock": g.clock, "session": g.session, "move": m.move, "player": m.player,
                "overtime_ms": None if m.flag else m.overtime_ms, "flag": m.flag,
                "unfinished": m.unfinished, "playout": m.playout,
                "expired_t": m.expired_t, "expired_at": m.expired_at,
                "start_at": m.start_at, "end_t": m.end_t, "end_at": m.end_at,
                "limit_ms": m.limit_ms, "mode": g.mode, "game": g})
    return out


def read_log(path, strict=True):
    """(records, skipped) of a log file: skipped = [(line number, why)] of the
    lines that are not log records.  BadInput if nothing can be read: the one
    refusal of a file that is not a log, for every command that reads one.
    ``strict``: a record without the fields its event needs is skipped too
    (hallclock.link.logfile.record_error)."""
    from ..link.logfile import scan
    if not os.path.exists(path):
        raise BadInput(f"{path}: no such log file")
    if os.path.isdir(path):
        raise BadInput(f"{path}: is a folder; give a log file (JSON Lines)")
    try:
        records, skipped = scan(path, strict=strict)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the log ({exc.strerror})") from None
    if not records:
        raise BadInput(_no_records(path, skipped))
    return records, skipped


def _no_records(path, skipped):
    why = f" ({len(skipped)} line{'s' if len(skipped) != 1 else ''}, none a log " \
          f"record: line {skipped[0][0]}: {skipped[0][1]})" if skipped else ""
    return f"{path}: the log holds no records{why}"


def check_live_log(path):
    """For the views of a log that may still be growing (hall-display,
    console, view): a file that is there and is not a log is refused as
    ``report`` refuses it (read_log); one that is not there yet, or is empty
    (the logger has just made it), is waited for: returns the note to print
    ('no ... yet: the page waits for it') or None."""
    if not os.path.exists(path):
        return f"{path} does not exist yet: the page waits for the logger to write it"
    if os.path.isdir(path):
        raise BadInput(f"{path}: is a folder; give a log file (JSON Lines)")
    if os.path.getsize(path) == 0:
        return None
    from ..link.logfile import scan
    try:
        records, skipped = scan(path, strict=True)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the log ({exc.strerror})") from None
    if not records and skipped:
        raise BadInput(_no_records(path, skipped))
    return None


def load_log(path):
    """(games, skipped) of a log file, the games in the natural order of their
    clocks (table-2 before table-10; a clock's sessions in the log's order)."""
    records, skipped = read_log(path)
    return by_name(games_from_records(records), lambda g: g.clock), skipped


def load_games(path):
    return load_log(path)[0]


def skipped_text(path, skipped, shown=5):
    """One line for the lines of a log that are not records."""
    first = "; ".join(f"line {n}: {why}" for n, why in skipped[:shown])
    more = f"; and {len(skipped) - shown} more" if len(skipped) > shown else ""
    return (f"{len(skipped)} line{'s' if len(skipped) != 1 else ''} of {path} "
            f"skipped, not log records ({first}{more})")


def _figures(game):
    """Every figure of the game, once (see the module's text)."""
    for m in game.moves:
        m.used = used_ms(m, game)
        m.pause_list = pause_ms(m, game.breaks)
        m.counted = not m.after_game and m.used_ms is not None
    game.totals = totals(game)
    game.overtimes = [m for m in game.moves if not m.after_game and m.over]
    recs = game.records
    index = {id(r): i for i, r in enumerate(recs)}
    pause_recs = [r for r in recs if r.get("event") == "pause"]
    for p, r in zip(game.pause_list, pause_recs):
        p.ms = None if p.end_t is None or p.t_ms is None else \
            sum(pause_ms(_Stop(p), game.breaks))
        p.at = game.time_of_day(p.t_ms)
        p.restart = restart_rule(game.mode, p.player, recs[index[id(r)] + 1:])
    for gong in game.gong_list:
        gong.at = game.time_of_day(gong.t_ms)


class _Stop:
    def __init__(self, p):
        self.pauses = [[p.t_ms, p.end_t]]


def restart_rule(mode, paused_player, after):
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


def tag_pauses(games, reason_of):
    """The referee's tags onto the pauses: ``reason_of`` (clock, session,
    pause seq) -> reason (the latest tag of a pause wins)."""
    for g in games:
        for p in g.pause_list:
            p.reason = reason_of.get((g.clock, g.session, p.seq))
