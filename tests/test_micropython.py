"""The firmware on real MicroPython (the webassembly port on node):
identical logs on both interpreters for every mode, an allocation-free
steady-state tick, the heap budget, and `make deploy` onto a virtual board."""
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import ROOT, read_log, run_cli, strip_host
from hallclock.mpdevice import device_files, firmware_mpy
from hallclock.mpvm import VMProcess

SAMPLES = pathlib.Path(ROOT) / "host" / "hallclock" / "samples"

JITTER_GAME = """\
0 press START
1000 press B
50000 bounce A
60000 press PAUSE
65000 press A
190000 press B
200000 hold A 2000
210000 end
"""


@pytest.mark.parametrize("mode, script, extra", [
    ("scrabble", "scrabble_game.txt", []),
    ("scrabble", None, ["--loop", "jitter:1-20", "--start-ticks", "0x3ffff000"]),
    ("duplicate", "duplicate_game.txt", []),
    ("backgammon", "backgammon_match.txt", ["--set", "match=5", "--set", "score=1-3"]),
    ("backgammon", "backgammon_match.txt", ["--set", "delay=fischer",
                                            "--loop", "jitter:1-20"]),
])
def test_same_log_on_cpython_and_micropython(tmp_path, mode, script, extra):
    if script is None:
        path = tmp_path / "s.txt"
        path.write_text(JITTER_GAME)
    else:
        path = SAMPLES / script
    logs = {}
    for interp in ("cpython", "micropython"):
        out = tmp_path / f"{interp}.jsonl"
        res = run_cli("simulate", "--script", str(path), "--out", str(out), "--mode", mode,
                      "--interpreter", interp, *extra)
        assert res.returncode == 0, res.stderr
        logs[interp] = strip_host(read_log(out))
    assert len(logs["cpython"]) > 5
    assert logs["cpython"][-1]["event"] == "end"
    assert logs["micropython"] == logs["cpython"]


STEADY = """
import gc, micropython
from hallclock_fw import protocol
from hallclock_fw.app import App
from hallclock_fw.core.timing import ticks_add
from hallclock_fw.events import BTN_B
from hallclock_fw.hw.panel import build_panel
from hallclock_fw.hw.tm1637 import TM1637
from hallclock_fw.settings import parse
from hallclock.vdev.fakes import FakeOutput, FakePin, FakeUART, SimClock

start = {start}
clock = SimClock(start)
pins = [FakePin(1) for _ in range(5)]
displays = (TM1637(FakePin(), FakePin()), TM1637(FakePin(), FakePin()))
panel = build_panel(pins, FakeOutput(clock), (FakeOutput(clock), FakeOutput(clock)),
                    FakeOutput(clock), displays, start)
uart = FakeUART()
app = App(panel, uart, 'scrabble', parse('scrabble', []), 'vm', '00000001', start)
app.press(BTN_B, start)          # A's move 1 runs: a 120 s limit
app.step(start)
uart.take()
uart.feed(protocol.ack('00000001', app.link.seq))   # the host has every event
app.step(start)
assert app.link.all_acked()
now = start
n = 0
failed = None
gc.collect()
before = gc.mem_alloc()
micropython.heap_lock()
try:
    while n < {passes}:
        now = ticks_add(now, 7)      # 7 ms loop: display refreshed every second
        app.step(now)
        app.next_wake(now)
        n += 1
except MemoryError:
    failed = n
micropython.heap_unlock()
after = gc.mem_alloc()
print('RESULT', n, failed, after - before, app.events, len(uart.outbox))
"""


@pytest.mark.parametrize("start", [0, (1 << 30) - 30000])
def test_steady_state_tick_allocates_nothing(start):
    # 11,000 passes of 7 ms = 77 s of a running move, no warning due yet; the
    # displays (real TM1637 driver on fake pins) change every second.
    code = STEADY.format(start=start, passes=11000)
    with VMProcess(device_files(), "", obj_expr=None, timeout=300) as vm:
        out = vm.exec(code, timeout=300)
    words = [x for x in out.splitlines() if x.startswith("RESULT")][-1].split()
    n, failed, grown, events, outbox = words[1:]
    assert failed == "None", f"the heap was touched at pass {failed}"
    assert int(n) == 11000
    assert int(grown) == 0
    assert int(outbox) == 0  # really no event was due: nothing was sent


def test_heap_lock_check_catches_an_allocating_tick():
    code = STEADY.format(start=0, passes=100).replace(
        "app.next_wake(now)", "app.next_wake(now); [now]")
    with VMProcess(device_files(), "", obj_expr=None) as vm:
        out = vm.exec(code)
    words = [x for x in out.splitlines() if x.startswith("RESULT")][-1].split()
    assert words[2] == "0"  # failed at the very first pass


def _import_all_code(files):
    mods = sorted({k[:-4].replace("/", ".").replace(".__init__", "")
                   for k in files if k.startswith("hallclock_fw/")})
    return mods, "\n".join("import " + m for m in mods)


HEAP_BUDGET = 32 * 1024


def test_firmware_heap_after_importing_every_module():
    files = firmware_mpy()
    mods, code = _import_all_code(files)
    # the hardware layer's board-only module needs `machine`: give the VM a stand-in
    files["machine.py"] = (
        "class Pin:\n    IN=0\n    OUT=1\n    OPEN_DRAIN=2\n    PULL_UP=1\n"
        "    IRQ_FALLING=2\n    IRQ_RISING=1\n"
        "    def __init__(self, *a, **k): pass\n"
        "class PWM:\n    def __init__(self, *a, **k): pass\n"
        "def reset(): pass\n")
    assert "hallclock_fw.hw.esp32" in mods and "hallclock_fw.core.scrabble" in mods
    with VMProcess(files, "import machine", obj_expr=None) as vm:
        base = vm.heap_live()
        vm.exec(code)
        grown = vm.heap_live() - base
    print(f"firmware heap after importing {len(mods)} modules: {grown} bytes")
    assert grown < HEAP_BUDGET, f"{grown} bytes after import, budget {HEAP_BUDGET}"
