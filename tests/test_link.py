"""The link's two ends in memory, the log file's resume, and power loss.
The byte-level fault tests over ptys are in test_faults.py."""
from datetime import datetime, timezone
import json

from healthlog import without_health
from hallclock.views.model import restore_for
from hallclock import scenario
from hallclock.vboard import device as virtual
from hallclock.link.hostlink import HostLink
from hallclock.link.logfile import LogWriter, read_records
from hallclock.vboard.vdev.fakes import FakeUART
from hallclock.vboard.vdev.runner import Runner
from hallclock_fw import link as link_mod, protocol
from hallclock import hostframes
from hallclock_fw.events import EV_END, EV_HEALTH, EV_PRESS, EV_TURN
from hallclock_fw.link import DeviceLink
from hallclock_fw.settings import parse

SETTINGS = "move_s=120;warn_s=30,20,10;round_min=40;round_warn_min=10"


def poll(dev, now):
    """One pass of the device loop's link work: read, then send."""
    n = dev.receive(now)
    dev.send(now)
    return n


class Wire:
    """A DeviceLink and a HostLink joined by two byte queues the test controls."""

    def __init__(self, path, capacity=link_mod.CAPACITY, sid="0000abcd"):
        self.uart = FakeUART()
        self.now = 1000
        self.dev = DeviceLink(self.uart, sid, "table-1", "scrabble", SETTINGS, "t", self.now,
                              capacity=capacity)
        self.writer = LogWriter(str(path))
        self.to_device = []
        self.host = HostLink(self.writer, self.to_device.append)

    def emit(self, n, code=EV_TURN):
        for i in range(n):
            self.dev.emit(self.now - 1000, code, i & 1, i + 1, 120000, 0)

    def run(self, passes=50, step=100, lose_to_host=False, lose_to_device=False):
        for _ in range(passes):
            self.now += step
            poll(self.dev, self.now)
            data = self.uart.take()
            if not lose_to_host:
                self.host.feed(data)
            for frame in self.to_device:
                if not lose_to_device:
                    self.uart.feed(frame)
            del self.to_device[:]

    def seqs(self):
        return [r["seq"] for r in read_records(self.writer.path)]


def test_every_event_once_in_order(tmp_path):
    w = Wire(tmp_path / "log.jsonl")
    w.emit(30)
    w.run()
    assert w.seqs() == list(range(1, 31))
    assert w.dev.all_acked()


def test_lost_acks_mean_resends_but_no_duplicates(tmp_path):
    w = Wire(tmp_path / "log.jsonl")
    w.emit(10)
    w.run(passes=30, lose_to_device=True)  # the host stores, the device never hears
    assert not w.dev.all_acked()
    assert w.host.dups > 0  # the device sent them again (RESEND_MS)
    w.run(passes=30)
    assert w.dev.all_acked()
    assert w.seqs() == list(range(1, 11))


def test_a_gap_is_asked_for_again(tmp_path):
    w = Wire(tmp_path / "log.jsonl")
    w.emit(3)
    frames = []
    while len([f for f in frames if f.startswith(b"E ")]) < 3:  # _BURST frames a pass
        poll(w.dev, w.now)
        frames += w.uart.take().split(b"\n")
        w.now += link_mod.BURST_GAP_MS
    # event 2 is lost on the way: the host sees 1 and 3 and asks for 2 (R)
    w.host.feed(b"\n".join(f for f in frames if not f.startswith(b"E 0000abcd 2 ")))
    assert any(f.startswith(b"R 0000abcd 2*") for f in w.to_device)
    w.run(passes=5)
    assert w.seqs() == [1, 2, 3]


def test_ring_overflow_is_a_gap_record(tmp_path):
    w = Wire(tmp_path / "log.jsonl", capacity=8)
    w.emit(20)  # nobody listens: events 1..12 are overwritten
    assert w.dev.lost == 12
    w.run(passes=40)
    recs = read_records(w.writer.path)
    assert recs[0]["event"] == "gap" and recs[0]["missing"] == [1, 12]
    assert [r["seq"] for r in recs[1:]] == list(range(13, 21))
    assert w.dev.all_acked()


