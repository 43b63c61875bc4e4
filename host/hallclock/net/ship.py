"""The hall's log shipped to the tournament office (docs/network.md "Several
halls"): what the hall's logger has stored goes, line for line, to the
office, which acknowledges what it has stored in turn.

Why the log and not the clocks' frames: the hall's log on its laptop is the
truth (what the clocks were acknowledged for), so its copy is made from it.
A clock's frame that crossed a bridge would need the whole link protocol
again at the office (sessions, resends, gaps), and the office would be a
second host the clock never acknowledges to; here the office is one more
reader of a file, and whatever hop was down, the hall's logger sends again
from the office's own word of what it holds.

The wire (one topic each way per hall, hallclock/<hall>/office/log and
hallclock/<hall>/office/ack, beside the clocks' up/down, which a topic
ending in log/ack never is):

- ``L1 <log> <from> <to>\\n`` then the log's bytes ``from``..``to`` (whole
  lines).  ``<log>``: the log's id, a hash of its first line (the same
  file after any restart, another file for another log).
- ``A1 <log> <have>[ gap]\\n``: the office holds, on disk, every record of
  that log's first ``have`` bytes; ``gap``: a batch came that starts past
  ``have`` (one was lost): send again from ``have``.

The office takes a batch only where it starts at or before what it holds,
drops records it has by (clock, session, seq, event), and acknowledges only
after its fsync; the hall side resends from the acknowledged offset when the
office is silent (STALL_S), one batch at a time until the office answers.
So every hop may lose or repeat messages, and the office's copy still ends
as the hall's log, each record once.
"""
import hashlib
import json
import os
import time

from hallclock_fw.netlink import topic

from .broker import MESSAGE_SIZE_LIMIT

BATCH_BYTES = 900  # a message's lines at most: the brokers' message_size_limit is 1024
MESSAGE_MAX = MESSAGE_SIZE_LIMIT  # what both brokers take a message
WINDOW_BYTES = 64 * 1024  # bytes shipped and not yet acknowledged, at most
STALL_S = 2.0  # no acknowledgement for this long: send again from what the office has
REWIND_GAP_S = 0.5  # one rewind on the office's ``gap`` per this (others are in flight)
CURSOR_EVERY_S = 1.0  # the acknowledged offset is written beside the log this often
CURSOR_SUFFIX = ".office"
MAGIC, ACK_MAGIC = b"L1", b"A1"
ID_CHARS = 16


def log_topic(hall):
    return topic(hall, "office", "log")


def ack_topic(hall):
    return topic(hall, "office", "ack")


def hall_of(name, kind="log"):
    """The hall of ``hallclock/<hall>/office/<kind>``, or None."""
    parts = name.split("/")
    if len(parts) == 4 and parts[0] == "hallclock" and parts[2] == "office" \
            and parts[3] == kind and parts[1]:
        return parts[1]
    return None


def log_id(first_line):
    return hashlib.sha256(first_line).hexdigest()[:ID_CHARS]


def batch(log, start, end, lines):
    return b"%s %s %d %d\n" % (MAGIC, log.encode(), start, end) + lines


def _ids_ok(log):
    return len(log) == ID_CHARS and all(c in "0123456789abcdef" for c in log)


def parse_batch(payload):
    """(log, from, to, lines) of a batch, or None if it is not one."""
    head, nl, lines = payload.partition(b"\n")
    parts = head.split(b" ")
    if not nl or len(parts) != 4 or parts[0] != MAGIC:
        return None
    try:
        log = parts[1].decode("ascii")
        start, end = int(parts[2]), int(parts[3])
    except (UnicodeDecodeError, ValueError):
        return None
    if not _ids_ok(log) or start < 0 or end - start != len(lines) or \
            (lines and not lines.endswith(b"\n")):
        return None
    return log, start, end, lines


def ack(log, have, gap=False):
    return b"%s %s %d%s\n" % (ACK_MAGIC, log.encode(), have, b" gap" if gap else b"")


def parse_ack(payload):
    """(log, have, gap) of an acknowledgement, or None."""
    parts = payload.strip().split(b" ")
    if len(parts) not in (3, 4) or parts[0] != ACK_MAGIC or \
            (len(parts) == 4 and parts[3] != b"gap"):
        return None
    try:
        log = parts[1].decode("ascii")
        have = int(parts[2])
    except (UnicodeDecodeError, ValueError):
        return None
    if not _ids_ok(log) or have < 0:
        return None
    return log, have, len(parts) == 4


