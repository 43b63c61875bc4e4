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
import threading
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


def _follow(net, shipper, stop, until_shipped=False):
    """The shipping loop (``hallclock ship`` and a serial logger's thread):
    the office's acknowledgements taken, what is stored shipped, until
    ``stop()`` or, with ``until_shipped``, the office holds all of it."""
    while not (stop is not None and stop()):
        net.wait(0.05)
        for name, payload in net.messages():
            if name == shipper.ack_name:
                shipper.on_ack(payload)
        shipper.poll()
        if until_shipped and shipper.log is not None and not shipper.behind():
            break


def ship_file(address, hall, credentials, path, tls=None, until_shipped=False, stop=None,
              say=None):
    """``hallclock ship``: ``path`` (a hall's log, written by any logger)
    shipped to the office through the hall's broker as the ``logger`` login,
    until ``stop()`` or, with ``until_shipped``, the office holds all of it.
    Returns the bytes the office lacks at the end."""
    from .broker import load_credentials
    from .mqtt import BrokerClient
    creds = load_credentials(credentials, "logger")
    lines = WholeLines(path)
    net = BrokerClient(address, creds["logger"], [ack_topic(hall)], tls=tls, inline=True)
    shipper = Shipper(path, hall, net.publish, lines, say=say)
    net.start()
    if say is not None:
        say(f"shipping {path} to the office (hall {hall}, broker {address[0]}:{address[1]})")
    try:
        _follow(net, shipper, stop, until_shipped)
    except KeyboardInterrupt:
        pass  # Ctrl-C: say what the office lacks
    finally:
        behind = shipper.behind()
        shipper.close()
        lines.close()
        net.stop()
    return behind


RECONNECT_S = 2.0  # the hall's broker unreachable when the logger started: tried again this often
DRAIN_S = 5.0  # a logger ending waits this long for the office to have its whole log


class Beside:
    """A serial logger's own shipping (``log --port``, ``round start --port``,
    ``hall`` with ``--ship``): the loop of ``hallclock ship`` in a thread of
    the logger's process, shipping what the logger has fsync'd
    (``stored()``, its writer's ``good``).  The serial logging never waits
    on it: the thread only reads the log from disk, and a broker that is
    down, slow or gone changes nothing for the clocks' acknowledgements."""

    def __init__(self, address, hall, credentials, path, stored=None, tls=None, say=None):
        from .broker import load_credentials
        self.creds = load_credentials(credentials, "logger")["logger"]  # bad file: before any port
        self.address, self.hall, self.tls, self.say = address, hall, tls, say
        self.path = os.fspath(path)
        self.net = None
        self.shipper = Shipper(path, hall, self._publish, stored, say=say)
        self.halt = False
        self.drain_until = None  # set by finish(): ship what is left, then end
        self.refused = None
        self.thread = threading.Thread(target=self._run, name="ship-to-office", daemon=True)

    def of(self, writer):
        """Ship what ``writer`` (the logger's LogWriter) has fsync'd."""
        self.shipper.stored = lambda: writer.good
        return self

    def _publish(self, name, payload):
        if self.net is not None:
            self.net.publish(name, payload)

    def start(self):
        self.thread.start()
        return self

    def _ending(self):
        if self.halt:
            return True
        if self.drain_until is None:
            return False
        return time.monotonic() > self.drain_until or (
            self.shipper.log is not None and not self.shipper.behind()) or \
            self.shipper.stored() <= 0

    def _connect(self):
        """The hall's broker, however long it takes to be there (the logger
        started first); None if it refused the login or the logger ends."""
        from ..errors import HallclockError
        from .mqtt import BrokerClient
        said = False
        while not self._ending():
            net = BrokerClient(self.address, self.creds, [ack_topic(self.hall)], tls=self.tls,
                               inline=True)
            try:
                return net.start()
            except HallclockError as exc:
                if net.rfd >= 0:
                    net.stop()
                if net.refused is not None:
                    self.refused = str(exc)
                    self._say(f"hallclock: not shipping to the office: {exc}")
                    return None
                if not said:
                    said = True
                    self._say(f"hallclock: {exc}; the log is kept as ever and shipped to the "
                              f"office once the broker answers (tried every {RECONNECT_S:.0f} s)")
            end = time.monotonic() + RECONNECT_S
            while time.monotonic() < end and not self._ending():
                time.sleep(0.05)
        return None

    def _run(self):
        try:
            self.net = self._connect()
            if self.net is not None:
                _follow(self.net, self.shipper, self._ending)
        except Exception as exc:  # the logging goes on: said, never raised into it
            self._say(f"hallclock: shipping to the office stopped: {exc}")
        finally:
            if self.net is not None:
                self.net.stop()

    def _say(self, text):
        if self.say is not None:
            self.say(text)

    def finish(self, drain_s=DRAIN_S):
        """The logger ends: the office's acknowledgement of the whole log
        waited for ``drain_s`` at most; what it lacks then is said.  Returns
        the bytes the office lacks."""
        self.drain_until = time.monotonic() + drain_s
        self.thread.join(drain_s + 2.0)
        self.halt = True
        self.thread.join(2.0)
        behind = self.shipper.behind()
        self.shipper.close()
        if behind and self.refused is None:
            self._say(f"hallclock: {self.path}: the office has not acknowledged the last "
                      f"{behind} bytes of this log yet (its link is down?); ship them with "
                      f"'hallclock ship --log {self.path} --until-shipped ...', or they go "
                      "when a logger runs on this log again (same --out)")
        return behind
