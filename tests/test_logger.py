"""The host logger's loop in one process (hallclock.link.logger.Logger), its
time and its ports under the test's control: every record of a pass stored
with one write and one fsync and acknowledged only after it (docs/host.md,
"an ack only for what is on disk"), a lost port forgotten by the poller and a
reconnected one watched again, the timers (restores, reconnects, unsent bytes)
run at least every TIMERS_S, a full disk said loudly when it fills, every
DISK_REPEAT_S while it lasts and once when the records are stored, the end of
a run (every session ended, then lingering for the last ack; stop; max_s) and
the line of counts.  The same loop over real ptys: tests/test_link.py,
tests/test_full_disk.py."""
import collections
import os
import resource
import selectors
import subprocess
import sys

import pytest

from conftest import ROOT

from hallclock.errors import BadInput
from hallclock.link import logger as logger_mod
from hallclock.link.logger import (DISK_REPEAT_S, FDS_PER_PORT, LINGER_MAX_S, LINGER_S,
                                   TIMERS_S, Logger, _enough_fds)
from hallclock_fw.link import RESEND_MS

Key = collections.namedtuple("Key", "fd data")


class Clock:
    """monotonic() and sleep() for the logger: time passes only when the
    logger waits (a sleep, a select) or the test says so."""

    def __init__(self, now=1000.0):
        self.now = now
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.sleeps.append(s)
        self.now += s


class Selector:
    """The poller: ``ready`` is the port indexes the next select reports; a
    select waits its whole timeout.  Registering an fd twice fails, as it does
    with epoll."""

    def __init__(self, clock):
        self.clock = clock
        self.fds = {}
        self.ready = []
        self.timeouts = []
        self.interrupt = False

    def register(self, fd, events, data):
        assert events == selectors.EVENT_READ
        if fd in self.fds:
            raise KeyError(fd)
        self.fds[fd] = data

    def unregister(self, fd):
        del self.fds[fd]

    def select(self, timeout):
        self.timeouts.append(timeout)
        self.clock.now += timeout
        if self.interrupt:
            self.interrupt = False
            raise InterruptedError
        keys = [(Key(fd, i), selectors.EVENT_READ) for fd, i in self.fds.items()
                if i in self.ready]
        self.ready = []
        return keys


class FakePort:
    def __init__(self, fd, retry_s=0.5, reset=False):
        self.fd = fd
        self.path = "/dev/fake%s" % fd
        self.retry_s = retry_s
        self.reset = reset
        self.ser = object() if fd is not None else None
        self.state = "connected" if fd is not None else "lost"
        self.incoming = []
        self.reads = []  # ready= of every read
        self.flushes = 0
        self.drained = 0
        self.closed = 0
        self.reconnects = 0
        self.on_change = None

    def fileno(self):
        return self.fd

    def read(self, ready=False):
        self.reads.append(ready)
        return self.incoming.pop(0) if self.incoming and ready else b""

    def write(self, data):
        raise AssertionError("the fake links write nothing")

    def flush_out(self):
        self.flushes += 1

    def drain(self):
        self.drained += 1

    def close(self):
        self.closed += 1

    def lose(self):
        self.fd, self.ser, self.state = None, None, "lost"
        self.on_change()

    def reconnect(self, fd):
        self.fd, self.ser, self.state = fd, object(), "connected"
        self.on_change()


class FakeLink:
    def __init__(self, log):
        self.log = log  # what the link was asked to do, in order, with the writer's
        self.fed = []
        self.polls = 0
        self.is_ended = False
        self.sessions = {}  # none heard: HostLink's before a clock's hello
        self.bad = self.dups = self.power_losses = 0

    def feed(self, data, flush=True):
        assert flush is False  # the logger flushes once for every link
        self.fed.append(data)
        self.log.append(("feed", data))

    def send_acks(self):
        self.log.append(("acks",))

    def poll(self):
        self.polls += 1

    def ended(self):
        return self.is_ended


