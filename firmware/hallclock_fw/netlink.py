"""The clock's link over the hall network: the same frames as on the USB
serial line, one frame per MQTT message (docs/network.md).

:class:`NetLink` is the ``uart`` the App's :class:`~hallclock_fw.link.DeviceLink`
writes to and reads from (``any``/``readinto``/``write``), so the ring, the
resends and the exactly-once bookkeeping are the serial link's own: only the
bytes travel differently.

    write(frame)   -> PUBLISH hallclock/<hall>/<clock>/up   (one frame each)
    hallclock/<hall>/<clock>/down, hallclock/<hall>/all/down -> readinto()

It never waits: the network is driven by :meth:`service` (called from
``any()``, i.e. once per pass of the loop, or by whoever runs the loop), which
does a bounded amount of work.  When Wi-Fi or the broker is away, frames are
dropped (the DeviceLink keeps every event until the host has stored it and
sends it again); reconnects back off from _BACKOFF_MIN_MS to _BACKOFF_MAX_MS.
Once connected again the link hands the DeviceLink a ``W`` frame, so it says
hello and resends at once instead of waiting for its resend timer.

Every message is sealed (hallclock_fw/seal.py, docs/protocol.md "Sealed
frames on the network"): what the DeviceLink writes leaves under the clock's
key; what comes in reaches the inbox only with a sound tag, a fresh counter
and the right to send it (least authority, docs/network.md "Frames and
rights"): from the clock's own ``down`` any host frame but ``M`` (maintenance
is the serial console's only), from ``all/down`` only the referee's START,
GONG and PAUSE presses and the round's ``N``.  Everything else is counted in
``refused`` and dropped.

Pure: ``opener(now)`` is handed in and returns a non-blocking socket that is
connecting to the broker (or None while Wi-Fi is not up; False: not now,
TLS waits for a calm moment of the clock, tlslink.py): ``hw/wifi.py`` on
the board, plain CPython or MicroPython-unix sockets on the host.
"""
from micropython import const

try:  # for the type checker's annotations only (MicroPython has no typing)
    from typing import Any
except ImportError:
    pass

from binascii import hexlify

from . import mqtt, protocol, seal
from .core.timing import ticks_add, ticks_diff
from .events import BTN_GONG, BTN_PAUSE, BTN_START

# ``_NAME = const()``: no interned name, no RAM on the board (docs/micropython.md)
# why the link is down, past mqtt.py's own codes (whytext.py has the words)
_W_CONNECT = const(17)
_W_NO_WIFI = const(18)
_W_DROPPED = const(19)
_BACKOFF_MIN_MS = const(250)
_BACKOFF_MAX_MS = const(8000)
_INBOX_MAX = const(1024)  # bytes from the host not yet read by the DeviceLink
_KEEPALIVE_S = const(15)
_ALL_WINDOW_MS = const(60000)  # an all/down frame older than this before the newest D frame is refused
_NUDGE_MS = const(1000)  # a stale host frame asks for a hello at most this often
# what all/down may carry: the referee's presses (C <button> 0) and the round (N)
_ALL_PRESSES = (b"C %d 0" % BTN_START, b"C %d 0" % BTN_GONG, b"C %d 0" % BTN_PAUSE)


def _link_sid():
    """8 random hex digits: the ESP32's hardware RNG (os.urandom); the
    webassembly VM, which has no os.urandom, seeds ``random`` itself."""
    try:
        from os import urandom
        raw = urandom(4)
    except ImportError:
        from random import getrandbits
        raw = bytes(getrandbits(8) for _ in range(4))
    return hexlify(raw).decode()


def topic(hall, clock, direction):
    return "hallclock/%s/%s/%s" % (hall, clock, direction)


