"""The JSON Lines game log: appended and fsync'd as records arrive (the records
that arrive together are stored with one write and one fsync), so a crash
loses nothing that was acknowledged; read back on start so a restarted logger resumes
without duplicates.  The file is created only when its first record arrives."""
import errno
import json
import os
import time
from datetime import datetime, timezone

from ..errors import BadInput
from .locks import LogLock

# errors that mean "no room now" (a full disk, a quota, a file-size limit):
# survived, the records kept and retried; any other write error stops the logger
FULL_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
RETRY_FULL_S = 1.0  # try a full disk again at most this often
MAX_HELD = 100000  # records held in memory while the disk is full (some 30 MB)


_last_time = [None, ""]  # (whole ms, its text): records of one ms share the text


def host_time():
    now = time.time()
    ms = int(now * 1000)
    if ms != _last_time[0]:
        stamp = datetime.fromtimestamp(ms / 1000, timezone.utc)
        _last_time[0] = ms
        _last_time[1] = stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return _last_time[1]


# What a record's fields may hold (docs/contract.md): the report, the resume
# index and the views do arithmetic on them, so a line whose fields have other
# types is not a record (it is skipped and counted, never a traceback).
# Device times are ticks_diff values: -2**29 .. 2**29-1 ms.
T_MIN, T_MAX = -(1 << 29), (1 << 29) - 1
RECORD_START = b'{"clock": '  # how every record LogWriter writes begins
MAX_LOG_LINE = 1 << 16  # a record is a few hundred bytes; longer lines are not records
_INT_FIELDS = ("move", "limit_ms", "bank_ms", "used_ms", "break_ms", "left_s", "number",
               "last_seq", "round")


# The fields an event cannot be read without (docs/contract.md); events not
# named here (extensions, newer events) need only the common fields.
REQUIRED = {
    "boot": ("mode",), "gong": ("kind",), "turn": ("player", "move"),
    "press": ("player", "move", "used_ms"), "warn": ("move", "left_s"), "expired": ("move",),
    "announce": ("move", "left_s"), "dup_start": ("move", "limit_ms"), "dup_end": ("move",),
    "playout": ("step",), "break": ("player", "number"), "break_end": ("player", "number"),
    "gap": ("missing",),
}


# The fields the host adds to a clock's record when it stores it: two copies
# of one record (a hot standby's log, the office's copy) may differ in them
# and still be the same record.  ``host_time`` is each logger's own clock;
# ``round`` is tagged by the logger that heard the session's ``round`` event
# (on that event itself it is the clock's own field).
HOST_FIELDS = ("host_time", "round")


def clock_part(rec):
    """A record without the fields the host added (HOST_FIELDS): what two
    logs of the same clock must agree on."""
    own = ("round",) if rec.get("event") == "round" else ()
    return {k: v for k, v in rec.items() if k not in HOST_FIELDS or k in own}


def _is_int(v, lo=T_MIN, hi=T_MAX):
    return type(v) is int and lo <= v <= hi


def record_error(rec, strict=False):
    """None if ``rec`` (parsed JSON) is a log record, else what is wrong.
    ``strict`` (the report): also the fields its event cannot be read without."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    if not isinstance(rec.get("clock"), str) or not rec["clock"]:
        return "no clock name"
    if not isinstance(rec.get("event"), str):
        return "no event name"
    if not _is_int(rec.get("seq"), 0, 1 << 53):
        return "seq is not a whole number"
    if not _is_int(rec.get("t_ms")):
        return "t_ms is not a whole number of ms within the clock's range"
    if "session" in rec and not isinstance(rec["session"], (str, int)) or \
            isinstance(rec.get("session"), bool):
        return "session is not a string"
    if "host_time" in rec and not isinstance(rec["host_time"], str):
        return "host_time is not a string"
    for key in _INT_FIELDS:
        if rec.get(key) is not None and not _is_int(rec[key]):
            return f"{key} is not a whole number within the clock's range"
    if rec.get("player") not in (None, "A", "B"):
        return "player is not A, B or null"
    for key in ("kind", "step", "what", "mode"):
        if rec.get(key) is not None and not isinstance(rec[key], (str, int)):
            return f"{key} is not a name"
    if "settings" in rec and not isinstance(rec["settings"], dict):
        return "settings is not an object"
    for key in REQUIRED.get(rec["event"], ()) if strict else ():
        if rec.get(key) is None:
            return f"a {rec['event']} without its {key}"
    missing = rec.get("missing")
    if missing is not None and not (isinstance(missing, list) and len(missing) == 2
                                    and all(_is_int(v, 0, 1 << 53) for v in missing)):
        return "missing is not [first, last]"
    return None


def parse_line(raw, strict=False):
    """(record, None) or (None, why) for one line of a log (bytes)."""
    if len(raw) > MAX_LOG_LINE:
        return None, f"a line of {len(raw)} bytes"
    try:
        rec = json.loads(raw)
    except RecursionError:
        return None, "nested too deep"
    except ValueError:  # JSONDecodeError, and UnicodeDecodeError for bytes not UTF-8
        return None, "not JSON"
    why = record_error(rec, strict)
    return (None, why) if why else (rec, None)


def scan(path, strict=False):
    """(records, skipped) of a log: every whole record, and [(line number,
    why)] of the lines that are not records (a torn last line from a crash
    among them).  OSError is the caller's."""
    records = []
    skipped = []
    with open(path, "rb") as f:
        data = f.read()
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        rec, why = parse_line(raw, strict)
        if rec is None:
            skipped.append((lineno, why))
        else:
            records.append(rec)
    return records, skipped