class Writer:
    """What the logger asks of its LogWriter; ``full`` set: the disk is full."""

    def __init__(self, path, log):
        self.path = path
        self.log = log
        self.full = None
        self.pending = 0
        self.count = 0
        self.full_count = 0
        self.closed = 0

    def flush(self):
        self.log.append(("flush",))

    def held(self):
        return self.pending

    def games_over(self, heard=()):
        return set(), set()  # a new log: no clock's game in it yet

    def close(self):
        self.closed += 1


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(logger_mod, "time", c)
    return c


def make(tmp_path, clock, fds, **kw):
    """A Logger over fake ports (each named by its fd, or None for a lost port)."""
    orig = logger_mod.Port
    logger_mod.Port = FakePort
    try:
        lg = Logger(fds, str(tmp_path / "log.jsonl"), **kw)
    finally:
        logger_mod.Port = orig
    lg.writer.close()
    log = []
    lg.writer = Writer(str(tmp_path / "log.jsonl"), log)
    lg.links = [FakeLink(log) for _ in fds]
    lg.selector = Selector(clock)
    lg.said = []
    lg.say = lg.said.append
    return lg, log


def test_the_log_must_go_into_a_folder_that_exists(tmp_path, monkeypatch):
    with pytest.raises(BadInput, match=f"the folder {tmp_path / 'nope'} does not exist"):
        Logger([], str(tmp_path / "nope" / "log.jsonl"))
    monkeypatch.chdir(tmp_path)
    Logger([], "log.jsonl").close()  # a bare name: the current folder


def test_one_pass_stores_every_port_with_one_flush_then_acks_each(tmp_path, clock):
    lg, log = make(tmp_path, clock, [10, 11, 12])
    lg.ports[0].incoming.append(b"a")
    lg.ports[2].incoming.append(b"c")
    lg.selector.ready = [0, 1, 2]  # port 1 is readable but brings nothing
    assert lg.poll(0.3) is True
    assert lg.selector.timeouts == [0.3]
    assert log == [("feed", b"a"), ("feed", b"c"), ("flush",), ("acks",), ("acks",)]
    assert [p.reads for p in lg.ports] == [[True], [True], [True]]
    del log[:]
    clock.now += TIMERS_S
    assert lg.poll(0) is False  # nothing came: no ack, but the writer still flushes
    assert log == [("flush",)]


def test_a_lost_port_is_forgotten_and_a_reconnected_one_watched_again(tmp_path, clock):
    lg, _log = make(tmp_path, clock, [10, 11])
    lg.poll(0)
    assert lg.selector.fds == {10: 0, 11: 1}
    lg.poll(0)  # nothing changed: nothing registered twice
    lg.ports[0].lose()
    lg.poll(0)
    assert lg.selector.fds == {11: 1} and lg.watched == {1: 11}
    lg.ports[0].reconnect(14)
    lg.ports[0].incoming.append(b"again")
    lg.selector.ready = [0]
    lg.poll(0)
    assert lg.selector.fds == {14: 0, 11: 1}
    assert lg.links[0].fed == [b"again"]
    lg.ports[1].lose()
    lg.ports[1].reconnect(15)  # a new fd before the next pass
    lg.poll(0)
    assert lg.selector.fds == {14: 0, 15: 1}
    lg.close()
    assert lg.selector.fds == {} and lg.watched == {}
    assert [p.closed for p in lg.ports] == [1, 1] and lg.writer.closed == 1


def test_with_no_port_to_watch_a_pass_waits_its_time_and_tries_to_reopen(tmp_path, clock):
    lg, log = make(tmp_path, clock, [None, None])
    assert lg.poll(0.05) is False
    assert clock.sleeps == [0.05] and lg.selector.timeouts == []
    # a lost port: read() tries to reopen it; a connected one gets its unsent bytes out
    assert [p.reads for p in lg.ports] == [[False], [False]]
    assert [p.flushes for p in lg.ports] == [0, 0]
    assert [link.polls for link in lg.links] == [1, 1]


def test_an_interrupted_wait_is_a_pass_without_bytes(tmp_path, clock):
    lg, log = make(tmp_path, clock, [10])
    lg.selector.interrupt = True
    assert lg.poll(0.05) is False
    assert log == [("flush",)] and lg.links[0].polls == 1 and lg.ports[0].flushes == 1


