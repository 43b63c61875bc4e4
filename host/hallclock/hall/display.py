"""The hall display (the projector page): a local web page for a projector, fed by a game log as it
grows (written by ``hallclock log`` or ``hallclock hall`` in another terminal, or a finished log).

What it shows comes from ``hallclock.views.model`` (each clock's own core replayed
from its records) and the mode registry ``hallclock.views.modes``:

- a Scrabble hall (one or many table clocks, and the hall unit): **the
  round** -- the basic time left to the end gong, counted from the round's
  first start gong, the gongs given as time of day (the host's clock) and the
  ones still due, the play-out steps of the tables; never one table's move;
- duplicate: the hall countdown in large digits, with the announcements;
- backgammon: both banks (and the delay or break that runs).

``--clock NAME`` shows one clock.  The server (stdlib ``http.server``) reads
the new lines of the log on each request of ``/state`` -- a JSON object the
page polls twice a second.  The digits the page shows between two polls come
with the answer (``ahead``: the texts of the next few seconds, computed by the
model), so the page formats no time itself.  Only the page's three files and
``/state`` are served; nothing is written.
"""
import os
import threading
import time

from hallclock_fw.display import next_change

from ..errors import BadInput
from ..views.figures import check_live_log, hall_unit_of
from ..views.liveview import row_cells
from ..link.logfile import JsonlTail
from ..views.model import Clocks, epoch_of, simulation_note
from ..views.report import time_of_day as report_time_of_day
from ..views.modes import clock_text, view_for
from ..views.words import by_name, gong_name, playout_step, plural
from .webserver import CSS, HTML, JS, PageHandler, bind, check_log_path, url_of  # noqa: F401 (url_of: for callers)

WEB = os.path.join(os.path.dirname(__file__), "web")
FILES = {"/": ("index.html", HTML), "/index.html": ("index.html", HTML),
         "/app.js": ("app.js", JS), "/style.css": ("style.css", CSS)}
PLAYOUT_STEPS = ("finish_round", "one_more_move", "last_move", "over")
AHEAD = 4  # seconds of digits sent ahead with each answer


def time_of_day(epoch):
    """Host epoch seconds -> '14:02:05' (the laptop's local time), or '': the
    report's own format (one time format for every view)."""
    return report_time_of_day(epoch)


def gong_text(kind, warn_min):
    """A gong in the words of its settings (hallclock.views.words): '2-min gong'."""
    return gong_name(kind, warn_min)


def _tables(clocks, now):
    """The tables of a round: every clock but the hall unit (``hall_unit``);
    a table whose game has not begun is a table all the same."""
    unit = hall_unit(clocks, now)
    return [c for c in clocks if c is not unit]


def _moved(c, now):
    """True if the clock's game (this session's or the one before a reboot)
    has had a move."""
    if c.model is not None and c.model.face(c.device_now(now)).move:
        return True
    old = c.previous
    return old is not None and bool(old.face(old.t_ms).move)


def hall_unit(clocks, now):
    """The hall unit among a round's clocks, or None (``figures.hall_unit_of``:
    one rule for the projector and the round's report, docs/hall.md)."""
    clocks = list(clocks)
    i = hall_unit_of([(_start_epoch(c), _moved(c, now), c.round_heard is not None)
                      for c in clocks])
    return None if i is None else clocks[i]


class LogTail:
    """The records of a log file, read incrementally as it grows (or of
    ``source``, another record source with JsonlTail's ``read``/``exists``:
    the hall network's viewer, ``net.mqtt.ViewerTail``)."""

    def __init__(self, path, clock_name=None, wall=time.time, source=None):
        self.path = path
        self.clock_name = clock_name
        self.wall = wall
        self.lock = threading.Lock()
        self.source = source if source is not None else JsonlTail(path)
        self.clocks = Clocks()
        self.records = 0
        self.rounds = {}  # clock -> round of its newest tagged record (for its pairing)

    pairings = None  # the players' names (--pairings), hallclock.views.pairings

    def update(self):
        recs, replaced = self.source.read()
        if replaced:  # the log was replaced: read it afresh
            self.clocks = Clocks()
            self.records = 0
            self.rounds = {}
        for rec in recs:
            at = epoch_of(rec.get("host_time"))
            self.clocks.feed(rec, at if at is not None else self.wall())
            self.records += 1
            if isinstance(rec, dict) and isinstance(rec.get("round"), int):
                self.rounds[str(rec.get("clock"))] = rec["round"]

    def players(self, clock):
        """(A, B) of the clock's table as every view shortens them, or None."""
        if self.pairings is None:
            return None
        return self.pairings.shown(clock, self.rounds.get(clock))

    show_tables = False  # the page lists the tables only when asked (--tables)

    def state(self):
        with self.lock:
            self.update()
            out = face(self.clocks, self.clock_name, self.wall(), self.path,
                       self.source.exists(), players=self.players)
            out["show_tables"] = self.show_tables
            return out


