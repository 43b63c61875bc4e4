"""The virtual device on the hall network: the Runner's UART bytes go through
the firmware's own network link (``hallclock_fw.netlink`` and its MQTT client,
exactly as on the board) over a real TCP socket to the broker.

MicroPython-compatible (sockets, ``select.poll``, integer ticks), so the same
pump runs under CPython and inside the MicroPython unix port.

Time: the device's simulated time runs as fast as the host keeps up, paced as
on the serial line (``hallclock.virtual.pump``): after new events the pump
waits up to ``ack_wait_ms`` (real time) for the host's acknowledgement; after
the scenario's ``end`` it runs at the real rate.  The network link itself
(reconnect backoff, keepalive) runs on real time, like the board's.  It gives
up after ``silence_ms`` of real time without a message from the host.
"""
import errno
import select
import socket
import time

from hallclock_fw import protocol
from hallclock_fw.core.timing import ticks_add, ticks_diff
from hallclock_fw.netlink import NetLink

from .runner import DONE, RUNNING

try:
    ticks_ms = time.ticks_ms  # MicroPython
except AttributeError:
    def ticks_ms():
        return int(time.monotonic() * 1000) & 0x3FFFFFFF

SILENCE_MS = 30000
_STARTING = (getattr(errno, "EINPROGRESS", 115), getattr(errno, "EAGAIN", 11),
             getattr(errno, "EWOULDBLOCK", 11))


def opener(host, port, wrap=None):
    """``opener(now)`` for NetLink: a non-blocking socket connecting to the
    broker.  ``wrap(sock)`` may wrap it (TLS)."""
    addr = socket.getaddrinfo(host, port)[0][-1]

    def open_socket(_now):
        s = socket.socket()
        s.setblocking(False)
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


def _wait(net, ms):
    """Sleep up to ``ms`` or until the broker sends something."""
    sock = net.client.sock
    pending = getattr(sock, "pending", None)  # a TLS socket's decrypted bytes
    if pending is not None and pending():
        return
    if sock is None or ms <= 0:
        if ms > 0:
            time.sleep(ms / 1000)
        return
    p = select.poll()
    p.register(sock, select.POLLIN)
    p.poll(ms)


def _feed(runner, net, buf, acked):
    """Move the host's frames to the device; the newest seq they acknowledge."""
    n = net.readinto(buf)
    data = bytes(buf[:n])
    runner.feed(data)
    start = 0
    while True:
        nl = data.find(b"\n", start)
        if nl < 0:
            return acked
        if data[start:start + 2] == b"A ":
            tokens = protocol.check(protocol.unframe(data[start:nl + 1]))
            if tokens is not None and int(tokens[2]) > acked:
                acked = int(tokens[2])
        start = nl + 1


def pump(runner, net, silence_ms=SILENCE_MS, ack_wait_ms=50, connect_ms=SILENCE_MS,
         stop=None, after_pass=None):
    """Run ``runner`` over ``net`` until the host has every event (True) or
    the host has been silent for ``silence_ms`` (False)."""
    buf = bytearray(512)
    t = ticks_ms()
    # a virtual clock's game begins once it is on the network (a board's
    # would run regardless, its events kept in the ring)
    while not net.connected():
        net.service(ticks_ms())
        if ticks_diff(ticks_ms(), t) > connect_ms or (stop is not None and stop()):
            return False
        _wait(net, 20)
    last_contact = ticks_ms()
    last_real = last_contact
    status = RUNNING
    acked = 0  # the newest event the host's A frames covered
    seen = 0  # the newest event already waited for
    while True:
        if stop is not None and stop():
            return False
        out = runner.take_output()
        if out:
            net.write(out)
        net.service(ticks_ms())
        got = False
        if net.inbox:
            acked = _feed(runner, net, buf, acked)
            got = True
        seq = runner.last_seq()
        if seq < acked:
            acked = 0  # a new session (reboot): its numbers start again
        if status == RUNNING and seq != seen and seq > acked and runner.pending():
            seen = seq
            # pace simulated time on the host: wait (real time) for the ack
            # of this pass's events before moving on
            until = ticks_add(ticks_ms(), ack_wait_ms)
            while acked < seq:
                left = ticks_diff(until, ticks_ms())
                if left <= 0:
                    break
                _wait(net, left)
                net.service(ticks_ms())
                if net.inbox:
                    acked = _feed(runner, net, buf, acked)
                    got = True
        elif not got and status != RUNNING:
            _wait(net, 20)
            net.service(ticks_ms())
            if net.inbox:
                acked = _feed(runner, net, buf, acked)
                got = True
        now = ticks_ms()
        if got:
            last_contact = now
        if status == DONE:
            net.service(now)
            return True
        if ticks_diff(now, last_contact) > silence_ms:
            return False
        if status == RUNNING:
            status = runner.step()
        else:
            status = runner.advance(max(1, ticks_diff(now, last_real)))
        last_real = now
        if after_pass is not None:
            after_pass()


