"""The referee's console: a local web page with a grid of every table of the
round, fed by the round's log as it grows (``hallclock console --log LOG``).

The grid (read-only, may be open to anyone on the hall's network): per table
the clock, mode, whose time runs, the time left, the move, the warnings given
in this move, overtime (red), paused, finished, and the link (lost, with the
time the clock was last heard).  The times are the host's model of each clock
(hallclock.views.model: the records replayed into the firmware's own core), asked by
the server at every poll: the time left is the digits the clock's own display
shows.  The page shows the server's texts and computes no time of its own.

A table's detail: its moves as ``hallclock report`` shows them, and its pauses,
each of which the referee can tag with a reason (challenge, STOP, dispute,
referee called, break).

Actions need the token the command prints at start (``X-Hallclock-Token``):
START round and GONG, and tagging a pause.  They are written as records of the
clock ``referee`` to the referee log beside the game log
(``round3.jsonl`` -> ``round3.referee.jsonl``): ``pause_reason`` (read by the
round's report) and ``referee_action`` (carried out by ``hallclock round start``,
which owns the clocks' ports).  The console never writes the game log.
"""
import json
import os
import secrets
import threading
import time
from urllib.parse import parse_qs, urlparse

from ..views import figures, report
from ..errors import BadInput
from ..link.logfile import JsonlTail, LogWriter, host_time
from ..views.model import Clocks, epoch_of, simulation_note
from ..views.modes import clock_text, view_for
from .webserver import CSS, HTML, JS, PageHandler, RateLimit, bind, check_log_path
from .display import _tables
from ..views.roundreport import REASON_TEXT, REASONS, REFEREE_CLOCK, referee_log_of
from ..views.words import by_name, playout_step, plural

WEB = os.path.join(os.path.dirname(__file__), "web", "console")
FILES = {"/": ("index.html", HTML), "/index.html": ("index.html", HTML),
         "/console.js": ("console.js", JS), "/console.css": ("console.css", CSS)}
LINKS_STALE_S = 5.0  # a link status file older than this: the round process is not running
MAX_BODY = 4096


def links_file_of(log):
    base = os.fspath(log)
    stem = base[:-6] if base.endswith(".jsonl") else base
    return stem + ".links.json"


def _day(stamp):
    if not stamp or "T" not in str(stamp):
        return ""
    return str(stamp).split("T", 1)[1][:8]


class RoundTail:
    """The records of the round's log, read incrementally as it grows."""

    source = "log"

    def __init__(self, path, wall=time.time, source=None):
        self.path = path
        self.referee_path = referee_log_of(path)
        self.wall = wall
        self.lock = threading.Lock()
        self.source = source if source is not None else JsonlTail(path)
        self.referee_tail = None  # the referee log's pause tags, read as it grows
        self.tags = {}
        self.making = {}  # clock -> the lock of whoever makes its detail
        self.pairings = None  # the players' names (--pairings), hallclock.views.pairings
        self._fresh()

    def _fresh(self):
        self.generation = getattr(self, "generation", 0) + 1  # the log was read afresh
        self.by_clock = {}  # clock -> {session: its records}, sessions as first seen
        self.details = {}  # clock -> (what it was made from, the detail): made once per change
        self.clocks = Clocks()
        self.warnings = {}  # clock -> left_s of the warnings given in the move in progress
        self.last_heard = {}  # clock -> host_time of its newest record
        self.rounds = {}  # clock -> round of its newest tagged record
        self.power_lost = {}  # clock -> True after a power_loss until its next record

    def update(self):
        """The records written since the last update (the log is read once,
        as it grows: never again per request)."""
        recs, replaced = self.source.read()
        if replaced:  # read afresh
            self._fresh()
        for rec in recs:
            self.feed(rec)

    def update_tags(self):
        """The referee log's pause tags, read as it grows."""
        if self.referee_tail is None or self.referee_tail.path != self.referee_path:
            self.referee_tail = JsonlTail(self.referee_path)
            self.tags = {}
        recs, replaced = self.referee_tail.read()
        if replaced:
            self.tags = {}
        for t in recs:
            if t.get("event") == "pause_reason" and isinstance(t.get("table"), str):
                self.tags[(t["table"], str(t.get("table_session")), t.get("pause_seq"))] = \
                    t.get("reason")

    def feed(self, rec):
        if not isinstance(rec, dict) or rec.get("clock") is None:
            return
        name = str(rec["clock"])
        self.by_clock.setdefault(name, {}).setdefault(str(rec.get("session")), []).append(rec)
        at = epoch_of(rec.get("host_time"))
        self.clocks.feed(rec, at if at is not None else self.wall())
        ev = rec.get("event")
        if ev in ("turn", "dup_start", "boot"):
            self.warnings[name] = []
        elif ev == "warn" and rec.get("left_s") is not None:
            self.warnings.setdefault(name, []).append(rec["left_s"])
        self.last_heard[name] = rec.get("host_time")
        if isinstance(rec.get("round"), int):
            self.rounds[name] = rec["round"]
        self.power_lost[name] = rec.get("event") == "power_loss"

    def records_for(self, clock):
        """Every record of one clock (for a table's detail), from what was
        already read: the log is not read again."""
        with self.lock:
            self.update()
            return [r for recs in self.by_clock.get(clock, {}).values() for r in recs]

    def exists(self):
        return self.source.exists()

    def links(self, now):
        return _links(self.path, now)


