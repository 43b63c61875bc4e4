"""A small MQTT 3.1.1 client for the clock: QoS 0 out, never blocking.

Pure apart from the socket handed to :meth:`Client.start` (already set
non-blocking, connecting or connected): no ``network``, no ``select``, no
clock of its own (times are ticks passed in).  Every call does a bounded
amount of work and returns at once; a socket that is not ready yet
(EAGAIN, EINPROGRESS) is simply tried again at the next ``poll``.

Why our own client and why QoS 0: see docs/network.md.  In short,
``umqtt.simple`` blocks in connect/publish/wait_msg, ``mqtt_as`` needs
asyncio (which the clock's loop does not use), and the end-to-end protocol
already has its own acknowledgement (the host's ``A`` frame, sent after the
record is fsync'd) and resends, so MQTT's QoS 1 would only add a second,
weaker ack (broker-reached, not stored) and an in-flight store.

Packets handled: CONNECT/CONNACK, SUBSCRIBE/SUBACK, PUBLISH (QoS 0 out;
QoS 0, 1 or 2 in: a QoS 1 one is acknowledged with PUBACK, a QoS 2 one with
PUBREC and its PUBREL with PUBCOMP), PINGREQ/PINGRESP, DISCONNECT.  The
clock subscribes at QoS 0, so a broker that keeps MQTT sends it nothing at
QoS 1 or 2; from one that does, a QoS 2 message is delivered once (a resend
of a packet id not yet released by its PUBREL is acknowledged again, not
delivered: MQTT 3.1.1 section 4.3.3, method B), with at most _HELD_MAX ids
held.

Any byte from the broker is survived (docs/network.md "Any byte from the
broker"): a PUBLISH longer than the clock's packet buffer is skipped byte by
byte as it arrives (counted in ``skipped``, the connection kept; at QoS 1 or
2 it is acknowledged all the same, [MQTT-4.3.2-2]); anything
else that breaks MQTT 3.1.1 -- a packet type a server never sends, wrong
fixed-header flags, a CONNACK or SUBACK that is not the one expected, a
PUBLISH whose topic or packet id runs past its end, QoS 3, a remaining
length of more than 4 bytes, a packet before CONNACK -- ends the connection
(``DEAD``, with ``why``), and the link reconnects.  Nothing raises out of
``poll``.

Lean on the clock's heap (docs/micropython.md "The heap model"): every name
here is an interned string on the board for good, so the constants are
``_NAME = const()`` and the CONNECT packet is built once.
"""
from micropython import const

try:  # for the type checker's annotations only (MicroPython has no typing)
    from typing import Any
except ImportError:
    pass

from .core.timing import ticks_diff

IDLE = const(0)  # no socket
CONNECTING = const(1)  # CONNECT sent or waiting to go, no SUBACK yet
UP = const(2)  # CONNACK 0 and SUBACK received: publish and receive
DEAD = const(3)  # the connection failed or was refused (see ``why``)

# why a connection ended (``why``): code | detail << 5; the words are the host's (whytext.py)
_W_NO_ANSWER = const(1)
_W_SILENT = const(2)
_W_SEND = const(3)
_W_LOST = const(4)
_W_CLOSED = const(5)
_W_LENGTH = const(6)
_W_TOO_LONG = const(7)
_W_MALFORMED = const(8)
_W_PUBLISH = const(9)
_W_CONNACK = const(10)
_W_REFUSED = const(11)
_W_SUB_REFUSED = const(12)
_W_SUBACK = const(13)
_W_PUBREL = const(14)
_W_PINGRESP = const(15)
_W_UNEXPECTED = const(16)
_CONNECT_MS = const(5000)  # no CONNACK and SUBACK by then: give up on this socket
# one incoming packet at most: the longest host frame, sealed, on its topic, with its header
_RX_MAX = const(320)
_TX_MAX = const(2048)  # bytes queued for the socket at most (then publish() says no)
# QoS 2 messages held at most (we subscribe at QoS 0: only a broken broker sends any)
_HELD_MAX = const(4)
_RECV = const(256)  # bytes read per recv (bounded work per poll)
_RECV_CALLS = const(4)  # recv calls per poll at most
# "not yet": EAGAIN 11, ENOTCONN 107, EALREADY 114, EINPROGRESS 115 (Linux's, on every port)


