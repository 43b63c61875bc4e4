"""The hall's log shipped to the office (hallclock.net.ship, net.officecopy),
in one process on a lossy wire: batches and acknowledgements dropped,
repeated and reordered, the office's process and the hall's logger started
again mid-way, and the office's copy still ends byte for byte the hall's
log (docs/network.md "Several halls").  The brokers' own part is in
tests/test_office_copy.py."""
import json
import os
import random

import pytest

from hallclock.link.logfile import LogWriter, read_records
from hallclock.net import officecopy, ship

HALL = "hall-a"


def record(clock, seq):
    return {"clock": clock, "session": "00c0ffee", "seq": seq, "t_ms": seq * 100,
            "event": "press", "player": "A", "move": seq, "used_ms": 1000}


@pytest.fixture
def fast(monkeypatch):
    monkeypatch.setattr(ship, "STALL_S", 0.0)  # every pass without an answer is a stall
    monkeypatch.setattr(ship, "REWIND_GAP_S", 0.0)
    monkeypatch.setattr(officecopy, "CURSOR_EVERY_S", 0.0)


class Wire:
    """Messages between the two ends: each dropped with ``loss``, sent twice
    with ``dup``, the queue shuffled now and then (seeded)."""

    def __init__(self, seed, loss, dup):
        self.rng = random.Random(seed)
        self.loss, self.dup = loss, dup
        self.queue = []

    def send(self, _topic, payload):
        if self.rng.random() < self.loss:
            return
        self.queue.append(payload)
        if self.rng.random() < self.dup:
            self.queue.append(payload)

    def take(self):
        if self.rng.random() < 0.2:
            self.rng.shuffle(self.queue)
        out, self.queue = self.queue, []
        return out


def run(tmp_path, seed, loss=0.3, dup=0.2, restarts=True):
    log_path = str(tmp_path / "hall.jsonl")
    office = tmp_path / "office"
    office.mkdir()
    writer = LogWriter(log_path)
    up, back = Wire(seed, loss, dup), Wire(seed + 1, loss, dup)
    shipper = ship.Shipper(log_path, HALL, up.send, lambda: writer.good)
    copy = officecopy.HallCopy(str(office), HALL)
    seqs = {"t1": 0, "t2": 0}
    for step in range(4000):
        if step < 300:  # the round: a few records a pass
            for clock in seqs:
                seqs[clock] += 1
                writer.add(record(clock, seqs[clock]))
            writer.flush()
        if restarts and step == 120:  # the office's process killed and started again
            copy.writer.close()
            copy = officecopy.HallCopy(str(office), HALL)
            back.queue.clear()
        if restarts and step == 200:  # the hall's logger killed and started again
            shipper.close()
            shipper = ship.Shipper(log_path, HALL, up.send, lambda: writer.good)
            up.queue.clear()
        shipper.poll()
        for payload in up.take():
            copy.take(payload)
        for log, have, gap in copy.flush():
            back.send(None, ship.ack(log, have, gap))
        for payload in back.take():
            shipper.on_ack(payload)
        if step >= 300 and not shipper.behind():
            break
    copy.close()
    shipper.close()
    writer.close()
    with open(log_path, "rb") as f:
        hall = f.read()
    with open(office / (HALL + ".jsonl"), "rb") as f:
        return hall, f.read(), shipper, copy


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_lossy_wire_and_restarts_leave_the_copy_equal_to_the_halls_log(tmp_path, fast, seed):
    hall, copy, shipper, office = run(tmp_path, seed)
    assert shipper.behind() == 0, "the office never acknowledged the whole log"
    assert copy == hall  # every record once, in the hall's order, byte for byte
    assert len(read_records(str(tmp_path / "hall.jsonl"))) == 600
    assert shipper.resends > 0  # the wire lost something, and it was sent again


def test_without_loss_nothing_is_sent_twice(tmp_path, fast):
    hall, copy, shipper, office = run(tmp_path, 7, loss=0.0, dup=0.0, restarts=False)
    assert copy == hall
    assert office.repeats == 0