def read_records(path):
    """Every whole record of a log (a torn last line from a crash is skipped)."""
    try:
        return scan(path)[0]
    except FileNotFoundError:
        return []


class JsonlTail:
    """The records of a JSON Lines file read as it grows (the hall display's,
    the referee console's, the round process's referee log): each ``read()``
    gives the objects of the lines completed since the last one; a line
    still being written waits for its newline; lines that are not JSON
    objects are passed over.  A file shorter than what was read has been
    replaced: it is read afresh from its start."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.partial = b""

    def exists(self):
        return os.path.exists(self.path)

    def read(self):
        """(new records, replaced): ``replaced`` True when the file was read
        afresh (what the caller built from the old one is stale)."""
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return [], False
        replaced = size < self.offset
        if replaced:
            self.offset = 0
            self.partial = b""
        if size == self.offset:
            return [], replaced
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read(size - self.offset)
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()  # a line still being written
        records = []
        for raw in lines:
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(rec, dict):
                records.append(rec)
        return records, replaced


def looks_like_log(path):
    """True if ``path`` is a file whose first line is a hallclock log record."""
    try:
        with open(path, "rb") as f:
            first = f.readline(MAX_LOG_LINE + 1)
    except OSError:
        return False
    return parse_line(first.strip())[0] is not None


def is_torn_record(tail):
    """True if ``tail`` (a last line without its newline) can be the start of a
    record LogWriter wrote, cut short: it begins as they do, or is shorter
    than that beginning and agrees with it (a write a full disk cut after a
    few bytes)."""
    return tail.startswith(RECORD_START) or RECORD_START.startswith(tail)


def check_appendable(path):
    """A log may only be appended to if it is empty or a hallclock log whose
    every whole line is a record (a torn last line, cut off on resume, aside).
    Raises BadInput naming the file and the first line that is not a record."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise BadInput(f"{path}: is a folder; give the log's file name") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the log to resume it ({exc.strerror})") from None
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" when the file ends with a newline
    if torn.strip() and not is_torn_record(torn):
        raise BadInput(f"{path}: not a hallclock log (line {len(lines) + 1} is not a log "
                       "record); the logger only appends to its own logs, so give a new "
                       "--out file")
    # a last line that is the start of one of our records, cut short by a
    # crash or a full disk, is cut off on resume (its event is resent)
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        if parse_line(raw)[0] is None:
            raise BadInput(f"{path}: not a hallclock log (line {lineno} is not a log record: "
                           f"{parse_line(raw)[1]}); the logger only appends to its own logs, "
                           "so give a new --out file")


# one record -> one JSON line (keys in the record's order), as json.dumps would
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode


class LogWriter:
    """The one writer of a log: it holds the log's lock (``locks.LogLock``)
    from before it reads the log until ``close`` (``lock=False``: a writer
    with no file of its own, the viewer's MemoryWriter)."""

    def __init__(self, path, lock=True):
        self.path = os.fspath(path)
        self.fd = None
        # before anything is read or cut: a second program is refused here
        self.lock = LogLock(self.path) if lock else None
        try:
            self._open()
        except BaseException:
            self._unlock()
            raise

    def _open(self):
        self.count = 0
        # (clock, session) -> last seq stored, and the t_ms of its last event
        self.last = {}
        self.last_t = {}
        self.ended = set()  # (clock, session) closed: its end (or power_loss) is stored
        self.ends = set()  # (clock, session) whose end event is stored
        self.latest = {}  # clock -> the session of its newest record
        self.full = None  # why the last flush could not store (disk full), or None
        self.full_since = None
        self.full_count = 0  # episodes of a full disk
        self.recovered = 0  # ... and how many ended with everything stored
        self.retry_at = 0.0
        # The log's stored length: its size when read back at start (a torn
        # last line cut off), then after each successful fsync.  Every byte
        # below it is a whole record on disk; nothing past it is acknowledged.
        self.good = 0
        self.torn = False  # a cut-back failed: the file holds bytes past ``good``
        self.rounds = {}  # (clock, session) -> the round its records carry
        self.pending = []  # JSON lines queued by add(), stored by flush()
        self.pending_records = []  # their records, in the same order
        self.flushes = 0  # how many write+fsync batches have been stored
        check_appendable(self.path)
        try:
            records = read_records(self.path)
        except OSError as exc:
            raise BadInput(f"{self.path}: cannot read the log to resume it "
                           f"({exc.strerror})") from None
        for rec in records:
            self._index(rec)
        self.on_disk = dict(self.last)  # (clock, session) -> last seq on disk
        self._repair_tail()

    def _index(self, rec):
        key = (rec.get("clock"), rec.get("session"))
        seq = rec.get("seq")
        if isinstance(seq, int) and seq > self.last.get(key, 0):
            self.last[key] = seq
        if isinstance(rec.get("t_ms"), int):
            self.last_t[key] = rec["t_ms"]
        if rec.get("event") in ("end", "power_loss"):
            self.ended.add(key)
        if rec.get("event") == "end":
            self.ends.add(key)
        self.latest[key[0]] = key[1]
        if isinstance(rec.get("round"), int):
            self.rounds[key] = rec["round"]  # a restarted logger goes on tagging
            if rec.get("event") == "end":
                del self.rounds[key]  # ... until the game's end (hostlink.tag_round)

    def _repair_tail(self):
        """A crash mid-write can leave a last line without its newline; cut it
        off so the next record starts on a line of its own."""
        try:
            with open(self.path, "rb+") as f:
                data = f.read()
                self.good = len(data)
                if data and not data.endswith(b"\n"):
                    cut = data.rfind(b"\n") + 1
                    f.truncate(cut)
                    f.flush()
                    os.fsync(f.fileno())
                    self.good = cut
        except FileNotFoundError:
            self.good = 0
        except OSError as exc:
            raise BadInput(f"{self.path}: cannot repair the log's last line "
                           f"({exc.strerror})") from None

    def last_seq(self, clock, session):
        return self.last.get((clock, session), 0)

    def last_t_ms(self, clock, session):
        return self.last_t.get((clock, session), 0)

    def has_end(self, clock, session):
        return (clock, session) in self.ends

    def is_closed(self, clock, session):
        return (clock, session) in self.ended

    def games_over(self, heard=()):
        """(ended, open): the clocks of the log, other than ``heard``, whose
        newest session has its end stored, and those whose newest has not."""
        ended, open_ = set(), set()
        for clock, sid in self.latest.items():
            if clock not in heard:
                (ended if (clock, sid) in self.ends else open_).add(clock)
        return ended, open_

    def session_records(self, clock, session):
        """Every stored record of one session (read back from the file)."""
        self.flush()
        return [r for r in read_records(self.path) + self.pending_records
                if r.get("clock") == clock and r.get("session") == session]

    def add(self, record):
        """Queue a record for the next ``flush``: it is not stored (and must
        not be acknowledged) until then.  The resume index counts it at once,
        so the links go on from it."""
        if "host_time" not in record:
            record["host_time"] = host_time()
        self.pending.append(_dumps(record))
        self.pending_records.append(record)
        self._index(record)

    def flush(self):
        """Store every queued record: one write and one fsync for all of them.
        Returns how many records were stored.

        The write goes at ``good``, the log's stored length (every byte below
        it a whole record, fsync'd), and only a successful fsync moves
        ``good`` on and lets the records be acknowledged (``durable_seq``).
        Any failure (the write, cut short or refused, or the fsync) cuts the
        file back to ``good``.  A full disk (ENOSPC, EDQUOT) or a file-size
        limit (EFBIG) is survived: the records stay queued, ``full`` says why,
        the clocks keep the events, and the next flush after RETRY_FULL_S
        tries again; any other error stops the logger (BadInput).

        If the cut-back fails too (``torn``), the bytes past ``good`` are
        what an earlier try wrote of the queued records, which are still
        queued, in the same order, with more perhaps behind them: a prefix of
        this try's bytes.  The next flush checks that (``_check_tail``) and
        writes the whole batch at ``good`` again, over them: nothing is
        appended twice, a torn line is completed by the same bytes, and
        bytes whose fsync failed are written again before an fsync counts
        them (after a failed fsync the kernel may keep showing them while
        no later fsync writes them to the disk).  So the log is always its stored
        records, then at most a prefix of the queued ones; once a flush
        succeeds, every queued record is stored, once, in order."""
        if not self.pending:
            return 0
        if self.full is not None and time.monotonic() < self.retry_at:
            return 0
        data = ("\n".join(self.pending) + "\n").encode()
        try:
            if self.fd is None:
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._check_tail(data)
            os.lseek(self.fd, self.good, os.SEEK_SET)
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                if n <= 0:  # no progress: as a full disk
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[n:]
            self.sync(self.fd)
        except OSError as exc:
            self._cut_back()
            if exc.errno not in FULL_ERRNOS:
                raise BadInput(f"{self.path}: cannot write the log ({exc.strerror}); "
                               "check the folder exists and is writable") from None
            if self.full is None:
                self.full_since = time.monotonic()
                self.full_count += 1
            self.full = exc.strerror or str(exc)
            self.retry_at = time.monotonic() + RETRY_FULL_S
            return 0
        self.good += len(data)
        n = len(self.pending)
        self.count += n
        self.flushes += 1
        self.torn = False
        for rec in self.pending_records:
            key = (rec.get("clock"), rec.get("session"))
            seq = rec.get("seq")
            if rec.get("event") == "gap" and isinstance(rec.get("missing"), list):
                seq = rec["missing"][1]  # the gap stands for the events it names
            if isinstance(seq, int) and seq > self.on_disk.get(key, 0):
                self.on_disk[key] = seq
        del self.pending[:]
        del self.pending_records[:]
        if self.full is not None:
            self.full = None
            self.recovered += 1
        return n

    def _check_tail(self, data):
        """Before a write: the file must be ``good`` bytes long, or longer by
        what an earlier try left of ``data`` (a cut-back that failed); any
        other length or tail means another program changed the log."""
        size = os.fstat(self.fd).st_size
        if size == self.good:
            return
        tail = b""
        if size > self.good:
            os.lseek(self.fd, self.good, os.SEEK_SET)
            while len(tail) < size - self.good:
                chunk = os.read(self.fd, size - self.good - len(tail))
                if not chunk:
                    break
                tail += chunk
            if len(tail) == size - self.good and data.startswith(tail):
                return  # ours: written over by the same bytes
        raise BadInput(f"{self.path}: the log changed under the logger (it is {size} bytes, "
                       f"{self.good} of them stored by this logger, and the rest is not what "
                       "it wrote); another program writes to it? give each logger its own "
                       "--out file")

    def _cut_back(self):
        """Undo a write that was not stored: the file back to ``good``."""
        if self.fd is None:
            return
        try:
            os.ftruncate(self.fd, self.good)
            self.torn = False
        except OSError:
            self.torn = True  # the next flush writes over what is left

    def durable_seq(self, clock, session):
        """The last seq of a session that is on disk (what may be acknowledged)."""
        return self.on_disk.get((clock, session), 0)

    def held(self):
        """How many records wait for space."""
        return len(self.pending)

    def accepting(self):
        """False when so many records wait for space that new events are left
        with the clocks (their buffers keep them; they are resent)."""
        return len(self.pending) < MAX_HELD

    def sync(self, fd):
        """Make what was written durable (a hook the tests instrument)."""
        os.fsync(fd)

    def write(self, record):
        """Store one record now (and whatever was queued before it)."""
        self.add(record)
        self.flush()

    def close(self):
        """Close the log; bytes left past ``good`` by a cut-back that failed
        (never acknowledged) are cut off once more if they can be."""
        if self.fd is not None:
            if self.torn:
                self._cut_back()
            os.close(self.fd)
            self.fd = None
        self._unlock()

    def _unlock(self):
        if self.lock is not None:
            self.lock.release()
            self.lock = None
