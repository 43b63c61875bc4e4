"""The JSON Lines game log in one process (hallclock.link.logfile): what a
line must hold to be a record (docs/contract.md, "Log files read"), the
resume index a restarted logger goes on from, "appended and fsync'd, never
overwritten" (a log is only appended to if it is a hallclock log; a torn last
line is cut off), and a full disk: nothing stored by halves, nothing
acknowledged that is not on disk, every held record stored once when there is
room again.  Every threshold on both sides and on its exact value."""
import errno
import json
import os
import tempfile
from datetime import datetime, timezone

import pytest
from hypothesis import given, strategies as st

from hallclock.errors import BadInput
from hallclock.link import logfile
from hallclock.link.logfile import (MAX_HELD, MAX_LOG_LINE, RETRY_FULL_S, T_MAX, T_MIN,
                                    JsonlTail, LogWriter, check_appendable, host_time,
                                    looks_like_log, parse_line, read_records, record_error,
                                    scan)

BASE = {"clock": "t1", "seq": 1, "t_ms": 0, "event": "pause"}


def rec(**fields):
    r = dict(BASE)
    for k, v in fields.items():
        if v is _DROP:
            del r[k]
        else:
            r[k] = v
    return r


_DROP = object()


def line(record):
    return json.dumps(record).encode()


# -- what a record is (docs/contract.md, "Log files read") ---------------------
def test_a_record_is_an_object_with_a_clock_an_event_and_whole_seq_and_t_ms():
    assert record_error(rec()) is None
    assert record_error([BASE]) == "not a JSON object"
    assert record_error("turn") == "not a JSON object"
    assert record_error(rec(clock="")) == "no clock name"
    assert record_error(rec(clock=7)) == "no clock name"
    assert record_error(rec(clock=_DROP)) == "no clock name"
    assert record_error(rec(event=3)) == "no event name"
    assert record_error(rec(event=_DROP)) == "no event name"
    assert record_error(rec(event="")) is None  # a string, even empty, names the event


@pytest.mark.parametrize("seq, ok", [(-1, False), (0, True), (1, True), (1 << 53, True),
                                     ((1 << 53) + 1, False), (True, False), (1.0, False),
                                     ("1", False), (None, False)])
def test_seq_is_a_whole_number_from_0_to_2_to_the_53(seq, ok):
    assert (record_error(rec(seq=seq)) is None) == ok
    if not ok:
        assert record_error(rec(seq=seq)) == "seq is not a whole number"


@pytest.mark.parametrize("t, ok", [(T_MIN - 1, False), (T_MIN, True), (T_MIN + 1, True), (0, True),
                                   (T_MAX - 1, True), (T_MAX, True), (T_MAX + 1, False),
                                   (False, False), (0.5, False)])
def test_t_ms_is_a_ticks_diff_value(t, ok):
    """A record's t_ms outside -2**29 .. 2**29-1 is not a record (docs/contract.md)."""
    assert T_MIN == -(1 << 29) and T_MAX == (1 << 29) - 1
    assert (record_error(rec(t_ms=t)) is None) == ok


def test_session_and_host_time():
    assert record_error(rec(session="0000abcd")) is None
    assert record_error(rec(session=12)) is None  # a referee's or an old log's number
    for bad in (True, False, None, [1], 1.5):
        assert record_error(rec(session=bad)) == "session is not a string"
    assert record_error(rec(host_time="2026-12-01T00:00:00.000Z")) is None
    assert record_error(rec(host_time=5)) == "host_time is not a string"


@pytest.mark.parametrize("key", logfile._INT_FIELDS)
def test_the_number_fields_hold_ticks_diff_values(key):
    assert record_error(rec(**{key: None})) is None
    for ok in (T_MIN, 0, T_MAX):
        assert record_error(rec(**{key: ok})) is None
    for bad in (T_MIN - 1, T_MAX + 1, "3", 2.0, True):
        assert record_error(rec(**{key: bad})) == \
            f"{key} is not a whole number within the clock's range"


def test_player_and_names_and_settings():
    for ok in (None, "A", "B"):
        assert record_error(rec(player=ok)) is None
    for bad in ("C", "a", 0, ""):
        assert record_error(rec(player=bad)) == "player is not A, B or null"
    for key in ("kind", "step", "what", "mode"):
        assert record_error(rec(**{key: "x"})) is None
        assert record_error(rec(**{key: 2})) is None
        assert record_error(rec(**{key: None})) is None
        assert record_error(rec(**{key: ["x"]})) == f"{key} is not a name"
        assert record_error(rec(**{key: 1.5})) == f"{key} is not a name"
    assert record_error(rec(settings={"move_s": 120})) is None
    assert record_error(rec(settings="move_s=120")) == "settings is not an object"


def test_missing_is_first_and_last_seq():
    for ok in ([0, 0], [3, 7], [1 << 53, 1 << 53]):
        assert record_error(rec(event="gap", missing=ok)) is None
    for bad in ([3], [3, 4, 5], (3, 4), [-1, 4], [3, (1 << 53) + 1], [3, "4"], "3-4"):
        assert record_error(rec(event="gap", missing=bad)) == "missing is not [first, last]"