def deadline(ms):
    return ticks_add(ticks_ms(), ms)


def paced_pump(runner, net, t0, speed, stop=None, silence_ms=SILENCE_MS):
    """Run the device against real time on the network, like
    ``hallclock.relay.paced_pump`` on a pty: simulated ms = (ticks - ``t0``)
    × ``speed``, with ``t0`` shared by every clock of a hall so their
    ``t_ms`` compare.  A pass happens when the device's next wake is due or
    the host's frames arrive (then at the current time, as a board woken by
    its socket).  Returns True once the host has every event."""
    buf = bytearray(512)
    while not net.connected():  # on the network before the hall starts
        net.service(ticks_ms())
        if stop is not None and stop():
            return False
        _wait(net, 20)
    status = RUNNING
    last_contact = ticks_ms()
    while True:
        if stop is not None and stop():
            return False
        out = runner.take_output()
        if out:
            net.write(out)
        net.service(ticks_ms())
        if status == DONE:
            return True
        now = int(ticks_diff(ticks_ms(), t0) * speed)
        target = runner.ms if status == RUNNING else now + max(1, int(20 * speed))
        got = False
        if not net.inbox and now < target:
            wait = int((target - now) / speed)
            _wait(net, wait if wait < 50 else 50)
            net.service(ticks_ms())
            now = int(ticks_diff(ticks_ms(), t0) * speed)
        if net.inbox:
            n = net.readinto(buf)
            runner.feed(bytes(buf[:n]))
            got = True
            last_contact = ticks_ms()
        if status != RUNNING:
            if now > runner.ms:
                runner.ms = now
            status = runner.step()
            if ticks_diff(ticks_ms(), last_contact) > silence_ms:
                return False
        elif got or now >= target:
            if now < target:
                runner.ms = now  # woken by the host: a pass now
            status = runner.step()


def main(scenario, host, port, hall, clock, user, password, sid, silence_ms=SILENCE_MS,
         link_key=None, hall_key=None):
    """The device on the network inside the MicroPython unix port (its own
    process): the scenario from a JSON file, the firmware's NetLink on the
    unix port's own sockets.  Exit 0 once the host has every event, 3 after
    ``silence_ms`` without host contact."""
    import json
    import sys

    from .runner import Runner
    with open(scenario) as f:
        spec = json.load(f)
    settings = {}
    for key, value in spec["settings"].items():  # JSON has lists where settings hold tuples
        settings[key] = tuple(value) if isinstance(value, list) else value
    actions = [(a[0], a[1], tuple(a[2]) if isinstance(a[2], list) else a[2])
               for a in spec["actions"]]
    runner = Runner(spec["mode"], settings, actions, clock=clock, sid=sid)
    net = NetLink(hall, clock, user, password, opener(host, port), ticks_ms, key=link_key,
                  hall_key=hall_key)
    ok = pump(runner, net, silence_ms=silence_ms, connect_ms=silence_ms)
    net.close()
    if not ok:
        sys.exit(3)
