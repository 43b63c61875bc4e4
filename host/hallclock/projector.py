"""The hall display (the projector page): a local web page for a projector, fed by a game log as it
grows (written by ``hallclock log`` in another terminal, or a finished log).

Duplicate: the move's countdown in large digits, with the announcements made
to the hall.  Scrabble: the round's basic time left and its gongs (with the
play-out step after the end gong).  Backgammon: the running player's bank.

The server (stdlib ``http.server``) reads the new lines of the log on each
request of ``/state`` -- a JSON object the page polls twice a second -- and
the page counts the digits down between polls on its own.  Only the page's
three files and ``/state`` are served; nothing is written.
"""
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .clockstate import Hall, clock_text, epoch_of
from .errors import BadInput

WEB = os.path.join(os.path.dirname(__file__), "web")
FILES = {"/": ("index.html", "text/html; charset=utf-8"),
         "/index.html": ("index.html", "text/html; charset=utf-8"),
         "/app.js": ("app.js", "text/javascript; charset=utf-8"),
         "/style.css": ("style.css", "text/css; charset=utf-8")}
GONG_TEXT = {"start": "start gong", "ten_minutes": "10 minutes left",
             "end": "end of basic time", "manual": "gong"}
PLAYOUT_TEXT = {"finish_round": "play-out (a): finish the round in progress",
                "one_more_move": "play-out (b): one more move each",
                "last_move": "play-out (c): last move, no drawing",
                "over": "the game is over"}


class LogTail:
    """The records of a log file, read incrementally as it grows."""

    def __init__(self, path, clock_name=None, wall=time.time):
        self.path = path
        self.clock_name = clock_name
        self.wall = wall
        self.lock = threading.Lock()
        self._reset()

    def _reset(self):
        self.offset = 0
        self.partial = b""
        self.hall = Hall()
        self.records = 0

    def update(self):
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return
        if size < self.offset:  # the log was replaced: read it afresh
            self._reset()
        if size == self.offset:
            return
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read(size - self.offset)
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()  # a line still being written
        for raw in lines:
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            at = epoch_of(rec.get("host_time"))
            self.hall.feed(rec, at if at is not None else self.wall())
            self.records += 1

    def state(self):
        with self.lock:
            self.update()
            return face(self.hall, self.clock_name, self.wall(), self.path,
                        os.path.exists(self.path))


def face(hall, clock_name, now, path="", exists=True):
    """The JSON the page shows, for the chosen clock (or the newest one)."""
    out = {"log": os.path.basename(path), "clocks": list(hall.order), "now": now,
           "waiting": True, "exists": exists}
    if clock_name is not None:
        s = hall.clocks.get(clock_name)
    else:
        s = hall.newest()
    if s is None:
        out["message"] = (f"waiting for clock {clock_name}" if clock_name else
                          "waiting for the first record" if exists else f"waiting for {out['log']}")
        return out
    out.update({"waiting": False, "clock": s.clock, "mode": s.mode, "move": s.move,
                "player": s.player, "status": s.status(now), "ended": s.ended,
                "playout": PLAYOUT_TEXT.get(s.playout) if s.playout else None})
    warn_min = s.settings.get("round_warn_min") if isinstance(s.settings, dict) else None
    texts = dict(GONG_TEXT)
    if isinstance(warn_min, int):
        texts["ten_minutes"] = f"{warn_min} minutes left"
    gongs = [{"kind": k, "text": texts.get(k, str(k)), "at": clock_text(t, False)
              if isinstance(t, int) else "", "move": m} for t, k, m in s.gongs]
    out["gongs"] = gongs[::-1]
    out["announcements"] = [{"move": m, "left_s": left,
                             "text": f"move {m}: {clock_text(left * 1000)} left"
                             if left is not None else f"move {m}"}
                            for _t, m, left in s.announcements[::-1][:6]]
    if s.mode == "scrabble":
        left = s.round_left_ms(now)
        started = s.round_start is not None
        out["title"] = "round time left"
        out["left_ms"] = max(0, left) if left is not None else None
        out["running"] = started and not s.ended and left is not None and left > 0
        if not started:
            out["subtitle"] = "waiting for the start gong"
        elif left is not None and left <= 0:
            out["subtitle"] = "basic time is over"
        else:
            out["subtitle"] = f"move {s.move}" if s.move else ""
        out["last"] = started and left is not None and left <= 10 * 60000
    elif s.mode == "duplicate":
        left = s.left_ms(now)
        out["title"] = f"move {s.move}" if s.move else "duplicate"
        out["left_ms"] = max(0, left) if left is not None else None
        out["running"] = s.running and not s.paused
        if s.paused:
            out["subtitle"] = "time stopped"
        elif s.dup_over:
            out["subtitle"] = "time is up: no more changes"
        elif not s.running:
            out["subtitle"] = "waiting for the referee's start"
        else:
            out["subtitle"] = ""
        out["last"] = left is not None and left <= 30000
    else:
        left = s.left_ms(now)
        out["title"] = f"{s.player}'s bank" if s.player else s.mode
        out["left_ms"] = left
        out["running"] = s.running
        out["subtitle"] = "time stopped" if s.paused else ""
        out["last"] = left is not None and left <= 30000
    if s.ended:
        out["subtitle"] = "session ended"
        out["running"] = False
    out["digits"] = clock_text(out["left_ms"]) if out.get("left_ms") is not None else "--:--"
    return out


class _Handler(BaseHTTPRequestHandler):
    tail: LogTail  # set on the subclass made by make_server

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path.split("?", 1)[0]
        if path == "/state":
            body = json.dumps(self.tail.state()).encode()
            self._send(200, "application/json", body)
            return
        entry = FILES.get(path)
        if entry is None:
            self._send(404, "text/plain; charset=utf-8", b"not found\n")
            return
        with open(os.path.join(WEB, entry[0]), "rb") as f:
            self._send(200, entry[1], f.read())

    def _send(self, code, ctype, body):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 (the base name); quiet: the terminal shows the URL only
        pass


def make_server(log, host="127.0.0.1", port=8080, clock=None, source=None):
    """An HTTP server (not yet serving) for the log; port 0 picks a free one.
    ``source``: another record source with LogTail's ``state()`` (the hall
    network's viewer, ``mqtthost.BrokerTail``) instead of the log file."""
    folder = os.path.dirname(os.path.abspath(log)) if source is None else None
    if folder is not None and not os.path.isdir(folder):
        raise BadInput(f"--log {log}: the folder {folder} does not exist")
    if source is None and os.path.isdir(log):
        raise BadInput(f"--log {log} is a folder; give the log file")
    if not 0 <= port <= 65535:
        raise BadInput(f"--port {port}: an HTTP port is 0 to 65535")
    handler = type("Handler", (_Handler,), {"tail": source or LogTail(log, clock)})
    try:
        server = ThreadingHTTPServer((host, port), handler)
    except OSError as exc:
        raise BadInput(f"cannot serve on {host}:{port} ({exc.strerror}); "
                       "choose another --port") from None
    server.daemon_threads = True
    return server


def url_of(server):
    host, port = server.server_address[:2]
    if host in ("0.0.0.0", ""):
        host = "localhost"
    return f"http://{host}:{port}/"
