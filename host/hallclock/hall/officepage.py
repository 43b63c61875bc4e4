"""The office page (``office --http-port``, issue 35): every hall's round and
every table on one read-only page, for the referee-in-chief and for
spectators.

It is built from the office's copies of the halls' logs, ``DIR/<hall>.jsonl``
(the same records as a hall's own log), with the projector's own views: each
hall is a :class:`display.LogTail` that follows its file as it grows (only
the new bytes are read) and answers with ``display.face`` (the round's time
left, the gongs due as time of day, the tables in the live view's cells), so
no time is formatted and no rule is applied twice; the page only shows the
texts.

What a spectator can do: ``GET`` the page's three files and ``/state``.  No
token, no control: every other method is refused (405).  ``/state`` is made
at most every ``REFRESH_S`` from the state the page keeps and shared by every
request in between; requests are rate-limited per address as the console's
open paths are (webserver.RateLimit); the page puts every name from a log
(hall, clock) into the page as text, never as markup, and the answers carry a
Content-Security-Policy that lets no inline script run.
"""
import json
import os
import threading
import time

from ..errors import BadInput
from ..views.words import by_name
from .display import LogTail
from .webserver import CSS, HTML, JS, PageHandler, RateLimit, bind, url_of  # noqa: F401 (url_of: for callers)

WEB = os.path.join(os.path.dirname(__file__), "web", "office")
FILES = {"/": ("index.html", HTML), "/index.html": ("index.html", HTML),
         "/office.js": ("office.js", JS), "/office.css": ("office.css", CSS)}
REFRESH_S = 0.5  # /state is made at most this often; requests in between share it
SCAN_S = 2.0  # the folder is looked at for new halls' files at most this often
SUFFIX = ".jsonl"
# the keys of the projector's answer (display.face) the office page shows of a hall
HALL_KEYS = ("waiting", "message", "view", "title", "subtitle", "digits", "ahead", "due",
             "playout", "reboots", "tables", "ended", "last", "running", "paused",
             "simulation", "exists")
HEADERS = (("Content-Security-Policy",
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'none'; "
            "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
           ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"))


class OfficeState:
    """Every hall's copy in ``folder`` followed as it grows: every
    ``<hall>.jsonl`` of the folder (looked for again every ``SCAN_S``, so a
    hall whose first record arrives later appears), and the halls named in
    ``halls`` from the start (the office's own list: a hall not heard yet is
    shown waiting)."""

    def __init__(self, folder, halls=None, wall=time.time, clock=time.monotonic):
        self.folder = folder
        self.fixed = list(halls) if halls is not None else None
        self.wall = wall
        self.clock = clock
        self.lock = threading.Lock()
        self.tails = {}  # hall -> LogTail of DIR/<hall>.jsonl
        self.scanned = None
        self.made = None  # (monotonic s, wall s, the answer's JSON bytes)
        self.answers = 0  # /state answers made (not served from the shared one)
        for name in self.fixed or ():
            self._add(name)

    def _add(self, hall):
        tail = LogTail(os.path.join(self.folder, hall + SUFFIX), wall=self.wall)
        tail.show_tables = True
        self.tails[hall] = tail

    def _scan(self, now):
        if self.scanned is not None and now - self.scanned < SCAN_S:
            return
        self.scanned = now
        try:
            names = [e.name[:-len(SUFFIX)] for e in os.scandir(self.folder)
                     if e.name.endswith(SUFFIX) and len(e.name) > len(SUFFIX) and e.is_file()]
        except OSError:
            return  # the folder is gone or not yet there: the page says no hall yet
        for name in names:
            if name not in self.tails:
                self._add(name)

    def state(self):
        """The answer to ``/state`` as JSON bytes, and its age in ms."""
        with self.lock:
            now = self.clock()
            if self.made is None or now - self.made[0] >= REFRESH_S:
                self._scan(now)
                wall = self.wall()
                self.made = (now, wall, json.dumps(self._make(wall)).encode())
                self.answers += 1
            return self.made[2], int((now - self.made[0]) * 1000)

    def _make(self, wall):
        halls = []
        for name in by_name(self.tails):
            tail = self.tails[name]
            face = tail.state()  # reads what the file gained since, only that
            hall = {k: face.get(k) for k in HALL_KEYS}
            rounds = [r for r in tail.rounds.values() if isinstance(r, int)]
            hall.update({"hall": name, "round": max(rounds) if rounds else None,
                         "records": tail.records})
            halls.append(hall)
        return {"now": wall, "folder": os.path.basename(os.path.abspath(self.folder)),
                "halls": halls,
                "tables": sum(len(h["tables"] or []) for h in halls)}


class _Handler(PageHandler):
    files = FILES
    web = WEB
    office: OfficeState
    limit: RateLimit

    def _send(self, code, ctype, body, headers=()):
        PageHandler._send(self, code, ctype, body, tuple(headers) + HEADERS)

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.too_many(self.limit, ""):
            return
        path = self.path.split("?", 1)[0]
        if path == "/state":
            body, age = self.office.state()
            self._send(200, "application/json", body, (("X-Age-Ms", str(age)),))
            return
        self.send_file(path)

    def _refuse(self):
        self.close_connection = True
        self._json(405, {"error": "the office page is read-only: GET only"},
                   (("Allow", "GET"),))

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _refuse  # noqa: N815


def make_server(folder, host="127.0.0.1", port=8070, halls=None, limit=None,
                wall=time.time):
    """An HTTP server (not yet serving) for the office's copies in ``folder``
    (every ``*.jsonl`` there, and ``halls``: names shown before their first
    record); port 0 picks a free one."""
    if not os.path.isdir(folder):
        raise BadInput(f"{folder}: no such folder (the office's --out, where the halls' "
                       "copies are)")
    office = OfficeState(folder, halls, wall=wall)
    handler = type("Handler", (_Handler,), {"office": office, "limit": limit or RateLimit()})
    server = bind(host, port, handler, "another office page?")
    server.office = office
    server.limit = handler.limit
    return server


def halls_of(credentials):
    """The halls an office's credentials.json (office-config) has a bridge
    login for, or [] (a file that cannot be read names none)."""
    try:
        with open(credentials, encoding="utf-8") as f:
            creds = json.load(f)
    except (OSError, ValueError):
        return []
    if not isinstance(creds, dict):
        return []
    return [v["hall"] for v in creds.values()
            if isinstance(v, dict) and isinstance(v.get("hall"), str)]


def start(folder, host="127.0.0.1", port=8070, halls=None, limit=None):
    """The office page served in a background thread (for ``office
    --http-port``); ``stop(server)`` ends it."""
    server = make_server(folder, host, port, halls, limit)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                              daemon=True, name="office-page")
    thread.start()
    server.thread = thread
    return server


def stop(server):
    server.shutdown()
    server.server_close()
