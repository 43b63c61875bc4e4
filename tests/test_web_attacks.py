"""The laptop's two web pages (the projector's ``hall-display``, the
referee's ``console``) keep serving whatever a client does to them
(docs/network.md, "Threat model"): 1 000 idle connections and a hundred slow
ones (a request head sent in part, then nothing) leave a new request
answered; a ``Host`` that is not this machine is refused; the pages listen on
127.0.0.1 unless told otherwise.

Each server runs in a process of its own with the 1 024 open files a laptop's
shell gives (more idle connections than it can hold open at once).
"""
import os
import resource
import socket
import subprocess
import sys
import time

import pytest

from conftest import ROOT

IDLE = 1000
SLOW = 100
LAPTOP_FILES = 1024
SERVERS = {
    "hall-display": "from hallclock.hall import display as m\n"
                    "srv = m.make_server(LOG, '127.0.0.1', 0)\n",
    "console": "from hallclock.hall import referee as m\n"
               "srv = m.make_server(LOG, '127.0.0.1', 0, token='t0ken')\n",
}
RUN = "print(srv.server_address[1], flush=True)\nfrom hallclock.hall.webserver import serve\nserve(srv)\n"


def _laptop_files():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(LAPTOP_FILES, hard), hard))


@pytest.fixture(params=sorted(SERVERS))
def server(request, tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"), os.path.join(ROOT, "firmware"),
                                         env.get("PYTHONPATH", "")])
    code = f"LOG = {str(tmp_path / 'hall.jsonl')!r}\n" + SERVERS[request.param] + RUN
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env=env, preexec_fn=_laptop_files)
    try:
        port = int(p.stdout.readline())
        yield ("127.0.0.1", port)
    finally:
        p.kill()
        p.wait()


def get(address, path="/", host=None, timeout=60.0):
    """(status, seconds) of one GET on a fresh connection."""
    t = time.monotonic()
    with socket.create_connection(address, timeout=timeout) as s:
        h = host if host is not None else "%s:%d" % address
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else None
    return status, time.monotonic() - t


def attackers(address, idle=IDLE, slow=SLOW):
    """``idle`` connections that send nothing, ``slow`` that send half a head
    (the benchmark's own attack, bench/netattack.py)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from netattack import sockets
    return sockets(address, idle, slow)


def test_idle_and_slow_connections_leave_the_page_served(server):
    assert get(server)[0] == 200
    socks = attackers(server)
    try:
        for _ in range(10):  # fresh requests, one after another, while the attack holds
            status, _took = get(server)
            assert status == 200
    finally:
        for s in socks:
            s.close()


def test_a_host_that_is_not_this_machine_is_refused(server):
    assert get(server, host="evil.example")[0] == 421  # DNS rebinding
    assert get(server, host="evil.example:%d" % server[1])[0] == 421
    assert get(server, host="")[0] in (400, 421)
    for ok in ("localhost:%d" % server[1], "127.0.0.1", "[::1]:%d" % server[1],
               socket.gethostname()):
        assert get(server, host=ok)[0] == 200, ok


def test_the_pages_listen_on_this_machine_unless_told():
    from hallclock.cli import build_parser
    for argv in (["console", "--log", "x.jsonl"], ["hall-display", "--log", "x.jsonl"]):
        assert build_parser().parse_args(argv).host == "127.0.0.1"


@pytest.fixture
def small_server(tmp_path):
    """The projector's server in this process, with a short request deadline
    and a small waiting room (the same code as REQUEST_S / MAX_WAITING)."""
    import threading

    from hallclock.hall import display as projector
    srv = projector.make_server(str(tmp_path / "hall.jsonl"), "127.0.0.1", 0)
    srv.request_s = 0.5
    srv.max_waiting = 4
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _closed_by_server(s, timeout=60.0):
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_a_request_not_in_within_the_deadline_is_dropped(small_server):
    address = small_server.server_address[:2]
    s = socket.create_connection(address)
    s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
    assert _closed_by_server(s)
    s.close()
    assert small_server.dropped >= 1
    assert get(address)[0] == 200


def test_the_oldest_waiting_connection_makes_room_for_a_new_one(small_server):
    address = small_server.server_address[:2]
    small_server.request_s = 60.0  # only the waiting room's bound drops them now
    idle = [socket.create_connection(address) for _ in range(6)]
    try:
        assert _closed_by_server(idle[0]) and _closed_by_server(idle[1])
        assert get(address)[0] == 200  # a new request, with the room full of idle ones
    finally:
        for s in idle:
            s.close()
