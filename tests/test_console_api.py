"""The referee console's read API under load (hallclock.hall.referee,
webserver.py; docs/hall.md "The console's read API"): a 10 MB round log,
eight request loops on ``/api/table`` and ``/api/grid``, and the grid still
answered from the state the console keeps -- the log is opened again only
when it grew, and then only its new bytes are read; a table's detail is made
again only when its records or the referee's tags changed.  Requests without
the token are limited per address (429 with Retry-After, JSON naming the
cause); the token's holder and other addresses are not.

Behaviour only: reads are counted, nothing is timed (the figures are
bench/consoleapi.py's, make bench)."""
import http.client
import json
import os
import threading

import pytest

from hallclock.hall import referee as refconsole
from hallclock.hall.webserver import RateLimit
from hallclock.link import logfile
from hallclock.link.logfile import read_records
from hallclock.scenario import parse_text
from hallclock.vboard import device as virtual
from hallclock_fw.settings import parse

TOKEN = "s3cret-token"
TABLES = 8
LOG_BYTES = 10 * 1000 * 1000


def _game_text(moves=150, gap_ms=20000):
    lines = ["0 press START", "1500 press B"]
    t = 1500
    for i in range(moves):
        t += gap_ms
        lines.append(f"{t} press {'A' if i % 2 == 0 else 'B'}")
        if i == 40:
            lines.append(f"{t + 5000} press PAUSE")
            lines.append(f"{t + 9000} press {'B' if i % 2 == 0 else 'A'}")
    lines.append(f"{t + 3000} end")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def big_log(tmp_path_factory):
    """A round log of at least 10 MB: one real game (the virtual clock's)
    played again and again on eight tables, each run a session of its own."""
    folder = tmp_path_factory.mktemp("api")
    src = folder / "game.jsonl"
    virtual.simulate(parse_text(_game_text()), "scrabble", parse("scrabble", []), str(src),
                     clock="src")
    game = read_records(str(src))
    assert any(r["event"] == "pause" for r in game)
    log = folder / "round.jsonl"
    n = 0
    with open(log, "w") as f:
        while f.tell() < LOG_BYTES:
            table = "t-%02d" % (n % TABLES + 1)
            for rec in game:
                f.write(json.dumps(dict(rec, clock=table, session="%08x" % (0xa0000000 + n)))
                        + "\n")
            n += 1
    return str(log)