def test_device_answers_who_and_ignores_noise(tmp_path):
    uart = FakeUART()
    dev = DeviceLink(uart, "00000001", "t1", "scrabble", SETTINGS, "v", 0)
    uart.take()
    data = b"garbage\n" + b"x" * 500 + b"\nA 00000001 1*00000000\n" + protocol.who()
    for t in range(10, 300, 10):  # 64 bytes arrive and are read per poll
        uart.feed(data[:64])
        data = data[64:]
        poll(dev, t)
    out = uart.take()
    assert out.startswith(b"H 00000001 t1 scrabble v 2*")
    assert dev.bad >= 3  # garbage, the overlong line, the bad CRC


def test_restore_frame_reaches_the_app(tmp_path):
    uart = FakeUART()
    dev = DeviceLink(uart, "00000001", "t1", "scrabble", SETTINGS, "v", 0)
    uart.feed(hostframes.restore("scrabble", SETTINGS, 7, 0, 45000, 0, 0, -1, -1, 0))
    while not poll(dev, 10):
        pass
    assert dev.next_command()[3:] == ["7", "0", "45000", "0", "0", "-1", "-1", "0"]


# -- the log file ---------------------------------------------------------------
def test_torn_tail_is_cut_and_the_resume_index_read(tmp_path):
    path = tmp_path / "log.jsonl"
    w = LogWriter(str(path))
    for seq in (1, 2, 3):
        w.write({"clock": "c", "seq": seq, "t_ms": seq, "event": "turn", "player": "A",
                 "move": seq, "limit_ms": 120000, "session": "s"})
    w.close()
    with open(path, "ab") as f:
        f.write(b'{"clock": "c", "seq": 4, "t_ms"')  # killed mid-write
    w2 = LogWriter(str(path))
    assert w2.last_seq("c", "s") == 3
    assert path.read_bytes().endswith(b"\n")
    w2.write({"clock": "c", "seq": 4, "t_ms": 4, "event": "end", "session": "s"})
    w2.close()
    assert [r["seq"] for r in read_records(path)] == [1, 2, 3, 4]
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_restarted_host_resumes_without_duplicates(tmp_path):
    path = tmp_path / "log.jsonl"
    w = Wire(path)
    w.emit(5)
    w.run(passes=10)
    w.writer.close()
    # a new host process on the same log; the device resends 3..5 and more
    w.writer = LogWriter(str(path))
    w.host = HostLink(w.writer, w.to_device.append)
    w.dev.acked = 2
    w.dev.next_send = 3
    w.emit(3)
    w.run(passes=30)
    assert w.seqs() == list(range(1, 9))


# -- power loss --------------------------------------------------------------------
REBOOT = """\
0      press START
2000   press B
30000  press A
50000  reboot
80000  press A
100000 end
"""


def _simulate(tmp_path, text, restore):
    path = tmp_path / "s.txt"
    path.write_text(text)
    out = tmp_path / ("r%d.jsonl" % bool(restore))
    virtual.simulate(scenario.load(str(path)), "scrabble", parse("scrabble", []), str(out),
                     restore=restore)
    return without_health(read_records(out))  # the rules' events (tests/test_health.py)


def test_reboot_is_a_new_session_and_a_marked_gap(tmp_path):
    recs = _simulate(tmp_path, REBOOT, restore=None)
    old = [r for r in recs if r["session"] == "00000001"]
    assert [r["event"] for r in old] == ["boot", "gong", "turn", "press", "turn",
                                         "power_loss"]
    mark = old[-1]
    assert mark["seq"] == 6 and mark["last_seq"] == 5 and mark["t_ms"] == 30000
    new = [r for r in recs if r["session"] == mark["next_session"]]
    assert new[0]["event"] == "boot" and new[0]["seq"] == 1
    assert [r["event"] for r in new] == ["boot", "end"]  # A's press: no move is running


def test_reboot_with_restore_resumes_the_move(tmp_path):
    recs = _simulate(tmp_path, REBOOT, restore=restore_for)
    new = [r for r in recs if r["session"] != "00000001"]
    names = [r["event"] for r in new]
    assert names[:2] == ["boot", "resume"]
    res = new[1]
    # B's move 2 began at 30 s and was last heard of at 30 s: its whole limit
    assert (res["player"], res["move"], res["limit_ms"]) == ("B", 2, 120000)
    # the game goes on: B's press was lost, so A's press at 80 s changes
    # nothing; the move numbers continue from the restored move
    assert "power_loss" in [r["event"] for r in recs]
    assert names[-1] == "end"


