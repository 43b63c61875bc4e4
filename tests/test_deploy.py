"""`make deploy` without a board: mpremote copies the build onto a virtual
MicroPython board (the webassembly VM behind a pty answering the raw REPL);
the files are listed there, the firmware imports, and runs a scenario."""
import os
import re
import subprocess
import sys
import tty

import pytest

from conftest import ROOT, run_cli, virtual_board

from hallclock.vboard.mpvm.files import (HOSTFRAMES, HOSTFRAMES_PATH, VDEV, package_inits,
                                         vdev_folder)

SCENARIO = """
from hallclock_fw import protocol
from hallclock import hostframes
from hallclock.vboard.vdev.runner import Runner, RUNNING
from hallclock_fw.settings import parse
actions = [(0, 'press', 'START'), (1000, 'press', 'B'), (50000, 'press', 'A'),
           (200000, 'press', 'B'), (210000, 'end', None)]
r = Runner('scrabble', parse('scrabble', []), actions, clock='board', sid='0000b0a7')
names = []
buf = b''
status = RUNNING
for _ in range(100000):
    status = r.step()
    buf += r.take_output()
    while b'\\n' in buf:
        line, buf = buf.split(b'\\n', 1)
        t = protocol.check(protocol.unframe(line))
        if t and t[0] == 'E':
            names.append('%s@%s' % (t[4], t[3]))
            r.feed(hostframes.ack(t[1], int(t[2])))
    if status == 1:
        break
print('EVENTS', ' '.join(names))
print('STATUS', status)
"""