def test_strict_asks_for_the_fields_an_event_cannot_be_read_without():
    """report (strict): a turn needs its player and move, a press also used_ms, ...
    A resumed log (not strict) needs only the common fields; events not in the
    contract need only those too."""
    turn = rec(event="turn", player="A", move=1)
    assert record_error(turn, strict=True) is None
    no_move = rec(event="turn", player="A")
    assert record_error(no_move) is None
    assert record_error(no_move, strict=True) == "a turn without its move"
    press = rec(event="press", player="B", move=2)
    assert record_error(press, strict=True) == "a press without its used_ms"
    assert record_error(rec(event="newer_event"), strict=True) is None
    assert record_error(rec(event="gap"), strict=True) == "a gap without its missing"


# -- lines and files -------------------------------------------------------------
def test_a_line_of_at_most_64_kib_may_be_a_record():
    """A record is a few hundred bytes; a line longer than MAX_LOG_LINE is not
    parsed at all."""
    assert MAX_LOG_LINE == 1 << 16
    short = line(rec(pad=""))
    exact = line(rec(pad="x" * (MAX_LOG_LINE - len(short))))
    assert len(exact) == MAX_LOG_LINE
    assert parse_line(exact) == (json.loads(exact), None)
    over = line(rec(pad="x" * (MAX_LOG_LINE - len(short) + 1)))
    assert parse_line(over) == (None, f"a line of {MAX_LOG_LINE + 1} bytes")


def test_a_line_that_is_not_json_says_why():
    assert parse_line(b"{not json") == (None, "not JSON")
    assert parse_line(b"\xff\xfe{}") == (None, "not JSON")
    assert parse_line(b"[" * 30000 + b"]" * 30000) == (None, "nested too deep")
    assert parse_line(line(rec(clock=""))) == (None, "no clock name")
    assert parse_line(line(rec(event="press")), strict=True) == \
        (None, "a press without its player")
    assert parse_line(line(rec(event="press")))[1] is None


