"""The firmware on real MicroPython (the webassembly port on node, and the
unix port as its own process with a board-sized heap): identical logs on
every interpreter for every mode, an allocation-free
steady-state tick, the heap budget, and `make deploy` onto a virtual board."""
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import ROOT, read_log, run_cli, strip_host
from hallclock.vboard.wasm import import_heap, steady_state

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
    for interp in ("cpython", "micropython", "micropython-unix"):
        out = tmp_path / f"{interp}.jsonl"
        res = run_cli("simulate", "--script", str(path), "--out", str(out), "--mode", mode,
                      "--interpreter", interp, *extra)
        assert res.returncode == 0, res.stderr
        logs[interp] = strip_host(read_log(out))
    assert len(logs["cpython"]) > 5
    assert logs["cpython"][-1]["event"] == "end"
    assert logs["micropython"] == logs["cpython"]
    assert logs["micropython-unix"] == logs["cpython"]


@pytest.mark.parametrize("start", [0, (1 << 30) - 30000])
def test_steady_state_tick_allocates_nothing(start):
    # 11,000 passes of 7 ms = 77 s of a running move, no warning due yet; the
    # displays (real TM1637 driver on fake pins) change every second; the
    # heap is locked, so a single allocation would stop the run.
    res = steady_state(passes=11000, start=start)
    assert res["failed_at"] == -1, f"the heap was touched at pass {res['failed_at']}"
    assert res["passes"] == 11000
    assert res["allocated"] == 0
    assert res["acked"] and res["uart_bytes"] == 0  # really no event was due


def test_heap_lock_check_catches_an_allocating_tick():
    res = steady_state(passes=100, extra="; [now]")
    assert res["failed_at"] == 0  # the very first pass allocated


# The goal is 32 KiB (docs/benchmarks.md explains where the heap goes and
# what would meet the goal).  This bound stops it from growing unnoticed; it
# was 46 KiB at 44.6 KB, and the round, restore and protocol-version work
# brought a serial clock to 54.6 KB (webassembly, 32-bit): the bound follows,
# the goal is not met.  `make bench` reports the figure against the goal.
# The hall-network modules (Wi-Fi, MQTT) are imported only by a clock
# configured for the network, and are printed apart.  Since the event ring is
# allocated when hw/device.py is imported (before other imports fragment the
# heap: 3 584 bytes) and the clock reports its own health and feeds a
# watchdog, "every module of a serial clock" (all three modes, the config
# parser and the self-test at once) is 61 KB; the clock that runs imports its
# own mode only and drops the boot-only modules: tests/test_health.py holds
# that one to the ESP32's first 56 000-byte GC area.  hw/cfgsave.py (the
# file's read at boot, and the save of the host's settings, issue 30) is now
# among them, imported by the config parser: 64 816 -> 66 048 B.
HEAP_BUDGET = 66 * 1024


def test_firmware_heap_after_importing_every_module():
    grown, mods = import_heap(serial_only=True)
    assert "hallclock_fw.hw.esp32" in mods and "hallclock_fw.core.scrabble" in mods
    assert "hallclock_fw.mqtt" not in mods
    every, all_mods = import_heap()
    print(f"firmware heap after importing {len(mods)} modules (serial clock): {grown} bytes; "
          f"all {len(all_mods)} modules (hall network too): {every} bytes")
    assert grown < every
    assert 4096 < grown < HEAP_BUDGET, f"{grown} bytes after import, bound {HEAP_BUDGET}"


# The board's once-or-rarely code (docs/micropython.md "Boot-only code"):
# hw/esp32rare.py is imported by esp32.load for one call and dropped again,
# with board.py, so the next collection frees its code.  (Each step is its
# own request: the VM's collection between requests sees no stale pointer
# of the request's own frames.)
def test_the_boards_rare_code_is_dropped_after_each_call():
    from hallclock.vboard.mpvm import VMProcess
    from hallclock.vboard.mpvm.files import firmware_mpy
    from hallclock.vboard.wasm import MACHINE_STANDIN
    files = firmware_mpy()
    files["machine.py"] = MACHINE_STANDIN
    with VMProcess(files, "import machine", obj_expr=None) as vm:
        vm.exec("import sys\nfrom hallclock_fw.hw import device, esp32\n"
                "import hallclock_fw.hw as pkg\n")
        # (no esp32 module in this VM: the versions only)
        text = vm.exec("print(esp32.ESP32.info_text(None))").strip()
        gone = vm.exec('print("hallclock_fw.hw.esp32rare" not in sys.modules, '
                       '"hallclock_fw.hw.board" not in sys.modules, '
                       '"esp32rare" not in pkg.__dict__)').strip()
        before = vm.heap_live()  # (its names are interned for good: their pools too)
        vm.exec("from hallclock_fw.hw import esp32rare, board\n")
        kept = vm.heap_live()  # as a clock that kept them
        vm.exec("del esp32rare, board\nesp32.load('session_id')\n")
        after = vm.heap_live()
    assert text.startswith("mp="), text  # the call ran
    assert gone == "True True True"
    # the module's code (about 2 KB) while it is imported, none of it after a
    # call (a few bytes: the request's own)
    assert kept - before > 1024
    assert after - before < 256, (before, kept, after)