def mpremote(port, *args):
    res = subprocess.run([sys.executable, "-m", "mpremote", "connect", port, *args],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout.replace("\r\n", "\n")


def test_make_deploy_onto_the_virtual_board(board, tmp_path):
    build = tmp_path / "fw"
    res = subprocess.run(["make", "deploy", f"PORT={board}", f"FW_BUILD={build}"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "is at the REPL (no clock was running)" in res.stdout  # the hand-back asked first
    # what make built is what is on the board now
    listing = mpremote(board, "fs", "ls", ":hallclock_fw")
    for p in (build / "hallclock_fw").glob("*.mpy"):
        assert p.name in listing
    assert "main.py" in mpremote(board, "fs", "ls", ":")
    assert "core/" in listing and "hw/" in listing
    # the firmware imports on the board ...
    out = mpremote(board, "exec", "import hallclock_fw.app, hallclock_fw.core.scrabble;"
                   " print('imported', hallclock_fw.VERSION)")
    assert "imported 0.1.0" in out
    # ... and plays a scenario there (the virtual device's fakes come along)
    (tmp_path / "init.py").write_text("")
    for init in package_inits():  # hallclock/, and each package down to vdev's
        mpremote(board, "fs", "mkdir", ":" + init.rsplit("/", 1)[0])
        mpremote(board, "fs", "cp", str(tmp_path / "init.py"), ":" + init)
    mpremote(board, "fs", "mkdir", ":" + vdev_folder())
    for f in sorted(VDEV.glob("*.py")):
        mpremote(board, "fs", "cp", str(f), f":{vdev_folder()}/{f.name}")
    mpremote(board, "fs", "cp", str(HOSTFRAMES), ":" + HOSTFRAMES_PATH)  # the host's acks
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    out = mpremote(board, "run", str(script))
    events = [x for x in out.splitlines() if x.startswith("EVENTS")][0].split()[1:]
    # codes: 0 boot, 21 health (the first pass's report), 1 gong, 2 turn,
    # 3 press, 4 warn, 5 expired, 11 end
    assert events == ["0@0", "21@0", "1@0", "2@1000", "3@50000", "2@50000", "4@140000", "4@150000",
                      "4@160000", "5@170000", "3@200000", "2@200000", "11@210000"]
    assert "STATUS 1" in out


# -- maintenance while the clock runs ----------------------------------------------
@pytest.fixture
def clock_board():
    """The virtual board booted into a running clock (``--clock``): the firmware
    on its filesystem, the keyboard interrupt off, as a deployed board."""
    with virtual_board("--clock") as path:
        yield path


class Line:
    """The test's own end of the board's port: bytes seen so far."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.fd)
        self.seen = bytearray()

    def read(self):
        try:
            self.seen += os.read(self.fd, 4096)
        except (BlockingIOError, OSError):
            pass
        return self.seen

    def close(self):
        os.close(self.fd)


def test_make_deploy_while_the_clock_runs(clock_board, tmp_path):
    from faultproxy import wait_for
    from hallclock_fw import protocol
    from hallclock import hostframes

    line = Line(clock_board)
    try:
        # no hallclock.cfg yet: named by its chip id, as a board (hw/esp32rare.py)
        wait_for(lambda: b"H " in line.read() and
                 re.search(rb" clock-[0-9a-f]{6} scrabble ", line.seen),
                 "the running clock's hello")
        # what mpremote does to take the REPL: Ctrl-C twice, Ctrl-A (raw REPL),
        # Ctrl-D (soft reset).  The clock keeps the console and answers a W.
        os.write(line.fd, b"\r\x03\x03\r\x01\x04\n")
        del line.seen[:]
        os.write(line.fd, protocol.who())
        wait_for(lambda: b"H " in line.read(), "the clock's answer to W after the Ctrl-Cs")
        assert b">>>" not in line.seen and b"raw REPL" not in line.seen
        assert b"KeyboardInterrupt" not in line.seen
    finally:
        line.close()
    build = tmp_path / "fw"
    res = subprocess.run(["make", "deploy", f"PORT={clock_board}", f"FW_BUILD={build}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "handed its console back" in res.stdout
    # deploy's reset boots the board into the clock again, from the files copied
    line = Line(clock_board)
    try:
        wait_for(lambda: re.search(rb" clock-[0-9a-f]{6} scrabble ", line.read()),
                 "the deployed clock's hello")
    finally:
        line.close()
    res = run_cli("maintenance", "--port", clock_board, "--wait-s", "0")
    assert res.returncode == 2 and "--wait-s 0" in res.stderr  # bad input, the port untouched
    res = run_cli("maintenance", "--port", clock_board)
    assert res.returncode == 0 and "handed its console back" in res.stdout, res.stdout
    listing = mpremote(clock_board, "fs", "ls", ":hallclock_fw")
    for p in (build / "hallclock_fw").glob("*.mpy"):
        assert p.name in listing


@pytest.mark.parametrize("target", ["deploy", "console"])
def test_deploy_and_console_ask_for_the_console_before_mpremote(target):
    res = subprocess.run(["make", "-n", target, "PORT=/dev/ttyUSB0"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    hand = [i for i, ln in enumerate(lines) if "hallclock maintenance --port /dev/ttyUSB0" in ln]
    remote = [i for i, ln in enumerate(lines) if "mpremote connect /dev/ttyUSB0" in ln]
    assert hand and remote and hand[0] < remote[0], res.stdout


def test_doctor_and_ports_agree_on_a_virtual_board(clock_board, tmp_path):
    """Issue: on a virtual board ``ports --versions`` said "clock table-01 …
    MicroPython 1.27.0" while ``doctor`` said "clock vboard", "MicroPython ?"
    and "short: GC heap" (exit 1).  Now both name the clock its
    hallclock.cfg gives (or its chip id's name before there is one) and the
    same MicroPython, and doctor says which figures a virtual board cannot
    know instead of calling them short, and exits 0 on a healthy board."""
    def both():
        # deadlines for a loaded machine: a virtual board just reset may
        # take seconds to boot its clock and answer (the defaults are 3 s)
        versions = run_cli("ports", "--versions", "--port", clock_board, "--wait-s", "30")
        assert versions.returncode == 0, versions.stderr
        assert "\tclock " in versions.stdout, versions.stdout
        fields = dict(f.split(" ", 1) for f in versions.stdout.strip().split("\t")[1:])
        doctor = run_cli("doctor", "--port", clock_board, "--wait-s", "20")
        return fields, doctor

    fields, doctor = both()
    assert re.fullmatch(r"clock-[0-9a-f]{6}", fields["clock"]), fields
    check_doctor(doctor, fields)
    res = run_cli("fleet-config", "--clocks", "table-01", "--mode", "scrabble", "--set",
                  "move_s=90", "--out", str(tmp_path / "cfgs"))
    assert res.returncode == 0, res.stderr
    ports = tmp_path / "ports.txt"
    ports.write_text(f"{clock_board} table-01\n")
    res = run_cli("deploy", "--ports-file", str(ports), "--cfg-dir", str(tmp_path / "cfgs"),
                  "--wait-s", "30", timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    fields, doctor = both()
    assert fields["clock"] == "table-01", fields
    check_doctor(doctor, fields)


def check_doctor(doctor, fields):
    out = doctor.stdout
    assert doctor.returncode == 0 and "nothing is short" in out, (out, doctor.stderr)
    assert f"clock {fields['clock']}: mode scrabble, firmware {fields['firmware']}" in out, out
    assert (f"firmware {fields['firmware']}, MicroPython {fields['MicroPython']} "
            "(the webassembly port: a virtual board)") in out, out
    assert "short:" not in out
    for what in ("the GC heap against the ESP32's first 56000 B area", "the IDF heap",
                 "the flash partitions"):
        assert f"cannot know here: {what}" in out, out
