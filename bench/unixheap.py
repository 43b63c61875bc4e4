"""Board-sized memory in the MicroPython unix port (docs/benchmarks.md,
"Heap on the unix port"): a 40-minute game of each mode at a board's 56 KiB
GC heap (``--heap-kib`` 56, the default), one that fails at 24 KiB,
the smallest heap the Scrabble round runs in, high-water mark, fragmentation,
the longest collection, the heap per mode after boot, and ROMFS against .mpy.

    .venv/bin/python bench/unixheap.py        (make bench runs it)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def long_game(mode, minutes=40):
    """(script text, settings pairs) of a steady game (hallclock.vboard.bootheap)."""
    from hallclock.vboard.bootheap import long_game as game
    return game(mode, minutes)


def run_game(mode, heap_kib=None, gc_policy="firmware", romfs=None, minutes=40, workdir=None):
    """Simulate the long game in the unix port; (records written, heap figures)."""
    from hallclock import scenario
    from hallclock.vboard import device as virtual
    text, pairs = long_game(mode, minutes)
    d = workdir or tempfile.mkdtemp(prefix="hallclock-heap-")
    path = os.path.join(d, "%s.txt" % mode)
    with open(path, "w") as f:
        f.write(text)
    out = os.path.join(d, "%s-%s-%s.jsonl" % (mode, heap_kib, gc_policy))
    if os.path.exists(out):
        os.unlink(out)
    figures = {}
    n = virtual.simulate(scenario.load(path), mode, virtual.check_settings(mode, pairs), out,
                         interpreter="micropython-unix", heap_kib=heap_kib, romfs=romfs,
                         figures=figures, gc_policy=gc_policy)
    return n, figures, out


def smallest_heap(mode="scrabble", lo=16, hi=91):
    """The smallest --heap-kib (board KiB) at which the game still runs (bisect)."""
    from hallclock.errors import HallclockError
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            run_game(mode, heap_kib=mid)
            hi = mid
        except HallclockError:
            lo = mid + 1
    return lo


ROMFS_PROBE = """
import gc, sys, vfs
if %(rom)r:
    with open(%(image)r, 'rb') as f:
        img = f.read()
    vfs.mount(vfs.VfsRom(img), '/rom')
    sys.path.insert(0, '/rom')
gc.collect(); b = gc.mem_alloc()
for m in %(mods)r:
    __import__(m)
gc.collect(); print('@@', gc.mem_alloc() - b, sys.modules[%(mods)r[0]].__file__)
"""

def core_module(mode):
    """The module of ``mode``'s core (the registry's loader says which)."""
    from hallclock_fw.modes import CORES as loaders
    return loaders[mode]().__module__

COMMON = ["hallclock_fw.app", "hallclock_fw.hw.device", "hallclock_fw.hw.panel",
          "hallclock_fw.hw.tm1637"]


def import_heap(mods, image=None):
    """Heap after importing ``mods`` (from ROMFS ``image``, or the .mpy files),
    the image's own buffer excluded (it is in the heap before the base line)."""
    from hallclock.vboard import unixport as mpunix
    env = dict(os.environ)
    env["MICROPYPATH"] = "" if image else str(mpunix.device_tree())
    code = ROMFS_PROBE % {"rom": bool(image), "image": str(image), "mods": list(mods)}
    p = subprocess.run([mpunix.binary(), "-X", "heapsize=1M", "-c", code], capture_output=True,
                       text=True, env=env, timeout=60)
    line = [x for x in p.stdout.splitlines() if x.startswith("@@")]
    if not line:
        raise RuntimeError("import probe failed: " + p.stderr.strip()[-300:])
    _at, grown, where = line[-1].split()
    if image:
        assert where.startswith("/rom/"), where
    return int(grown)


def build_romfs(folder=None):
    """``make romfs``: the image (in ``folder``, with its build and stage;
    default the tree's build/)."""
    if folder is None:
        image, args = os.path.join(ROOT, "build", "hallclock.romfs"), []
    else:
        image = os.path.join(folder, "hallclock.romfs")
        args = ["FW_BUILD=" + os.path.join(folder, "firmware"), "ROMFS_IMAGE=" + image,
                "ROMFS_STAGE=" + os.path.join(folder, "romfs-src")]
    subprocess.run(["make", "-s", "-C", ROOT, "romfs", *args], check=True, capture_output=True)
    return image


