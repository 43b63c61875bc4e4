"""Real MicroPython on real sockets: with ``--interpreter micropython-unix``
the firmware's network link (netlink.py and its MQTT client, compiled with
mpy-cross) runs unchanged inside the MicroPython unix port, on that port's own
sockets, against the real Mosquitto.  The same scenarios give the same logs
as over a pty, also with the broker restarted mid-game.

The process is held to a board's heap (the ballast of vdev/netpump.py):
after boot the clock has only the free heap a board of ``--heap-kib`` has on
Wi-Fi, on 32 bits scaled to this port (hallclock.vboard.unixport.calibration).
These clocks run in NET_HEAP_KIB, the ESP32's 56 KiB (every Wi-Fi clock fits
it after boot: docs/benchmarks.md "Heap on 32-bit sizes"), and a board heap
it cannot fit is one clear line.
"""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, HALLCLOCK, Hall, clock_records, game, reference, wait_for  # noqa: E402

from hallclock.vboard import bootheap, unixport as mpunix  # noqa: E402
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


# the heap (KiB) the Wi-Fi clocks run in here: a board's (--heap-kib's default)
NET_HEAP_KIB = 56


def device_cmd(hall, clock, path, sid, heap_kib=NET_HEAP_KIB, mode="scrabble", pairs=()):
    cmd = HALLCLOCK + ["device", "--broker", f"127.0.0.1:{hall.port}", "--hall", HALL,
                       "--clock", clock, "--credentials", hall.cred_file, "--script", path,
                       "--session", sid, "--interpreter", "micropython-unix",
                       "--heap-kib", str(heap_kib), "--mode", mode]
    for p in pairs:
        cmd += ["--set", p]
    return cmd


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


@pytest.mark.parametrize("mode", ["scrabble", "duplicate", "backgammon"])
def test_every_mode_on_the_network_in_a_boards_heap_gives_the_cpython_log(
        hall, tmp_path, script, mode):
    """Each mode's game (the heap bench's, 3 minutes and Scrabble's play-out)
    on the hall network, its unix-port process held to a board of
    NET_HEAP_KIB: the log is the one CPython writes over a pty."""
    text, pairs = bootheap.long_game(mode, minutes=3)
    log = tmp_path / "t1.jsonl"
    lg = hall.start_logger(log, clocks=["t1"])
    p = subprocess.Popen(device_cmd(hall, "t1", script(text), "0000cafe", mode=mode,
                                    pairs=pairs), stderr=subprocess.PIPE, text=True)
    hall.loggers.append(p)
    _, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    hall.wait_logger(lg)
    assert clock_records(log, "t1") == reference(tmp_path, "t1", text, mode=mode, pairs=pairs)


def test_a_network_clock_in_too_small_a_heap_is_one_clear_line(hall, script):
    """--heap-kib 24: the firmware on Wi-Fi does not fit after boot; the
    device says so in one line, no traceback."""
    p = subprocess.run(device_cmd(hall, "t1", script(game(moves=3)), "0000cafe", heap_kib=24),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith("hallclock: the virtual clock on the hall network ran out of "
                               "memory with --heap-kib 24"), lines[0]
