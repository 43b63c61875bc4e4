"""What the sealed frames cost the clock (docs/protocol.md "Sealed frames on
the network"):

* time to seal one event frame and to open one host frame, inside the
  MicroPython unix port (the compiled firmware, as the board runs it; an
  x86-64 host, so a board's figures are larger: the first board run measures
  them);
* heap, in the 32-bit webassembly VM: the seal module's import, and a NetLink
  built with its two keys, besides the other network modules.

    .venv/bin/python bench/sealcost.py
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))
sys.path.insert(0, os.path.join(ROOT, "firmware"))

TIMING = """
import time
from hallclock_fw import seal, protocol
from hallclock import hostframes
m = seal.Mac(b"k" * 16)
f = protocol.event("0000cafe", 123, 456789, 3, 1, 2, 3, 4)
a = seal.seal(m, b"D", hostframes.ack("0000cafe", 123), "0a0b0c0d", 1764620000123)
N = %d
t = time.ticks_us()
for i in range(N):
    seal.seal(m, b"U", f, "0a0b0c0d", i)
t1 = time.ticks_diff(time.ticks_us(), t)
t = time.ticks_us()
for i in range(N):
    seal.open_sealed(m, b"D", a)
t2 = time.ticks_diff(time.ticks_us(), t)
print(t1 / N, t2 / N, len(f), len(seal.seal(m, b"U", f, "0a0b0c0d", 99)))
"""

HEAP = """
from hallclock_fw.netlink import NetLink
import time
k = "00112233445566778899aabbccddeeff"
n = NetLink("open-2026", "table-07", "table-07", "x" * 24, None, time.ticks_ms, key=k,
            hall_key=k)
"""


def timing(n=3000):
    from hallclock.vboard import unixport as mpunix
    env = dict(os.environ)
    env["MICROPYPATH"] = str(mpunix.device_tree())
    out = subprocess.run([mpunix.binary(), "-c", TIMING % n], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    return {"seal_us": round(float(out[0]), 1), "open_us": round(float(out[1]), 1),
            "frame_bytes": int(out[2]), "sealed_bytes": int(out[3]), "runs": n,
            "where": "MicroPython unix port, x86-64 host"}


def heap():
    from hallclock.vboard.wasm import MACHINE_STANDIN, firmware_mpy
    from hallclock.vboard.mpvm import VMProcess
    files = firmware_mpy()
    files["machine.py"] = MACHINE_STANDIN
    with VMProcess(files, "import machine", obj_expr=None) as vm:
        vm.exec("import hallclock_fw.protocol, hallclock_fw.core.timing, hallclock_fw.events")
        base = vm.heap_live()
        vm.exec("import hallclock_fw.mqtt")
        mqtt = vm.heap_live()
        vm.exec("import hallclock_fw.seal")
        sealed = vm.heap_live()
        vm.exec("import hallclock_fw.netlink")
        netlink = vm.heap_live()
        vm.exec(HEAP)
        built = vm.heap_live()
    return {"mqtt_import": mqtt - base, "seal_import": sealed - mqtt,
            "netlink_import": netlink - sealed, "netlink_built": built - netlink,
            "where": "webassembly VM (32-bit), live heap after a collection"}


def bench():
    return {"timing": timing(), "heap": heap()}


if __name__ == "__main__":
    print(json.dumps(bench(), indent=1))
