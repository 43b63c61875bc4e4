"""The hall network under attack, timed (docs/network.md, "Threat model"):

- ``referee START`` (the CLI, a fresh connection on the laptop's listener)
  with and without 1 100 idle sockets on the hall's listener, the broker
  holding the 1 024 files a laptop's shell gives it;
- a GET of the projector's page with and without 1 000 idle and 100 slow
  connections on it (the server process with 1 024 files too);
- attack C: with one clock's cfg, 60 000 messages of fresh sealed sessions in
  about 7 s while another clock plays a dense game: that clock's longest wait
  for an ack (beside its resend timer, and beside the same game without the
  flood), records written for the flooding clock, the logger's peak memory.
  FAILED if the flood was not offered or not delivered.

Figures only; the behaviour is asserted in tests/test_mqtt_attacks.py and
tests/test_web_attacks.py.

    .venv/bin/python bench/netattack.py [--runs N] [--flood-only]   (make bench-attack)
"""
import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "host"), os.path.join(ROOT, "firmware")]

FLOOD = 1100
IDLE, SLOW = 1000, 100
LAPTOP_FILES = 1024


def _laptop_files():
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(LAPTOP_FILES, hard), hard))


def _more_files(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n), hard))


def sockets(address, n, slow=0):
    """``n`` connections that send nothing, then ``slow`` that send half a
    request head and stop (tests/test_web_attacks.py attacks with these too)."""
    _more_files(n + slow + 256)
    out = []
    for i in range(n + slow):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(address)
            if i >= n:
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        except OSError:
            pass
        out.append(s)
    return out


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"),
                                         os.path.join(ROOT, "firmware"),
                                         env.get("PYTHONPATH", "")])
    return env


def _figures(times):
    return {"median_ms": round(statistics.median(times) * 1000, 1),
            "max_ms": round(max(times) * 1000, 1), "runs": len(times)}


def referee(runs):
    from hallclock.net import broker
    folder = tempfile.mkdtemp(prefix="hallclock-bench-")
    os.chmod(folder, 0o711)
    conf = os.path.join(folder, "conf")
    port, local = broker.free_port(), broker.free_port()
    broker.write_config(conf, "bench", ["t1", "t2"], port=port, bind="127.0.0.1",
                        local_port=local)
    extra = ["user root"] if broker.reachable_by_broker(conf) else []
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    _laptop_files()
    try:
        b = broker.Broker(conf, extra=extra).start()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    cmd = [sys.executable, "-m", "hallclock", "referee", "START", "--broker",
           f"127.0.0.1:{local}", "--hall", "bench", "--credentials",
           os.path.join(conf, "credentials.json")]

    def once():
        t = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=60)
        took = time.monotonic() - t
        if r.returncode != 0:
            raise SystemExit("referee START failed: " + r.stderr)
        return took

    try:
        quiet = [once() for _ in range(runs)]
        socks = sockets(("127.0.0.1", port), FLOOD)
        try:
            flooded = [once() for _ in range(runs)]
        finally:
            for s in socks:
                s.close()
    finally:
        b.stop()
    return {"referee_start_quiet": _figures(quiet),
            "referee_start_under_flood": _figures(flooded), "flood_sockets": FLOOD}