def test_scan_gives_records_and_the_numbered_lines_skipped(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_bytes(line(rec(seq=1)) + b"\n\n  \n" + b"junk\n" + line(rec(seq=2)) + b"\n"
                  + line(rec(event="press")) + b"\n" + b'{"clock": "t1", "se')
    records, skipped = scan(str(p))
    assert [r["seq"] for r in records] == [1, 2, 1]
    assert skipped == [(4, "not JSON"), (7, "not JSON")]  # blank lines are not counted
    records, skipped = scan(str(p), strict=True)
    assert [r["seq"] for r in records] == [1, 2]
    assert skipped == [(4, "not JSON"), (6, "a press without its player"), (7, "not JSON")]
    assert [r["seq"] for r in read_records(str(p))] == [1, 2, 1]
    assert read_records(str(tmp_path / "none.jsonl")) == []
    with pytest.raises(OSError):
        read_records(str(tmp_path))  # a folder: the caller's


def test_looks_like_log_reads_the_first_line(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(line(rec()) + b"\nnot json\n")
    assert looks_like_log(str(p))
    p.write_bytes(b"not json\n" + line(rec()) + b"\n")
    assert not looks_like_log(str(p))
    p.write_bytes(b"")
    assert not looks_like_log(str(p))
    assert not looks_like_log(str(tmp_path / "missing"))
    assert not looks_like_log(str(tmp_path))
    short = line(rec(pad=""))
    exact = line(rec(pad="x" * (MAX_LOG_LINE - len(short))))
    p.write_bytes(exact + b"\n")
    assert looks_like_log(str(p))
    p.write_bytes(line(rec(pad="x" * (MAX_LOG_LINE - len(short) + 1))) + b"\n")
    assert not looks_like_log(str(p))
    p.write_bytes(exact + b"x\n")  # a record of 64 KiB and more on its line: not a record
    assert not looks_like_log(str(p))


def test_only_a_hallclock_log_is_appended_to(tmp_path):
    """docs/contract.md, "Nothing written over": log appends to an existing
    --out only if every whole line is a record; a last line cut short by a
    crash (it begins as our records do) is cut off; otherwise bad input naming
    the file and the first line that is not a record."""
    p = tmp_path / "log.jsonl"
    check_appendable(str(tmp_path / "new.jsonl"))  # not there yet: fine
    p.write_bytes(b"")
    check_appendable(str(p))
    good = line(rec()) + b"\n"
    p.write_bytes(good + b"\n" + good)
    check_appendable(str(p))
    p.write_bytes(good + b'{"clock": "t1", "seq": 2, "t_')
    check_appendable(str(p))  # a torn record: cut off on resume
    p.write_bytes(good + b"hello")
    with pytest.raises(BadInput, match=r"log.jsonl: not a hallclock log \(line 2 is not"):
        check_appendable(str(p))
    p.write_bytes(good + b"\n" + b"hello\n" + good)
    with pytest.raises(BadInput, match=r"\(line 3 is not a log record: not JSON\)"):
        check_appendable(str(p))
    p.write_bytes(good + line(rec(seq=-1)) + b"\n")
    with pytest.raises(BadInput, match=r"\(line 2 is not a log record: seq is not a whole"):
        check_appendable(str(p))
    with pytest.raises(BadInput, match="is a folder; give the log's file name"):
        check_appendable(str(tmp_path))
    with pytest.raises(BadInput, match="cannot read the log to resume it"):
        check_appendable(str(p / "below-a-file"))


# -- the tail of a growing file ---------------------------------------------------
def test_a_tail_gives_completed_lines_once_and_starts_again_when_replaced(tmp_path):
    p = tmp_path / "t.jsonl"
    t = JsonlTail(str(p))
    assert not t.exists() and t.read() == ([], False)
    p.write_bytes(b'{"a": 1}\n{"b"')
    assert t.exists()
    assert t.read() == ([{"a": 1}], False)
    assert t.read() == ([], False)  # nothing new
    with open(p, "ab") as f:
        f.write(b': 2}\n\n[1]\nnot json\n' + b"[" * 100000 + b"\n" + b'{"c": 3}\n')
    assert t.read() == ([{"b": 2}, {"c": 3}], False)
    p.write_bytes(b'{"d": 4}\n')  # shorter than what was read: replaced
    assert t.read() == ([{"d": 4}], True)
    assert t.read() == ([], False)
    p.write_bytes(b"")
    assert t.read() == ([], True)  # emptied: replaced, nothing in it


# -- host_time ------------------------------------------------------------------
def test_host_time_is_utc_iso_8601_to_the_ms():
    import time
    before = int(time.time() * 1000)
    text = host_time()
    after = int(time.time() * 1000)
    assert len(text) == 24 and text.endswith("Z") and text[10] == "T" and text[19] == "."
    when = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    ms = round(when.timestamp() * 1000)
    assert before <= ms <= after
    assert host_time() >= text


# -- the writer: resume index, append, tail repair ------------------------------------
def records_of(path):
    return [json.loads(x) for x in open(path, "rb").read().splitlines() if x.strip()]


def test_the_resume_index_of_a_log(tmp_path):
    p = tmp_path / "log.jsonl"
    rows = [
        {"clock": "t1", "seq": 1, "t_ms": 0, "event": "boot", "mode": "scrabble", "session": "s1"},
        {"clock": "t1", "seq": 3, "t_ms": 70, "event": "turn", "session": "s1", "round": 2},
        {"clock": "t1", "seq": 2, "t_ms": 50, "event": "turn", "session": "s1", "round": 2},
        {"clock": "t2", "seq": 1, "t_ms": 9, "event": "end", "session": "s9"},
        {"clock": "t2", "seq": 1, "t_ms": 4, "event": "boot", "session": "sA", "round": 5},
        {"clock": "t3", "seq": 4, "t_ms": 8, "event": "power_loss", "session": "s3",
         "round": 1},
        {"clock": "t3", "seq": 1, "t_ms": 1, "event": "boot", "session": "s4", "round": 1},
        {"clock": "t3", "seq": 2, "t_ms": 2, "event": "end", "session": "s4", "round": 1},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    w = LogWriter(p)
    assert w.last_seq("t1", "s1") == 3  # the highest seq, whatever the order
    assert w.last_t_ms("t1", "s1") == 50  # the t_ms of the last record read
    assert w.last_seq("t1", "nope") == 0 and w.last_t_ms("t1", "nope") == 0
    assert w.last_seq("t2", "sA") == 1 and w.last_t_ms("t2", "sA") == 4
    assert w.durable_seq("t2", "sA") == 1
    assert w.durable_seq("t1", "s1") == 3 and w.durable_seq("t9", "s1") == 0
    assert w.latest == {"t1": "s1", "t2": "sA", "t3": "s4"}
    assert w.has_end("t2", "s9") and not w.has_end("t3", "s3") and not w.has_end("t1", "s1")
    assert w.is_closed("t2", "s9") and w.is_closed("t3", "s3") and w.is_closed("t3", "s4")
    assert not w.is_closed("t1", "s1") and not w.is_closed("t2", "sA")
    # a restarted logger goes on tagging the round ... until the game's end
    assert w.rounds == {("t1", "s1"): 2, ("t2", "sA"): 5, ("t3", "s3"): 1}
    assert w.count == 0 and w.held() == 0 and w.accepting()
    w.close()


def test_a_torn_last_line_is_cut_off_and_the_rest_kept(tmp_path):
    p = tmp_path / "log.jsonl"
    good = line(rec(session="s")) + b"\n" + line(rec(seq=2, session="s")) + b"\n"
    p.write_bytes(good + b'{"clock": "t1", "seq": 3, "t_')
    w = LogWriter(p)
    assert p.read_bytes() == good and w.last_seq("t1", "s") == 2
    w.write(rec(seq=3, session="s"))
    assert [r["seq"] for r in records_of(p)] == [1, 2, 3]
    w.close()
    p.write_bytes(b'{"clock": "t1"')  # nothing but a torn line
    LogWriter(p).close()
    assert p.read_bytes() == b""
    p.write_bytes(good)
    LogWriter(p).close()
    assert p.read_bytes() == good  # whole lines: untouched


def test_a_log_that_is_not_ours_or_cannot_be_read_is_bad_input(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_bytes(b"shopping list\n")
    with pytest.raises(BadInput, match="not a hallclock log"):
        LogWriter(p)
    assert p.read_bytes() == b"shopping list\n"  # never overwritten


def test_the_file_is_made_by_the_first_record_and_only_appended_to(tmp_path):
    p = tmp_path / "log.jsonl"
    w = LogWriter(p)
    assert w.flush() == 0 and not p.exists()  # nothing queued: no file
    r = rec(session="s", host_time="kept")
    w.add(r)
    assert w.held() == 1 and not p.exists()
    assert w.last_seq("t1", "s") == 1  # the links go on from a queued record at once
    assert w.durable_seq("t1", "s") == 0  # ... but it is not on disk: no ack for it
    assert w.flush() == 1 and w.count == 1 and w.flushes == 1 and w.held() == 0
    assert w.durable_seq("t1", "s") == 1
    assert p.read_bytes() == line(r) + b"\n" and r["host_time"] == "kept"
    assert oct(os.stat(p).st_mode & 0o777) == "0o644"
    w.add(rec(seq=2, session="s"))
    w.add(rec(seq=3, session="s"))
    assert w.flush() == 2 and w.count == 3 and w.flushes == 2
    assert w.durable_seq("t1", "s") == 3
    got = records_of(p)
    assert [x["seq"] for x in got] == [1, 2, 3] and "host_time" in got[2]
    w.close()
    w.close()  # twice: harmless
    w2 = LogWriter(p)
    w2.write(rec(seq=4, session="s"))
    assert [x["seq"] for x in records_of(p)] == [1, 2, 3, 4]
    w2.close()


def test_session_records_include_what_waits_for_the_disk(tmp_path):
    p = tmp_path / "log.jsonl"
    w = LogWriter(p)
    w.write(rec(session="s"))
    w.write(rec(clock="t2", session="s"))
    w.write(rec(session="x"))
    w.add(rec(seq=2, session="s"))
    assert [r["seq"] for r in w.session_records("t1", "s")] == [1, 2]
    w.close()


def test_a_gap_record_stands_for_the_events_it_names(tmp_path):
    """The gap record is stored in place of events the clock overwrote: once it
    is on disk, everything up to its last missing seq may be acknowledged."""
    w = LogWriter(tmp_path / "log.jsonl")
    w.write(rec(session="s"))
    w.write({"clock": "t1", "seq": 2, "t_ms": 0, "event": "gap", "missing": [2, 9],
             "session": "s"})
    assert w.durable_seq("t1", "s") == 9
    w.write({"clock": "t1", "seq": 3, "t_ms": 0, "event": "turn", "session": "s"})
    assert w.durable_seq("t1", "s") == 9  # never lowered
    w.close()


# -- a full disk ---------------------------------------------------------------
class FullDisk(LogWriter):
    """A LogWriter on a disk that is full while ``full_err`` is set: the fsync
    fails with it (after the bytes went to the file, as a real full disk may)."""
    full_err = None

    def sync(self, fd):
        if self.full_err is not None:
            raise OSError(self.full_err, os.strerror(self.full_err))
        os.fsync(fd)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def time(self):
        import time
        return time.time()


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(logfile, "time", c)
    return c


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EFBIG, errno.EDQUOT])
def test_a_full_disk_stores_nothing_by_halves_and_holds_the_records(tmp_path, clock, err):
    p = tmp_path / "log.jsonl"
    w = FullDisk(p)
    w.write(rec(session="s"))
    before = p.read_bytes()
    w.full_err = err
    w.add(rec(seq=2, session="s"))
    assert w.flush() == 0
    assert p.read_bytes() == before  # cut back: no half record
    assert w.full == os.strerror(err) and w.full_count == 1 and w.full_since == 1000.0
    assert w.held() == 1 and w.durable_seq("t1", "s") == 1 and w.count == 1
    # no retry before RETRY_FULL_S, however many records come
    assert RETRY_FULL_S == 1.0
    w.full_err = None
    clock.now += RETRY_FULL_S - 0.001
    w.add(rec(seq=3, session="s"))
    assert w.flush() == 0 and w.held() == 2 and p.read_bytes() == before
    w.full_err = err
    clock.now = 1000.0 + RETRY_FULL_S  # exactly: tried again (and still full)
    assert w.flush() == 0 and w.full_count == 1  # the same episode
    assert w.full_since == 1000.0 and w.retry_at == 1000.0 + 2 * RETRY_FULL_S
    w.full_err = None
    clock.now += RETRY_FULL_S
    assert w.flush() == 2 and w.full is None and w.recovered == 1 and w.held() == 0
    assert [r["seq"] for r in records_of(p)] == [1, 2, 3]  # each once, in order
    assert w.durable_seq("t1", "s") == 3
    w.full_err = err  # a second episode
    w.add(rec(seq=4, session="s"))
    assert w.flush() == 0 and w.full_count == 2 and w.full_since == clock.now
    w.close()


def test_any_other_write_error_stops_the_logger(tmp_path, clock):
    """EIO at the fsync: the logger stops, and the batch it could not store is
    cut off first (a restarted logger must not count it as stored)."""
    p = tmp_path / "log.jsonl"
    w = FullDisk(p)
    w.write(rec(session="s"))
    before = p.read_bytes()
    w.full_err = errno.EIO
    w.add(rec(seq=2, session="s"))
    with pytest.raises(BadInput, match="cannot write the log"):
        w.flush()
    assert p.read_bytes() == before and w.durable_seq("t1", "s") == 1
    w.close()


class TornOs:
    """os for the writer, whose write stores ``keep`` bytes then finds the disk
    full, and whose ftruncate fails (the cut-back cannot be done)."""

    def __init__(self, keep):
        self.keep = keep

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        if self.keep is None:
            return os.write(fd, data)
        os.write(fd, bytes(data[:self.keep]))
        self.keep = None
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def ftruncate(self, fd, size):
        raise OSError(errno.EIO, os.strerror(errno.EIO))


def test_a_write_cut_short_that_cannot_be_cut_back_is_completed_not_left_torn(tmp_path, clock,
                                                                             monkeypatch):
    """ENOSPC after 10 bytes of a record, and the cut-back fails: the file
    keeps the torn start (not stored, not acknowledged); the next flush writes
    the batch again at the stored length, over it: the torn line is completed,
    never left in the middle of the log, and a restarted logger takes the log."""
    p = tmp_path / "log.jsonl"
    w = LogWriter(p)
    w.write(rec(session="s"))
    first = p.read_bytes()
    monkeypatch.setattr(logfile, "os", TornOs(keep=10))
    second = rec(seq=2, session="s")
    w.add(second)
    assert w.flush() == 0 and w.torn and w.full is not None
    assert p.read_bytes() == first + line(second)[:10] and w.good == len(first)
    assert w.durable_seq("t1", "s") == 1
    clock.now += RETRY_FULL_S
    assert w.flush() == 1 and not w.torn and w.full is None
    assert p.read_bytes() == first + line(second) + b"\n"
    assert w.good == len(p.read_bytes()) and w.durable_seq("t1", "s") == 2
    w.close()
    monkeypatch.setattr(logfile, "os", os)
    w2 = LogWriter(p)  # its own log: taken, nothing cut
    assert p.read_bytes() == first + line(second) + b"\n" and w2.last_seq("t1", "s") == 2
    w2.close()


class SyncFailsOs(TornOs):
    """os whose writes all go through, whose fsync fails with ``err`` (the
    bytes reached the file, their fsync did not), and whose ftruncate fails."""

    def __init__(self, err):
        super().__init__(keep=None)
        self.err = err
        self.writes = []  # (offset, bytes) of every write

    def write(self, fd, data):
        self.writes.append((os.lseek(fd, 0, os.SEEK_CUR), bytes(data)))
        return os.write(fd, data)

    def fsync(self, fd):
        if self.err is not None:
            raise OSError(self.err, os.strerror(self.err))
        os.fsync(fd)


def stored_one_then_syncs_fail(tmp_path, monkeypatch):
    """(path, writer, the file's bytes, the fake os): one record stored, then
    every fsync fails with ENOSPC and the cut-back with it (SyncFailsOs)."""
    p = tmp_path / "log.jsonl"
    w = LogWriter(p)
    w.write(rec(session="s"))
    first = p.read_bytes()
    fake = SyncFailsOs(errno.ENOSPC)
    monkeypatch.setattr(logfile, "os", fake)
    return p, w, first, fake


def test_a_write_whose_fsync_failed_and_that_cannot_be_cut_back_is_not_stored_twice(
        tmp_path, clock, monkeypatch):
    """The whole batch reached the file, its fsync failed, the cut-back
    failed: those bytes are not acknowledged, and the next flush writes them
    again in place (a failed fsync may have dropped them from the disk while
    the file still shows them), the new record after them: each record once."""
    p, w, first, fake = stored_one_then_syncs_fail(tmp_path, monkeypatch)
    second, third = rec(seq=2, session="s"), rec(seq=3, session="s")
    w.add(second)
    assert w.flush() == 0 and w.torn and w.held() == 1
    assert p.read_bytes() == first + line(second) + b"\n"  # there, but not stored
    assert w.durable_seq("t1", "s") == 1 and w.good == len(first)  # ... so not acknowledged
    w.add(third)
    clock.now += RETRY_FULL_S
    fake.err = None
    assert w.flush() == 2 and not w.torn and w.durable_seq("t1", "s") == 3
    assert p.read_bytes() == first + line(second) + b"\n" + line(third) + b"\n"
    # both tries wrote the batch at the stored length, the second all of it again
    assert fake.writes == [(len(first), line(second) + b"\n"),
                           (len(first), line(second) + b"\n" + line(third) + b"\n")]
    w.close()


def test_a_log_changed_by_another_program_is_not_written_over(tmp_path, clock, monkeypatch):
    """Bytes past the stored length that are not what this logger tried to
    write (another program appends, or cut the file): bad input, the file as
    it is; nothing written over it."""
    p = tmp_path / "log.jsonl"
    w = LogWriter(p)
    w.write(rec(session="s"))
    with open(p, "ab") as f:
        f.write(b'{"clock": "t9", "seq": 1, "t_ms": 0, "event": "x"}\n')
    changed = p.read_bytes()
    w.add(rec(seq=2, session="s"))
    with pytest.raises(BadInput, match=r"log.jsonl: the log changed under the logger .*"
                                       r"give each logger its own --out file"):
        w.flush()
    assert p.read_bytes() == changed and w.durable_seq("t1", "s") == 1
    w.close()
    # a cut-back that failed left a prefix of the batch; then the batch's start changed
    w = LogWriter(p)
    monkeypatch.setattr(logfile, "os", TornOs(keep=20))
    w.add(rec(seq=2, session="s"))
    assert w.flush() == 0 and w.torn
    monkeypatch.setattr(logfile, "os", os)
    with open(p, "r+b") as f:
        f.seek(len(changed))
        f.write(b"[")
    clock.now += RETRY_FULL_S
    with pytest.raises(BadInput, match="the log changed under the logger"):
        w.flush()
    w.fd = None  # a shorter file than stored: changed too
    p.write_bytes(changed[:10])
    with pytest.raises(BadInput, match=r"it is 10 bytes, \d+ of them stored"):
        w.flush()


def test_closing_cuts_off_what_a_failed_cut_back_left(tmp_path, clock, monkeypatch):
    """Bytes past the stored length were never acknowledged; closing cuts
    them off if the disk lets it now, so a restarted logger does not count
    them as stored."""
    p, w, first, fake = stored_one_then_syncs_fail(tmp_path, monkeypatch)
    w.add(rec(seq=2, session="s"))
    assert w.flush() == 0 and w.torn
    monkeypatch.setattr(logfile, "os", os)
    w.close()
    assert p.read_bytes() == first and not w.torn
    assert LogWriter(p).last_seq("t1", "s") == 1


@pytest.mark.parametrize("tail", [b"{", b'{"c', b'{"clock":', b'{"clock": "t1", "se'])
def test_a_torn_start_of_a_record_however_short_is_cut_off_on_resume(tmp_path, tail):
    """A full disk may cut a record after any byte, even inside its first
    ten; a restarted logger takes its own log and cuts the start off."""
    p = tmp_path / "log.jsonl"
    good = line(rec(session="s")) + b"\n"
    p.write_bytes(good + tail)
    check_appendable(str(p))
    w = LogWriter(p)
    assert p.read_bytes() == good and w.good == len(good) and w.last_seq("t1", "s") == 1
    w.close()
    p.write_bytes(good + b'{"clack')  # not the start of one of ours
    with pytest.raises(BadInput, match=r"not a hallclock log \(line 2 is not"):
        LogWriter(p)


class DiskOs:
    """os for the writer on a disk that fills up, with a model of what is on
    the disk itself (``disk``): a write reaches it only through a successful
    fsync; a failed fsync drops what was written since the last one (Linux
    marks those pages clean: the file still shows them, a later fsync does
    not store them).  Per flush: ``plan`` says what each write does
    (("short", k): k bytes taken; ("full", k): k bytes then ENOSPC),
    ``fsync_err`` and ``trunc_err`` make those fail."""

    def __init__(self):
        self.plan = []
        self.fsync_err = None
        self.trunc_err = None
        self.since_sync = []  # ("w", offset, bytes) / ("t", size) since the last fsync
        self.disk = bytearray()

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        import fcntl
        data = bytes(data)
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
            at = os.fstat(fd).st_size
        else:
            at = os.lseek(fd, 0, os.SEEK_CUR)
        kind, k = self.plan.pop(0) if self.plan else ("short", len(data))
        k = min(k, len(data))
        n = os.write(fd, data[:k]) if k else 0
        self.since_sync.append(("w", at, data[:n]))
        if kind == "full":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return n

    def ftruncate(self, fd, size):
        if self.trunc_err is not None:
            raise OSError(self.trunc_err, os.strerror(self.trunc_err))
        os.ftruncate(fd, size)
        self.since_sync.append(("t", size))

    def fsync(self, fd):
        if self.fsync_err is not None:
            self.since_sync = []
            raise OSError(self.fsync_err, os.strerror(self.fsync_err))
        os.fsync(fd)
        for op in self.since_sync:
            if op[0] == "t":
                del self.disk[op[1]:]
            else:
                _, at, b = op
                self.disk.extend(bytes(max(0, at + len(b) - len(self.disk))))
                self.disk[at:at + len(b)] = b
        size = os.fstat(fd).st_size  # the length is on disk; lost bytes read as zeros
        del self.disk[size:]
        self.disk.extend(bytes(size - len(self.disk)))
        self.since_sync = []


def whole_records(data):
    """The seqs of the whole lines of ``data`` that are records (stops at the first that is not)."""
    seqs = []
    for raw in bytes(data).split(b"\n")[:-1]:
        got, _why = parse_line(raw)
        if got is None:
            break
        seqs.append(got["seq"])
    return seqs


FLUSH_FAULTS = st.tuples(
    st.integers(0, 3),  # records added before the flush
    st.lists(st.tuples(st.sampled_from(["short", "full"]), st.integers(0, 150)), max_size=3),
    st.sampled_from([None, None, errno.ENOSPC, errno.EDQUOT, errno.EFBIG]),  # the fsync
    st.sampled_from([None, errno.EIO, errno.ENOSPC]),  # the cut-back
)


@given(st.lists(FLUSH_FAULTS, max_size=8))
def test_a_filling_disk_never_loses_doubles_or_tears_a_record(steps):
    """Any run of full-disk faults (a write taking part of the bytes, a write
    cut short by ENOSPC, an fsync failing, the cut-back failing): after every
    flush the file is the stored records then at most a prefix of the queued
    ones, and every acknowledged record (durable_seq) is a whole line on the
    disk itself; once the disk has room again, the log holds every record
    once, in order, ends with a newline, and a restarted logger takes it."""
    fake = DiskOs()
    with tempfile.TemporaryDirectory() as d, pytest.MonkeyPatch.context() as mp:
        p = os.path.join(d, "log.jsonl")
        w = LogWriter(p)
        mp.setattr(logfile, "os", fake)
        ideal = b""
        seq = 0
        for new, plan, fsync_err, trunc_err in steps + [(1, [], None, None)]:
            for _ in range(new):
                seq += 1
                r = rec(seq=seq, session="s", host_time="h")
                w.add(r)
                ideal += line(r) + b"\n"
            fake.plan, fake.fsync_err, fake.trunc_err = list(plan), fsync_err, trunc_err
            w.retry_at = 0.0
            held = w.held()
            stored = w.flush()
            assert stored in (0, held)
            on_file = open(p, "rb").read() if os.path.exists(p) else b""
            assert ideal.startswith(on_file)  # nothing twice, nothing torn inside
            assert len(on_file) >= w.good and ideal.startswith(bytes(fake.disk[:w.good]))
            acked = w.durable_seq("t1", "s")
            assert whole_records(fake.disk)[:acked] == list(range(1, acked + 1))
            assert acked == seq - w.held()
        assert w.held() == 0 and w.full is None
        assert open(p, "rb").read() == ideal == bytes(fake.disk)
        w.close()
        mp.setattr(logfile, "os", os)
        again = LogWriter(p)
        assert open(p, "rb").read() == ideal and again.last_seq("t1", "s") == seq
        assert [r["seq"] for r in read_records(p)] == list(range(1, seq + 1))
        again.close()


def test_the_host_holds_up_to_max_held_records_then_leaves_events_with_the_clocks(tmp_path):
    """MAX_HELD records (some 30 MB) wait in memory for a full disk; at that
    many new events are not taken (the clocks keep them and resend)."""
    assert MAX_HELD == 100000
    w = LogWriter(tmp_path / "log.jsonl")
    for i in range(MAX_HELD - 1):
        w.pending.append("x")
    assert w.accepting()
    w.pending.append("x")
    assert not w.accepting() and w.held() == MAX_HELD
    w.pending.append("x")
    assert not w.accepting()
    del w.pending[:]
    w.close()


def test_a_record_is_written_as_utf_8(tmp_path):
    """docs/contract.md: one JSON object per line, UTF-8 (names as they are,
    not escaped)."""
    p = tmp_path / "log.jsonl"
    w = LogWriter(p)
    w.write(rec(clock="stůl-1", session="s"))
    w.close()
    assert "stůl-1".encode() in p.read_bytes()
    assert records_of(p)[0]["clock"] == "stůl-1"


def test_a_torn_line_that_cannot_be_cut_off_is_bad_input(tmp_path, monkeypatch):
    p = tmp_path / "log.jsonl"
    p.write_bytes(line(rec()) + b"\n" + b'{"clock": "t1", "se')
    real_open = open

    def read_only(path, mode="r", *args, **kw):
        if mode == "rb+":
            raise PermissionError(13, "Permission denied")
        return real_open(path, mode, *args, **kw)
    monkeypatch.setattr(logfile, "open", read_only, raising=False)
    with pytest.raises(BadInput, match=r"cannot repair the log's last line \(Permission denied\)"):
        LogWriter(p)


class NoProgressOs:
    """os whose write takes nothing (returns 0) the first time and fails the
    test if asked again in the same flush: a writer that retried would spin."""

    def __init__(self):
        self.calls = 0

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        self.calls += 1
        assert self.calls == 1, "the writer retried a write that made no progress"
        return 0


def test_a_write_that_makes_no_progress_is_a_full_disk_not_a_spin(tmp_path, clock, monkeypatch):
    """A write that takes no byte (a full disk as some filesystems report it)
    is a full disk: nothing stored, nothing acknowledged, the record kept for
    later, no loop around the write."""
    p = tmp_path / "log.jsonl"
    w = LogWriter(p)
    assert not w.torn  # a fresh writer's file is its stored length
    w.write(rec(session="s"))
    first = p.read_bytes()
    fake = NoProgressOs()
    monkeypatch.setattr(logfile, "os", fake)
    w.add(rec(seq=2, session="s"))
    assert w.flush() == 0 and fake.calls == 1
    assert w.held() == 1 and w.full is not None and w.durable_seq("t1", "s") == 1
    monkeypatch.setattr(logfile, "os", os)
    assert p.read_bytes() == first


class ShrinkingOs:
    """os for which the log is ``grow`` bytes longer than it is when asked
    its size (another program cut it in between): reads find less."""

    def __init__(self, grow):
        self.grow = grow
        self.reads = 0

    def __getattr__(self, name):
        return getattr(os, name)

    def fstat(self, fd):
        st = os.fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid,
                               st.st_gid, st.st_size + self.grow, st.st_atime, st.st_mtime,
                               st.st_ctime))

    def read(self, fd, n):
        self.reads += 1
        assert self.reads < 50, "the writer kept reading a file that has no more bytes"
        return os.read(fd, n)


