"""Real MicroPython on real sockets: with ``--interpreter micropython-unix``
the firmware's network link (netlink.py and its MQTT client, compiled with
mpy-cross) runs unchanged inside the MicroPython unix port, on that port's own
sockets, against the real Mosquitto.  The same scenarios give the same logs
as over a pty, also with the broker restarted mid-game.
"""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, HALLCLOCK, Hall, clock_records, game, reference, wait_for  # noqa: E402

from hallclock.vboard import unixport as mpunix  # noqa: E402
from hallclock.link.logfile import read_records  # noqa: E402


@pytest.fixture
def hall(tmp_path):
    try:
        mpunix.binary()
    except mpunix.UnixPortMissing as exc:  # make setup installs it; say so, do not skip
        pytest.fail(str(exc))
    h = Hall(tmp_path, clocks=("t1", "t2"))
    yield h
    h.close()


def device_cmd(hall, clock, path, sid):
    return HALLCLOCK + ["device", "--broker", f"127.0.0.1:{hall.port}", "--hall", HALL,
                        "--clock", clock, "--credentials", hall.cred_file, "--script", path,
                        "--session", sid, "--interpreter", "micropython-unix"]


def test_two_unix_port_clocks_give_the_serial_logs(hall, tmp_path, script):
    texts = {"t1": game(moves=10), "t2": game(moves=15, gap_ms=3000)}
    log = tmp_path / "hall.jsonl"
    lg = hall.start_logger(log)
    procs = {c: subprocess.Popen(device_cmd(hall, c, script(texts[c], c + ".txt"), "0000cafe"),
                                 stderr=subprocess.PIPE, text=True) for c in texts}
    hall.loggers.extend(procs.values())  # stopped by the fixture if the test fails
    for c, p in procs.items():
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    hall.wait_logger(lg)
    for c, text in texts.items():
        assert clock_records(log, c) == reference(tmp_path, c, text)


def test_unix_port_clock_survives_a_broker_restart(hall, tmp_path, script):
    text = game(moves=60, gap_ms=5000)
    log = tmp_path / "t1.jsonl"
    lg = hall.start_logger(log, clocks=["t1"])
    p = subprocess.Popen(device_cmd(hall, "t1", script(text), "0000cafe"),
                         stderr=subprocess.PIPE, text=True)
    hall.loggers.append(p)
    # mid-game (the log is being written), the broker goes down and comes back
    wait_for(lambda: len(read_records(str(log))) >= 20, 60, "20 records in the log")
    hall.broker.restart()
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    hall.wait_logger(lg)
    assert clock_records(log, "t1") == reference(tmp_path, "t1", text)
    with open(hall.broker_log.name, "rb") as f:
        assert f.read().count(b"as t1 (") >= 2  # it really connected again