class Shipper:
    """The hall's side, in the process that writes the hall's log: ``poll()``
    ships what is stored (``stored()``: the log's length on disk, every byte
    below it a whole record that was fsync'd), ``on_ack(payload)`` takes the
    office's word.  ``publish(topic, payload)`` sends a message.

    The office's acknowledged offset is kept beside the log
    (``<log>.office``), so a restarted logger goes on from it; lost or stale,
    it costs a resend (the office drops what it has), never a record."""

    def __init__(self, path, hall, publish, stored, say=None):
        self.path = os.fspath(path)
        self.hall = hall
        self.topic = log_topic(hall)
        self.ack_name = ack_topic(hall)
        self.publish = publish
        self.stored = stored
        self.cursor_path = self.path + CURSOR_SUFFIX
        self.log = None  # the log's id, once its first line is stored
        self.acked = 0  # the office holds the log's first ``acked`` bytes
        self.sent = 0  # shipped up to here (resent from ``acked`` on a stall)
        self.window = WINDOW_BYTES
        self.since = time.monotonic()  # when the office last answered (or a flight began)
        self.rewound = 0.0
        self.saved = None  # the offset last written to the cursor file
        self.saved_at = 0.0
        self.fd = None
        self.messages = 0
        self.resends = 0  # rewinds (a stall or the office's gap)
        self.say = say
        self.too_long = None  # the offset of a line no broker takes (said once)

    def _identify(self, stored):
        try:
            if self.fd is None:
                self.fd = os.open(self.path, os.O_RDONLY)
            first = os.pread(self.fd, min(stored, 1 << 16), 0)
        except OSError:
            return False
        nl = first.find(b"\n")
        if nl < 0:
            return False
        self.log = log_id(first[:nl + 1])
        try:
            with open(self.cursor_path, encoding="utf-8") as f:
                cur = json.load(f)
            if cur.get("log") == self.log and isinstance(cur.get("acked"), int) \
                    and 0 <= cur["acked"] <= stored:
                self.acked = self.sent = self.saved = cur["acked"]
        except (OSError, ValueError, AttributeError):
            pass  # none, or unreadable: from the start (the office drops what it has)
        return True

    def behind(self):
        """Bytes of the stored log the office has not acknowledged."""
        return max(0, self.stored() - self.acked)

    def poll(self):
        stored = self.stored()
        if self.log is None and (stored <= 0 or not self._identify(stored)):
            return
        now = time.monotonic()
        if self.sent > self.acked and now - self.since > STALL_S:
            # the office is silent: from what it has, one batch until it answers
            self.sent = self.acked
            self.window = BATCH_BYTES
            self.since = now
            self.resends += 1
        while self.sent < stored and self.sent - self.acked < self.window:
            if self.sent == self.acked:
                self.since = now  # a new flight: the office's silence counts from here
            lines = self._read(self.sent, stored)
            if not lines:
                break
            end = self.sent + len(lines)
            message = batch(self.log, self.sent, end, lines)
            if len(message) > MESSAGE_MAX and self.too_long != self.sent:
                self.too_long = self.sent
                if self.say is not None:  # never for a record the host writes (a few hundred B)
                    self.say(f"hallclock: {self.path}: a line of {len(lines)} bytes at byte "
                             f"{self.sent} is longer than the brokers take ({MESSAGE_MAX} B a "
                             "message): the office's copy stops before it")
            self.publish(self.topic, message)
            self.messages += 1
            self.sent = end
        self._save(now)

    def _read(self, start, stored):
        """Whole lines from ``start``: up to BATCH_BYTES, or one longer line."""
        want = min(stored - start, BATCH_BYTES)
        try:
            data = os.pread(self.fd, want, start)
            cut = data.rfind(b"\n") + 1
            if cut == 0 and data:  # one line longer than a batch: alone
                more = os.pread(self.fd, stored - start, start)
                cut = more.find(b"\n") + 1
                data = more
        except OSError:
            return b""
        return data[:cut]

    def on_ack(self, payload):
        got = parse_ack(payload)
        if got is None or got[0] != self.log:
            return
        _log, have, gap = got
        if have > self.stored():
            return  # more than the log holds: not this log's office
        now = time.monotonic()
        if have > self.acked:
            self.acked = have
            self.since = now
            self.window = WINDOW_BYTES
        if have > self.sent:
            self.sent = have  # the office has it already (our cursor was behind)
        elif gap and self.sent > have and now - self.rewound > REWIND_GAP_S:
            self.sent = have
            self.rewound = now
            self.resends += 1

    def _save(self, now, force=False):
        if self.log is None or self.acked == self.saved:
            return
        if not force and now - self.saved_at < CURSOR_EVERY_S:
            return
        tmp = self.cursor_path + ".new"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"log": self.log, "acked": self.acked}, f)
                f.write("\n")
            os.replace(tmp, self.cursor_path)
        except OSError:
            return  # next time; a stale cursor costs a resend only
        self.saved = self.acked
        self.saved_at = now

    def close(self):
        self._save(time.monotonic(), force=True)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class WholeLines:
    """The stored length of a log another program writes (``hallclock
    ship``): its size up to its last whole line (a line being written, or
    torn by a crash, waits).  A record read before its writer's fsync is
    shipped like any other: if the hall's laptop lost it, its clock, never
    acknowledged, sends it again and the hall's log gets the same record
    back."""

    def __init__(self, path):
        self.path = path
        self.whole = 0
        self.fd = None

    def __call__(self):
        try:
            if self.fd is None:
                self.fd = os.open(self.path, os.O_RDONLY)
            size = os.fstat(self.fd).st_size
            if size < self.whole:
                self.whole = 0  # cut back below what we saw: read it again
            if size > self.whole:
                data = os.pread(self.fd, size - self.whole, self.whole)
                cut = data.rfind(b"\n")
                if cut >= 0:
                    self.whole += cut + 1
        except OSError:
            pass
        return self.whole

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