def test_a_log_that_shrinks_while_it_is_read_back_is_refused_not_waited_on(
        tmp_path, clock, monkeypatch):
    """The writer reads back what lies past its stored length before it
    writes (a cut-back that failed); a file that turns out shorter than its
    size said is another program's doing: refused with the file named, at
    once (no read loop waiting for bytes that are not there)."""
    p = tmp_path / "log.jsonl"
    w = LogWriter(p)
    w.write(rec(session="s"))
    first = p.read_bytes()
    monkeypatch.setattr(logfile, "os", ShrinkingOs(40))
    w.add(rec(seq=2, session="s"))
    with pytest.raises(BadInput, match="changed under the logger"):
        w.flush()
    monkeypatch.setattr(logfile, "os", os)
    assert p.read_bytes() == first


class OneByteOs:
    """os whose write takes one byte a call (a slow or busy disk)."""

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        return os.write(fd, bytes(data[:1]))


def test_a_disk_that_takes_a_byte_a_write_still_stores_every_record(tmp_path, clock,
                                                                    monkeypatch):
    """Short writes are progress, not a full disk: the writer goes on until
    the batch is all written, then stores and acknowledges it."""
    p = tmp_path / "log.jsonl"
    w = LogWriter(p)
    monkeypatch.setattr(logfile, "os", OneByteOs())
    records = [rec(seq=n, session="s") for n in (1, 2, 3)]
    for r in records:
        w.add(r)
    assert w.flush() == 3 and w.held() == 0 and w.durable_seq("t1", "s") == 3
    monkeypatch.setattr(logfile, "os", os)
    assert p.read_bytes() == b"".join(line(r) + b"\n" for r in records)