def test_restore_is_the_cores_snapshot_at_the_last_time_heard():
    """The S frame's values come from the firmware's own core, replayed from
    the old session's records: the move's time up to the last event heard
    (the outage not counted), the round's time up to now (ČAS 4.1, 6.1)."""
    sets = {"move_s": 120, "warn_s": [30, 20, 10], "round_min": 40, "round_warn_min": 10}
    recs = [
        {"event": "boot", "mode": "scrabble", "t_ms": 0, "settings": sets},
        {"event": "gong", "kind": "start", "move": None, "t_ms": 0},
        {"event": "turn", "player": "A", "move": 1, "limit_ms": 120000, "t_ms": 2000},
        {"event": "pause", "player": "A", "move": 1, "t_ms": 12000},
        # A, whose time was stopped, presses: A's move ends, B's starts (11.2)
        {"event": "press", "player": "A", "move": 1, "used_ms": 10000, "t_ms": 20000},
        {"event": "turn", "player": "B", "move": 2, "limit_ms": 120000, "t_ms": 20000},
        {"event": "resume", "player": "B", "move": 2, "limit_ms": 120000, "t_ms": 20000},
        {"event": "warn", "player": "B", "move": 2, "left_s": 30, "t_ms": 110000,
         "host_time": "2026-12-01T10:00:00.000Z"},
    ]
    wall = datetime(2026, 12, 1, 10, 0, 5, tzinfo=timezone.utc).timestamp()
    mode, stext, values = restore_for(recs, wall=wall)
    assert mode == "scrabble" and parse("scrabble", stext.split(";")) == parse("scrabble", [])
    # move 2, B, 30 s of its limit left, running; round 0 (unknown), 115 s since
    # START (the last event and the 5 s since), no play-out yet
    assert values == [2, 1, 30000, 0, 0, 115000, -1, 0]
    assert restore_for(recs[:1]) is None  # nothing had started: nothing to restore


def test_runner_reboot_loses_unacknowledged_events():
    actions = [(0, "press", "START"), (2000, "press", "B"), (5000, "reboot", None),
               (9000, "end", None)]
    r = Runner("scrabble", parse("scrabble", []), actions)
    first = r.app.link
    while r.ms < 5000:
        r.step()
    assert first.seq == 4 and not first.all_acked()  # boot, health, gong, turn
    r.step()
    assert r.app.link is not first and r.sid != "00000001"
    assert r.app.link.seq == 2  # the new session's boot, then its first pass's health report
    assert r.take_output().startswith(b"H " + r.sid.encode())


class SyncWatch(LogWriter):
    """A LogWriter that notes every fsync and which records it made durable."""

    def __init__(self, path, order):
        super().__init__(path)
        self.order = order
        self.durable = set()  # (session, seq) covered by an fsync

    def sync(self, fd):
        super().sync(fd)
        got = {(r["session"], r["seq"]) for r in read_records(self.path)}
        self.order.append(("fsync", len(got - self.durable)))
        self.durable |= got


def _check_acks_covered(writer, sid, frame):
    """An ack frame may only name events an fsync already made durable."""
    tokens = protocol.check(protocol.unframe(frame))
    if tokens[0] == "A":
        acked = int(tokens[2])
        assert all((sid, q) in writer.durable for q in range(1, acked + 1)), (sid, acked)


def test_host_ack_is_sent_only_after_the_record_is_stored(tmp_path):
    order = []
    w = SyncWatch(str(tmp_path / "log.jsonl"), order)

    def send(frame):
        _check_acks_covered(w, "s1", frame)
        order.append(("sent", frame[:1]))
    host = HostLink(w, send)
    host.feed(protocol.hello("s1", "c", "scrabble", "v"))
    host.feed(protocol.event("s1", 1, 0, EV_TURN, 0, 1, 120000, 0)
              + protocol.event("s1", 2, 5, EV_PRESS, 0, 1, 5, 0)
              + protocol.event("s1", 3, 5, EV_END, 0, 0, 0, 0))
    # three events that arrive together: one fsync for the three, then one ack
    assert order[-2:] == [("fsync", 3), ("sent", b"A")]
    assert w.flushes == 1 and w.count == 3
    assert host.ended()


