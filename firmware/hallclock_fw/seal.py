"""Frames only their sender can make: the hall network's sealed message
(docs/protocol.md "Sealed frames on the network").  The one HMAC-SHA256 of the
project (MicroPython has no ``hmac`` module), used by the clock's NetLink and
by every host client of the broker alike.

On the network every MQTT message is one sealed frame::

    <frame>~<sid>~<ctr>~<tag>\\n

``<frame>`` is the CRC frame of protocol.py without its newline; ``<sid>`` the
clock's link session (8 hex digits, new at every boot of the clock's network
link; on ``U`` followed by ``:<echo>``, the newest ``D`` counter the clock
took: the host's challenge answered); ``<ctr>`` a counter in 1 to 15 decimal digits; ``<tag>`` the first
_TAG_HEX hex digits of HMAC-SHA256(key, <dir> + everything before the last
``~``), where ``<dir>`` is one byte naming the direction (``U`` clock -> host,
``D`` host -> one clock, ``A`` the referee -> every clock on ``all/down``), so
a message cannot be turned round or moved to another topic.  The key of a
clock's own topics is that clock's (``key`` in its hallclock.cfg); ``all/down``
is sealed with the hall's signal key (``hall_key``).

Freshness (a replay is refused):
    U  ctr counts the link's messages from 1 within <sid>; the host takes only a
       ctr above the highest it has taken for that <sid> (0: the MQTT last
       will, fixed at connect time, taken as a mark only), and a <sid> new to
       it only once its echo is a D counter the host sealed since it started
    D  <sid> must be the clock's current link session; ctr is the host's wall
       clock in ms, above the last one the clock took
    A  <sid> is ``all``; ctr is the referee's wall clock in ms, above the last
       one taken (and not older than ALL_WINDOW_MS before the newest D frame)

Pure: hashlib and binascii only, no ``machine``.
"""
from binascii import hexlify, unhexlify
from hashlib import sha256

from micropython import const

_TAG_HEX = const(32)  # 128 bits of the 256 (RFC 2104: at least half the hash)
_MAX_CTR_DIGITS = const(15)
_MAX_SID = const(24)  # "<8 hex>:<echo, up to 15 digits>" on U
_BLOCK = const(64)


class Mac:
    """HMAC-SHA256 under one key (bytes), its pads made once (RFC 2104)."""

    def __init__(self, key):
        if len(key) < 16:
            raise ValueError("a key of 16 bytes at least")
        if len(key) > _BLOCK:
            key = sha256(key).digest()
        pad = bytearray(_BLOCK)
        pad[0:len(key)] = key
        ipad = bytearray(_BLOCK)
        opad = bytearray(_BLOCK)
        for i in range(_BLOCK):
            ipad[i] = pad[i] ^ 0x36
            opad[i] = pad[i] ^ 0x5C
        self.ipad = bytes(ipad)
        self.opad = bytes(opad)

    def digest(self, *parts):
        inner = sha256(self.ipad)
        for p in parts:
            inner.update(p)
        outer = sha256(self.opad)
        outer.update(inner.digest())
        return outer.digest()

    def tag(self, kind, *body):
        """The truncated tag (hex bytes) of ``body`` (its parts in order)
        sent in direction ``kind``: the first _TAG_HEX hex digits of the HMAC."""
        return hexlify(self.digest(kind, *body)[:_TAG_HEX // 2])


def key_bytes(text):
    """A key as written in hallclock.cfg / credentials.json (hex) -> bytes;
    ValueError if it is not 32 or more hex digits."""
    if len(text) < 32:
        raise ValueError("a key is 32 or more hex digits")
    try:
        return unhexlify(text)
    except Exception:  # binascii.Error on CPython, ValueError on MicroPython
        raise ValueError("a key is 32 or more hex digits")


def seal(mac, kind, frame, sid, ctr):
    """The message for ``frame`` (bytes, a CRC frame with or without its
    newline); ``sid`` str, ``ctr`` int >= 0.  Few temporaries: each is
    garbage on the clock's heap (docs/micropython.md "The heap model")."""
    if frame.endswith(b"\n"):
        frame = frame[:-1]
    tail = ("~%s~%d" % (sid, ctr)).encode()
    return b"".join((frame, tail, b"~", mac.tag(kind, frame, tail), b"\n"))


def open_sealed(mac, kind, message):
    """(frame with its newline, sid str, ctr int) of a sound message, or None
    (bad shape, bad counter, or a tag that is not ``mac``'s).  ``mac`` None:
    the shape only (a viewer, which holds no key, shows but never stores)."""
    end = len(message)
    if message.endswith(b"\n"):
        end -= 1
    t = message.rfind(b"~", 0, end)
    if t < 0 or end - t - 1 != _TAG_HEX:
        return None
    c = message.rfind(b"~", 0, t)
    if c < 0:
        return None
    s = message.rfind(b"~", 0, c)
    if s < 1:
        return None
    if mac is not None:
        # the tags compared in a time that does not depend on where they differ
        # (the digest's nibbles against the hex digits as they are: no hex copy)
        want = mac.digest(kind, memoryview(message)[:t])
        d = 0
        j = t + 1
        for i in range(_TAG_HEX // 2):
            b = want[i]
            d |= (b"0123456789abcdef"[b >> 4] ^ message[j]) \
                | (b"0123456789abcdef"[b & 15] ^ message[j + 1])
            j += 2
        if d:
            return None
    # the counter: 1 to _MAX_CTR_DIGITS ASCII digits
    if t - c - 1 < 1 or t - c - 1 > _MAX_CTR_DIGITS:
        return None
    ctr = 0
    for i in range(c + 1, t):
        b = message[i]
        if b < 48 or b > 57:
            return None
        ctr = ctr * 10 + (b - 48)
    if not 1 <= c - s - 1 <= _MAX_SID:
        return None
    for i in range(s + 1, c):
        if message[i] < 48 or message[i] > 122:
            return None
    return message[:s] + b"\n", message[s + 1:c].decode(), ctr