def shed():
    """On MicroPython, once the clock's one link is built (hw/wifi.link on
    the board, and the board's models): the code that only built it is
    dropped from the heap (docs/micropython.md "Boot-only code"): the work
    of the NetLink's and the MQTT client's constructors (``_build``), the
    CONNECT packet's builder, the keys' parser, the session id's draw, the
    topic names' format, and this function.  Nothing on a clock builds a
    second link.  The host (CPython), which builds many, keeps them.
    (Module functions: a class's method deleted frees no code in the VM.)"""
    from .forget import forget
    forget("hallclock_fw.mqtt", "connect_packet", "_build")
    forget("hallclock_fw.seal", "key_bytes")
    forget(__name__, "_link_sid", "topic", "_build", "shed")


class NetLink:
    # one frame a pass: a sealed frame's garbage is collected before the next (docs/micropython.md)
    burst = 1

    # the attributes _build sets (for the type checker; no code on the board)
    client: "mqtt.Client"
    up_topic: bytes
    down_topic: bytes
    mac: "seal.Mac"
    hall_mac: "seal.Mac"
    inbox: bytearray
    opener: "Any"
    ticks: "Any"
    sid: str
    keep: "Any"

    def __init__(self, *args, **kw):
        # the work is _build's: a module function, so netlink.shed can drop its code
        _build(self, *args, **kw)

    # -- the uart the DeviceLink sees -----------------------------------------
    def any(self):
        self.service(self.ticks())
        return len(self.inbox)

    def readinto(self, buf):
        n = len(self.inbox)
        if not n:
            return None
        if n > len(buf):
            n = len(buf)
        buf[0:n] = self.inbox[0:n]
        self.inbox[0:n] = b""
        return n

    def kbd_intr(self, char):
        """Not the console: the USB console keeps its Ctrl-C for mpremote
        (hw/device.py turns it off only where the link is the console)."""
        return None

    def write(self, data):
        """One frame (the DeviceLink writes whole frames) -> one message.
        Several frames in one call are split at their newlines."""
        if self.client.state != mqtt.UP:
            # not up: nothing is sealed (only garbage); the DeviceLink sends it again later
            self.client.dropped += 1
            return len(data)
        start = 0
        while start < len(data):
            nl = data.find(b"\n", start)
            end = len(data) if nl < 0 else nl + 1
            self.sent += 1
            # one frame (the usual write): sealed as it is, not copied first
            frame = data if start == 0 and end == len(data) else data[start:end]
            # the newest host counter rides along: a fresh host's challenge, answered as no replay can
            self.client.publish(self.up_topic, seal.seal(
                self.mac, b"U", frame, "%s:%d" % (self.sid, self.down_ctr), self.sent))
            start = end
        return len(data)

    def connected(self):
        return self.client.state == mqtt.UP

    # -- the network ---------------------------------------------------------
    def _message(self, topic, body):
        """A message from the broker: into the inbox only if sealed by its
        sender, fresh, and within that sender's rights."""
        self.took += 1
        if topic == self.down_topic:
            got = seal.open_sealed(self.mac, b"D", body)
            if got is None:
                self.refused += 1
                return
            frame, sid, ctr = got
            if sid != self.sid or ctr <= self.down_ctr:
                # an earlier boot's or already taken (a replay, a host behind): it hears a hello
                self.refused += 1
                if ticks_diff(self.ticks(), self.nudged) >= _NUDGE_MS:
                    self.nudged = self.ticks()  # ... at most every _NUDGE_MS
                    self._take(protocol.who())
                return
            if frame.startswith(b"M"):  # maintenance: the serial console's only
                self.refused += 1
                return
            self.down_ctr = ctr
        else:
            got = seal.open_sealed(self.hall_mac, b"A", body)
            if got is None or got[1] != "all":
                self.refused += 1
                return
            frame, _sid, ctr = got
            star = frame.find(b"*")
            body = frame[:star] if star > 0 else frame  # the referee's rights:
            if ctr <= self.all_ctr or ctr <= self.down_ctr - _ALL_WINDOW_MS \
                    or not (body in _ALL_PRESSES or body.startswith(b"N ")):
                self.refused += 1
                return
            self.all_ctr = ctr
            if self.keep is not None:
                self.keep(ctr)  # in flash: after a reboot no older signal is taken
        self._take(frame)

    def _take(self, payload):
        if len(self.inbox) + len(payload) + 1 > _INBOX_MAX:
            self.dropped_in += 1  # the host repeats what matters
            return
        self.inbox.extend(payload)
        if not payload.endswith(b"\n"):
            self.inbox.append(10)

    def service(self, now):
        """Bounded work: (re)connect when due, move bytes, notice a dead link."""
        c = self.client
        if c.state == mqtt.IDLE or c.state == mqtt.DEAD:
            if c.state == mqtt.DEAD:
                self._lost(c.why, now)
            if ticks_diff(now, self.retry_at) < 0:
                return
            try:
                sock = self.opener(now)
            except OSError as e:
                self._lost(_W_CONNECT | e.args[0] << 5, now)
                return
            if sock is False:  # TLS: not now, a deadline is near (tlslink.py)
                return
            if sock is None:
                self._lost(_W_NO_WIFI, now)
                return
            c.start(sock, now)
        c.poll(now)
        if c.state == mqtt.UP:
            if not self.was_up:
                self.was_up = True
                self.connects += 1
                self.backoff = _BACKOFF_MIN_MS
                self._take(protocol.who())  # hello and resend now
        elif c.state == mqtt.DEAD:
            self._lost(c.why, now)

    def _lost(self, why, now):
        c = self.client
        if c.state == mqtt.DEAD:
            c.state = mqtt.IDLE
        if self.was_up or why is not None:
            self.failures += 1
        self.was_up = False
        self.why = why
        self.retry_at = ticks_add(now, self.backoff)
        self.backoff = self.backoff * 2 if self.backoff < _BACKOFF_MAX_MS // 2 else _BACKOFF_MAX_MS

    def drop(self, now):
        """The socket is gone under us (Wi-Fi dropped): close it, reconnect
        with backoff."""
        self.client.close()
        self._lost(_W_DROPPED, now)

    def close(self):
        self.client.disconnect()