def test_held_back_records_are_not_acked_until_the_flush(tmp_path):
    order = []
    w = SyncWatch(str(tmp_path / "log.jsonl"), order)
    host = HostLink(w, lambda f: order.append(("sent", f[:1])))
    host.feed(protocol.hello("s1", "c", "scrabble", "v")
              + protocol.event("s1", 1, 0, EV_TURN, 0, 1, 120000, 0), flush=False)
    assert order == [] and read_records(w.path) == []  # queued: nothing stored, no ack
    host.feed(protocol.event("s1", 2, 5, EV_PRESS, 0, 1, 5, 0), flush=False)
    assert order == []
    assert w.flush() == 2 and order == [("fsync", 2)]
    host.send_acks()
    assert order == [("fsync", 2), ("sent", b"A")]
    assert [r["seq"] for r in read_records(w.path)] == [1, 2]


def test_logger_stores_what_several_ports_bring_with_one_fsync(tmp_path):
    import os
    import select
    from hallclock.link.logger import Logger
    from hallclock.link.transport import pty_pair

    pairs = [pty_pair() for _ in range(3)]
    lg = Logger([p[2] for p in pairs], str(tmp_path / "log.jsonl"))
    order = []
    lg.writer.__class__ = SyncWatch  # instrument the logger's own writer
    lg.writer.order, lg.writer.durable = order, set()
    try:
        lg.open()
        for k, link in enumerate(lg.links):
            sid = "0000000%d" % (k + 1)

            def send(frame, sid=sid, port=link.send):
                _check_acks_covered(lg.writer, sid, frame)
                order.append(("sent", sid))
                port(frame)
            link.send = send
        for k, (master, _slave, _path) in enumerate(pairs):
            sid = "0000000%d" % (k + 1)
            os.write(master, protocol.hello(sid, "t%d" % k, "scrabble", "v")
                     + protocol.event(sid, 1, 0, EV_TURN, 0, 1, 120000, 0)
                     + protocol.event(sid, 2, 5, EV_PRESS, 0, 1, 5, 0))
        # wait (without reading) until every port has its bytes, then one pass
        fds = [port.fileno() for port in lg.ports]
        ready = set()
        while len(ready) < 3:
            r, _, _ = select.select(fds, [], [], 5)
            assert r, "the ptys did not deliver"
            ready |= set(r)
        lg.poll(0)
        assert order[0] == ("fsync", 6)  # six records of three ports, one fsync
        assert sorted(order[1:]) == [("sent", "00000001"), ("sent", "00000002"),
                                     ("sent", "00000003")]
        assert lg.writer.flushes == 1 and lg.writer.count == 6
        for master, _slave, _path in pairs:  # each device gets its ack
            select.select([master], [], [], 5)
            frames = os.read(master, 1000).split(b"\n")
            assert any(f.startswith(b"A ") and f.split(b" ")[2].startswith(b"2*")
                       for f in frames)
    finally:
        lg.close()
        for master, slave, _path in pairs:
            os.close(master)
            os.close(slave)