def test_the_timers_run_at_least_every_timers_s_while_bytes_come(tmp_path, clock):
    """Bytes in every pass: the links' timers and the ports' unsent bytes are
    served again only once TIMERS_S has passed; a pass without bytes serves
    them every time."""
    assert TIMERS_S == 0.05
    lg, _log = make(tmp_path, clock, [10, None])
    port, link = lg.ports[0], lg.links[0]

    def busy_pass(after):
        clock.now = start + after
        port.incoming.append(b"x")
        lg.selector.ready = [0]
        assert lg.poll(0) is True
        return link.polls

    start = clock.now
    assert busy_pass(0) == 1  # the first pass: the timers are due
    assert lg.ports[1].reads == [False]  # the lost one tries to reopen with them
    assert busy_pass(TIMERS_S / 2) == 1
    assert busy_pass(TIMERS_S - 0.001) == 1
    assert port.flushes == 1
    assert busy_pass(TIMERS_S) == 2  # on the exact time: due
    assert port.flushes == 2 and lg.ports[1].reads == [False, False]
    assert busy_pass(TIMERS_S + 0.001) == 2
    clock.now = start + TIMERS_S + 0.002
    assert lg.poll(0) is False and link.polls == 3  # no bytes: served at once


def test_a_full_disk_is_said_when_it_fills_every_30_s_and_when_the_records_are_stored(
        tmp_path, clock):
    """docs/contract.md: stderr says "cannot write ..." every 30 s while the disk
    is full and "... is writable again" after."""
    assert DISK_REPEAT_S == 30.0
    lg, _log = make(tmp_path, clock, [])
    w = lg.writer
    assert lg.disk_problem() is None
    w.full, w.pending = "No space left on device", 3
    problem = (f"cannot write {w.path}: No space left on device; 3 record(s) held, not "
               "acknowledged (the clocks keep them); free some space")
    assert lg.disk_problem() == problem
    start = clock.now
    lg.poll(0)
    assert lg.said == ["hallclock log: " + problem]
    clock.now = start + DISK_REPEAT_S - 0.001
    lg.poll(0)
    assert len(lg.said) == 1
    clock.now = start + DISK_REPEAT_S  # on the exact time: said again
    lg.poll(0)
    assert len(lg.said) == 2
    clock.now = start + 2 * DISK_REPEAT_S - 0.001
    lg.poll(0)
    assert len(lg.said) == 2
    w.full, w.pending = None, 0
    lg.poll(0)
    assert lg.said[2:] == [f"hallclock log: {w.path} is writable again: every held record "
                           "is stored"]
    lg.poll(0)
    assert len(lg.said) == 3  # once
    w.full = "File too large"  # full again: said at once
    lg.poll(0)
    assert len(lg.said) == 4 and "File too large" in lg.said[3]


def test_a_run_with_exit_on_end_lingers_then_ends(tmp_path, clock):
    lg, _log = make(tmp_path, clock, [10])
    passes = []

    def on_poll():
        passes.append(clock.now)
        if len(passes) == 3:
            lg.links[0].is_ended = True
    assert lg.run(exit_on_end=True, on_poll=on_poll, poll_s=0.5) is True
    assert len(passes) == 3 and lg.selector.timeouts[:3] == [0.5, 0.5, 0.5]
    assert len(lg.selector.timeouts) > 3  # it lingered
    assert lg.ports[0].drained == 1 and lg.ports[0].closed == 1 and lg.writer.closed == 1


def test_a_run_without_linger_ends_at_once(tmp_path, clock):
    lg, _log = make(tmp_path, clock, [10])
    lg.links[0].is_ended = True
    assert lg.run(exit_on_end=True, linger=False) is True
    assert lg.selector.timeouts == [0.05] and lg.ports[0].drained == 0
    assert lg.ports[0].closed == 1


def test_ended_sessions_do_not_end_a_run_without_exit_on_end(tmp_path, clock):
    lg, _log = make(tmp_path, clock, [10, 11])
    lg.links[0].is_ended = True
    assert not lg.all_ended()
    lg.links[1].is_ended = True
    assert lg.all_ended()
    calls = []

    def stop():
        calls.append(1)
        return len(calls) == 4
    assert lg.run(stop=stop) is False
    assert len(calls) == 4 and len(lg.selector.timeouts) == 4
    assert lg.ports[0].closed == 1 and lg.ports[0].drained == 0


