"""The virtual device on the hall network: the Runner's UART bytes go through
the firmware's own network link (``hallclock_fw.netlink`` and its MQTT client,
exactly as on the board) over a real TCP socket to the broker.

MicroPython-compatible (sockets, ``select.poll``, integer ticks), so the same
pump runs under CPython and inside the MicroPython unix port.

The line (:class:`NetLine`) goes into the one pump (``pump.py``): simulated
time (``SimPace(HOLD_MS)``: after new events the pump waits up to
``HOLD_MS`` real ms for the host's acknowledgement, then runs on) or real
time (``RealPace``, the virtual hall).  The network link itself (reconnect
backoff, keepalive) runs on real time, like the board's.
"""
import errno
import select
import socket
import time

from hallclock_fw.netlink import NetLink

from . import scenariofile
from .pump import SILENCE_MS, SimPace, pump

try:
    ticks_ms = time.ticks_ms  # MicroPython
except AttributeError:
    def ticks_ms():
        return int(time.monotonic() * 1000) & 0x3FFFFFFF

HOLD_MS = 50  # simulated time waits this long (real) for the host's ack, then runs on
_STARTING = (getattr(errno, "EINPROGRESS", 115), getattr(errno, "EAGAIN", 11),
             getattr(errno, "EWOULDBLOCK", 11))


def opener(host, port, wrap=None):
    """``opener(now)`` for NetLink: a non-blocking socket connecting to the
    broker.  ``wrap(sock)`` may wrap it (TLS)."""
    addr = socket.getaddrinfo(host, port)[0][-1]

    def open_socket(_now):
        s = socket.socket()
        s.setblocking(False)
        try:  # each frame leaves at once (Nagle holds it for the last one's TCP ack)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except (AttributeError, OSError):
            pass
        try:
            s.connect(addr)
        except OSError as e:
            if e.args[0] not in _STARTING:
                s.close()
                raise
        return wrap(s) if wrap is not None else s
    return open_socket


def make_link(host, port, hall, clock, creds):
    return NetLink(hall, clock, creds["user"], creds["password"], opener(host, port), ticks_ms,
                   key=creds.get("key"), hall_key=creds.get("hall_key"))


class NetLine:
    """The pump's line on the hall network: the firmware's own NetLink (its
    MQTT client on a non-blocking socket, serviced on real ticks)."""

    def __init__(self, net):
        self.net = net
        self.buf = bytearray(512)

    def ready(self):
        self.net.service(ticks_ms())
        return self.net.connected()

    def send(self, data):
        if data:
            self.net.write(data)

    def receive(self):
        net = self.net
        net.service(ticks_ms())
        if not net.inbox:
            return b""
        n = net.readinto(self.buf)
        return bytes(self.buf[:n])

    def wait(self, ms):
        """Sleep up to ``ms`` or until the broker sends something."""
        sock = self.net.client.sock
        pending = getattr(sock, "pending", None)  # a TLS socket's decrypted bytes
        if pending is not None and pending():
            return
        if sock is None:
            time.sleep(ms / 1000)
            return
        p = select.poll()
        p.register(sock, select.POLLIN)
        p.poll(ms)

    def sent_all(self):
        self.net.service(ticks_ms())
        return True

    def close(self):
        self.net.close()


class _Cfg:
    """The part of hw/config.py's Config that tlslink.opener reads."""

    def __init__(self, net):
        self.net = net
        self.error = None
        self.code = 0


def main(scenario, host, port, hall, clock, user, password, sid, silence_ms=SILENCE_MS,
         link_key=None, hall_key=None, board_free=None, harness=0, tls_ca=None):
    """The device on the network inside the MicroPython unix port (its own
    process): the scenario from a JSON file, the firmware's NetLink on the
    unix port's own sockets.  ``board_free``: after boot (the App and its
    NetLink built) a ballast leaves the clock only the free heap a board of
    ``--heap-kib`` has (and ``harness`` bytes for the pump's garbage), as the
    serial unix device does (unixhw.fill_heap).  Exit 0 once the host has
    every event, 3 after ``silence_ms`` without host contact, 4 (and
    ``@@memory`` on stderr) when the heap is too small.  ``tls_ca``: the
    hall's CA (a DER file), pinned: TLS to the broker through the firmware's
    own ``tlslink`` (as hw/wifi.link builds it on a board)."""
    import sys

    from .runner import Runner
    ballast = None
    try:
        mode, settings, actions = scenariofile.load(scenario)
        runner = Runner(mode, settings, actions, clock=clock, sid=sid)
        net = NetLink(hall, clock, user, password, opener(host, port), ticks_ms,
                      key=link_key, hall_key=hall_key)
        if tls_ca is not None:  # as hw/esp32rare.use_network: the cfg's CA pinned
            from hallclock_fw import tlslink
            cfg = _Cfg({"tls_ca_file": tls_ca, "broker": "%s:%d" % (host, port)})
            wrap = tlslink.opener(cfg)
            if wrap is None:
                sys.stderr.write(cfg.error + "\n")
                sys.exit(2)
            net.opener = wrap(net.opener)
            # as hw/boot.py on a board (the App's time: its last pass's)
            tlslink._minded_clock = (lambda: runner.app, lambda: runner.clock.now)
        line = NetLine(net)
        from hallclock_fw.netlink import shed
        shed()  # as hw/wifi.link on a board: the code that built the link dropped
        if board_free is not None:
            from .unixhw import fill_heap
            ballast = fill_heap(board_free, harness)
        ok = pump(runner, line, SimPace(HOLD_MS), silence_ms=silence_ms, connect_ms=silence_ms)
    except MemoryError as e:
        ballast = None
        sys.print_exception(e, sys.stderr)
        sys.stderr.write("@@memory\n")
        sys.exit(4)
    ballast = None
    line.close()
    if not ok:
        why = line.net.why or line.net.client.why
        if why is not None:  # why the link ended (the host words it: whytext.py)
            sys.stderr.write("@@why %d\n" % why)
        sys.exit(3)