# -- golden frames: the format pinned to its bytes (docs/protocol.md) -------------------
GOLDEN = [
    (lambda: protocol.hello("1a2b3c4d", "table-3", "scrabble", "0.1.0"),
     b"H 1a2b3c4d table-3 scrabble 0.1.0 2*b301ba3a\n"),
    (lambda: protocol.event("1a2b3c4d", 1, 0, 0, 0, 0, 0, 0, "scrabble:" + SETTINGS),
     b"E 1a2b3c4d 1 0 0 0 0 0 0 scrabble:move_s=120;warn_s=30,20,10;round_min=40;"
     b"round_warn_min=10*b1f8716c\n"),
    (lambda: protocol.event("1a2b3c4d", 7, 61500, EV_PRESS, 1, 4, 59250, 0),
     b"E 1a2b3c4d 7 61500 3 1 4 59250 0*9c80702a\n"),
    (lambda: protocol.gap("1a2b3c4d", 13), b"G 1a2b3c4d 13*24bd22e4\n"),
    (lambda: hostframes.ack("1a2b3c4d", 12), b"A 1a2b3c4d 12*f35fcdaf\n"),
    (lambda: hostframes.resend("1a2b3c4d", 5), b"R 1a2b3c4d 5*953d6c13\n"),
    (lambda: protocol.who(), b"W*270d2bda\n"),
    (lambda: hostframes.command(3), b"C 3 0*ec33357d\n"),
    (lambda: hostframes.command(2, True), b"C 2 1*9af66fdc\n"),
    (lambda: hostframes.restore("scrabble", SETTINGS, 14, 1, 45000, 0, 3, 1620000, -1, 0),
     b"S scrabble move_s=120;warn_s=30,20,10;round_min=40;round_warn_min=10 "
     b"14 1 45000 0 3 1620000 -1 0*44f8bb32\n"),
    (lambda: hostframes.configure("duplicate", "move_s=180;announce_s=120,60,30"),
     b"K duplicate move_s=180;announce_s=120,60,30*a8c8cac1\n"),
    (lambda: hostframes.round_number(3, 754000), b"N 3 754000*f7f43c1e\n"),
    (lambda: hostframes.maintenance(), b"M*da6fd2a0\n"),
    (lambda: protocol.lost(), b"L*ad68e236\n"),
]


def test_golden_frames():
    import zlib
    for build, want in GOLDEN:
        assert build() == want
        body, crc = want[:-10], want[-9:-1]
        assert b"%08x" % zlib.crc32(body) == crc  # the CRC as docs/protocol.md defines it
        assert protocol.check(protocol.unframe(want)) is not None


def test_hello_names_the_protocol_version():
    assert protocol.PROTO == "2"
    tokens = protocol.check(protocol.unframe(protocol.hello("00000001", "c", "scrabble", "v")))
    assert tokens[5] == protocol.PROTO


def test_host_refuses_a_protocol_it_does_not_know_and_says_so_once(tmp_path):
    w = LogWriter(str(tmp_path / "log.jsonl"))
    sent, said = [], []
    host = HostLink(w, sent.append)
    host.say = said.append
    for proto in (b" 3", b""):  # a later version, and the first one (no token)
        sid = b"0000000" + (b"3" if proto else b"1")
        for _ in range(3):
            host.feed(protocol.frame(b"H " + sid + b" t1 scrabble 9.9" + proto)
                      + protocol.event(sid.decode(), 1, 0, 0, 0, 0, 0, 0, "scrabble:" + SETTINGS))
    assert sent == []  # no ack, no W, no R: the clock keeps its events
    assert read_records(w.path) == []
    assert len(said) == 2 and "protocol 3" in said[0] and "protocol 1" in said[1]
    assert "t1" in said[0] and "knows 2" in said[0]
    host.feed(protocol.hello("00000009", "t2", "scrabble", "v"))  # a known version: acked
    assert sent == [hostframes.ack("00000009", 0)]


# -- every command taken, in order ------------------------------------------------------
COMMANDS = [hostframes.command(3), hostframes.command(4), hostframes.command(0),
            hostframes.round_number(1, 0), hostframes.command(1, True),
            hostframes.restore("scrabble", SETTINGS, 3, 0, 5000, 0, 0, -1, -1, 0),
            hostframes.command(2), hostframes.configure("scrabble", SETTINGS),
            hostframes.command(4), hostframes.command(3)]


def _decoded(frame):
    tokens = protocol.check(protocol.unframe(frame))
    if tokens[0] == "C":
        return int(tokens[1]) | (8 if tokens[2] == "1" else 0)
    return tokens


def _drain(dev, writes):
    """Feed ``writes`` one by one (each followed by passes until read) and
    collect every command in the order the link hands them out."""
    got = []
    for data in writes:
        # the bytes of one write reach the console's small buffer as the line
        # brings them (115200 baud) while the loop reads 64 bytes a pass
        while data:
            dev.uart.feed(data[:64])
            data = data[64:]
            dev.receive(0)
        while dev.uart.any():
            dev.receive(0)
        cmd = dev.next_command()
        while cmd is not None:
            got.append(cmd)
            cmd = dev.next_command()
    return got