def _str(b):
    return bytes((len(b) >> 8, len(b) & 255)) + b


def _head(first, n):
    """The fixed header of a packet whose remaining length is ``n``."""
    head = bytearray((first,))
    while True:
        d = n & 127
        n >>= 7
        head.append(d | 128 if n else d)
        if not n:
            return head


def _packet(first, body):
    return bytes(_head(first, len(body))) + body


def split(buf, n):
    """The fixed header of the packet at the start of ``buf[:n]``:
    (header length, remaining length); header length 0 while the length
    is not all there yet, -1 for a length of more than 4 bytes.  The one
    reader of MQTT's fixed header (the bench's broker uses it too)."""
    size = 0
    shift = 0
    i = 1
    while True:
        if i >= n:
            return 0, 0
        b = buf[i]
        size |= (b & 127) << shift
        i += 1
        if not b & 128:
            return i, size
        shift += 7
        if shift > 21:
            return -1, 0


def connect_packet(clock, user, password, keepalive_s, will=None):
    """``will``: (topic, payload) the broker publishes (QoS 0, not retained)
    when this connection dies without a DISCONNECT."""
    flags = 0x02  # clean session: nothing is queued for us between connections
    payload = _str(clock.encode())
    if will is not None:
        flags |= 0x04
        payload += _str(will[0]) + _str(will[1])
    if user is not None:
        flags |= 0x80
        payload += _str(user.encode())
        if password is not None:
            flags |= 0x40
            payload += _str(password.encode())
    body = _str(b"MQTT") + bytes((4, flags, keepalive_s >> 8, keepalive_s & 255)) + payload
    return _packet(0x10, body)


def subscribe_packet(pid, topics):
    body = bytes((pid >> 8, pid & 255))
    for t in topics:
        body += _str(t.encode()) + b"\x00"  # requested QoS 0
    return _packet(0x82, body)


