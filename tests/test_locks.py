"""One logger a log, one program a port (docs/host.md, "One writer a log, one
program a port"): every command that writes a log holds ``<log>.lock`` (a
flock the kernel lets go on any exit) from before it reads the log, every
serial port is opened with an exclusive flock; a second program exits 2 with
one line naming the first, and the first goes on untouched.  A lock left by
a logger killed with SIGKILL is cleared with one line and the next logger
starts."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from hallclock.errors import BadInput
from hallclock.link import locks
from hallclock.link.locks import InUse, LogLock
from hallclock.link.logfile import LogWriter, read_records
from hallclock.link.transport import Port, open_serial

HALLCLOCK = os.path.join(os.path.dirname(sys.executable), "hallclock")
REC = b'{"clock": "t1", "seq": 1, "t_ms": 5, "event": "boot", "mode": "scrabble", "session": "s"}\n'


def wait_for(cond, timeout=60.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


# -- in one process ----------------------------------------------------------------
def test_a_second_writer_is_refused_before_it_reads_or_cuts_the_log(tmp_path):
    """The old collision: a second logger cut the first's torn last line
    (its write in flight) and the FIRST died.  Now the second is refused
    before it touches a byte."""
    p = tmp_path / "round3.jsonl"
    first = LogWriter(str(p))
    torn = REC + b'{"clock": "t1", "se'  # the first logger's write, half done
    p.write_bytes(torn)
    with pytest.raises(InUse) as err:
        LogWriter(str(p))
    assert isinstance(err.value, BadInput) and err.value.exit_code == 2
    text = str(err.value)
    assert text.startswith(f"round3.jsonl is being written by ")
    assert f"(pid {os.getpid()}) since {time.strftime('%H:%M')}" in text
    assert "give another --out" in text and "\n" not in text
    assert p.read_bytes() == torn
    first.close()
    assert not os.path.exists(str(p) + ".lock")  # a clean exit leaves no lock file
    again = LogWriter(str(p))  # now it is free
    assert again.last_seq("t1", "s") == 1
    again.close()


def test_a_stale_lock_file_is_cleared_with_one_line(tmp_path):
    p = tmp_path / "log.jsonl"
    (tmp_path / "log.jsonl.lock").write_text(
        '{"pid": 4321, "program": "hallclock round start", "since": %d}\n' % time.time())
    said = []
    lock = LogLock(str(p), say=said.append)
    assert len(said) == 1 and "\n" not in said[0]
    assert re.match(r"hallclock: log\.jsonl: cleared a stale lock left by hallclock round "
                    r"start \(pid 4321\) since \d\d:\d\d, which ended without releasing it",
                    said[0]), said
    lock.release()
    lock = LogLock(str(p), say=said.append)  # released cleanly: nothing to say
    assert len(said) == 1
    lock.release()


def test_the_lock_names_the_program_and_keeps_control_characters_out(tmp_path):
    p = tmp_path / "log.jsonl"
    (tmp_path / "log.jsonl.lock").write_text('{"pid": 7, "program": "x\\u001b[2J"}\n')
    said = []
    LogLock(str(p), say=said.append).release()
    assert "\x1b" not in said[0] and "x\\x1b[2J (pid 7)" in said[0]
    assert locks._program_from_argv(["/usr/bin/python3", "/v/bin/hallclock", "round", "start",
                                     "--round", "3"]) == "hallclock round start"
    assert locks._program_from_argv(["python3", "-m", "hallclock", "log", "--port", "x"]) \
        == "hallclock log"
    assert locks._program_from_argv(["/usr/bin/screen", "/dev/ttyUSB0"]) == "screen"


def test_a_log_in_a_missing_folder_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="does not exist"):
        LogWriter(str(tmp_path / "nope" / "log.jsonl"))


def test_a_port_is_held_by_one_program(tmp_path):
    """Exclusive open: a second open of the same port (a pty, as a USB port)
    is refused naming the holder; a lost port's reopen that finds it taken
    keeps retrying instead of raising."""
    master, slave = os.openpty()
    path = os.ttyname(slave)
    try:
        first = open_serial(path)
        with pytest.raises(InUse) as err:
            open_serial(path)
        text = str(err.value)
        assert text.startswith(f"serial port {path} is in use by ")
        assert f"(pid {os.getpid()})" in text and "\n" not in text
        port = Port(path, retry_s=0)
        with pytest.raises(InUse):
            port.open()
        port.state = "lost"
        assert port.read() == b"" and port.ser is None  # retried, still taken, no raise
        first.close()
        port.read()  # free now: the retry takes it
        assert port.ser is not None and port.state == "connected"
        port.close()
    finally:
        os.close(master)
        os.close(slave)


# -- as the referee meets it: real programs ------------------------------------------
def long_game(tmp_path):
    lines = ["0 press START"] + [f"{400 * i} press {'BA'[i % 2]}" for i in range(1, 300)]
    p = tmp_path / "long.txt"
    p.write_text("\n".join(lines + ["121000 end"]) + "\n")
    return str(p)


@pytest.fixture
def table(tmp_path):
    """One virtual table clock at real speed on a pty: its port path."""
    from hallclock import scenario
    from hallclock.hall.round import start_virtual_clocks
    from hallclock.vboard.device import check_settings
    threads, fds, paths = start_virtual_clocks("scrabble", check_settings("scrabble", []),
                                               [scenario.load(long_game(tmp_path))])
    yield paths[0]
    for t in threads:
        t.halt = True
    for t in threads:
        t.join(10)
    for fd in fds:
        os.close(fd)


def start_logger(port, out):
    return subprocess.Popen([HALLCLOCK, "log", "--port", port, "--out", out, "--plain"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(*args):
    return subprocess.run([HALLCLOCK, *args], capture_output=True, text=True, timeout=120)


def stop(proc):
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def presses(out):
    return sum(1 for r in read_records(out) if r["event"] == "press")


def one_line(res):
    return res.returncode == 2 and res.stderr.count("\n") == 1 and not res.stdout


def test_a_second_logger_on_the_same_log_or_port_is_refused_and_the_first_goes_on(
        tmp_path, table):
    out = str(tmp_path / "round3.jsonl")
    first = start_logger(table, out)
    try:
        wait_for(lambda: presses(out) >= 2, what="the first logger's records")
        spare_m, spare_s = os.openpty()  # another clock's port
        spare = os.ttyname(spare_s)
        try:
            same_log = run("log", "--port", spare, "--out", out)
            same_log_round = run("round", "start", "--round", "3", "--port", spare, "--out", out)
            same_log_hall = run("hall", "--hall-unit-port", spare, "--port", spare + "x",
                                "--out", out)
        finally:
            os.close(spare_m)
            os.close(spare_s)
        other = str(tmp_path / "other.jsonl")
        same_port = run("log", "--port", table, "--out", other)
        before = presses(out)
        wait_for(lambda: presses(out) >= before + 3, what="the first logger going on")
    finally:
        code, _, err = stop(first)
    who = f"hallclock log (pid {first.pid}) since "
    for res in (same_log, same_log_round):
        assert one_line(res), (res.returncode, res.stdout, res.stderr)
        assert res.stderr.startswith(f"hallclock: round3.jsonl is being written by {who}")
        assert "give another --out" in res.stderr
    assert same_log_hall.returncode == 2 and "round3.jsonl is being written by" in \
        same_log_hall.stderr, same_log_hall.stderr
    assert one_line(same_port), (same_port.returncode, same_port.stderr)
    assert same_port.stderr.startswith(f"hallclock: serial port {table} is in use by {who}")
    assert re.search(r"since \d\d:\d\d", same_port.stderr)
    assert not os.path.exists(other)  # the refused logger wrote nothing
    assert not os.path.exists(other + ".lock")  # ... and left no lock behind
    # the first logger: untouched, ended as Ctrl-C ends it, its log whole
    assert code == 0 and "changed under" not in err, err
    seqs = [r["seq"] for r in read_records(out) if r["clock"] == "table-1"]
    assert seqs == list(range(1, len(seqs) + 1))
    assert not os.path.exists(out + ".lock")


def test_after_a_sigkill_the_next_logger_clears_the_lock_and_starts(tmp_path, table):
    out = str(tmp_path / "round3.jsonl")
    first = start_logger(table, out)
    try:
        wait_for(lambda: presses(out) >= 2, what="the first logger's records")
    finally:
        first.kill()  # a crash: no clean-up at all
        first.communicate(timeout=30)
    assert os.path.exists(out + ".lock")
    had = presses(out)
    second = start_logger(table, out)
    try:
        wait_for(lambda: presses(out) >= had + 3, what="the second logger's records")
    finally:
        code, _, err = stop(second)
    lines = err.strip().splitlines()
    assert code == 0, err
    stale = [ln for ln in lines if "stale lock" in ln]
    assert len(stale) == 1 and stale[0].startswith(
        f"hallclock: round3.jsonl: cleared a stale lock left by hallclock log (pid {first.pid})")
    seqs = [r["seq"] for r in read_records(out) if r["clock"] == "table-1"]
    assert seqs == list(range(1, len(seqs) + 1))  # resumed, nothing twice, nothing lost
    assert not os.path.exists(out + ".lock")


def test_a_lost_pty_keeps_its_name_from_the_next_pty_made():
    """A pty never comes back: once its line is gone the kernel gives its
    number (/dev/pts/N) to the next pty made -- another program's line, which
    a logger retrying the name took over (parallel tests met it: a START
    relayed to another test's clock, 'in use by' on a fresh pty).  The port
    holds the lost pty until it is closed, so no new pty gets the name and
    the retries find nothing; a USB port's name comes back with the board."""
    from hallclock.link.transport import Port
    master, slave = os.openpty()
    path = os.ttyname(slave)
    port = Port(path, retry_s=0)
    port.open()
    os.close(master)
    os.close(slave)
    assert port.read(ready=True) == b"" and port.state == "lost"
    made = [os.openpty() for _ in range(8)]
    try:
        assert path not in [os.ttyname(s) for _m, s in made]
        for _ in range(3):
            assert port.read() == b""
        assert port.ser is None and port.state == "lost"
    finally:
        port.close()
        for m, s in made:
            os.close(m)
            os.close(s)


def test_a_pty_lost_while_its_line_still_lives_is_taken_again():
    """A read error on a pty whose other end is still open: the port holds
    the lost pty (its name stays its own), and its retry finds the name still
    there -- the same pty -- lets go of the old handle and opens it again
    (an exclusive open beside the held one would be refused for ever)."""
    from hallclock.link.transport import Port
    master, slave = os.openpty()
    path = os.ttyname(slave)
    port = Port(path, retry_s=0)
    try:
        port.open()
        port._lost()  # as a read error does
        assert port.ser is None and port.gone is not None
        port.read()
        assert port.state == "connected" and port.ser is not None and port.gone is None
        os.write(master, b"hello\n")
        assert wait_for_read(port) == b"hello\n"
    finally:
        port.close()
        os.close(master)
        os.close(slave)


def wait_for_read(port, timeout=10.0):
    import select
    select.select([port.fileno()], [], [], timeout)
    return port.read(ready=True)