def test_two_three_and_ten_frames_in_one_write_are_all_taken_in_order():
    for n in (2, 3, 10):
        dev = DeviceLink(FakeUART(), "00000001", "t1", "scrabble", SETTINGS, "v", 0)
        frames = COMMANDS[:n]
        assert _drain(dev, [b"".join(frames)]) == [_decoded(f) for f in frames]
        assert dev.bad == 0


def test_frames_split_across_reads_at_every_byte_boundary():
    stream = b"".join(COMMANDS[:3])
    want = [_decoded(f) for f in COMMANDS[:3]]
    for k in range(len(stream) + 1):
        dev = DeviceLink(FakeUART(), "00000001", "t1", "scrabble", SETTINGS, "v", 0)
        assert _drain(dev, [stream[:k], stream[k:]]) == want, k
    for k in range(1, 12):  # and in slices of every small size
        dev = DeviceLink(FakeUART(), "00000001", "t1", "scrabble", SETTINGS, "v", 0)
        parts = [stream[i:i + k] for i in range(0, len(stream), k)]
        assert _drain(dev, parts) == want, k


def _runner():
    r = Runner("scrabble", parse("scrabble", []), [])
    r.step()
    r.take_output()
    return r


def _pass(r, data):
    r.feed(data)
    while r.uart.waiting():
        r.step()


def test_start_and_gong_in_one_write_both_sound():
    r = _runner()
    _pass(r, hostframes.command(3) + hostframes.command(4))
    link = r.app.link
    slots = [(s % link.cap) * link_mod._F for s in range(1, link.seq + 1)]
    slots = [i for i in slots if link.ring[i + 1] != EV_HEALTH]  # the boot's report
    codes = [link.ring[i + 1] for i in slots]
    kinds = [link.ring[i + 2] for i in slots]
    assert codes == [0, 1, 1] and kinds[1:] == [0, 3]  # boot, START gong, manual gong


def test_a_restore_then_a_press_in_one_write_keeps_both():
    r = _runner()
    _pass(r, hostframes.restore("scrabble", SETTINGS, 5, 1, 60000, 0, 0, -1, -1, 0)
          + hostframes.command(1))
    core = r.app.core
    # move 5 of B was restored, then B's press ended it: A's move 6 runs
    assert core.move == 6 and core.player == 0


# -- hellos within the per-pass budget ---------------------------------------------------
def test_a_burst_of_500_who_frames_stays_within_the_budget_per_pass():
    uart = FakeUART()
    dev = DeviceLink(uart, "00000001", "t1", "scrabble", SETTINGS, "v", 0)
    for i in range(20):
        dev.emit(i, EV_TURN, 0, i + 1, 120000, 0)
    burst = protocol.who() * 500
    passes = hellos = 0
    now = 0
    while burst or uart.any() or dev.next_send <= dev.seq or dev.hello_owed:
        now += 20
        uart.feed(burst[:64])  # as fast as the line brings it, and the pass reads it
        burst = burst[64:]
        dev.receive(now)
        dev.send(now)
        out = uart.take()
        assert out.count(b"\n") <= link_mod._BURST, passes  # every frame counts
        assert out.count(b"H 00000001 ") <= 1, passes  # a hello is owed once
        hellos += out.count(b"H 00000001 ")
        passes += 1
    # 500 W of 11 bytes take ~86 reads of 64 bytes: one hello per pass at most
    assert passes < 120 and hellos <= passes
    assert dev.next_send > dev.seq  # the events went out too, within the budget


def test_a_burst_of_stale_resend_requests_owes_one_gap_frame():
    uart = FakeUART()
    dev = DeviceLink(uart, "00000001", "t1", "scrabble", SETTINGS, "v", 0, capacity=8)
    for i in range(20):
        dev.emit(i, EV_TURN, 0, i + 1, 120000, 0)
    uart.feed(hostframes.resend("00000001", 1) * 4)
    dev.receive(0)
    dev.send(0)
    out = uart.take()
    assert out.count(b"G 00000001 13*") == 1 and out.count(b"\n") <= link_mod._BURST


