"""The one pump (a Runner on a line under a pace): the same log whatever the
line, a pass the device asked for is never skipped under real time, a silent
host ends it, and the network pace reads the host's acknowledgements."""
import time

from conftest import strip_host

from hallclock import scenario
from hallclock.vboard import device as virtual
from hallclock.link.hostlink import HostLink
from hallclock.link.logfile import LogWriter, read_records
from hallclock.vboard.vdev import pump
from hallclock import hostframes
from hallclock_fw.settings import parse

GAME = """\
0      press START
1000   press B
9000   press A
15000  press B
31000  press A
40000  end
"""


class MemoryLine:
    """A line straight into a HostLink in the same thread: the host's acks
    come back at once (or never, ``deaf``)."""

    def __init__(self, path, deaf=False):
        self.writer = LogWriter(str(path))
        self.inbox = bytearray()
        self.deaf = deaf
        self.link = HostLink(self.writer, self.inbox.extend, "memory")
        self.closed = False

    def ready(self):
        return True

    def send(self, data):
        if data and not self.deaf:
            self.link.feed(data)

    def receive(self):
        data = bytes(self.inbox)
        self.inbox.clear()
        return data

    def wait(self, ms):
        time.sleep(min(ms, 5) / 1000.0)

    def sent_all(self):
        return True

    def close(self):
        self.closed = True
        self.writer.close()


def _runner(text=GAME, sid="0000abcd"):
    actions = scenario.parse_text(text, "<test>")
    return virtual.make_runner("scrabble", parse("scrabble", []), actions, clock="t1", sid=sid)


def test_a_memory_line_gives_the_log_the_pty_gives(tmp_path):
    line = MemoryLine(tmp_path / "mem.jsonl")
    assert virtual.run(_runner(), line) is True
    assert line.closed  # run closes the line it was given
    pty_log = tmp_path / "pty.jsonl"
    virtual.simulate(scenario.parse_text(GAME, "<test>"), "scrabble", parse("scrabble", []),
                     str(pty_log), clock="t1")
    mem = strip_host(read_records(str(tmp_path / "mem.jsonl")))
    pty = strip_host(read_records(str(pty_log)))
    for r in mem + pty:
        r.pop("session", None)
    assert len(mem) == 11 and mem == pty  # the boot's health report among them
    assert mem[-1]["event"] == "end" and mem[-1]["t_ms"] == 40000


def test_real_pace_keeps_every_pass_the_device_asked_for(tmp_path):
    """At 200 times real time the passes fall where the device asked for
    them: the scripted presses and the end keep their times."""
    line = MemoryLine(tmp_path / "real.jsonl")
    ok = virtual.run(_runner(), line, pump.RealPace(pump.mark(), 200.0))
    assert ok is True
    recs = read_records(str(tmp_path / "real.jsonl"))
    assert [(r["t_ms"], r["event"]) for r in recs] == [
        (0, "boot"), (0, "health"), (0, "gong"), (1000, "turn"), (9000, "press"), (9000, "turn"),
        (15000, "press"), (15000, "turn"), (31000, "press"), (31000, "turn"), (40000, "end")]


def test_a_silent_host_ends_the_pump(tmp_path):
    line = MemoryLine(tmp_path / "deaf.jsonl", deaf=True)
    began = pump.mark()
    assert virtual.run(_runner(), line, silence_s=0.3) is False
    assert pump.since(began) >= 300  # it did wait for the host first


def _starved_clock(monkeypatch):
    """The pump's real clock, moved on by the test (a loaded machine)."""
    clock = [0.0]
    monkeypatch.setattr(pump, "mark", lambda: clock[0])
    monkeypatch.setattr(pump, "since", lambda t0: clock[0] - t0)
    return clock


def test_a_quiet_stretch_on_a_starved_machine_is_no_silence(tmp_path, monkeypatch):
    """Every pass of the game takes a real second (a starved machine) while
    the host has every event: nothing waits for the host, so its quiet is no
    silence and the game plays to its end (contract: the device exits after
    30 s without host contact -- counted while events wait, as the
    firmware's link counts it)."""
    clock = _starved_clock(monkeypatch)
    runner = _runner()

    def starved():
        if not runner.pending():
            clock[0] += 1000.0

    line = MemoryLine(tmp_path / "quiet.jsonl")
    assert pump.pump(runner, line, silence_ms=300, after_pass=starved) is True
    recs = read_records(str(tmp_path / "quiet.jsonl"))
    assert clock[0] > 3000  # the game did take many times the limit
    assert len(recs) == 11 and recs[-1]["event"] == "end" and recs[-1]["t_ms"] == 40000


def test_events_waiting_on_a_starved_machine_still_count_the_silence(tmp_path, monkeypatch):
    clock = _starved_clock(monkeypatch)

    def starved():
        clock[0] += 100.0

    line = MemoryLine(tmp_path / "deaf.jsonl", deaf=True)
    assert pump.pump(_runner(), line, silence_ms=300, after_pass=starved) is False
    assert 300 < clock[0] < 1000  # given up once events had waited the limit


def test_stop_ends_the_pump(tmp_path):
    line = MemoryLine(tmp_path / "stop.jsonl")
    assert pump.pump(_runner(), line, stop=lambda: True) is False


def test_the_network_pace_reads_the_newest_ack():
    sid = "0000abcd"
    data = hostframes.ack(sid, 3) + b"noise\n" + hostframes.ack(sid, 7) + hostframes.ack(sid, 5)
    assert pump.acked_in(data, 0) == 7
    assert pump.acked_in(b"A 0000abcd 9 zz\n", 4) == 4  # a bad frame acknowledges nothing