def _links(log, now):
    """clock -> link state from the round process's status file (or {})."""
    try:
        with open(links_file_of(log), encoding="utf-8") as f:
            status = json.load(f)
    except (OSError, ValueError):
        return {}, None
    written = epoch_of(status.get("written"))
    if written is None or now - written > LINKS_STALE_S:
        return {}, "the round process (hallclock round start) is not running"
    return {str(k): v for k, v in (status.get("clocks") or {}).items()}, None


def grid(tail, now):
    """The JSON the grid shows."""
    with tail.lock:
        tail.update()
        links, note = tail.links(now)
        tables = []
        clocks = by_name([c for c in tail.clocks if c.name != REFEREE_CLOCK], lambda c: c.name)
        for c in clocks:
            tables.append(_row(tail, c, c.face(now), links.get(c.name, {})))
        counted = _tables(clocks, now)
        rounds = [r for r in tail.rounds.values() if isinstance(r, int)]
        return {"log": os.path.basename(tail.path), "tables": tables, "note": note,
                "count": plural(len(counted), "table"),
                "round": max(rounds) if rounds else None,
                "exists": tail.exists(), "simulation": simulation_note(clocks), "reasons":
                [{"key": k, "text": REASON_TEXT[k]} for k in REASONS]}


def _row(tail, c, f, link):
    """One table of the grid, from the model's face of the clock now."""
    name = c.name
    lost = link.get("state") == "lost" or tail.power_lost.get(name, False)
    row = {"clock": name, "mode": c.model.mode if c.model else "?",
           "round": tail.rounds.get(name), "last_heard": report.time_of_day(c.heard_at()) or _day(tail.last_heard.get(name)),
           "lost": bool(lost), "warnings": list(tail.warnings.get(name, [])),
           "players": tail.pairings.label(name, tail.rounds.get(name)) if tail.pairings else "",
           # the clock rebooted: in words (views.words.reboot_words), for the round
           "reboot": c.reboot_text() if c.reboots else None}
    if f is None:  # a session the model could not take (a bad boot record)
        row.update({"player": None, "left": "–", "move": None, "overtime": False,
                    "paused": False, "finished": False, "playout": None, "round_left": None,
                    "status": "lost" if lost else "unknown", "error": c.error})
        return row
    rnd = view_for(f.mode).round(f)  # the hall's round as this clock counts it, or None
    playout = rnd["playout"] if rnd else None
    finished = bool(f.ended or playout == "over")
    side = 1 if f.player == "B" else 0
    left = f.displays[side].strip() or "–"
    if not (f.running or f.paused or f.move):
        left = "–"
    rl = rnd["left_ms"] if rnd else None
    if finished:  # the card says why it stands, never a bare time
        left = "play-out over" if playout == "over" else (
            "power lost" if c.model.power_lost else "session ended")
    row.update({
        "player": f.player if (f.running or f.paused) else None, "left": left,
        "move": f.move, "overtime": bool(f.overtime and not f.ended), "paused": bool(f.paused),
        "finished": finished, "playout": playout,
        "playout_text": playout_step(playout) if playout and playout != "over" else "",
        "round_left": (clock_text(rl) if rl > 0 else "basic time over")
        if isinstance(rl, int) and rnd["started"] else None,
        "status": "lost" if lost else "finished" if finished else "paused" if f.paused else
        "overtime" if f.overtime else "running" if f.running else "idle"})
    return row


