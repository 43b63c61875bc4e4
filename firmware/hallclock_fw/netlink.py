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
sends it again); reconnects back off from BACKOFF_MIN_MS to BACKOFF_MAX_MS.
Once connected again the link hands the DeviceLink a ``W`` frame, so it says
hello and resends at once instead of waiting for its resend timer.

Pure: ``opener(now)`` is handed in and returns a non-blocking socket that is
connecting to the broker (or None while Wi-Fi is not up): ``hw/wifi.py`` on
the board, plain CPython or MicroPython-unix sockets on the host.
"""
from micropython import const

from . import mqtt, protocol
from .core.timing import ticks_add, ticks_diff

BACKOFF_MIN_MS = const(250)
BACKOFF_MAX_MS = const(8000)
_INBOX_MAX = const(1024)  # bytes from the host not yet read by the DeviceLink
KEEPALIVE_S = const(15)


def topic(hall, clock, direction):
    return "hallclock/%s/%s/%s" % (hall, clock, direction)


class NetLink:
    def __init__(self, hall, clock, user, password, opener, ticks, keepalive_s=KEEPALIVE_S):
        self.up_topic = topic(hall, clock, "up").encode()
        self.opener = opener
        self.ticks = ticks
        # the last will: the broker tells every host on our up topic that the
        # link is lost when the connection dies without a goodbye (Wi-Fi gone)
        self.client = mqtt.Client(clock, user, password, keepalive_s,
                                  (topic(hall, clock, "down"), topic(hall, "all", "down")),
                                  self._message, will=(self.up_topic, protocol.lost()))
        self.inbox = bytearray()
        self.backoff = BACKOFF_MIN_MS
        self.retry_at = ticks()
        self.was_up = False
        self.connects = 0  # connections made (the first one included)
        self.failures = 0
        self.why = None  # why the last connection ended (for the console)
        self.dropped_in = 0  # host bytes dropped (inbox full)

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
        start = 0
        while start < len(data):
            nl = data.find(b"\n", start)
            end = len(data) if nl < 0 else nl + 1
            self.client.publish(self.up_topic, data[start:end])
            start = end
        return len(data)

    def connected(self):
        return self.client.state == mqtt.UP

    # -- the network ---------------------------------------------------------
    def _message(self, _topic, payload):
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
                self._lost("cannot connect (%s)" % e.args[0], now)
                return
            if sock is None:
                self._lost("no network", now)
                return
            c.start(sock, now)
        c.poll(now)
        if c.state == mqtt.UP:
            if not self.was_up:
                self.was_up = True
                self.connects += 1
                self.backoff = BACKOFF_MIN_MS
                self._message(None, protocol.who())  # hello and resend now
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
        self.backoff = self.backoff * 2 if self.backoff < BACKOFF_MAX_MS // 2 else BACKOFF_MAX_MS

    def drop(self, now):
        """The socket is gone under us (Wi-Fi dropped): close it, reconnect
        with backoff."""
        self.client.close()
        self._lost("link dropped", now)

    def close(self):
        self.client.disconnect()