def test_a_restarted_logger_goes_on_from_the_offices_acknowledgement(tmp_path, fast):
    """The cursor beside the log: a logger started again does not ship
    from the start what the office has."""
    log_path = str(tmp_path / "hall.jsonl")
    writer = LogWriter(log_path)
    for s in range(1, 20):
        writer.add(record("t1", s))
    writer.flush()
    sent = []
    s1 = ship.Shipper(log_path, HALL, lambda t, p: sent.append(p), lambda: writer.good)
    s1.poll()
    s1.on_ack(ship.ack(s1.log, writer.good))
    s1.close()
    with open(log_path + ".office") as f:
        assert json.load(f) == {"log": s1.log, "acked": writer.good}
    sent.clear()
    s2 = ship.Shipper(log_path, HALL, lambda t, p: sent.append(p), lambda: writer.good)
    s2.poll()
    assert sent == [] and s2.behind() == 0
    writer.add(record("t1", 20))
    writer.flush()
    s2.poll()
    assert len(sent) == 1 and ship.parse_batch(sent[0])[3].count(b"\n") == 1
    writer.close()


def test_acknowledgements_the_log_cannot_hold_are_not_believed(tmp_path, fast):
    log_path = str(tmp_path / "hall.jsonl")
    writer = LogWriter(log_path)
    writer.add(record("t1", 1))
    writer.flush()
    s = ship.Shipper(log_path, HALL, lambda t, p: None, lambda: writer.good)
    s.poll()
    for forged in (ship.ack(s.log, writer.good + 1), ship.ack("0" * 16, writer.good),
                   b"A1 nothex 5\n", b"A1 " + s.log.encode() + b" -1\n", b"junk"):
        s.on_ack(forged)
        assert s.acked == 0
    writer.close()


@pytest.mark.parametrize("payload", [
    b"L1 0123456789abcdef 0 5\nabc\n",  # the length does not match
    b"L1 0123456789ABCDEF 0 4\nabc\n",  # not our id's form
    b"L1 0123456789abcdef 0 3\nabc",  # not whole lines
    b"L2 0123456789abcdef 0 4\nabc\n",
    b"L1 0123456789abcdef -4 0\nabc\n",
    b"nothing",
])
def test_what_is_not_a_batch_is_refused(payload):
    assert ship.parse_batch(payload) is None


def test_a_batch_of_lines_that_are_not_records_stores_nothing(tmp_path):
    copy = officecopy.HallCopy(str(tmp_path), HALL)
    lines = b'{"clock": "t1"}\nnot json\n'
    copy.take(ship.batch("0123456789abcdef", 0, len(lines), lines))
    assert copy.flush() == [("0123456789abcdef", len(lines), False)]
    assert copy.bad == 2 and copy.records == 0
    copy.close()


def test_a_full_disk_at_the_office_holds_the_acknowledgement_not_the_records(tmp_path,
                                                                            monkeypatch):
    """ENOSPC at the office's fsync: nothing is acknowledged (the hall keeps
    shipping from the last acknowledgement); once there is room, the held
    records are stored once and acknowledged."""
    import errno
    from hallclock.link import logfile
    monkeypatch.setattr(logfile, "RETRY_FULL_S", 0.0)
    copy = officecopy.HallCopy(str(tmp_path), HALL)
    full = [True]

    def sync(fd):
        if full[0]:
            raise OSError(errno.ENOSPC, "No space left on device")
        os.fsync(fd)
    copy.writer.sync = sync
    lines = b"".join((json.dumps(record("t1", s)) + "\n").encode() for s in (1, 2, 3))
    log = "0123456789abcdef"
    copy.take(ship.batch(log, 0, len(lines), lines))
    assert copy.flush() == []
    copy.take(ship.batch(log, 0, len(lines), lines))  # sent again meanwhile: held once
    assert copy.flush() == []
    full[0] = False
    assert copy.flush() == [(log, len(lines), False)]
    assert [r["seq"] for r in read_records(copy.path)] == [1, 2, 3]
    copy.close()


def test_a_line_no_broker_takes_is_said_once(tmp_path, fast):
    log_path = str(tmp_path / "hall.jsonl")
    writer = LogWriter(log_path)
    rec = record("t1", 1)
    rec["note"] = "x" * 1200  # no record the host writes is this long
    writer.add(rec)
    writer.flush()
    said, sent = [], []
    s = ship.Shipper(log_path, HALL, lambda t, p: sent.append(p), lambda: writer.good,
                     say=said.append)
    for _ in range(3):
        s.poll()
    assert len(said) == 1 and "longer than the brokers take" in said[0]
    assert len(sent) >= 1 and len(sent[0]) > ship.MESSAGE_MAX
    writer.close()