class BrokerTail(LogTail):
    """The hall display's record source on the broker (``hall-display
    --broker``): a LogTail on a viewer connection (``net.mqtt.ViewerTail``)."""

    def __init__(self, viewer, clock_name=None, wall=time.time):
        from ..net.mqtt import ViewerTail
        LogTail.__init__(self, viewer.writer.path, clock_name, wall, source=ViewerTail(viewer))
        self.viewer = viewer


# -- the answer to /state ---------------------------------------------------------
def face(clocks, clock_name, now, path="", exists=True, players=None):
    """The JSON the page shows: the round (or hall countdown) of the whole
    log, or the clock ``clock_name``.  ``now``: host epoch seconds;
    ``players(clock)``: its table's (A, B) names as shown, or None (--pairings)."""
    players = players or (lambda _clock: None)
    out = {"log": os.path.basename(path), "clocks": list(clocks.order), "now": now,
           "waiting": True, "exists": exists, "tables": [],
           "simulation": simulation_note(clocks)}
    modelled = by_name([c for c in clocks if c.model is not None], lambda c: c.name)
    out["clocks"] = [n for n in by_name(clocks.order)]
    # every clock that rebooted, in words (views.words.reboot_words): nobody misses one
    out["reboots"] = [c.reboot_text() for c in by_name(list(clocks), lambda c: c.name)
                      if c.reboots]
    if clock_name is not None:
        c = clocks.get(clock_name)
        if c is None or c.model is None:
            if not clocks.order:
                out["message"] = ("waiting for clock %s: the log has no clock yet" % clock_name
                                  if exists else "waiting for %s" % out["log"])
            elif c is None:
                out["message"] = "no clock %s in this log; its clocks: %s" % (
                    clock_name, ", ".join(clocks.order))
            else:
                out["message"] = "clock %s: %s" % (clock_name, c.error or "no boot heard yet")
            return out
        return _clock_face(out, c, now, players)
    if not modelled:
        out["message"] = ("waiting for the first record" if exists else
                          "waiting for %s" % out["log"])
        return out
    lead = next(c for c in clocks if c.model is not None)  # the first heard: a hall's hall unit
    if len(modelled) > 1:
        out["tables"] = [_table(c, now, players) for c in _tables(modelled, now)]
    mode = lead.model.mode
    same = [c for c in modelled if c.model.mode == mode]
    kind = view_for(mode).hall_view
    if kind == "round":
        return _round_face(out, same, now)
    if len(modelled) == 1 or kind == "countdown":
        return _clock_face(out, lead, now, players)
    # several independent table clocks (backgammon): one is not the hall's
    out.update({"waiting": False, "view": "tables", "title": plural(len(modelled), "clock"),
                "subtitle": "pick one with --clock NAME", "digits": "", "ahead": []})
    return out


def _table(c, now, players=lambda _clock: None):
    cells = row_cells(c, c.face(now))
    names = players(c.name)
    t = {"clock": c.name, "mode": cells["mode"], "displays": [cells["A"], cells["B"]],
         "players": list(names) if names else None,
         "runs": cells["runs"], "move": cells["move"],
         "state": ", ".join(t for t, _k in cells["state"])}
    t["line"] = table_line(t)
    return t


def table_line(t):
    """A table in words, as the projector and the office page show it:
    'table-5 · A Nováková 1:20 · B Dvořák 0:45 · move 12 · paused' (each
    player's name, where the pairings give it, by their time)."""
    names = t.get("players") or ("", "")
    words = [t["clock"]] + [" ".join(w for w in (side, name, digits) if w) for side, name, digits
                            in zip("AB", names, t["displays"])]
    if t.get("move"):
        words.append("move %s" % t["move"])
    if t.get("state"):
        words.append(t["state"])
    return " · ".join(words)


