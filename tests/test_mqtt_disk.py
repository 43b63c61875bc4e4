"""A full disk under the broker logger (``hallclock log --broker``) loses
nothing, as under the serial one (test_full_disk.py): the logger keeps
running, says loudly that it cannot write, acknowledges only what is on disk
(so the clock keeps the rest and sends it again), stores everything once the
space is back, and never exits 0 with records only in memory.

The full disk is a file-size limit (RLIMIT_FSIZE: EFBIG) on the logger's
process, lifted from outside with prlimit once the logger has said the disk
is full and the clock is still holding its events.
"""
import io
import json
import os
import resource
import signal
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, HALLCLOCK, Hall, clock_records, game, reference, wait_for  # noqa: E402

ROOM = 2500  # bytes of log before the disk is "full": a handful of records


@pytest.fixture
def hall(tmp_path):
    h = Hall(tmp_path, clocks=("t1",))
    yield h
    h.close()


def _limit_fsize():
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (ROOM, hard))
    # Ctrl-C is the user's way to stop the logger; a test run in the background
    # inherits SIGINT ignored, and Python then never raises KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Logger:
    """``hallclock log --broker`` on a disk with ROOM bytes left."""

    def __init__(self, hall, out):
        env = dict(os.environ, PYTHONFAULTHANDLER="1")  # SIGABRT shows where it hangs
        self.proc = subprocess.Popen(HALLCLOCK + [
            "log", "--broker", f"127.0.0.1:{hall.local_port}", "--hall", HALL,
            "--credentials", hall.cred_file, "--out", str(out), "--exit-on-end", "--plain"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_limit_fsize,
            env=env)
        hall.loggers.append(self.proc)
        self.proc.stdout.readline()  # connected and subscribed
        self.err = []
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_err(self):
        for line in self.proc.stderr:
            self.err.append(line)

    def said(self, text):
        return any(text in line for line in self.err)

    def wait(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)
            self.proc.wait(timeout=10)
            raise AssertionError("the logger did not exit: " + "".join(self.err)) from None

    def space_back(self):
        inf = resource.RLIM_INFINITY
        resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE, (inf, inf))


def test_a_full_disk_loses_nothing_and_everything_is_stored_once_there_is_room(hall, tmp_path):
    text = game(moves=30, gap_ms=4000)
    log = tmp_path / "net.jsonl"
    lg = Logger(hall, log)
    dev = hall.device("t1", text)
    wait_for(lambda: lg.said("cannot write"), 60, "the logger's disk warning")
    assert lg.said("not acknowledged") and lg.proc.poll() is None
    assert dev.is_alive() and dev.result is None  # the clock still holds what is unstored
    on_disk = len(clock_records(log, "t1"))
    assert log.stat().st_size <= ROOM
    lg.space_back()
    lg.wait(90)
    err = "".join(lg.err)
    assert lg.proc.returncode == 0, err
    assert lg.said("writable again") and "Traceback" not in err
    dev.join(120)
    assert dev.result is True, dev.error
    got = clock_records(log, "t1")
    assert len(got) > on_disk
    assert got == reference(tmp_path, "t1", text)  # everything, once, in order
    raw = log.read_bytes()
    assert raw.endswith(b"\n") and all(json.loads(line) for line in raw.splitlines())


def test_records_unstored_at_the_end_are_an_error_never_exit_0(hall, tmp_path):
    """The clock plays its whole game while the disk stays full: the logger
    does not take the end it could not store for the end of the log, and
    when it is stopped it exits non-zero naming what it could not store."""
    text = game(moves=20, gap_ms=4000)
    log = tmp_path / "net.jsonl"
    lg = Logger(hall, log)
    dev = hall.device("t1", text)
    wait_for(lambda: lg.said("cannot write"), 60, "the logger's disk warning")
    assert lg.proc.poll() is None  # --exit-on-end does not end with records held
    lg.proc.send_signal(signal.SIGINT)
    lg.wait(60)
    err = "".join(lg.err)
    assert lg.proc.returncode not in (0, None), err
    assert "could not be stored" in err and "Traceback" not in err
    dev.halt = True
    dev.join(30)
    assert dev.result is not True  # the clock never had those events acknowledged


def test_the_broker_loggers_view_says_disk_full(tmp_path):
    from rich.console import Console

    from hallclock.views.liveview import LiveView
    from hallclock.net.mqtt import BrokerLogger
    creds = tmp_path / "credentials.json"
    entries = {n: {"user": n, "password": "x"} for n in ("t1", "logger", "referee", "viewer")}
    entries["t1"].update(key="11" * 16, hall_key="22" * 16)  # the frames' keys (broker-config's)
    creds.write_text(json.dumps(entries))
    logger = BrokerLogger(("127.0.0.1", 1), HALL, str(creds), str(tmp_path / "l.jsonl"))
    said = []
    logger.say = said.append
    view = LiveView(logger, console=Console(file=io.StringIO(), width=120), plain=False)
    w = logger.writer
    w.add({"clock": "t1", "seq": 1, "t_ms": 0, "event": "boot", "mode": "scrabble",
           "session": "00000001"})
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (10, hard))  # this process: EFBIG
    try:
        logger.poll(0)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert w.full is not None and any("cannot write" in s for s in said)
    out = Console(file=io.StringIO(), width=120)
    out.print(view.render(0.0))
    assert "DISK FULL: cannot write" in " ".join(out.file.getvalue().split())
    w.retry_at = 0.0
    logger.poll(0)
    assert w.held() == 0 and any("writable again" in s for s in said)
    logger.writer.close()