def _build(self, hall, clock, user, password, opener, ticks, keepalive_s=_KEEPALIVE_S,
           key=None, hall_key=None, sid=None, all_ctr=0, keep=None):
    """``NetLink(...)``'s work (see the class)."""
    if key is None or hall_key is None:
        raise ValueError("the hall network needs the clock's key and the hall's key "
                         "(key, hall_key: broker-config writes them)")
    self.up_topic = topic(hall, clock, "up").encode()
    self.down_topic = topic(hall, clock, "down").encode()
    self.opener = opener
    self.ticks = ticks
    self.mac = seal.Mac(seal.key_bytes(key))  # made once: our topics, both ways
    self.hall_mac = seal.Mac(seal.key_bytes(hall_key))  # all/down
    self.sid = sid or _link_sid()  # this boot's link session
    self.sent = 0  # the counter of our last message (U)
    self.down_ctr = 0  # the host's counter last taken (D)
    self.all_ctr = all_ctr  # the referee's counter last taken (A), kept across reboots
    self.keep = keep  # keep(ctr): the board saves a signal's counter taken (hw/wifi.py)
    self.refused = 0  # messages dropped: bad tag, stale, or not the sender's right
    self.took = 0  # messages from the broker looked at (the App's pass split, app.py)
    self.nudged = ticks_add(ticks(), -_NUDGE_MS)
    # the last will (counter 0: fixed at connect): the broker says "lost" when we vanish
    will = seal.seal(self.mac, b"U", protocol.lost(), self.sid, 0)
    self.client = mqtt.Client(clock, user, password, keepalive_s,
                              (topic(hall, clock, "down"), topic(hall, "all", "down")),
                              self._message, will=(self.up_topic, will))
    self.inbox = bytearray()
    self.backoff = _BACKOFF_MIN_MS
    self.retry_at = ticks()
    self.was_up = False
    self.connects = 0  # connections made (the first one included)
    self.failures = 0
    self.why = None  # why the last connection ended: a code (whytext.py)
    self.dropped_in = 0  # host bytes dropped (inbox full)