class Reads:
    """Counts the opens of one file through hallclock.link.logfile (every
    reader of a log: JsonlTail, read_records) and the bytes read."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.opens = 0
        self.bytes = 0
        self.lock = threading.Lock()

    def open(self, name, *args, **kw):
        f = open(name, *args, **kw)
        if os.path.abspath(os.fspath(name)) != self.path:
            return f
        with self.lock:
            self.opens += 1
        reads = self

        class Counted:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                f.close()

            def __iter__(self):
                for line in f:
                    with reads.lock:
                        reads.bytes += len(line)
                    yield line

            def read(self, *a):
                data = f.read(*a)
                with reads.lock:
                    reads.bytes += len(data)
                return data

            def __getattr__(self, name):
                return getattr(f, name)
        return Counted()


def _server(log, limit=None):
    srv = refconsole.make_server(log, "127.0.0.1", 0, token=TOKEN, limit=limit)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    return srv


def _get(srv, path, token=None, source="127.0.0.1"):
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=120,
                                      source_address=(source, 0))
    try:
        conn.request("GET", path, headers={"X-Hallclock-Token": token} if token else {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), json.loads(r.read() or b"null")
    finally:
        conn.close()


def test_eight_loops_on_a_10mb_log_read_it_once(big_log, monkeypatch):
    """The D attack of the issue: eight loops asking every table's detail and
    the grid.  Every answer is right (the detail equals the one made from the
    whole log), and while the log does not grow it is not opened again;
    records appended later are read once, only they."""
    reads = Reads(big_log)
    monkeypatch.setattr(logfile, "open", reads.open, raising=False)
    made = []
    real = refconsole.figures.games_from_records
    monkeypatch.setattr(refconsole.figures, "games_from_records",
                        lambda recs: made.append(1) or real(recs))
    srv = _server(big_log)
    try:
        code, _h, grid = _get(srv, "/api/grid", TOKEN)
        assert code == 200 and len(grid["tables"]) == TABLES
        assert reads.bytes >= LOG_BYTES  # the first grid read it all
        records = read_records(big_log)
        want = {f"t-{i:02d}": refconsole._detail(
            [r for r in records if r["clock"] == f"t-{i:02d}"], {}, f"t-{i:02d}")
            for i in range(1, TABLES + 1)}
        opens, made_before = reads.opens, len(made)
        answers, errors = [], []

        def loop(k):
            try:
                for i in range(12):
                    table = f"t-{(k + i) % TABLES + 1:02d}"
                    code, _h, body = _get(srv, "/api/table?clock=" + table, TOKEN)
                    answers.append((table, code, body))
                    code, _h, body = _get(srv, "/api/grid", TOKEN)
                    answers.append(("grid", code, len(body["tables"])))
            except Exception as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)
        threads = [threading.Thread(target=loop, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not errors, errors
        assert len(answers) == 8 * 12 * 2
        for what, code, body in answers:
            assert code == 200
            assert body == (TABLES if what == "grid" else json.loads(json.dumps(want[what])))
        assert reads.opens == opens, "the log was read again for a request"
        assert len(made) - made_before <= TABLES  # each table's detail made once
        # the log grows: the next request reads the new records, only they
        extra = [dict(r, session="ffff0001") for r in records[:40]]
        added = "".join(json.dumps(dict(r, clock="t-01")) + "\n" for r in extra)
        before = reads.bytes
        with open(big_log, "a") as f:
            f.write(added)
        code, _h, body = _get(srv, "/api/table?clock=t-01", TOKEN)
        assert code == 200 and body["session"] == "ffff0001" and body["sessions"] == \
            want["t-01"]["sessions"] + 1
        assert reads.opens == opens + 1 and reads.bytes - before == len(added.encode())
    finally:
        srv.shutdown()
        srv.server_close()
        srv.referee.close()


def test_requests_without_the_token_are_limited_per_address(tmp_path):
    """A request loop without the token gets 429 once its address used its
    burst (Retry-After, a JSON error saying why); the referee's page with
    the token and another address are still answered; time refills it."""
    log = tmp_path / "round.jsonl"
    virtual.simulate(parse_text("0 press START\n1000 press B\n5000 end\n"), "scrabble",
                     parse("scrabble", []), str(log), clock="t-01")
    now = [1000.0]
    limit = RateLimit(rate=10, burst=40, clock=lambda: now[0])
    srv = _server(str(log), limit)
    try:
        codes = [_get(srv, "/api/grid")[0] for _ in range(40)]
        assert codes == [200] * 40
        code, headers, body = _get(srv, "/api/table?clock=t-01")
        assert code == 429 and headers["Retry-After"] == "1"
        assert "too many requests from 127.0.0.1" in body["error"] and "token" in body["error"]
        assert _get(srv, "/")[0] == 429  # the static files too
        assert _get(srv, "/api/grid", TOKEN)[0] == 200  # the referee's own page
        assert _get(srv, "/api/grid", "wrong")[0] == 429  # a guessed token is none
        assert _get(srv, "/api/grid", source="127.0.0.2")[0] == 200  # another address
        now[0] += 1.0  # a second later: ten more
        assert [_get(srv, "/api/grid")[0] for _ in range(11)] == [200] * 10 + [429]
        assert limit.refused == 4
    finally:
        srv.shutdown()
        srv.server_close()
        srv.referee.close()


def test_the_rate_limit_keeps_a_bounded_number_of_addresses():
    now = [0.0]
    limit = RateLimit(rate=1, burst=2, max_addresses=3, clock=lambda: now[0])
    for a in ("a", "b", "c", "d"):
        assert limit.take(a)
    assert list(limit.buckets) == ["b", "c", "d"]  # the idlest forgotten
    assert limit.take("b") and not limit.take("b")
    now[0] += 1.0
    assert limit.take("b") and not limit.take("b")
