"""Fault tests of the serial link: a virtual device and the real
``hallclock log`` (a subprocess) talk through a proxy that delays, drops,
flips and duplicates bytes, adds noise, cuts the line, unplugs the port,
starts the logger late and kills it mid-session.  Each time the final log
must equal the fault-free log of the same script, record for record (every
field but ``host_time``), and the logger must exit 0 by ``--exit-on-end``.
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hallclock import scenario
from hallclock.vboard import device as virtual
from hallclock.link.logfile import read_records
from hallclock_fw.settings import parse

sys.path.insert(0, os.path.dirname(__file__))
from faultproxy import FaultProxy, Faults, wait_for  # noqa: E402

# About two and a half simulated minutes: a start gong, quick moves, a move
# with all three warnings that runs into overtime, a pause, and the end.
SCRIPT = """\
0       press START
1500    press B
20000   press A
45000   press B
170000  press A
175000  press PAUSE
180000  press PAUSE
190000  press B
200000  end
"""
SID = "0000cafe"
HALLCLOCK = [sys.executable, "-m", "hallclock"]


def strip(records):
    """host_time off, and the clock's own health reports left out
    (tests/healthlog.py without_health): the faults are the link's, the
    comparison is of the rules' events (the reports: tests/test_health.py)."""
    from healthlog import without_health
    return [{k: v for k, v in r.items() if k != "host_time"} for r in without_health(records)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The fault-free log of SCRIPT (same session id as the faulty runs)."""
    folder = tmp_path_factory.mktemp("ref")
    out = folder / "ref.jsonl"
    runner = virtual.make_runner("scrabble", parse("scrabble", []), _actions(folder), sid=SID)
    from hallclock.link.logger import Logger
    from hallclock.link.transport import pty_pair
    master, slave, path = pty_pair()
    logger = Logger([path], str(out))
    logger.open()
    device = virtual.DeviceThread(runner, master)
    device.start()
    logger.run(stop=lambda: not device.is_alive(), max_s=180)
    device.join(30)
    os.close(master)
    os.close(slave)
    assert device.result is True
    records = strip(read_records(out))
    names = [r["event"] for r in records]
    assert names[0] == "boot" and names[-1] == "end"
    assert {"warn", "expired", "pause", "resume", "gong"} <= set(names)
    return records


def _actions(folder):
    path = folder / "script.txt"
    path.write_text(SCRIPT)
    return scenario.load(str(path))


class Rig:
    """Device thread + proxy + logger subprocess in one temporary folder."""

    def __init__(self, folder, to_host=None, to_device=None, seed=1, baud=None,
                 interpreter="cpython"):
        self.folder = folder
        self.out = str(folder / "log.jsonl")
        kw = {}
        if to_host is not None:
            kw["to_host"] = to_host
        if to_device is not None:
            kw["to_device"] = to_device
        unix = interpreter == "micropython-unix"  # its own process: it opens the port
        self.proxy = FaultProxy(str(folder), seed=seed, baud=baud, device_by_path=unix, **kw)
        self.proxy.start()
        if unix:
            from hallclock.vboard.unixport import UnixDevice
            self.runner = None
            self.device = UnixThread(UnixDevice("scrabble", parse("scrabble", []),
                                                _actions(folder), self.proxy.device_path,
                                                sid=SID, silence_s=60))
        else:
            runner = virtual.make_runner("scrabble", parse("scrabble", []), _actions(folder),
                                         sid=SID, interpreter=interpreter)
            self.runner = runner
            self.device = virtual.DeviceThread(runner, self.proxy.device_fd, silence_s=60)
        self.logger = None
        self.stderr = ""

    def start_device(self):
        self.device.start()

    def start_logger(self, wait=True):
        self.logger = subprocess.Popen(
            HALLCLOCK + ["log", "--port", self.proxy.path, "--out", self.out,
                         "--exit-on-end", "--plain"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if wait:
            wait_for(lambda: self.proxy.attached or self.logger.poll() is not None,
                     "the logger to open its port")
        return self.logger

    def wait_logger(self, timeout=90):
        try:
            _out, err = self.logger.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.logger.kill()
            _out, err = self.logger.communicate()
            raise AssertionError(f"the logger did not exit by --exit-on-end: {err}")
        self.stderr += err
        return self.logger.returncode

    def records(self):
        return strip(read_records(self.out))

    def close(self):
        self.device.halt = True
        self.device.join(5)
        if self.logger is not None and self.logger.poll() is None:
            self.logger.kill()
            self.logger.wait()
        self.proxy.close()
        close = getattr(self.runner, "close", None) if self.runner is not None else None
        if close is not None:  # the MicroPython VM's process
            close()

    def check(self, reference):
        """The logger exits 0 by --exit-on-end with the reference log; the
        device gets every acknowledgement (its pump ends True)."""
        assert self.wait_logger() == 0, self.stderr
        assert self.records() == reference
        self.device.join(60)
        assert self.device.error is None
        assert self.device.result is True


class UnixThread:
    """A unix-port device process with the face of a DeviceThread."""

    def __init__(self, dev):
        self.dev = dev
        self.halt = False
        self.result = None
        self.error = None

    def start(self):
        self.dev.start()

    def is_alive(self):
        return self.dev.is_alive()

    def join(self, timeout=10):
        if self.dev.proc is None or self.result is not None or self.error is not None:
            return
        if self.halt:
            self.dev.stop()
        try:
            self.dev.finish(timeout=timeout)
            self.result = True
        except Exception as exc:  # surfaced by check()
            self.error = exc


@pytest.fixture
def rig(tmp_path):
    rigs = []

    def make(**kw):
        r = Rig(tmp_path, **kw)
        rigs.append(r)
        return r
    yield make
    for r in rigs:
        r.close()


def _stat(stderr, word):
    """A number from the logger's closing stats line, e.g. 'bad lines dropped'."""
    for line in stderr.splitlines():
        if line.startswith("hallclock log:"):
            for part in line.split(":", 1)[1].split(","):
                n, _, what = part.strip().partition(" ")
                if what.startswith(word):
                    return int(n)
    raise AssertionError(f"no '{word}' in the logger's stats: {stderr!r}")


def test_clean_line_gives_the_reference_log(rig, reference):
    r = rig()
    r.start_logger()
    r.start_device()
    r.check(reference)
    assert _stat(r.stderr, "bad lines") == 0


def test_noisy_line_delays_drops_flips_duplicates(rig, reference):
    # about one frame in four damaged: each costs a resend after the device's
    # 1.5 s, which runs in real time as on a board
    bad = Faults(drop=0.002, flip=0.002, dup=0.002, delay=(0.0, 0.02), noise=0.05)
    r = rig(to_host=bad, to_device=Faults(drop=0.002, flip=0.002, dup=0.002,
                                          delay=(0.0, 0.02), noise=0.05), seed=7)
    r.start_logger()
    r.start_device()
    r.check(reference)
    s = r.proxy.stats
    assert s["dropped"] and s["flipped"] and s["duplicated"] and s["noise"], s
    assert _stat(r.stderr, "bad lines") > 0  # the logger saw, dropped and counted them


def test_line_cut_for_seconds(rig, reference):
    r = rig()
    r.start_logger()  # returns once the logger has its port open
    r.proxy.cut(2.5)
    r.start_device()  # the whole game is played while the line is dead
    r.check(reference)
    assert r.proxy.stats["cut_bytes"] > 0


def test_port_vanishes_and_comes_back(rig, reference):
    r = rig()
    r.start_logger()
    r.proxy.cut_after(6)  # a few events through, then the line is held ...
    r.start_device()
    wait_for(lambda: r.proxy.is_cut() and len(read_records(r.out)) >= 2,
             "the line held with two records logged")
    r.proxy.unplug(2.0)  # ... and the port disappears for two seconds
    wait_for(lambda: not os.path.exists(r.proxy.path), "the port to vanish")
    r.proxy.uncut()
    r.check(reference)
    assert r.proxy.stats["unplugs"] == 1
    assert _stat(r.stderr, "reconnects") >= 1


def test_logger_starts_late(rig, reference):
    r = rig()
    r.start_device()
    # the device plays into the void, at a board's pace while its events wait
    # unacknowledged: its hello, its first events, and a resend of them
    wait_for(lambda: r.runner.last_seq() >= 2 and r.proxy.stats["lines_from_device"] >= 6,
             "the device to send and resend its first events with no host")
    assert not os.path.exists(r.out)
    r.start_logger()
    r.check(reference)


def test_logger_killed_mid_session_and_restarted(rig, reference):
    r = rig()
    r.proxy.cut_after(8)  # let a few events through, then hold the line
    r.start_logger()
    r.start_device()
    wait_for(lambda: r.proxy.is_cut() and len(read_records(r.out)) >= 2,
             "the line held with two records logged")
    r.logger.send_signal(signal.SIGKILL)
    r.logger.wait()
    before = r.records()
    assert before and before[-1]["event"] != "end"
    assert before == reference[:len(before)]
    r.proxy.uncut()
    r.start_logger()  # the same log: it must resume without duplicates
    r.check(reference)


def test_logger_killed_twice_on_a_noisy_line(rig, reference):
    noisy = Faults(drop=0.003, flip=0.003, dup=0.003, delay=(0.0, 0.01), noise=0.05)
    r = rig(to_host=noisy, to_device=noisy, seed=11)
    r.start_logger()
    r.start_device()
    for lines in (5, 12):
        r.proxy.cut_after(lines)
        wait_for(r.proxy.is_cut, f"the line held after {lines} lines")
        r.logger.send_signal(signal.SIGKILL)
        r.logger.wait()
        r.proxy.uncut()
        r.start_logger()
    r.check(reference)


# -- the device's side of the contract -----------------------------------------
def test_device_gives_up_after_the_silence_limit(tmp_path):
    """`hallclock device` exits (status 1, a clear message) after --silence-s
    without host contact; the contract's 30 s is the default."""
    script = tmp_path / "s.txt"
    script.write_text(SCRIPT)
    master, slave = os.openpty()
    try:
        start = time.monotonic()
        p = subprocess.run(HALLCLOCK + ["device", "--script", str(script), "--port",
                                        os.ttyname(slave), "--silence-s", "2"],
                           capture_output=True, text=True, timeout=60)
        took = time.monotonic() - start
    finally:
        os.close(master)
        os.close(slave)
    assert p.returncode == 1, p.stderr
    assert "no host contact for 2 s" in p.stderr
    assert took >= 2.0  # it did wait for the host that long
    from hallclock.cli import build_parser
    args = build_parser().parse_args(["device", "--script", "s", "--port", "p"])
    assert args.silence_s == 30.0  # the contract's limit is the default


def test_device_and_logger_commands_end_to_end(tmp_path, reference):
    """`hallclock device --port` and `hallclock log --exit-on-end` on the two
    ends of a (clean) line: both exit 0 and the log is the reference."""
    script = tmp_path / "s.txt"
    script.write_text(SCRIPT)
    out = tmp_path / "log.jsonl"
    proxy = FaultProxy(str(tmp_path), device_by_path=True)
    proxy.start()
    log = None
    try:
        log = subprocess.Popen(HALLCLOCK + ["log", "--port", proxy.path, "--out", str(out),
                                            "--exit-on-end", "--plain"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: proxy.attached, "the logger to open its port")
        dev = subprocess.run(HALLCLOCK + ["device", "--script", str(script), "--port",
                                          proxy.device_path, "--session", SID],
                             capture_output=True, text=True, timeout=60)
        _o, err = log.communicate(timeout=120)
    finally:
        if log is not None and log.poll() is None:
            log.kill()
            log.wait()
        proxy.close()
    assert dev.returncode == 0, dev.stderr
    assert log.returncode == 0, err
    assert strip(read_records(out)) == reference
    assert json.loads(out.read_text().splitlines()[0])["session"] == SID