def test_a_logger_resets_no_board_unless_asked_and_reopens_every_half_second(tmp_path, clock):
    """--reset (docs/contract.md): an EN pulse on the first open only when asked,
    by default the game on the board goes on; a lost port is tried again every
    0.5 s (docs/protocol.md)."""
    lg, _log = make(tmp_path, clock, [10])
    assert lg.ports[0].reset is False and lg.ports[0].retry_s == 0.5
    lg, _log = make(tmp_path, clock, [10], reset=True, retry_s=2.0)
    assert lg.ports[0].reset is True and lg.ports[0].retry_s == 2.0


def test_a_run_ends_once_more_than_max_s_passed(tmp_path, clock):
    lg, _log = make(tmp_path, clock, [10])
    assert lg.run(exit_on_end=True, max_s=1.0, poll_s=0.25) is False
    # passes end at 0.25, 0.5, 0.75, 1.0 (not more than max_s: goes on), 1.25
    assert lg.selector.timeouts == [0.25] * 5
    assert lg.ports[0].closed == 1 and lg.writer.closed == 1


def test_a_run_closes_the_ports_and_the_log_when_a_pass_fails(tmp_path, clock):
    lg, _log = make(tmp_path, clock, [10])

    def boom():
        raise BadInput("stop")
    with pytest.raises(BadInput):
        lg.run(on_poll=boom)
    assert lg.ports[0].closed == 1 and lg.writer.closed == 1 and lg.selector.fds == {}


def test_lingering_answers_until_the_line_is_quiet_for_linger_s(tmp_path, clock):
    """After the end the device repeats its end RESEND_MS later if our last ack
    was lost: keep answering until the line is quiet that long (and a bit)."""
    assert LINGER_S == RESEND_MS / 1000 + 0.3
    lg, _log = make(tmp_path, clock, [10])
    start = clock.now
    lg._linger()
    assert start + LINGER_S <= clock.now < start + LINGER_S + 0.021
    assert set(lg.selector.timeouts) == {0.02} and lg.ports[0].drained == 1
    # bytes a second in: quiet from then
    lg, _log = make(tmp_path, clock, [10])
    start = clock.now
    passes = [0]

    def select(timeout, orig=lg.selector.select):
        passes[0] += 1
        if passes[0] == 50:  # 1 s in
            lg.ports[0].incoming.append(b"end again")
            lg.selector.ready = [0]
        return orig(timeout)
    lg.selector.select = select
    lg._linger()
    assert lg.links[0].fed == [b"end again"]
    assert start + 1.0 + LINGER_S - 0.001 <= clock.now < start + 1.0 + LINGER_S + 0.021


def test_lingering_ends_when_the_line_has_been_quiet_exactly_linger_s(tmp_path, clock):
    lg, _log = make(tmp_path, clock, [10])
    start = clock.now

    def select(timeout):
        lg.selector.timeouts.append(timeout)
        clock.now = start + LINGER_S  # quiet for exactly LINGER_S
        return []
    lg.selector.select = select
    lg._linger()
    assert lg.selector.timeouts == [0.02]


def test_lingering_stops_after_linger_max_s_however_busy_the_line(tmp_path, clock):
    assert LINGER_MAX_S == 10.0
    lg, _log = make(tmp_path, clock, [10])
    start = clock.now

    def select(timeout, orig=lg.selector.select):
        lg.ports[0].incoming.append(b"x")
        lg.selector.ready = [0]
        return orig(timeout)
    lg.selector.select = select
    lg._linger()
    assert start + LINGER_MAX_S <= clock.now < start + LINGER_MAX_S + 0.021


def test_lingering_stops_when_every_port_has_hung_up(tmp_path, clock):
    lg, _log = make(tmp_path, clock, [10, 11])
    start = clock.now
    lg.ports[0].lose()
    lg._linger()
    assert clock.now >= start + LINGER_S  # one port still there: the whole wait
    lg, _log = make(tmp_path, clock, [10, 11])
    start = clock.now
    lg.ports[0].lose()
    lg.ports[1].lose()
    lg._linger()
    assert clock.now == pytest.approx(start + 0.02)  # one pass, then it stops
    assert [p.drained for p in lg.ports] == [1, 1]


