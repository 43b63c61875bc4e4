"""The wire protocol between a clock and the host: the one module both sides use.

A frame is one line of ASCII::

    <type> <token> <token> ...*<crc>\\n

``crc`` is the CRC-32 (``binascii.crc32``) of every byte before the ``*``, as
8 lowercase hex digits.  A line whose CRC, type or token count is wrong is
dropped and counted by whoever reads it; it never stops the clock.  Lines
that do not start with a frame type (boot messages, REPL chatter) are noise.

Device -> host:
    H <sid> <clock> <mode> <version>      hello: a device session (re)introduces itself
    E <sid> <seq> <t_ms> <code> <v0> <v1> <v2> <v3> [<text>]
                                          event ``seq`` (1, 2, ... per session);
                                          boot events carry <mode>:<settings> in <text>
    G <sid> <first>                       events before <first> are gone (ring overflow)
Host -> device:
    A <sid> <seq>     the host has stored every event of session <sid> up to <seq>
    R <sid> <seq>     send again every event from <seq> on
    W                 who are you? (the device answers with H)
    C <button> <long> press a button remotely (0..4, as events.BTN_*; long 0/1)
    S <mode> <settings> <move> <player> <left_ms>
                      restore a game after the device lost power (the
                      device takes it only before its first move)
    M                 maintenance: hand the console back (the clock stops
                      its loop, turns Ctrl-C back on, and leaves the REPL to
                      mpremote; docs/protocol.md "Maintenance")

See docs/protocol.md for the exchange as a whole.
"""
from micropython import const

from binascii import crc32  # on the ESP32 port and the VMs we test with

from .events import EV_COUNT

MAX_LINE = const(160)
EVENT_INTS = const(4)  # integer values carried by every event frame


def crc(data):
    return crc32(data) & 0xFFFFFFFF


def frame(body):
    """``body`` (bytes, no newline) as a whole frame line."""
    return body + ("*%08x\n" % crc(body)).encode()


def unframe(line):
    """The tokens (list of str) of a frame line, or None if it is not a sound
    frame.  ``line`` may or may not end with a newline."""
    if line.endswith(b"\n"):
        line = line[:-1]
    if line.endswith(b"\r"):
        line = line[:-1]
    if len(line) < 10 or len(line) > MAX_LINE or line[-9:-8] != b"*":
        return None
    body = line[:-9]
    want = 0
    for b in line[-8:]:  # exactly 8 lowercase hex digits (int() would take " +_")
        if 48 <= b <= 57:
            want = (want << 4) | (b - 48)
        elif 97 <= b <= 102:
            want = (want << 4) | (b - 87)
        else:
            return None
    try:
        text = body.decode()
    except UnicodeError:
        return None
    if crc(body) != want:
        return None
    return text.split(" ")


# -- device -> host ------------------------------------------------------
def hello(sid, clock, mode, version):
    return frame(("H %s %s %s %s" % (sid, clock, mode, version)).encode())


def event(sid, seq, t_ms, code, v0, v1, v2, v3, text=None):
    body = "E %s %d %d %d %d %d %d %d" % (sid, seq, t_ms, code, v0, v1, v2, v3)
    if text:
        body = body + " " + text
    return frame(body.encode())


def gap(sid, first):
    return frame(("G %s %d" % (sid, first)).encode())


# -- host -> device ------------------------------------------------------
def ack(sid, seq):
    return frame(("A %s %d" % (sid, seq)).encode())


def resend(sid, seq):
    return frame(("R %s %d" % (sid, seq)).encode())


def who():
    return frame(b"W")


def command(button, long=False):
    return frame(("C %d %d" % (button, 1 if long else 0)).encode())


def restore(mode, settings_text, move, player, left_ms):
    return frame(("S %s %s %d %d %d" % (mode, settings_text, move, player, left_ms)).encode())


def maintenance():
    return frame(b"M")


# -- checking and decoding -------------------------------------------------
_ARITY = {"H": (5, 5), "G": (3, 3), "E": (9, 10), "A": (3, 3), "R": (3, 3), "W": (1, 1),
          "C": (3, 3), "S": (6, 6), "M": (1, 1)}


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
                int(tokens[i])
            code = int(tokens[4])
            if not 0 <= code < EV_COUNT or int(tokens[2]) < 1:
                return None
        elif kind in ("A", "R", "G"):
            int(tokens[2])
        elif kind == "C":
            int(tokens[1])
            int(tokens[2])
        elif kind == "S":
            for i in range(3, 6):
                int(tokens[i])
    except ValueError:
        return None
    return tokens

