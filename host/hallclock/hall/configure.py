"""Central settings over the hall's serial ports (``hallclock configure``).

For every port: ask who is there (``W``: the clock answers with its hello and
sends again what the host has not acknowledged), let that resend settle, send
the settings (``K <mode> <settings>``, the firmware's own frame), and read the
clock's answer: a ``settings`` event (taken) or a ``refused`` event with
``what`` = settings and its ``reason`` (a game is running, or the clock found
the values bad).

Nothing is acknowledged: the clock keeps every event, these answers included,
until a logger has stored them (``hallclock round start`` / ``log`` /
``hall``), so the log gets the ``settings`` record when the logger runs.  The
ports are this command's while it runs: run it before the round's logger
takes them (over the hall network both can run at once).

Timing is bounded by ``time.monotonic()``: the hello is awaited ``wait_s``,
the resend settles after ``QUIET_S`` without a new event (at most
``SETTLE_MAX_S``), the answer is awaited ``wait_s``.
"""
import selectors
import time

from hallclock_fw import protocol
from .. import hostframes

from .. import catalog
from ..link.transport import Port

QUIET_S = 0.3
SETTLE_MAX_S = 2.0
WHO_EVERY_S = 1.0


class Peer:
    """One port's clock, as far as configure is concerned."""

    def __init__(self, path):
        self.path = path
        self.port = Port(path)
        self.buf = bytearray()
        self.clock = None
        self.sid = None
        self.mode = None
        self.proto = None
        self.seen_seq = 0  # highest event seq seen of the session
        self.last_event_at = None
        self.baseline = None  # seen_seq when K was sent: answers come after it
        self.sent_at = None
        self.result = None  # ("taken", text) / ("refused", reason) / ("no answer", why)
        self.asked_at = 0.0
        self.send = None  # bytes -> None: to this clock (a port, or its down topic)

    def feed(self, data, now):
        self.buf.extend(data)
        while True:
            nl = self.buf.find(b"\n")
            if nl < 0:
                break
            line = bytes(self.buf[:nl + 1])
            del self.buf[:nl + 1]
            self._line(line, now)
        if len(self.buf) > protocol.MAX_LINE + 2:
            del self.buf[:-(protocol.MAX_LINE + 2)]

    def _line(self, line, now):
        tokens = protocol.check(protocol.unframe(line))
        if tokens is None:
            return
        if tokens[0] == "H":
            if self.sid != tokens[1]:
                self.sid, self.clock, self.mode = tokens[1], tokens[2], tokens[3]
                self.proto = tokens[5] if len(tokens) > 5 else "1"  # as hostlink reads it
                self.seen_seq = 0
                self.last_event_at = now
                if self.baseline is not None and self.result is None:
                    self.result = ("no answer", "the clock restarted before it answered")
            return
        if tokens[0] != "E" or tokens[1] != self.sid:
            return
        seq, _t, name, values, text = catalog.event_fields(tokens)
        if self.baseline is not None and seq > self.baseline and self.result is None:
            if name == "settings":
                self.result = ("taken", text or "")
            elif name == "refused" and values.get("what") == "settings":
                self.result = ("refused", values.get("reason") or "refused")
        if seq > self.seen_seq:
            self.seen_seq = seq
            self.last_event_at = now


REASON_TEXT = {"game_running": "a game is running (the clock takes settings only before "
               "the first move or after the game)",
               "bad_settings": "the clock found the settings bad (unknown mode or value)"}


def configure(paths, mode, settings_text, clocks=None, wait_s=3.0, clock=time.monotonic):
    """Send the settings to the clocks on the serial ``paths`` (only those
    named in ``clocks``, if given).  Returns [(clock or None, path, status,
    detail)], status one of taken / refused / no answer / not asked."""
    peers = [Peer(p) for p in paths]
    for peer in peers:
        peer.port.open()  # BadInput (exit 2) for a port that cannot be opened
        peer.send = peer.port.write
    sel = selectors.DefaultSelector()
    for i, peer in enumerate(peers):
        sel.register(peer.port.fileno(), selectors.EVENT_READ, i)

    def read(timeout):
        got = []
        for key, _ev in sel.select(timeout):
            peer = peers[key.data]
            data = peer.port.read(ready=True)
            if data:
                got.append((peer, data))
            elif peer.port.ser is None:  # the port hung up (unplugged)
                sel.unregister(key.fd)
                if peer.result is None:
                    peer.result = ("no answer", "the port went away")
        for peer in peers:
            peer.port.flush_out()
        return got

    try:
        _exchange(peers, hostframes.configure(mode, settings_text), clocks, wait_s, clock, read)
    finally:
        sel.close()
        for peer in peers:
            peer.port.drain()
            peer.port.close()
    return _results(peers, clocks)