def _ahead(c, now, hall):
    """The main digits and banks for the next AHEAD seconds, as the model
    counts them: [{'in_ms', 'digits', 'banks'}]."""
    f = c.face(now)
    first = hall(c, f)
    out = [{"in_ms": 0, "digits": first["digits"], "banks": first.get("banks_text")}]
    if not first["running"] or f.ended:
        return out
    t0 = c.device_now(now)
    step = next_change(first["left_ms"]) if first.get("left_ms") is not None else 1000
    for k in range(AHEAD):
        d = step + 1000 * k
        later = hall(c, c.model.face(t0 + d))
        out.append({"in_ms": d, "digits": later["digits"], "banks": later.get("banks_text")})
    return out


def _mode_hall(c, f):
    h = view_for(f.mode).hall(c, f, None)
    if "digits" not in h:
        h["digits"] = clock_text(h["left_ms"]) if h.get("left_ms") is not None else "--:--"
    if h.get("banks"):
        h["banks_text"] = [b["text"] for b in h["banks"]]
    return h


def _clock_face(out, c, now, players=lambda _clock: None):
    f = c.face(now)
    names = players(c.name)
    out["players"] = list(names) if names else None
    m = c.model
    h = _mode_hall(c, f)
    rnd = view_for(m.mode).round(f)
    warn_min = rnd["warn_ms"] // 60000 if rnd is not None else None
    out.update({"waiting": False, "view": "clock", "clock": c.name, "mode": m.mode,
                "move": f.move, "player": f.player, "ended": f.ended, "paused": f.paused,
                "displays": [f.displays[0].strip(), f.displays[1].strip()]
                if view_for(m.mode).players else None,
                "title": h["title"], "subtitle": h["subtitle"], "left_ms": h["left_ms"],
                "running": h["running"] and not f.ended, "last": h["last"],
                "digits": h["digits"], "banks": h.get("banks"),
                "playout": playout_step(rnd["playout"] if rnd else None, long=True) or None,
                "mismatches": len(m.mismatches)})
    out["gongs"] = [{"kind": k, "text": gong_text(k, warn_min), "at": time_of_day(
        c.time_of_day(t)), "move": mv} for t, k, mv, _ep in c.gongs][::-1]
    out["announcements"] = [{"move": mv, "left_s": left,
                             "text": "move %s: %s left" % (mv, clock_text(left * 1000))
                             if left is not None else "move %s" % mv}
                            for _t, mv, left, _ep in c.announcements[::-1][:6]]
    out["due"] = _due_gongs(c, f, now, warn_min)
    if f.ended:
        out["subtitle"] = "power lost" if m.power_lost else "session ended"
    out["ahead"] = _ahead(c, now, _mode_hall)
    return out


def _start_epoch(c):
    for t, kind, _mv, ep in c.gongs:  # which clock gave it first: as the host heard them
        if kind == "start":
            return ep if ep is not None else c.time_of_day(t)
    return None


def _due_gongs(c, f, now, warn_min):
    """The round's gongs still to come, with their time of day."""
    rnd = view_for(f.mode).round(f)
    if rnd is None or not rnd["started"] or f.ended:
        return []
    left = rnd["left_ms"]
    due = []
    ten = left - rnd["warn_ms"]
    if rnd["warn_ms"] > 0 and ten > 0:
        due.append({"kind": "ten_minutes", "text": gong_text("ten_minutes", warn_min),
                    "at": time_of_day(c.due_at(ten, now))})
    if left > 0:
        due.append({"kind": "end", "text": gong_text("end", None),
                    "at": time_of_day(c.due_at(left, now))})
    return due