def test_the_line_of_counts(tmp_path, clock):
    lg, _log = make(tmp_path, clock, [10, 11])
    w = lg.writer
    w.count = 12
    lg.links[0].dups, lg.links[1].dups = 2, 3
    lg.links[0].bad, lg.links[1].bad = 1, 4
    lg.links[0].power_losses, lg.links[1].power_losses = 0, 1
    lg.ports[0].reconnects, lg.ports[1].reconnects = 2, 5
    assert lg.stats() == ("12 records written, 5 repeats dropped, 5 bad lines dropped, "
                          "7 reconnects, 1 power losses")
    w.full_count, w.pending = 2, 6
    assert lg.stats() == ("12 records written, 5 repeats dropped, 5 bad lines dropped, "
                          "7 reconnects, 1 power losses, disk full 2× (6 records still held)")


@pytest.fixture
def nofile():
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield limits
    resource.setrlimit(resource.RLIMIT_NOFILE, limits)


def test_many_ports_raise_the_open_file_limit(nofile):
    """FDS_PER_PORT per port and 64 to spare; never lowered, never above the
    hard limit."""
    assert FDS_PER_PORT == 6
    soft, hard = nofile
    want = 6 * 10 + 64
    if hard != resource.RLIM_INFINITY and hard < want + 10:
        pytest.skip("the hard open-file limit is too low to test under")
    for before, after in ((want - 1, want), (want, want), (want + 1, want + 1), (20, want)):
        resource.setrlimit(resource.RLIMIT_NOFILE, (before, hard))
        _enough_fds(10)
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (after, hard)
    # a hard limit below what is wanted: up to it (in a process of its own: a
    # hard limit once lowered cannot be raised again); this worker's own limit
    # back first, its open files (other tests' in this process) may be over 124
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    code = ("import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (20, %d)); "
            "from hallclock.link.logger import _enough_fds; _enough_fds(10); "
            "print(resource.getrlimit(resource.RLIMIT_NOFILE))" % (want - 5))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"), os.path.join(ROOT, "firmware"),
                                         env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.stdout.strip() == "(%d, %d)" % (want - 5, want - 5), out.stderr


def test_a_limit_that_cannot_be_raised_is_no_failure(monkeypatch, nofile):
    """The logger goes on with the open-file limit it has (a port more than it
    allows fails to open: bad input naming the port, from Port.open)."""
    soft, hard = nofile
    want = 6 * 10 + 64
    if soft == resource.RLIM_INFINITY or soft >= want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want - 1, hard))
    for exc in (ValueError("not allowed"), OSError(1, "Operation not permitted")):
        def refuse(which, limits, exc=exc):
            raise exc
        monkeypatch.setattr(resource, "setrlimit", refuse)
        _enough_fds(10)  # no exception
        monkeypatch.undo()


def test_a_restarted_logger_counts_its_silent_ports_as_the_games_the_log_shows_ended(
        tmp_path, clock):
    """Restarted on its log (docs/host.md): a port silent since then stands
    for a clock whose game the log already shows ended; the run is over when
    every clock heard has ended, no clock of the log is left mid-game, and
    there are no more silent ports than such ended games."""
    from types import SimpleNamespace
    lg, _log = make(tmp_path, clock, [10, 11, 12])
    lg.links[0].sessions = {"s1": SimpleNamespace(clock="t1")}
    lg.links[0].is_ended = True
    asked = []
    over = {"ended": {"t2", "t3"}, "open": set()}

    def games_over(heard=()):
        asked.append(set(heard))
        return set(over["ended"]), set(over["open"])
    lg.writer.games_over = games_over
    assert lg.all_ended() and asked == [{"t1"}]  # two silent ports, two games over
    over["ended"] = {"t2"}
    assert not lg.all_ended()  # two silent ports, one game over: one still to come
    over["ended"], over["open"] = {"t2", "t3"}, {"t4"}
    assert not lg.all_ended()  # a clock of the log mid-game
    over["open"] = set()
    lg.links[0].is_ended = False
    assert not lg.all_ended()  # the clock heard still plays
    for link in lg.links:
        link.is_ended = True
    assert lg.all_ended()