# -- the ring reserved at boot, the host's I frame, health texts, acks ---------
def _sent(dev, now, passes=20):
    """Every frame the link sends in ``passes`` polls, as token lists."""
    out = []
    for _ in range(passes):
        poll(dev, now)
        out += [protocol.check(protocol.unframe(ln + b"\n"))
                for ln in dev.uart.take().split(b"\n") if ln]
    return out


def _events(frames):
    return [t for t in frames if t and t[0] == "E"]


def test_the_ring_reserved_at_boot_is_the_one_the_link_keeps():
    """hw/device.py reserves the ring before the clock's code is imported
    (docs/micropython.md, the board's heap): the DeviceLink of that capacity
    takes that very block, of 3 072 bytes (docs/protocol.md "Ring
    capacity"); a second reserve() allocates nothing more; a link of another
    capacity leaves it and makes its own."""
    saved = link_mod._RESERVED[:]
    try:
        del link_mod._RESERVED[:]
        link_mod.reserve()
        block = link_mod._RESERVED[0]
        link_mod.reserve()
        assert link_mod._RESERVED == [block]
        other = DeviceLink(FakeUART(), "00000001", "t1", "scrabble", SETTINGS, "v", 0,
                           capacity=link_mod.CAPACITY // 2)
        assert other.ring is not block and link_mod._RESERVED == [block]
        assert len(other.ring) * other.ring.itemsize == 3072 // 2
        dev = DeviceLink(FakeUART(), "00000001", "t1", "scrabble", SETTINGS, "v", 0)
        assert dev.ring is block and link_mod._RESERVED == []
        assert len(dev.ring) * dev.ring.itemsize == 3072 and list(dev.ring) == [0] * 768
        again = DeviceLink(FakeUART(), "00000001", "t1", "scrabble", SETTINGS, "v", 0)
        assert again.ring is not block and len(again.ring) == 768  # none reserved: its own
    finally:
        link_mod._RESERVED[:] = saved


def test_the_host_asks_who_the_clock_is_with_an_i_frame():
    """docs/protocol.md: a new link owes nothing; the host's I frame (and no
    other frame) makes the loop owe a health event with the versions."""
    dev = DeviceLink(FakeUART(), "00000001", "t1", "scrabble", SETTINGS, "v", 0)
    assert dev.info_owed is False
    for frame in (hostframes.ack("00000001", 0), hostframes.command(1), hostframes.maintenance()):
        dev.uart.feed(frame)
        dev.receive(0)
    assert dev.info_owed is False
    dev.uart.feed(hostframes.info())
    dev.receive(0)
    assert dev.info_owed is True


def test_the_boots_health_report_carries_no_text_unless_the_host_asks():
    r = Runner("scrabble", parse("scrabble", []), [])
    out = b""
    for _ in range(10):
        r.step()
        out += r.take_output()
    frames = [protocol.check(protocol.unframe(ln + b"\n")) for ln in out.split(b"\n") if ln]
    health = [t for t in _events(frames) if int(t[4]) == EV_HEALTH]
    assert health and {t[2] for t in health} == {"2"}, health  # (resent: no host acks)
    assert all(len(t) == 9 for t in health), health  # its figures, no text


def test_only_the_latest_health_report_is_resent_with_its_text():
    """A resend gives each event as it was; of the health reports only the
    latest keeps its text (the clock holds one), an older one goes out with
    its figures alone."""
    dev = DeviceLink(FakeUART(), "00000001", "t1", "scrabble", SETTINGS, "v", 0)
    dev.emit(0, EV_TURN, 0, 1, 120000, 0)
    for n, text in ((2, "fw=a"), (3, "fw=b")):
        dev.health_seq, dev.health_text = n, text  # as App.health does before its emit
        dev.emit(10 * n, EV_HEALTH, 100 * n, 2, 3, 4)
    dev.emit(40, EV_TURN, 1, 2, 120000, 0)
    first = _events(_sent(dev, 0))
    assert [int(t[2]) for t in first] == [1, 2, 3, 4]
    dev.uart.feed(hostframes.resend("00000001", 1))
    again = _events(_sent(dev, 1))
    for got in (first, again):
        by_seq = {int(t[2]): t for t in got}
        assert len(by_seq[1]) == 9 and len(by_seq[4]) == 9  # not health: no text
        assert len(by_seq[2]) == 9  # an older report: its figures alone
        assert by_seq[3][9] == "fw=b" and len(by_seq[3]) == 10


def test_an_ack_that_catches_up_with_a_resend_skips_what_it_acknowledged():
    """The host stored events the clock is resending (an ack of an earlier
    send arrives during a resend): the resend goes on after the acked event,
    never sends an acknowledged one again."""
    dev = DeviceLink(FakeUART(), "00000001", "t1", "scrabble", SETTINGS, "v", 0)
    for i in range(5):
        dev.emit(i, EV_TURN, i & 1, i + 1, 120000, 0)
    assert [int(t[2]) for t in _events(_sent(dev, 0))] == [1, 2, 3, 4, 5]
    dev.uart.feed(hostframes.resend("00000001", 1))
    poll(dev, 1)  # the resend starts: 1 and 2 go out again
    resent = _events([protocol.check(protocol.unframe(ln + b"\n"))
                      for ln in dev.uart.take().split(b"\n") if ln])
    assert [int(t[2]) for t in resent] == list(range(1, link_mod._BURST + 1))
    dev.uart.feed(hostframes.ack("00000001", link_mod._BURST + 1))  # caught up to the next
    rest = _events(_sent(dev, 2))
    assert [int(t[2]) for t in rest] == list(range(link_mod._BURST + 2, 6))


# -- the resend timer and the ring -------------------------------------------
def _acked_once(capacity=4):
    """A link whose event 1 was acked after 40 ms: round trip 41, wait 123."""
    dev = DeviceLink(FakeUART(), "00000001", "t1", "scrabble", SETTINGS, "v", 1000,
                     capacity=capacity)
    dev.emit(0, EV_TURN, 0, 1, 120000, 0)
    _sent(dev, 1000, passes=2)
    dev.uart.feed(hostframes.ack("00000001", 1))
    dev.receive(1040)
    assert dev.rtt[link_mod._SRTT] == 41 and dev.rto == 123
    return dev


def test_an_event_the_ring_overwrote_while_timed_gives_no_round_trip():
    """docs/protocol.md "Resend": one event is timed, from its first sending
    to the ack covering it.  When the ring overwrites that event (a host
    slower than the events), the next ack covers it only because the clock
    gave it up: it gives no round trip, and the wait stays three true round
    trips (it was timed from the lost event's sending: 141 ms, wait 198)."""
    dev = _acked_once(capacity=4)
    dev.emit(100, EV_TURN, 1, 2, 120000, 0)
    assert [int(t[2]) for t in _events(_sent(dev, 1100, passes=2))] == [2]  # 2 timed
    for i in range(4):  # 3..6 at 1200: 5 overwrites 1, 6 overwrites 2 before its ack
        dev.emit(200, EV_TURN, i & 1, i + 3, 120000, 0)
    assert dev.first == 3 and dev.lost == 1
    assert [int(t[2]) for t in _events(_sent(dev, 1200, passes=3))] == [3, 4, 5, 6]
    dev.uart.feed(hostframes.ack("00000001", 6))
    dev.receive(1240)  # 40 ms after 3..6 went out
    assert dev.rtt[link_mod._SRTT] == 41 and dev.rto == 123
    assert dev.next_deadline(1240) is None  # all acked


def test_an_overwrite_of_an_acked_event_keeps_the_timed_ones_round_trip():
    """The ring overwrites an event the host already stored: the event being
    timed is still held, and its ack is its round trip (61 ms, smoothed a
    quarter of the way: 46, wait 138)."""
    dev = _acked_once(capacity=4)
    for i in range(3):  # 2..4 at 1100: 2 timed
        dev.emit(100, EV_TURN, i & 1, i + 2, 120000, 0)
    assert [int(t[2]) for t in _events(_sent(dev, 1100, passes=2))] == [2, 3, 4]
    dev.emit(110, EV_TURN, 1, 5, 120000, 0)  # 5 overwrites 1 (acked)
    assert dev.first == 2 and dev.lost == 0
    assert [int(t[2]) for t in _events(_sent(dev, 1110, passes=1))] == [5]
    dev.uart.feed(hostframes.ack("00000001", 5))
    dev.receive(1160)
    assert dev.rtt[link_mod._SRTT] == 41 + (61 - 41) // 4 == 46 and dev.rto == 138
