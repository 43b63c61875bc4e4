"""Frames only their sender can make: the hall network's sealed message
(docs/protocol.md "Sealed frames on the network").  The one HMAC-SHA256 of the
project (MicroPython has no ``hmac`` module), used by the clock's NetLink and
by every host client of the broker alike.

On the network every MQTT message is one sealed frame::

    <frame>~<sid>~<ctr>~<tag>\\n

``<frame>`` is the CRC frame of protocol.py without its newline; ``<sid>`` the
clock's link session (8 hex digits, new at every boot of the clock's network
link); ``<ctr>`` a counter in 1 to 15 decimal digits; ``<tag>`` the first
_TAG_HEX hex digits of HMAC-SHA256(key, <dir> + everything before the last
``~``), where ``<dir>`` is one byte naming the direction (``U`` clock -> host,
``D`` host -> one clock, ``A`` the referee -> every clock on ``all/down``), so
a message cannot be turned round or moved to another topic.  The key of a
clock's own topics is that clock's (``key`` in its hallclock.cfg); ``all/down``
is sealed with the hall's signal key (``hall_key``).

Freshness (a replay is refused):
    U  ctr counts the link's messages from 1 within <sid>; the host takes only a
       ctr above the highest it has taken for that <sid> (0: the MQTT last
       will, fixed at connect time, taken as a mark only)
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

    def tag(self, kind, body):
        """The truncated tag (hex bytes) of ``body`` sent in direction ``kind``."""
        return hexlify(self.digest(kind, body))[:_TAG_HEX]


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
    newline); ``sid`` str, ``ctr`` int >= 0."""
    if frame.endswith(b"\n"):
        frame = frame[:-1]
    body = frame + b"~" + sid.encode() + b"~" + str(ctr).encode()
    return body + b"~" + mac.tag(kind, body) + b"\n"


def counter(text):
    """``ctr`` (bytes) -> int, or -1 if it is not 1.._MAX_CTR_DIGITS ASCII digits."""
    n = len(text)
    if n < 1 or n > _MAX_CTR_DIGITS:
        return -1
    value = 0
    for b in text:
        if b < 48 or b > 57:
            return -1
        value = value * 10 + (b - 48)
    return value


def open_sealed(mac, kind, message):
    """(frame with its newline, sid str, ctr int) of a sound message, or None
    (bad shape, bad counter, or a tag that is not ``mac``'s).  ``mac`` None:
    the shape only (a viewer, which holds no key, shows but never stores)."""
    if message.endswith(b"\n"):
        message = message[:-1]
    t = message.rfind(b"~")
    if t < 0 or len(message) - t - 1 != _TAG_HEX:
        return None
    c = message.rfind(b"~", 0, t)
    if c < 0:
        return None
    s = message.rfind(b"~", 0, c)
    if s < 1:
        return None
    body = message[:t]
    if mac is not None:
        # the tags compared in a time that does not depend on where they differ
        want = mac.tag(kind, body)
        d = 0
        for i in range(_TAG_HEX):
            d |= want[i] ^ message[t + 1 + i]
        if d:
            return None
    ctr = counter(message[c + 1:t])
    sid = message[s + 1:c]
    if ctr < 0 or not 1 <= len(sid) <= 8:
        return None
    for b in sid:
        if b < 48 or b > 122:
            return None
    return message[:s] + b"\n", sid.decode(), ctr