def test_the_clock_part_of_a_record_is_it_without_what_the_host_added():
    """Two logs of one clock (a hot standby's, the office's copy) must agree
    on a record less the fields each logger adds: its host_time, and the
    round it tagged; on the round event itself ``round`` is the clock's own."""
    press = {"clock": "table-1", "session": "0000abcd", "seq": 7, "t_ms": 5000,
             "event": "press", "player": "A", "move": 3, "used_ms": 4000,
             "host_time": "2026-12-04T10:00:00.000Z", "round": 2}
    assert logfile.clock_part(press) == {
        "clock": "table-1", "session": "0000abcd", "seq": 7, "t_ms": 5000, "event": "press",
        "player": "A", "move": 3, "used_ms": 4000}
    assert logfile.HOST_FIELDS == ("host_time", "round")
    rnd = {"clock": "table-1", "session": "0000abcd", "seq": 2, "t_ms": 10, "event": "round",
           "round": 2, "elapsed_ms": 0, "host_time": "2026-12-04T10:00:00.000Z"}
    assert logfile.clock_part(rnd) == {"clock": "table-1", "session": "0000abcd", "seq": 2,
                                       "t_ms": 10, "event": "round", "round": 2,
                                       "elapsed_ms": 0}
    assert logfile.clock_part({"event": "round", "round": 2}) != \
        logfile.clock_part({"event": "round", "round": 3})