def _round_face(out, clocks, now):
    """A hall playing one round: the round as a whole.  Its basic time runs
    from the round's first start gong (the hall unit's, when it is in the
    log): the clock that gave it leads; tables started by the relay follow it
    by milliseconds (docs/hall.md)."""
    started = [(ep, i, c) for i, c in enumerate(clocks)
               for ep in [_start_epoch(c)] if ep is not None]
    lead = min(started)[2] if started else clocks[0]
    f = lead.face(now)
    m = lead.model
    view = view_for(m.mode)
    rnd = view.round(f)
    warn_min = rnd["warn_ms"] // 60000
    left = rnd["left_ms"]
    running = rnd["started"] and left > 0 and not f.ended
    out.update({"waiting": False, "view": "round", "clock": lead.name, "mode": m.mode,
                "title": "round time left", "left_ms": max(0, left), "running": running,
                "last": rnd["started"] and left <= rnd["warn_ms"],
                "ended": all(c.model.ended for c in clocks), "paused": False,
                "digits": clock_text(max(0, left))})
    if not rnd["started"]:
        out["subtitle"] = "waiting for the start gong"
    elif left <= 0:
        out["subtitle"] = "basic time is over"
    else:
        tables = _tables(clocks, now)
        out["subtitle"] = plural(len(tables), "table") if len(tables) > 1 else ""
    # the round's gongs: the lead clock's, as time of day (each table gives its own
    # at the same moments; their move numbers are the tables' own)
    one = len(clocks) == 1
    out["gongs"] = [{"kind": k, "text": gong_text(k, warn_min), "at": time_of_day(
        lead.time_of_day(t)), "move": mv if one else None} for t, k, mv, _ep in lead.gongs][::-1]
    out["due"] = _due_gongs(lead, f, now, warn_min)
    out["announcements"] = []
    steps = {}
    for c in _tables(clocks, now):
        step = view.round(c.face(now))["playout"]
        if step:
            steps[step] = steps.get(step, 0) + 1
    if one:
        out["playout"] = playout_step(rnd["playout"], long=True) or None
    elif steps:
        out["playout"] = "play-out: " + ", ".join(
            "%s %s" % (plural(steps[s], "table"), playout_step(s)) for s in PLAYOUT_STEPS
            if s in steps)
    else:
        out["playout"] = None
    if out["ended"]:
        out["subtitle"] = "session ended" if one else "every table has ended"
        out["running"] = False
        if left > 0:  # ended before the end gong: no basic time left to show
            out.update({"title": "the round is over", "digits": "over", "last": False})
            out["due"] = []
            out["ahead"] = [{"in_ms": 0, "digits": "over", "banks": None}]
            return out

    def hall(c, face_):
        r = view.round(face_)
        left_ = max(0, r["left_ms"])
        return {"digits": clock_text(left_), "left_ms": left_,
                "running": r["started"] and r["left_ms"] > 0 and not face_.ended}
    out["ahead"] = _ahead(lead, now, hall)
    return out


# -- serving ---------------------------------------------------------------------
class _Handler(PageHandler):
    tail: LogTail  # set on the subclass made by make_server
    files = FILES
    web = WEB

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path.split("?", 1)[0]
        if path == "/state":
            self._json(200, self.tail.state())
            return
        self.send_file(path)


def check_clock(tail):
    """``--clock NAME`` on a log that already holds clocks, none of that
    name: bad input, naming the clocks it has (a log with no clock yet is
    waited for: the page says so)."""
    name = tail.clock_name
    if name is None:
        return None
    tail.update()
    known = tail.clocks.order
    if known and name not in known:
        raise BadInput("--clock %s: %s has no clock of that name; its clocks: %s "
                       "(or leave --clock out to show the whole hall)" % (
                           name, tail.path, ", ".join(known)))
    if not known:
        return "no clock in %s yet: the page waits for clock %s" % (tail.path, name)
    return None


def make_server(log, host="127.0.0.1", port=8080, clock=None, source=None, tables=False,
                pairings=None):
    """An HTTP server (not yet serving) for the log; port 0 picks a free one.
    ``source``: another record source with LogTail's ``state()`` (the hall
    network's viewer, ``BrokerTail``) instead of the log file; ``pairings``:
    the players' names (hallclock.views.pairings)."""
    waiting = None
    if source is None:
        check_log_path(log)
        waiting = check_live_log(log)  # a file that is not a log: refused as report does
    if not 0 <= port <= 65535:
        raise BadInput(f"--http-port {port}: an HTTP port is 0 to 65535")
    tail = source if source is not None else LogTail(log, clock)
    tail.show_tables = tables
    tail.pairings = pairings
    note = check_clock(tail) if source is None else None  # before the port is taken
    server = bind(host, port, type("Handler", (_Handler,), {"tail": tail}),
                  "another hall-display?")
    server.note = "; ".join(n for n in (waiting, note) if n) or None
    return server