# netlink.shed (docs/micropython.md "Boot-only code"): once the clock's one
# link is built, the code that only built it is dropped, and the link still
# seals and sends.
def test_the_network_links_builders_are_dropped_once_it_is_built():
    from hallclock.vboard.mpvm import VMProcess
    from hallclock.vboard.mpvm.files import firmware_mpy
    from hallclock_fw import seal as host_seal
    files = firmware_mpy()
    with VMProcess(files, "", obj_expr=None) as vm:
        vm.exec("from hallclock_fw import netlink, mqtt, seal\n"
                "L = netlink.NetLink('h', 't1', 't1', 'pw', lambda now: None, lambda: 0,"
                " key='1f' * 16, hall_key='2e' * 16, sid='0a0b0c0d')\n")
        before = vm.heap_live()
        vm.exec("netlink.shed()\n")
        after = vm.heap_live()
        gone = vm.exec("print(hasattr(mqtt, 'connect_packet'), hasattr(seal, 'key_bytes'), "
                       "hasattr(netlink, 'topic'), hasattr(netlink, '_link_sid'))").strip()
        # the built link goes on: a frame sealed under its key, on its topic
        vm.exec("S = []\nL.client.state = mqtt.UP\n"
                "L.client.publish = lambda t, p: S.append((t, p))\n"
                "L.write(b'W\\n')\n")
        topic, msg = vm.exec("print(S[0][0].decode(), S[0][1].decode())").split()
    assert gone == "False False False False"
    assert before - after > 200, (before, after)  # their code freed
    mac = host_seal.Mac(host_seal.key_bytes("1f" * 16))
    assert topic == "hallclock/h/t1/up"
    # the link session, with the newest host counter it took (none yet: 0) echoed
    assert host_seal.open_sealed(mac, b"U", msg.encode() + b"\n") == (b"W\n", "0a0b0c0d:0", 1)


# hw/device.py shed (docs/micropython.md "Boot-only code"): once the App is
# built, the settings' catalogue and parser, the mode registry, the event
# codes' module and the cores of other modes are dropped; the host's settings
# (K) import them for the frame and drop them again, and the clock goes on in
# the new mode.
def test_the_settings_and_modes_modules_are_dropped_after_boot_and_after_new_settings():
    from hallclock.vboard.mpvm import VMProcess
    from hallclock.vboard.wasm import device_files
    from hallclock_fw import settings
    dup = settings.format_text("duplicate", settings.defaults("duplicate"))
    init = ("import sys\nfrom hallclock.vboard.vdev.runner import Runner\n"
            "R = Runner('scrabble', %r, [])\n"
            "def loaded():\n"
            "    print(sorted(n for n in sys.modules if n.startswith('hallclock_fw.')"
            " and n.split('.')[-1] in ('settings', 'modes', 'events', 'scrabble', 'duplicate')))\n"
            % (dict(settings.defaults("scrabble")),))
    with VMProcess(device_files(), init, obj_expr=None) as vm:
        booted = vm.exec("loaded()").strip()
        before = vm.heap_live()
        vm.exec("import hallclock_fw.settings\n")
        kept = vm.heap_live()  # as a clock that kept it
        vm.exec("R.app.shed(R.app)\n")
        # the host's settings: taken (no game runs), the new core built
        taken = vm.exec("print(R.app.host_frame(['K', 'duplicate', %r], R.clock.now))" % dup)
        after_k = vm.exec("loaded()\nprint(type(R.app.core).__name__, R.app.link.settings_text)")
        bad = vm.exec("print(R.app.host_frame(['K', 'duplicate', 'minutes=x'], R.clock.now))\n"
                      "loaded()")
    assert booted == "['hallclock_fw.core.scrabble']"
    assert kept - before > 2048, (before, kept)  # its code was not on the heap
    assert taken.strip() == "True"
    assert after_k.split("\n")[0] == "['hallclock_fw.core.duplicate']"
    assert after_k.split("\n")[1] == "DuplicateTimer " + dup
    assert bad.split() == ["False", "['hallclock_fw.core.duplicate']"]
