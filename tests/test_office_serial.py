"""A hall whose clocks are on USB ships its log to the office itself
(``log --port … --ship HOST:PORT --hall NAME --credentials FILE``;
docs/network.md "Several halls"): the serial logger's own thread ships what
it has fsync'd through the hall's Mosquitto, bridged to the office's, while
the clocks (virtual boards on ptys, real time) play.  The hall's broker is
killed mid-round and started again (``log``, ``round start``), or only once
every press is stored (``hall``: the logger's wait for the office on ending
ships the rest): the clocks' events are stored and acknowledged all the
while (the serial logging never waits on the network), and once the round
is over ``hallclock audit`` finds the hall's log and the office's copy the
same, every record once."""
import os
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from conftest import run_cli  # noqa: E402
from mqttrig import bridged_hall, logs_agree as agree, start_broker, wait_for  # noqa: E402

from hallclock.hall.round import start_virtual_clocks  # noqa: E402
from hallclock.link.logfile import read_records  # noqa: E402
from hallclock.net import broker  # noqa: E402
from hallclock.vboard.device import check_settings  # noqa: E402

HALLCLOCK = [sys.executable, "-m", "hallclock"]
PRESS_MS = 200  # a press at each clock this often (real time)
PRESSES = 60  # 12 s a clock: the broker is killed well before the game's end, even when the office lags


def presses(path):
    try:
        return sum(1 for r in read_records(path) if r.get("event") == "press")
    except OSError:
        return 0


@pytest.mark.parametrize("command", [["log"], ["round", "start", "--round", "1"], ["hall"]])
def test_a_serial_logger_ships_its_log_itself_across_a_broker_restart(tmp_path, command):
    office_dir, local, hall_dir, hlocal = bridged_hall(tmp_path)
    copies = str(tmp_path / "copies")
    os.mkdir(copies)
    copy = os.path.join(copies, "hall-a.jsonl")
    log = str(tmp_path / "round1.jsonl")
    hb = start_broker(hall_dir, open(tmp_path / "hall.log", "ab"))
    ob = start_broker(office_dir, open(tmp_path / "office.log", "ab"))
    procs, fds, clocks = [], [], []
    try:
        office = subprocess.Popen(
            HALLCLOCK + ["office", "--broker", f"127.0.0.1:{local}", "--credentials",
                         os.path.join(office_dir, "credentials.json"), "--out", copies],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(office)
        assert office.stdout.readline(), office.stderr.read()
        # two clocks on ptys: START, then a press every PRESS_MS (ČAS 4.1: fresh limit each)
        script = [(0, "press", "START"), (100, "press", "B")] + [
            (300 + PRESS_MS * i, "press", "AB"[i % 2]) for i in range(PRESSES)] + [
            (400 + PRESS_MS * PRESSES, "end", None)]
        clocks, fds, paths = start_virtual_clocks("scrabble", check_settings("scrabble", []),
                                                  [script, script])
        logger = subprocess.Popen(
            HALLCLOCK + command + ["--out", log, "--exit-on-end",
                         "--ship", f"127.0.0.1:{hlocal}", "--hall", "hall-a", "--credentials",
                         os.path.join(hall_dir, "credentials.json")]
            + [x for i, p in enumerate(paths)
               for x in ("--hall-unit-port" if command == ["hall"] and i == 0 else "--port", p)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(logger)
        err = []
        threading.Thread(target=lambda: err.extend(logger.stderr), daemon=True).start()
        wait_for(lambda: presses(copy) >= 4, 20, "the first records at the office")

        # the hall's broker killed mid-round: the clocks play on, every press stored
        hb.proc.kill()
        hb.proc.wait()
        hb.proc = None
        down = presses(log)
        # with ``hall``, the broker is back only once the round is over: the
        # logger's last seconds (its wait for the office) ship the rest
        assert down < 2 * PRESSES - 10, "the office lagged past the game: nothing left to ship"
        back = 2 * PRESSES if command == ["hall"] else down + 10
        wait_for(lambda: presses(log) >= back, 30, "presses stored with the broker down")
        assert presses(copy) < presses(log)  # nothing reached the office meanwhile
        hb.start(timeout=60.0)

        assert logger.wait(40) == 0, "".join(err)
        assert all(not t.is_alive() or t.join(10) is None for t in clocks)
        # every press of both clocks is in the hall's log, once (the acks never waited;
        # the first B starts the game: a turn, no press)
        assert presses(log) == 2 * PRESSES
        assert not any("has not acknowledged" in line for line in err), "".join(err)
        wait_for(lambda: agree(log, copy), 20, "the office's copy to equal the hall's log")
        res = run_cli("audit", log, copy)
        assert res.returncode == 0 and "the logs agree: 2 clock" in res.stdout, res.stdout
    finally:
        for t in clocks:
            t.halt = True
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for fd in fds:
            os.close(fd)
        if hb.proc is not None:
            hb.stop()
        ob.stop()


def test_ship_options_are_checked_before_any_port_is_opened(tmp_path):
    """Bad --ship options: one line, exit 2, no log written."""
    log = str(tmp_path / "l.jsonl")
    cases = [
        (["--port", "/dev/null", "--ship", "127.0.0.1:1884"], "--ship needs --hall"),
        (["--port", "/dev/null", "--ship", "127.0.0.1:1884", "--hall", "hall-a",
          "--credentials", str(tmp_path / "none.json")], "cannot read --credentials"),
        (["--broker", "127.0.0.1:1884", "--hall", "hall-a", "--credentials", "x.json",
          "--ship", "127.0.0.1:1884"], "--ship is for a logger on serial ports"),
    ]
    for extra, words in cases:
        res = run_cli("log", "--out", log, *extra)
        assert res.returncode == 2 and words in res.stderr, res.stderr
        assert res.stderr.count("\n") == 1
        assert not os.path.exists(log)
    res = run_cli("hall", "--hall-unit-port", "/dev/null", "--port", "/dev/null2", "--out",
                  log, "--hall", "hall-a")
    assert res.returncode == 2 and "--hall goes with --ship" in res.stderr, res.stderr


def test_a_broker_down_when_the_logger_starts_is_said_once_and_never_stops_the_log(tmp_path):
    """No broker on --ship's port at all: the shipping thread says so once,
    the log is written as ever, and on ending one line says what the office
    lacks (the logger's own work never waits on it)."""
    from hallclock.link.logfile import LogWriter
    from hallclock.net import shiploop as ship
    hall_dir = str(tmp_path / "hall-a")
    broker.write_config(hall_dir, "hall-a", ["t1"], port=broker.free_port(),
                        bind="127.0.0.1", local_port=broker.free_port())
    log = str(tmp_path / "round1.jsonl")
    writer = LogWriter(log)
    said = []
    office = ship.Beside(("127.0.0.1", broker.free_port()), "hall-a",
                         os.path.join(hall_dir, "credentials.json"), log,
                         say=said.append).of(writer).start()
    for seq in range(1, 6):
        writer.add({"clock": "t1", "session": "00c0ffee", "seq": seq, "t_ms": seq * 100,
                    "event": "press", "player": "A", "move": seq, "used_ms": 1000})
        writer.flush()  # stored at once: nothing waits on the thread
    assert presses(log) == 5
    wait_for(lambda: said, 10, "the thread's word that the broker is not there")
    behind = office.finish(drain_s=0.2)
    writer.close()
    assert behind == os.path.getsize(log)
    assert len(said) == 2, said
    assert "cannot reach the broker" in said[0] and "has not acknowledged" in said[1]