def detail(tail, clock):
    """A table's moves (as the report shows them) and its pauses with reasons:
    the figures of hallclock.views.figures, formatted as the report formats them.
    From the records the tail already holds, made again only when that
    table's records or the referee's tags changed (any number of readers
    cost the log nothing: docs/hall.md "The console's read API")."""
    with tail.lock:
        making = tail.making.setdefault(clock, threading.Lock())
    with making:  # one maker per table; the grid meanwhile is not held up
        with tail.lock:
            tail.update()
            tail.update_tags()
            sessions = tail.by_clock.get(clock)
            if not sessions:
                return None
            # the table's last game: the session first seen last (as figures orders them)
            last = list(sessions.values())[-1]
            tags = {k: v for k, v in tail.tags.items() if k[0] == clock}
            key = (tail.generation, len(sessions), len(last),
                   tuple(sorted(tags.items(), key=repr)))
            made = tail.details.get(clock)
            if made is not None and made[0] == key:
                return made[1]
            last = list(last)
            n = len(sessions)
        got = _detail(last, tags, clock, n, tail.pairings.label(clock, tail.rounds.get(clock))
                      if tail.pairings else "")
        with tail.lock:
            tail.details[clock] = (key, got)
        return got


def _detail(records, tags, clock, sessions=None, players=""):
    """The detail of ``records`` (a table's; ``sessions``: how many it had,
    when ``records`` are those of its last session only)."""
    games = figures.games_from_records(records)
    figures.tag_pauses(games, tags)
    game = games[-1]
    pauses = []
    for n, p in enumerate(game.pause_list, 1):
        pauses.append({"number": n, "seq": p.seq, "session": game.session, "move": p.move,
                       "player": p.player,
                       "at": report.time_of_day(p.at) or report.fmt_short(p.t_ms),
                       "length": report.fmt_short(p.ms) if p.ms is not None else "",
                       "reason": p.reason, "reason_text": REASON_TEXT.get(p.reason, ""),
                       "restart": p.restart})
    moves = []
    for m, row in zip(game.moves, report.rows(game)):
        moves.append({"move": m.move, "player": row["player"],
                      "start": report.time_of_day(m.start_at)
                      or (report.fmt_short(m.start_t) if m.start_t is not None else ""),
                      "end": report.time_of_day(m.end_at)
                      or (report.fmt_short(m.end_t) if m.end_t is not None else ""),
                      "used": report.fmt_short(m.used),
                      "warnings": " ".join(f"{w}s" for w in m.warnings),
                      "overtime": report.overtime_text(m),
                      "pauses": " ".join(report.fmt_short(p) for p in m.pause_list),
                      "notes": report.notes(game, m), "expired": m.over})
    return {"clock": clock, "session": game.session, "mode": game.mode, "moves": moves,
            "pauses": pauses, "sessions": sessions or len(games), "players": players}


