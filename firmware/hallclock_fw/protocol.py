"""The wire protocol between a clock and the host: the one module both sides use.

A frame is one line of ASCII::

    <type> <token> <token> ...*<crc>\\n

``crc`` is the CRC-32 (``binascii.crc32``) of every byte before the ``*``, as
8 lowercase hex digits.  A line whose CRC, type or token count is wrong is
dropped and counted by whoever reads it; it never stops the clock.  Lines
that do not start with a frame type (boot messages, REPL chatter) are noise.

Device -> host:
    H <sid> <clock> <mode> <version> <proto>
                                          hello: a device session (re)introduces itself;
                                          <proto> is PROTO, the frame grammar it speaks
    E <sid> <seq> <t_ms> <code> <v0> <v1> <v2> <v3> [<text>]
                                          event ``seq`` (1, 2, ... per session);
                                          boot and settings events carry <mode>:<settings>
    G <sid> <first>                       events before <first> are gone (ring overflow)
    L                                     link lost: on the hall network, the clock's
                                          MQTT last will, published by the broker on
                                          the clock's own up topic when its connection
                                          dies without a goodbye (docs/network.md)
Host -> device:
    A <sid> <seq>     the host has stored every event of session <sid> up to <seq>
    R <sid> <seq>     send again every event from <seq> on
    W                 who are you? (the device answers with H)
    C <button> <long> press a button remotely (0..4, as events.BTN_*; long 0/1)
    S <mode> <settings> <v0> ... <vn>
                      restore a game after the device lost power: the values
                      are the core's ``snapshot`` (1 .. MAX_VALUES integers);
                      the device takes it only before its first move
    K <mode> <settings>
                      take these settings (only while no game runs)
    N <round> <elapsed_ms>
                      round <round> started <elapsed_ms> ago (0: now, the START)
    I                 info: the clock answers with a ``health`` event whose text
                      names its firmware and MicroPython versions, heaps and
                      partitions (``hallclock doctor``; docs/hardware.md)
    M                 maintenance: hand the console back (the clock stops
                      its loop, turns Ctrl-C back on, and leaves the REPL to
                      mpremote; docs/protocol.md "Maintenance")

Integers are ``-?[0-9]{1,10}`` (ASCII only) and within +-2147483647:
``to_int`` is the one parser of that grammar, on every interpreter.
See docs/protocol.md for the exchange as a whole.
"""
from micropython import const

from binascii import crc32  # on the ESP32 port and the VMs we test with

from .events import EV_COUNT

MAX_LINE = const(160)
MAX_VALUES = const(12)  # integers a restore frame carries at most (a core's snapshot)
PROTO = "2"  # the frame grammar of docs/protocol.md; a host refuses one it does not know
_INT_MAX = const(2147483647)  # integers on the wire fit 32 bits on every port
_MAX_DIGITS = const(10)


def crc(data):
    return crc32(data) & 0xFFFFFFFF


def to_int(text):
    """The integer of ``text`` (str) in the protocol's grammar: an optional
    leading ``-`` then 1 to 10 ASCII digits, nothing else (no ``+``, no
    spaces, no ``_``, no other scripts' digits), within -2147483647..2147483647.
    Raises ValueError otherwise.  The same on CPython and MicroPython (whose
    ``int()`` disagree on ``+4``, ``0_0``, `` 4`` and non-ASCII digits)."""
    neg = text.startswith("-")
    n = len(text) - neg
    # str.strip, not text[i]: indexing a str interns each character it returns
    if n < 1 or n > _MAX_DIGITS or text.strip("0123456789") != ("-" if neg else ""):
        raise ValueError
    value = int(text)
    if value > _INT_MAX or value < -_INT_MAX:
        raise ValueError
    return value


def frame(body):
    """``body`` (bytes, no newline) as a whole frame line."""
    return body + ("*%08x\n" % crc(body)).encode()


def unframe(line):
    """The tokens (list of str) of a frame line, or None if it is not a sound
    frame.  ``line`` may or may not end with a newline.  Indices, not slices,
    where it can: every copy is garbage on the clock's heap."""
    n = len(line)
    if n and line[n - 1] == 10:  # newline
        n -= 1
    if n and line[n - 1] == 13:  # CR
        n -= 1
    if n < 10 or n > MAX_LINE or line[n - 9] != 42:  # "*"
        return None
    want = 0
    for i in range(n - 8, n):  # exactly 8 lowercase hex digits (int() would take " +_")
        b = line[i]
        if 48 <= b <= 57:
            want = (want << 4) | (b - 48)
        elif 97 <= b <= 102:
            want = (want << 4) | (b - 87)
        else:
            return None
    body = line[:n - 9]
    for b in body:  # printable ASCII only (a frame is ASCII on every interpreter)
        if b < 32 or b > 126:
            return None
    if crc(body) != want:
        return None
    return body.decode().split(" ")


# -- device -> host ------------------------------------------------------
def hello(sid, clock, mode, version):
    return frame(("H %s %s %s %s " % (sid, clock, mode, version) + PROTO).encode())


def event(sid, seq, t_ms, code, v0, v1, v2, v3, text=None):
    body = "E %s %d %d %d %d %d %d %d" % (sid, seq, t_ms, code, v0, v1, v2, v3)
    if text:
        body = body + " " + text
    return frame(body.encode())


def gap(sid, first):
    return frame(("G %s %d" % (sid, first)).encode())


# -- host -> device ------------------------------------------------------
# W and L the clock builds itself (netlink.py); the host's other frames (A R C
# S K N M I) are built by the host (hallclock.hostframes).
def who():
    return frame(b"W")


def lost():
    """The L frame: the hall network's last will of a clock (docs/network.md)."""
    return frame(b"L")


# -- checking and decoding -------------------------------------------------
# H: 6 tokens in this grammar; 5 (a first-version clock without <proto>) and up to
# 8 are still read, so the host can name the version it does not know and refuse it.
_ARITY = {"H": (5, 8), "G": (3, 3), "E": (9, 10), "A": (3, 3), "R": (3, 3), "W": (1, 1),
          "C": (3, 3), "S": (4, 3 + MAX_VALUES), "K": (3, 3), "N": (3, 3),
          "M": (1, 1), "L": (1, 1), "I": (1, 1)}


def check(tokens):
    """Tokens of a well-formed frame, or None (wrong type, arity or numbers)."""
    if not tokens:
        return None
    arity = _ARITY.get(tokens[0])
    if arity is None or not arity[0] <= len(tokens) <= arity[1]:
        return None
    for t in tokens:
        if not t:  # two spaces in a row, or a trailing space
            return None
    kind = tokens[0]
    try:
        if kind == "E":
            for i in range(2, 9):
                to_int(tokens[i])
            code = to_int(tokens[4])
            if not 0 <= code < EV_COUNT or to_int(tokens[2]) < 1:
                return None
        elif kind in ("A", "R", "G"):
            to_int(tokens[2])
        elif kind == "C":
            if tokens[2] != "0" and tokens[2] != "1":
                return None
            to_int(tokens[1])
        elif kind == "S":
            for i in range(3, len(tokens)):
                to_int(tokens[i])
        elif kind == "N":
            if to_int(tokens[1]) < 0 or to_int(tokens[2]) < 0:
                return None
    except ValueError:
        return None
    return tokens
