"""The JSON Lines game log: appended and fsync'd as records arrive (the records
that arrive together are stored with one write and one fsync), so a crash
loses nothing that was acknowledged; read back on start so a restarted logger resumes
without duplicates.  The file is created only when its first record arrives."""
import json
import os
import time
from datetime import datetime, timezone

from .errors import BadInput


_last_time = [None, ""]  # (whole ms, its text): records of one ms share the text


def host_time():
    now = time.time()
    ms = int(now * 1000)
    if ms != _last_time[0]:
        stamp = datetime.fromtimestamp(ms / 1000, timezone.utc)
        _last_time[0] = ms
        _last_time[1] = stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return _last_time[1]


def read_records(path):
    """Every whole record of a log (a torn last line from a crash is skipped)."""
    records = []
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return records
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            records.append(json.loads(raw))
        except ValueError:
            continue  # a record cut short by a crash: its event is resent
    return records


# one record -> one JSON line (keys in the record's order), as json.dumps would
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode


class LogWriter:
    def __init__(self, path):
        self.path = os.fspath(path)
        self.fd = None
        self.count = 0
        # (clock, session) -> last seq stored, and the t_ms of its last event
        self.last = {}
        self.last_t = {}
        self.ended = set()  # (clock, session) closed: its end (or power_loss) is stored
        self.ends = set()  # (clock, session) whose end event is stored
        self.latest = {}  # clock -> the session of its newest record
        self.rounds = {}  # (clock, session) -> the round its records carry
        self.pending = []  # JSON lines queued by add(), stored by flush()
        self.pending_records = []  # their records, in the same order
        self.flushes = 0  # how many write+fsync batches have been stored
        try:
            records = read_records(self.path)
        except OSError as exc:
            raise BadInput(f"{self.path}: cannot read the log to resume it "
                           f"({exc.strerror})") from None
        for rec in records:
            self._index(rec)
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
                if data and not data.endswith(b"\n"):
                    cut = data.rfind(b"\n") + 1
                    f.truncate(cut)
                    f.flush()
                    os.fsync(f.fileno())
        except FileNotFoundError:
            pass
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

    def session_records(self, clock, session):
        """Every stored record of one session (read back from the file)."""
        self.flush()
        return [r for r in read_records(self.path)
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
        Returns how many records were stored."""
        if not self.pending:
            return 0
        data = ("\n".join(self.pending) + "\n").encode()
        if self.fd is None:
            try:
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                raise BadInput(f"{self.path}: cannot write the log ({exc.strerror}); "
                               "check the folder exists and is writable") from None
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        self.sync(self.fd)
        n = len(self.pending)
        self.count += n
        self.flushes += 1
        del self.pending[:]
        del self.pending_records[:]
        return n

    def sync(self, fd):
        """Make what was written durable (a hook the tests instrument)."""
        os.fsync(fd)

    def write(self, record):
        """Store one record now (and whatever was queued before it)."""
        self.add(record)
        self.flush()

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