class RefereeLog:
    """The console's records, appended and fsync'd to the referee log (clock
    ``referee``, a session of its own per console run, ``seq`` from 1)."""

    def __init__(self, path):
        self.path = path
        self.writer = LogWriter(self.path)
        self.session = secrets.token_hex(4)
        self.seq = 0
        self.t0 = time.monotonic()
        self.lock = threading.Lock()

    def write(self, event, **fields):
        with self.lock:
            self.seq += 1
            rec = {"clock": REFEREE_CLOCK, "seq": self.seq,
                   "t_ms": int((time.monotonic() - self.t0) * 1000), "event": event}
            rec.update(fields)
            rec["session"] = self.session
            rec["host_time"] = host_time()
            self.writer.write(rec)
            return rec

    def close(self):
        self.writer.close()


class _Handler(PageHandler):
    files = FILES
    web = WEB
    tail: RoundTail
    token: str
    referee: RefereeLog
    signals = None  # BrokerSignals with --broker: the console sends START / GONG itself

    limit = None  # RateLimit: requests without the token, per address

    def _limited(self):
        """True (429 sent) when a request without the token is over its
        address's rate; the token's holder is never limited."""
        if self.limit is None or secrets.compare_digest(
                self.headers.get("X-Hallclock-Token") or "", self.token):
            return False
        return self.too_many(self.limit)

    def do_GET(self):  # noqa: N802
        if self._limited():
            return
        url = urlparse(self.path)
        if url.path == "/api/grid":
            self._json(200, grid(self.tail, getattr(self.tail, "wall", time.time)()))
            return
        if url.path == "/api/table":
            clock = (parse_qs(url.query).get("clock") or [""])[0]
            got = detail(self.tail, clock)
            if got is None:
                self._json(404, {"error": f"no table {clock!r} in the log"})
            else:
                self._json(200, got)
            return
        self.send_file(url.path)

    def do_POST(self):  # noqa: N802
        if self._limited():  # a guessed token is a request without it
            return
        if urlparse(self.path).path != "/api/action":
            self._json(404, {"error": "not found"})
            return
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            n = -1
        if not 0 < n <= MAX_BODY:
            self._json(400, {"error": "send a JSON body of at most 4 KiB"})
            return
        if not secrets.compare_digest(self.headers.get("X-Hallclock-Token") or "", self.token):
            self.rfile.read(n)
            self._json(403, {"error": "wrong or missing token: give the token "
                                      "'hallclock console' printed at start"})
            return
        try:
            body = json.loads(self.rfile.read(n))
            assert isinstance(body, dict)
        except (ValueError, AssertionError):
            self._json(400, {"error": "the body is not a JSON object"})
            return
        code, answer = act(self.referee, body, self.tail, self.signals)
        self._json(code, answer)



def act(referee, body, tail, signals=None):
    """Carry out one console action (the token is already checked).  From a
    log, START and GONG are asked of ``round start`` (which owns the ports)
    through the referee log; on the broker the console sends them itself
    (``signals``) and the record says so (``done``)."""
    action = body.get("action")
    if action == "gong":
        done = {}
        if signals is not None:
            signals.gong()
            done = {"done": True}
        rec = referee.write("referee_action", action="gong", **done)
        return 200, {"ok": True, "text": "GONG " + ("sent to" if done else "asked for")
                     + " every clock", "seq": rec["seq"]}
    if action == "start":
        n = body.get("round")
        if n is not None and (not isinstance(n, int) or not 1 <= n <= 999):
            return 400, {"error": "round: a whole number 1 to 999"}
        done = {}
        if signals is not None:
            if n is None:
                return 400, {"error": "round: give the round number (the clocks take it "
                                      "with the start)"}
            signals.start(n)
            done = {"done": True}
        rec = referee.write("referee_action", action="start", round=n, **done)
        return 200, {"ok": True, "text": "START round " + ("sent to" if done else "asked for")
                     + " every clock", "seq": rec["seq"]}
    if action == "tag":
        reason = body.get("reason")
        if reason not in REASONS:
            return 400, {"error": f"reason: one of {', '.join(REASONS)}"}
        clock, session, seq = body.get("clock"), body.get("session"), body.get("pause_seq")
        if not isinstance(clock, str) or not isinstance(session, str) or not isinstance(seq, int):
            return 400, {"error": "give clock, session and pause_seq of the pause"}
        pause = next((r for r in tail.records_for(clock)
                      if r.get("session") == session
                      and r.get("seq") == seq and r.get("event") == "pause"), None)
        if pause is None:
            return 404, {"error": f"no pause #{seq} of {clock} (session {session}) in the log"}
        rec = referee.write("pause_reason", table=clock, table_session=session, pause_seq=seq,
                            move=pause.get("move"), player=pause.get("player"), reason=reason)
        return 200, {"ok": True, "text": f"{clock} pause #{seq}: {REASON_TEXT[reason]}",
                     "seq": rec["seq"]}
    return 400, {"error": "action: gong, start or tag"}