def test_the_games_over_are_the_clocks_whose_newest_session_ended(tmp_path):
    """A logger restarted on its log (round start --exit-on-end) reads which
    tables' games are over: a clock whose newest session has its end stored
    is over, one whose newest has none (a new session after an ended one, a
    power loss) still plays; the clocks heard already are left out."""
    p = tmp_path / "log.jsonl"
    w = LogWriter(p)
    w.add(rec(clock="t1", session="a", seq=1, event="end"))
    w.add(rec(clock="t2", session="b", seq=1))
    w.add(rec(clock="t3", session="c", seq=1, event="end"))
    w.add(rec(clock="t3", session="d", seq=1))
    w.add(rec(clock="t4", session="e", seq=1, event="power_loss"))
    w.add(rec(clock="t5", session="f", seq=1, event="end"))
    assert w.games_over() == ({"t1", "t5"}, {"t2", "t3", "t4"})
    assert w.games_over(heard=("t1", "t2")) == ({"t5"}, {"t3", "t4"})
    assert w.flush() == 6
    w.close()
    assert LogWriter(p).games_over() == ({"t1", "t5"}, {"t2", "t3", "t4"})  # read back


def test_a_log_writer_holds_the_logs_lock_unless_told_not_to(tmp_path):
    """One writer a log: a LogWriter takes the log's lock by default, so a
    second is refused while the first is open; ``lock=False`` (a writer with
    no file of its own) takes none."""
    from hallclock.link.locks import InUse
    p = tmp_path / "log.jsonl"
    first = LogWriter(p)
    with pytest.raises(InUse):
        LogWriter(p)
    first.close()
    free = LogWriter(p, lock=False)
    LogWriter(p).close()  # no lock held by the lock-free writer
    free.close()
