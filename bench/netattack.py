"""The hall network under attack, timed (docs/network.md, "Threat model"):

- ``referee START`` (the CLI, a fresh connection on the laptop's listener)
  with and without 1 100 idle sockets on the hall's listener, the broker
  holding the 1 024 files a laptop's shell gives it;
- a GET of the projector's page with and without 1 000 idle and 100 slow
  connections on it (the server process with 1 024 files too).

Figures only; the behaviour is asserted in tests/test_mqtt_attacks.py and
tests/test_web_attacks.py.

    .venv/bin/python bench/netattack.py [--runs N]     (make bench-attack)
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


def bench(runs=5, web_runs=20):
    out = referee(runs)
    out.update(web(web_runs))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(json.dumps(bench(args.runs, 4 * args.runs), indent=2))


if __name__ == "__main__":
    main()