class Client:
    """``Client(id, user, password)``; ``start(sock, now)``; ``poll(now)`` every
    pass; ``publish(topic, payload)``.  Incoming messages go to
    ``on_message(topic_bytes, payload_bytes)``."""

    # the attributes _build sets (for the type checker; no code on the board)
    hello: bytes
    keepalive_ms: int
    topics: tuple
    on_message: "Any"
    readable: "Any"
    rx: bytearray
    held: list

    def __init__(self, *args, **kw):
        # the work is _build's: a module function, so netlink.shed can drop its code
        _build(self, *args, **kw)

    # -- connection ---------------------------------------------------------
    def start(self, sock, now):
        """Take a fresh non-blocking socket (connecting or connected) and
        queue CONNECT; CONNACK and SUBACK arrive through ``poll``."""
        self.close()
        self.sock = sock
        self.state = CONNECTING
        self.why = None
        self.rxn = 0
        self.skip = 0
        self.connacked = False
        self.heard = now
        self.last_out = now
        self.pinged = False
        self.held = []  # QoS 2 packet ids taken, their PUBREL not yet come
        self._queue(self.hello)

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None
        self.out = []
        self.out_n = 0
        if self.state != DEAD:
            self.state = IDLE

    def _fail(self, why):
        self.why = why
        self.close()
        self.state = DEAD

    def _queue(self, data):
        self.out.append(data)
        self.out_n += len(data)

    def publish(self, topic, payload):
        """Queue one QoS 0 message; False (dropped) unless UP with room."""
        if self.state != UP or self.out_n + len(payload) + len(topic) + 8 > _TX_MAX:
            self.dropped += 1
            return False
        # the header and the topic, then the payload as it is (no copy of it)
        n = len(topic)
        head = _head(0x30, 2 + n + len(payload))
        head.append(n >> 8)  # the topic's length and the topic, into the header
        head.append(n & 255)  # itself (no temporaries)
        head.extend(topic)
        self._queue(head)
        self._queue(payload)
        self._flush()  # out now: not at the next pass's poll, which may be a second away
        return True

    def disconnect(self):
        if self.state == UP:
            self._queue(b"\xe0\x00")
            self._flush()
        self.close()

    # -- the loop's part ----------------------------------------------------
    def poll(self, now):
        """Send what is queued, read what came, keep the connection alive.
        Bounded: at most _RECV_CALLS reads of _RECV bytes.  Returns the state."""
        sock = self.sock
        if sock is None:
            return self.state
        if self.state == CONNECTING and ticks_diff(now, self.last_out) > _CONNECT_MS:
            self._fail(_W_NO_ANSWER)
            return self.state
        self._flush()
        if self.sock is not None and (self.readable is None or self.readable(sock)):
            self._read(now)
        if self.state == UP:
            k = self.keepalive_ms
            quiet = ticks_diff(now, self.heard)
            if quiet > k + k // 2:
                self._fail(_W_SILENT)
            elif not self.pinged and (ticks_diff(now, self.last_out) >= k // 2
                                      or quiet >= k // 2):
                self.pinged = True
                self._queue(b"\xc0\x00")  # PINGREQ
                self.last_out = now
                self._flush()
        return self.state

    def _flush(self):
        out = self.out
        sock = self.sock
        while sock is not None and out:
            data = out[0]
            try:
                n = sock.send(data)
            except OSError as e:
                if e.args[0] not in (11, 107, 114, 115):
                    self._fail(_W_SEND | e.args[0] << 5)
                return
            if n is None:  # MicroPython: nothing taken
                return
            self.out_n -= n
            if n < len(data):
                out[0] = data[n:]
                return
            out.pop(0)

    def _read(self, now):
        rx = self.rx
        sock = self.sock
        if sock is None:
            return
        for _ in range(_RECV_CALLS):
            try:
                data = sock.recv(_RECV)
            except OSError as e:
                if e.args[0] not in (11, 107, 114, 115):
                    self._fail(_W_LOST | e.args[0] << 5)
                return
            if data is None:  # MicroPython non-blocking: nothing there
                return
            if not data:
                self._fail(_W_CLOSED)
                return
            self.heard = now
            self.pinged = False
            i = 0
            n = len(data)
            while i < n:
                if self.skip:  # the rest of an oversized PUBLISH
                    k = n - i if n - i < self.skip else self.skip
                    self.skip -= k
                    i += k
                    continue
                k = _RX_MAX - self.rxn
                if k > n - i:
                    k = n - i
                # the bytes as they came (a packet in one recv), no slice copied
                rx[self.rxn:self.rxn + k] = data if k == n else memoryview(data)[i:i + k]
                self.rxn += k
                i += k
                # every whole packet in the buffer
                while self.sock is not None and self.rxn >= 2:
                    head, size = split(rx, self.rxn)
                    if head < 0:
                        self._fail(_W_LENGTH)
                    if head <= 0:
                        break
                    end = head + size
                    if end > _RX_MAX:
                        first = rx[0]
                        if first >> 4 != 3 or not self.connacked:
                            self._fail(_W_TOO_LONG)
                            break
                        if first & 6:  # QoS 1/2: acknowledged though skipped [MQTT-4.3.2-2]
                            at = head + 2  # the topic's length, then the packet id after it
                            if self.rxn >= at:
                                at += ((rx[head] << 8) | rx[head + 1]) + 2
                            if at > _RX_MAX:  # a topic longer than any we subscribe to
                                self._fail(_W_TOO_LONG)
                                break
                            if self.rxn < at:
                                break  # wait for the packet id
                            self._packet(first, bytes(memoryview(rx)[head:at]), False)
                            if self.sock is None:
                                break
                        self.skipped += 1  # a message no frame could fill: skipped, not stored
                        self.skip = end - self.rxn
                        self.rxn = 0
                        break
                    if end > self.rxn:
                        break  # wait for the rest
                    try:
                        self._packet(rx[0], bytes(memoryview(rx)[head:end]))
                    except (IndexError, ValueError):  # a packet shorter than its own fields
                        self._fail(_W_MALFORMED)
                    rest = self.rxn - end
                    rx[0:rest] = rx[end:self.rxn]
                    self.rxn = rest
                if self.sock is None:
                    return
            if n < _RECV:
                return

    def _packet(self, first, body, deliver=True):
        """One whole packet (MQTT 3.1.1 section 3: what a server may send us);
        ``deliver`` False: a PUBLISH's head only (an oversized one, skipped)."""
        kind = first >> 4
        n = len(body)
        if kind == 3:  # PUBLISH
            qos = (first >> 1) & 3
            at = 2 + ((body[0] << 8) | body[1]) if n > 1 else n + 1
            if not self.connacked or qos == 3 or at > n:
                self._fail(_W_PUBLISH)
                return
            topic = body[2:at]
            if qos:
                pid = body[at:at + 2]
                at += 2
                if at > n or pid == b"\x00\x00":
                    self._fail(_W_PUBLISH)
                    return
                # QoS 1: PUBACK; QoS 2: PUBREC (its PUBREL gets PUBCOMP below)
                self._queue((b"\x40\x02" if qos == 1 else b"\x50\x02") + pid)
                if qos == 2:  # delivered once: a resend before its PUBREL is not [MQTT-4.3.3-2]
                    held = self.held
                    if pid in held:
                        return
                    if len(held) >= _HELD_MAX:
                        self._fail(_W_PUBLISH)
                        return
                    held.append(pid)
            if deliver and self.on_message is not None:
                self.on_message(topic, body[at:])
        elif kind == 2:  # CONNACK: once, first, 2 bytes, no session (we ask a clean one)
            if first != 0x20 or n != 2 or self.connacked or self.state != CONNECTING \
                    or body[0] != 0 and body[1] == 0:
                self._fail(_W_CONNACK)
                return
            code = body[1]
            if code:
                self._fail(_W_REFUSED | code << 5)
                return
            self.connacked = True
            if self.topics:
                self._queue(subscribe_packet(1, self.topics))
                self._flush()
            else:
                self.state = UP
        elif kind == 9:  # SUBACK: to our one SUBSCRIBE (id 1), a code per topic
            if first != 0x90 or not self.connacked or self.state != CONNECTING \
                    or n != 2 + len(self.topics) or body[0] != 0 or body[1] != 1:
                self._fail(_W_SUBACK)
                return
            for code in body[2:]:
                if code & 0x80:
                    self._fail(_W_SUB_REFUSED)
                    return
            self.state = UP
        elif kind == 6:  # PUBREL (of a QoS 2 message): PUBCOMP
            if first != 0x62 or n != 2 or not self.connacked:
                self._fail(_W_PUBREL)
                return
            if body in self.held:
                self.held.remove(body)
            self._queue(b"\x70\x02" + body)
        elif kind == 13:  # PINGRESP
            if first != 0xD0 or n:
                self._fail(_W_PINGRESP)
        else:  # CONNECT, SUBSCRIBE, PINGREQ ... or PUBACK/PUBREC/PUBCOMP to our QoS 0
            self._fail(_W_UNEXPECTED | kind << 5)


def _build(self, clock, user=None, password=None, keepalive_s=30, topics=(),
           on_message=None, will=None):
    """``Client(...)``'s work (see the class)."""
    self.hello = connect_packet(clock, user, password, keepalive_s, will)
    self.keepalive_ms = keepalive_s * 1000
    self.topics = topics
    self.on_message = on_message
    self.sock = None
    self.state = IDLE
    self.why = None  # when DEAD: a code (whytext.py has its words)
    self.out = []  # bytes objects waiting for the socket, oldest first
    self.out_n = 0
    self.rx = bytearray(_RX_MAX)
    self.rxn = 0
    self.skip = 0  # bytes of an oversized PUBLISH still to discard
    self.skipped = 0  # oversized PUBLISH packets discarded
    self.connacked = False
    self.heard = 0  # ticks of the last byte from the broker
    self.last_out = 0  # ticks of CONNECT, then of the last PINGREQ
    self.pinged = False
    self.held = []
    self.dropped = 0  # publishes refused (not UP, or the queue full)
    # readable(sock) -> bool, optional: skips a recv that would raise EAGAIN (which allocates)
    self.readable = None