def _get(address):
    t = time.monotonic()
    with socket.create_connection(address, timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    if not data.startswith(b"HTTP/1.0 200") and not data.startswith(b"HTTP/1.1 200"):
        raise SystemExit("the page did not answer 200: %r" % data[:40])
    return time.monotonic() - t


def web(runs):
    log = os.path.join(tempfile.mkdtemp(prefix="hallclock-bench-"), "hall.jsonl")
    code = (f"LOG = {log!r}\nfrom hallclock.hall import display as projector\n"
            "srv = projector.make_server(LOG, '127.0.0.1', 0)\n"
            "print(srv.server_address[1], flush=True)\n"
            "from hallclock.hall.webserver import serve\nserve(srv)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env=_env(), preexec_fn=_laptop_files)
    try:
        address = ("127.0.0.1", int(p.stdout.readline()))
        quiet = [_get(address) for _ in range(runs)]
        socks = sockets(address, IDLE, SLOW)
        try:
            attacked = [_get(address) for _ in range(runs)]
        finally:
            for s in socks:
                s.close()
    finally:
        p.kill()
        p.wait()
    return {"page_get_quiet": _figures(quiet), "page_get_under_attack": _figures(attacked),
            "idle_connections": IDLE, "slow_connections": SLOW}


def stolen_clock(n=60000, seconds=7.0):
    """Attack C: a stolen clock's cfg floods fresh sealed sessions while
    another clock plays a dense game in real time (tests/mqttrig.py
    ``flood_beside_a_game``, asserted in tests/test_mqtt_attacks.py); the
    same game without the flood is the baseline, in the same run."""
    import re
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from mqttrig import Hall, flood_beside_a_game
    from hallclock.link.logfile import read_records
    from hallclock_fw.link import RESEND_MS
    out = {"flood_messages": n, "flood_seconds": seconds, "resend_timer_ms": RESEND_MS}
    failed = []
    for label, count in (("quiet", 0), ("flood", n)):
        folder = tempfile.mkdtemp(prefix="hallclock-bench-")
        os.chmod(folder, 0o711)
        hall = Hall(folder, clocks=("t1", "t2"))
        try:
            got = flood_beside_a_game(hall, folder, n=count, seconds=seconds)
        finally:
            hall.close()
        recs = read_records(got["log"])
        m = re.search(r"(\d+) bad lines dropped", got["stats"])
        over = re.search(r"(\d+) over a clock's queue", got["stats"])
        out[label] = {
            "innocent_longest_ack_wait_ms": round(got["wait_s"] * 1000, 1),
            "innocent_records": sum(1 for r in recs if r.get("clock") == "t1"),
            "innocent_gaps": sum(1 for r in recs if r.get("clock") == "t1"
                                 and r.get("event") == "gap"),
            "flooder_records_written": sum(1 for r in recs if r.get("clock") == "t2"),
            "flood_offered": got["offered"]["sent"],
            "flood_offered_s": got["offered"]["seconds"],
            "logger_dropped": (int(m.group(1)) if m else 0) + (int(over.group(1)) if over else 0),
            "logger_peak_rss_kib": got["logger_peak_kib"],
            "logger_stats": got["stats"]}
        if out[label]["innocent_records"] == 0:
            failed.append(f"{label}: nothing of the innocent clock was delivered")
    f = out["flood"]
    if f["flood_offered"] < n:
        failed.append(f"the flood offered {f['flood_offered']} of {n} messages")
    if f["logger_dropped"] < n // 2:
        failed.append(f"the logger saw {f['logger_dropped']} of the flood's {n} messages: "
                      "the flood was not delivered")
    out["failed"] = failed
    return out


def _say_flood(fig):
    q, f = fig["quiet"], fig["flood"]
    print(f"bench-attack: stolen clock's flood, {fig['flood_messages']} messages offered in "
          f"{f['flood_offered_s']} s ({f['flood_offered']} sent, {f['logger_dropped']} dropped "
          "by the logger)", file=sys.stderr)
    print(f"bench-attack: innocent clock's longest wait for an ack: {f['innocent_longest_ack_wait_ms']}"
          f" ms under the flood, {q['innocent_longest_ack_wait_ms']} ms without "
          f"(x{f['innocent_longest_ack_wait_ms'] / max(q['innocent_longest_ack_wait_ms'], 0.1):.1f});"
          f" its resend timer {fig['resend_timer_ms']} ms"
          f" ({'below' if f['innocent_longest_ack_wait_ms'] < fig['resend_timer_ms'] else 'NOT below'});"
          f" its gaps {f['innocent_gaps']}", file=sys.stderr)
    print(f"bench-attack: records written for the flooding clock: {f['flooder_records_written']}"
          f"; logger peak memory {f['logger_peak_rss_kib']} KiB under the flood, "
          f"{q['logger_peak_rss_kib']} KiB without", file=sys.stderr)
    for why in fig["failed"]:
        print(f"bench-attack: FAILED: {why}", file=sys.stderr)


def bench(runs=5, web_runs=20, flood=True):
    out = referee(runs)
    out.update(web(web_runs))
    import consoleapi  # attack D: the console's grid under eight read-API loops (10 MB log)
    out["console_grid_under_api_loop"] = consoleapi.bench()
    if flood:
        out["stolen_clock_flood"] = stolen_clock()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--flood-only", action="store_true",
                    help="only the stolen clock's flood (attack C)")
    args = ap.parse_args()
    if args.flood_only:
        out = {"stolen_clock_flood": stolen_clock()}
    else:
        out = bench(args.runs, 4 * args.runs)
    print(json.dumps(out, indent=2))
    _say_flood(out["stolen_clock_flood"])
    if out["stolen_clock_flood"]["failed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