def make_server(log, host="127.0.0.1", port=8090, token=None, tail=None, signals=None,
                limit=None, pairings=None):
    """An HTTP server (not yet serving) for the round's log (or, with
    ``tail``, another record source: BrokerRoundTail); port 0 picks a free one."""
    if not 0 <= port <= 65535:
        raise BadInput(f"--http-port {port}: an HTTP port is 0 to 65535")
    note = None
    if tail is None:
        check_log_path(log, "the round's log file")
        note = figures.check_live_log(log)  # a file that is not a log: refused as report does
        tail = RoundTail(log)
    tail.pairings = pairings
    referee = RefereeLog(tail.referee_path)
    handler = type("Handler", (_Handler,), {"tail": tail,
                                            "token": token or secrets.token_urlsafe(9),
                                            "referee": referee, "signals": signals,
                                            "limit": limit or RateLimit()})
    server = bind(host, port, handler, "another console?")
    server.token = handler.token
    server.limit = handler.limit
    server.referee = referee
    server.note = note
    return server


# -- the console on the hall network (--broker) ----------------------------------------
class BrokerRoundTail(RoundTail):
    """The grid's records from a viewer connection (``BrokerLogger`` as
    'viewer': nothing stored, nothing sent) instead of a log file."""

    source = "broker"

    def __init__(self, viewer, referee_path, wall=time.time):
        from ..net.mqtt import ViewerTail
        RoundTail.__init__(self, viewer.writer.path, wall, source=ViewerTail(viewer))
        self.viewer = viewer
        self.referee_path = referee_path

    def links(self, now):
        """The link state of every clock from its MQTT last will: "lost" from
        the broker's will (the clock's connection died) until it speaks again."""
        return {p.clock: {"state": p.state} for p in self.viewer.ports}, None


class BrokerSignals:
    """START round and GONG from the console straight to every clock of the
    hall (``all/down``, as the hall's 'referee' client)."""

    def __init__(self, address, hall, credentials, tls=None):
        self.address, self.hall, self.credentials, self.tls = address, hall, credentials, tls

    def _publish(self, frame):
        from hallclock_fw.netlink import topic

        from ..net.broker import load_credentials
        from ..net.mqtt import BrokerClient
        from ..net.seal import seal_all
        creds = load_credentials(self.credentials, "referee")
        message = seal_all(creds["referee"], frame)
        net = BrokerClient(self.address, creds["referee"], tls=self.tls).start()
        try:
            net.client.publish(topic(self.hall, "all", "down"), message).wait_for_publish(timeout=5)
        finally:
            net.stop()

    def gong(self):
        from .. import hostframes
        from hallclock_fw.events import BTN_GONG
        self._publish(hostframes.command(BTN_GONG))

    def start(self, number):
        from .. import hostframes
        self._publish(hostframes.round_number(number, 0))