def configure_broker(address, hall, credentials, mode, settings_text, clocks=None,
                     wait_s=3.0, tls=None, clock=time.monotonic):
    """The same over the hall network: the clocks named (default: every clock
    of ``credentials``), each asked on its own ``down`` topic, answers read
    from the ``up`` topics (as the hall's ``logger`` client, which may
    write to every clock; nothing is acknowledged, so a logger running
    beside stores the answers as usual)."""
    from hallclock_fw.netlink import topic

    from ..net.broker import clocks_of, load_credentials
    from ..net.mqtt import BrokerClient, _clock_of
    from ..net.seal import ClockSeal, clock_mac
    creds = load_credentials(credentials, "logger")
    names = sorted(clocks) if clocks else clocks_of(creds)
    net = BrokerClient(address, creds["logger"], [topic(hall, "+", "up")], tls=tls)
    net.start()
    peers = []
    by_name = {}
    for name in names:
        peer = Peer(topic(hall, name, "up"))
        peer.clock = name  # the topic names it; its hello says the same
        peer.seal = ClockSeal(clock_mac(creds, name),
                              send=lambda m, t=topic(hall, name, "down"): net.publish(t, m))
        peer.send = (lambda data, t=topic(hall, name, "down"), s=peer.seal:
                     [net.publish(t, m) for m in s.seal_down(data)])
        peers.append(peer)
        by_name[name] = peer

    def read(timeout):
        net.wait(timeout)
        got = []
        for name, payload in net.messages():
            peer = by_name.get(_clock_of(hall, name))
            if peer is not None:
                frame = peer.seal.open_up(payload)  # None: not the clock's, or a replay
                if frame is not None:
                    got.append((peer, frame))
        return got

    try:
        _exchange(peers, hostframes.configure(mode, settings_text), None, wait_s, clock, read)
    finally:
        net.stop()
    return _results(peers, None)


def _exchange(peers, frame, clocks, wait_s, clock, read):
    start = clock()
    deadline_hello = start + wait_s
    while True:
        now = clock()
        pending = False
        for peer in peers:
            if peer.result is not None:
                continue
            if peer.sid is None:
                if now >= deadline_hello:
                    peer.result = ("no answer", "no clock answered here")
                    continue
                pending = True
                if now - peer.asked_at >= WHO_EVERY_S:
                    peer.asked_at = now
                    peer.send(protocol.who())
                continue
            if clocks and peer.clock not in clocks:
                peer.result = ("not asked", "not named by --clock")
                continue
            if peer.proto != protocol.PROTO:
                peer.result = ("no answer", f"the clock speaks protocol {peer.proto}, this "
                               f"hallclock {protocol.PROTO}: update one of them")
                continue
            pending = True
            if peer.baseline is None:
                quiet = now - peer.last_event_at >= QUIET_S
                if quiet or now - start >= SETTLE_MAX_S + wait_s:
                    peer.baseline = peer.seen_seq
                    peer.sent_at = now
                    peer.send(frame)
            elif now - peer.sent_at >= wait_s:
                peer.result = ("no answer", f"no settings or refused event within {wait_s:g} s")
        if not pending:
            return
        for peer, data in read(0.02):
            peer.feed(data, clock())


def _results(peers, clocks):
    out = []
    for peer in peers:
        status, detail = peer.result
        out.append((peer.clock, peer.path, status, detail))
    if clocks:
        heard = {p.clock for p in peers}
        for name in sorted(clocks):
            if name not in heard:
                out.append((name, None, "no answer", "not heard on any port"))
    return out
