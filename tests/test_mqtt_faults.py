"""Faults on the hall network, with the real Mosquitto: the broker restarted
mid-game, one clock's TCP path cut for 10 s (a proxy that stops moving its
bytes), the clock's socket dying (the proxy resets it, as a Wi-Fi drop does),
the logger SIGKILLed and restarted, a logger started five minutes late.  Each
time the clock's log equals its fault-free log over a serial line, record for
record (every field but ``host_time``): the ring, the resends and the
exactly-once of the serial link carry over unchanged.

The faults are timed in the clock's own (simulated) time, from a hook the
device loop runs after each pass: the game runs as fast as the host keeps up,
so a 10 s cut of device time is a real cut of the TCP path that the test does
not have to sit through in real time.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import Hall, clock_records, game, kill, reference  # noqa: E402

TEXT = game(moves=80, gap_ms=5000)  # about 6.8 minutes of play, ~170 records
MID = 30  # the fault comes once the clock has numbered this many events


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    return reference(tmp_path_factory.mktemp("ref"), "t1", TEXT)


@pytest.fixture
def hall(tmp_path):
    h = Hall(tmp_path, clocks=("t1",))
    yield h
    h.close()


class Fault:
    """Runs ``begin`` once the clock has MID events, ``finish`` ``length_ms``
    of device time later."""

    def __init__(self, begin, finish=None, length_ms=10000, at_ms=None):
        self.begin, self.finish, self.length = begin, finish, length_ms
        self.at_ms = at_ms
        self.runner = None
        self.started = self.done = None

    def __call__(self):
        r = self.runner
        if self.started is None:
            due = r.ms >= self.at_ms if self.at_ms is not None else r.last_seq() >= MID
            if due:
                self.started = r.ms
                self.begin()
                if self.finish is None:
                    self.done = r.ms
        elif self.done is None and r.ms - self.started >= self.length:
            self.done = r.ms
            self.finish()


def run(hall, tmp_path, fault, via=None, logger=True):
    log = tmp_path / "t1.jsonl"
    if logger:
        hall.start_logger(log)
    d = hall.device("t1", TEXT, via=via, after_pass=fault, start=False)
    fault.runner = d.runner
    d.start()
    return d, log


def finish(hall, d, log, ref):
    d.join(180)  # the clock stops once the host has stored its every event
    assert d.error is None and d.result
    hall.wait_logger(hall.loggers[-1])
    assert clock_records(log, "t1") == ref


def test_broker_restarted_mid_game(hall, tmp_path, ref):
    fault = Fault(hall.broker.stop, hall.broker.start, length_ms=20000)
    d, log = run(hall, tmp_path, fault)
    finish(hall, d, log, ref)
    assert fault.done is not None and d.line.connects >= 2


def test_tcp_path_of_one_clock_cut_for_10_s(hall, tmp_path, ref):
    proxy = hall.proxy()
    fault = Fault(proxy.cut, proxy.mend, length_ms=10000)
    d, log = run(hall, tmp_path, fault, via=proxy)
    finish(hall, d, log, ref)
    assert fault.done - fault.started >= 10000
    # the events of the cut were sent again after it, and the log still has each once
    assert d.runner.app.link.seq == len(ref)


def test_clock_socket_dies(hall, tmp_path, ref):
    """The Wi-Fi drops: the clock's connection is reset under it; it
    reconnects with backoff and sends what the host has not stored."""
    proxy = hall.proxy()
    fault = Fault(proxy.reset)
    d, log = run(hall, tmp_path, fault, via=proxy)
    finish(hall, d, log, ref)
    assert proxy.connections >= 2 and d.line.connects >= 2 and d.line.failures >= 1


def test_logger_sigkilled_and_restarted(hall, tmp_path, ref):
    log = tmp_path / "t1.jsonl"
    fault = Fault(lambda: kill(hall.loggers[-1]), lambda: hall.start_logger(log),
                  length_ms=5000)
    d, log = run(hall, tmp_path, fault)
    finish(hall, d, log, ref)
    assert len(hall.loggers) == 2 and hall.loggers[0].returncode == -9


def test_logger_started_five_minutes_late(hall, tmp_path, ref):
    log = tmp_path / "t1.jsonl"
    fault = Fault(lambda: hall.start_logger(log), at_ms=5 * 60 * 1000)
    d, log = run(hall, tmp_path, fault, logger=False)
    finish(hall, d, log, ref)
    assert fault.started >= 300000


def test_clock_loses_power_mid_game(hall, tmp_path):
    """A board reset mid-game (the scenario's ``reboot``): its new session over
    the network is logged as over a cable, the old one closed by the
    ``power_loss`` record."""
    text = game(moves=20).replace("\n21500 press", "\n21000 reboot\n21500 press", 1)
    assert "reboot" in text
    want = reference(tmp_path, "t1", text)
    assert [r["event"] for r in want].count("power_loss") == 1
    log = tmp_path / "t1.jsonl"
    hall.start_logger(log)
    d = hall.device("t1", text)
    finish(hall, d, log, want)