def romfs_ratio(folder=None):
    image = build_romfs(folder)
    out = {"image_bytes": os.path.getsize(image)}
    from hallclock_fw import settings
    for mode in settings.MODES:
        mods = COMMON + [core_module(mode)]
        mpy = import_heap(mods)
        rom = import_heap(mods, image)
        out[mode] = {"mpy_bytes": mpy, "romfs_bytes": rom, "ratio": round(rom / mpy, 3)}
    return out


MACHINE = ("class Pin:\n    IN=0\n    OUT=1\n    OPEN_DRAIN=2\n    PULL_UP=1\n"
           "    IRQ_FALLING=2\n    IRQ_RISING=1\n    def __init__(self, *a, **k): pass\n"
           "class PWM:\n    def __init__(self, *a, **k): pass\n"
           "def reset(): pass\ndef unique_id(): return b'\\x00\\x01\\x02'\n")


def word_scale():
    """The firmware's heap after import (a serial clock's modules) on the
    64-bit unix port over the same on the 32-bit webassembly port: what
    ``unixport.WORD_SCALE`` stands for, measured on today's tree."""
    from hallclock.vboard.wasm import import_heap as wasm_import_heap
    wasm, mods = wasm_import_heap(serial_only=True)
    stand = tempfile.mkdtemp(prefix="hallclock-standin-")
    with open(os.path.join(stand, "machine.py"), "w") as f:
        f.write(MACHINE)
    from hallclock.vboard import unixport as mpunix
    env = dict(os.environ)
    env["MICROPYPATH"] = str(mpunix.device_tree()) + ":" + stand
    code = ("import gc, machine\ngc.collect()\nb = gc.mem_alloc()\n" +
            "".join("import %s\n" % m for m in mods) +
            "gc.collect()\nprint('@@', gc.mem_alloc() - b)\n")
    p = subprocess.run([mpunix.binary(), "-X", "heapsize=1M", "-c", code], capture_output=True,
                       text=True, env=env, timeout=60)
    line = [x for x in p.stdout.splitlines() if x.startswith("@@")]
    if not line:
        raise RuntimeError("import probe failed: " + p.stderr.strip()[-300:])
    unix = int(line[-1].split()[1])
    return {"unix_bytes": unix, "webassembly_bytes": wasm, "ratio": round(unix / wasm, 3),
            "modules": len(mods)}


def at_heap(mode, heap_kib, minutes):
    """The long game at ``--heap-kib``: its figures, or the one line it failed with."""
    from hallclock.errors import HallclockError
    try:
        n, fig, _out = run_game(mode, heap_kib=heap_kib, minutes=minutes)
    except HallclockError as exc:
        return {"completed": False, "error": str(exc)}
    fig["records"] = n
    fig["completed"] = True
    return fig


def bench(quick=False):
    from hallclock.vboard import unixport as mpunix
    minutes = 10 if quick else 40
    res = {"default_heap_kib": mpunix.DEFAULT_HEAP_KIB, "calibration": mpunix.calibration(),
           "word_scale_measured": word_scale(), "games": {}, "heap_56": {}, "heap_24": {}}
    from hallclock_fw import settings
    for mode in settings.MODES:
        res["games"][mode] = at_heap(mode, None, minutes)  # the default: 56 KiB
        res["heap_24"][mode] = at_heap(mode, 24, 2)
        res["heap_56"][mode] = res["games"][mode]["completed"]
    if not quick:
        res["smallest_heap_kib_scrabble"] = smallest_heap(hi=mpunix.DEFAULT_HEAP_KIB + 8)
    res["romfs"] = romfs_ratio()
    import common
    return common.premise(res, ["the %s game did not complete at 56 KiB: %s" % (
        m, g.get("error")) for m, g in res["games"].items() if not g.get("completed")])


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(ROOT, "host"))
    json.dump(bench("--quick" in sys.argv), sys.stdout, indent=1)
    print()
