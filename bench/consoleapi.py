"""make bench: the referee console's grid under a request loop on its read
API (docs/hall.md "The console's read API"; docs/benchmarks.md).

A round log of 10 MB (one real game played again on eight tables), the
console serving it in a process of its own; the grid (``/api/grid``, with
the token, as the referee's page asks it) timed

- quiet: nothing else asks (the baseline);
- under eight loops asking ``/api/table`` with the token (served: every
  answer made from the state the console keeps);
- under eight loops without the token (the rate limit answers 429);
- the tree before: each ``/api/table`` read the whole log again (the same
  loops with the token, on a console whose ``detail`` does that).

    .venv/bin/python bench/consoleapi.py [--quick]
"""
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

TOKEN = "bench-token"
TABLES = 8
LOOPS = 8

SERVER = """
import sys
from hallclock.hall import referee as refconsole
from hallclock.link.logfile import read_records
if %(old)r:
    def detail(tail, clock):  # the tree before: the whole log read per request
        recs = [r for r in read_records(tail.path) if str(r.get("clock")) == clock]
        if not recs:
            return None
        tags = {}
        for t in read_records(tail.referee_path):
            if t.get("event") == "pause_reason" and t.get("table") == clock:
                tags[(clock, str(t.get("table_session")), t.get("pause_seq"))] = t.get("reason")
        return refconsole._detail(recs, tags, clock)
    refconsole.detail = detail
srv = refconsole.make_server(%(log)r, "127.0.0.1", 0, token=%(token)r)
print(srv.server_address[1], flush=True)
from hallclock.hall.webserver import serve
serve(srv)
"""


def make_log(folder, size):
    from hallclock.link.logfile import read_records
    from hallclock.scenario import parse_text
    from hallclock.vboard import device as virtual
    from hallclock_fw.settings import parse
    lines = ["0 press START", "1500 press B"]
    t = 1500
    for i in range(150):
        t += 20000
        lines.append(f"{t} press {'A' if i % 2 == 0 else 'B'}")
    lines.append(f"{t + 3000} end")
    src = os.path.join(folder, "game.jsonl")
    virtual.simulate(parse_text("\n".join(lines) + "\n"), "scrabble", parse("scrabble", []),
                     src, clock="src")
    game = read_records(src)
    log = os.path.join(folder, "round.jsonl")
    n = 0
    with open(log, "w") as f:
        while f.tell() < size:
            for rec in game:
                f.write(json.dumps(dict(rec, clock="t-%02d" % (n % TABLES + 1),
                                        session="%08x" % (0xa0000000 + n))) + "\n")
            n += 1
    return log


def _get(port, path, token):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", path, headers={"X-Hallclock-Token": token} if token else {})
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def phase(log, old=False, loop_token=None, loops=0, samples=60, max_s=30.0):
    """Grid times (s) while ``loops`` threads ask /api/table; the loops' answers."""
    code = SERVER % {"old": old, "log": log, "token": TOKEN}
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "host") + os.pathsep +
               os.path.join(ROOT, "firmware"))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env=env)
    stop = threading.Event()
    answers = {}
    try:
        port = int(p.stdout.readline())
        if _get(port, "/api/grid", TOKEN) != 200:  # the log read once, before the clock runs
            return None, {}

        def loop(k):
            i = 0
            while not stop.is_set():
                c = _get(port, "/api/table?clock=t-%02d" % ((k + i) % TABLES + 1), loop_token)
                answers[c] = answers.get(c, 0) + 1
                i += 1
        threads = [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(loops)]
        for t in threads:
            t.start()
        times = []
        end = time.monotonic() + max_s
        while len(times) < samples and (time.monotonic() < end or len(times) < 5):
            t0 = time.monotonic()
            if _get(port, "/api/grid", TOKEN) != 200:
                return None, answers
            times.append(time.monotonic() - t0)
            time.sleep(0.05)
        stop.set()
        for t in threads:
            t.join(120)
        return times, answers
    finally:
        stop.set()
        p.kill()
        p.wait()


def bench(quick=False, say=None):
    say = say or (lambda t: sys.stderr.write(t + "\n"))
    size = 2_000_000 if quick else 10_000_000
    folder = tempfile.mkdtemp(prefix="hallclock-bench-")
    log = make_log(folder, size)
    res = {"log_bytes": os.path.getsize(log), "loops": LOOPS}
    runs = [("quiet", {}), ("api_loop_token", {"loops": LOOPS, "loop_token": TOKEN}),
            ("api_loop_no_token", {"loops": LOOPS}),
            ("before_api_loop_token", {"loops": LOOPS, "loop_token": TOKEN, "old": True})]
    for name, kw in runs:
        times, answers = phase(log, **kw)
        if not times:
            say("consoleapi: %s FAILED (the grid did not answer 200)" % name)
            res[name] = {"FAILED": "the grid did not answer 200 (%s)" % name}
            continue
        s = common.summary(times, 1000.0, 1)
        res[name] = dict(s, answers={str(k): v for k, v in answers.items()})
        say("consoleapi: grid %-22s p99 %8.1f ms, p50 %7.1f ms (%d samples); loops' answers %s"
            % (name, s["p99"], s["p50"], s["n"], answers or "-"))
    base = res.get("quiet", {}).get("p99")
    for name, _kw in runs[1:]:
        p99 = res.get(name, {}).get("p99")
        if base and p99 is not None:
            res[name]["p99_vs_quiet"] = round(p99 / base, 1)
            say("consoleapi: %-22s grid p99 %.1fx the quiet grid's" % (name, p99 / base))
    return res


if __name__ == "__main__":
    json.dump(bench("--quick" in sys.argv), sys.stdout, indent=1)
    print()
