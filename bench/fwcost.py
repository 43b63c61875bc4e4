"""Benchmark 2: firmware cost.

* heap allocated per steady-state App.step pass, measured inside the real
  MicroPython VM (webassembly port on node, hallclock.mpvm): gc.mem_alloc()
  before and after thousands of passes with a move running and no event due
  (this port collects only between requests, so mem_alloc only grows inside
  one request: the difference is every byte allocated);
* heap after importing every firmware module the webassembly port can import
  (hw/ drivers that need ``machine`` are left out and listed), as the live
  heap after a collection minus that of an empty VM;
* size of the .mpy build (mpy-cross -march=xtensawin, every file under firmware/);
* a deterministic cost per simulated minute of a running move: the number of
  App.step passes the event-driven loop makes, and the firmware source lines
  those passes execute (counted with sys.settrace under CPython; the same
  bytecode runs on the board, so the count is a reproducible proxy for work;
  the webassembly port cannot count instructions).
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FW = os.path.join(ROOT, "firmware")
VDEV = os.path.join(ROOT, "host", "hallclock", "vdev")


def mpy_size():
    from hallclock.mpvm.checks import build_mpy
    with tempfile.TemporaryDirectory() as out:
        res = build_mpy(FW, out, march="xtensawin")
        sizes = {str(p.relative_to(out)): p.stat().st_size for p in res.compiled}
    return {"bytes": sum(sizes.values()), "files": len(sizes), "errors": res.errors,
            "largest": sorted(sizes.items(), key=lambda kv: -kv[1])[:5]}


def _files():
    files = {}
    for base, _dirs, names in os.walk(os.path.join(FW, "hallclock_fw")):
        for n in names:
            if n.endswith(".py"):
                p = os.path.join(base, n)
                files[os.path.relpath(p, FW)] = open(p).read()
    files["hallclock/__init__.py"] = ""
    for n in os.listdir(VDEV):
        if n.endswith(".py"):
            files["hallclock/vdev/" + n] = open(os.path.join(VDEV, n)).read()
    return files


def _modules(files):
    mods = []
    for path in sorted(files):
        if path.startswith("hallclock_fw/"):
            m = path[:-3].replace("/", ".")
            if m.endswith(".__init__"):
                m = m[:-9]
            mods.append(m)
    return mods


IMPORT_CODE = """
import sys
failed = []
for m in %r:
    try:
        __import__(m)
    except ImportError as e:
        failed.append(m)
print(repr(failed))
"""

STEP_CODE = """
import gc
from hallclock_fw import settings
from hallclock.vdev.runner import Runner
r = Runner("scrabble", settings.parse("scrabble", []),
           [(0, "press", "START"), (200, "press", "B"), (3600000, "end", None)],
           start_ticks=(1 << 30) - 2000)
from hallclock_fw import protocol
while r.ms < 1500:
    r.step()
    r.take_output()
r.feed(protocol.ack("00000001", r.app.link.seq))  # the host has every event
r.step()
r.take_output()
app = r.app
now = r.now()
from hallclock_fw.core.timing import ticks_add
N = %d
gc.disable()
t = now
a0 = gc.mem_alloc()
for i in range(N):
    t = ticks_add(t, 10)
    app.step(t)
a1 = gc.mem_alloc()
print(a1 - a0, r.uart.outbox and len(r.uart.outbox) or 0)
"""


def vm_figures(passes=5000):
    from hallclock.mpvm import run_code
    files = _files()
    mods = _modules(files)
    empty = run_code(files, "pass")
    imp = run_code(files, IMPORT_CODE % (mods,))
    failed = eval(imp.stdout.strip().splitlines()[-1])
    step = run_code(files, STEP_CODE % passes, timeout=120)
    alloc, out_bytes = (int(x) for x in step.stdout.split())
    return {
        "heap_after_import_bytes": imp.heap_live - empty.heap_live,
        "modules_imported": len(mods) - len(failed), "modules_not_importable": failed,
        "alloc_per_step_bytes": alloc / passes, "alloc_total_bytes": alloc,
        "steady_passes": passes, "steady_pass_period_ms": 10,
        "uart_bytes_during_steady": out_bytes,
        "vm_seconds_per_pass": round(step.elapsed_s / passes, 7),
    }


def cost_per_minute(minutes=2):
    """Event-driven passes and firmware lines executed per simulated minute of
    a running move (a 10-minute move limit, so no warning falls in the window)."""
    from hallclock_fw import settings
    from hallclock.vdev.runner import Runner
    from hallclock_fw import protocol
    fw_dir = os.path.join(FW, "hallclock_fw")
    out = {}
    for label, period in (("event_driven", None), ("fixed_10ms", (10, 10))):
        r = Runner("scrabble", settings.parse("scrabble", ["move_s=600"]),
                   [(0, "press", "START"), (200, "press", "B"), (3600000, "end", None)],
                   start_ticks=(1 << 30) - 2000, period=period)
        while r.ms < 5000:
            r.step()
            r.take_output()
        r.feed(protocol.ack("00000001", r.app.link.seq))
        r.step()
        r.take_output()
        count = [0]

        def tracer(frame, event, arg):
            if frame.f_code.co_filename.startswith(fw_dir):
                def local(frame, event, arg):
                    if event == "line":
                        count[0] += 1
                    return local
                return local
            return None
        p0 = r.passes
        end = r.ms + minutes * 60000
        sys.settrace(tracer)
        try:
            while r.ms < end:
                r.step()
        finally:
            sys.settrace(None)
        passes = r.passes - p0
        out[label] = {"passes_per_min": passes / minutes,
                      "fw_lines_per_min": count[0] / minutes,
                      "fw_lines_per_pass": round(count[0] / max(passes, 1), 1)}
    return out


def bench():
    res = {"mpy": mpy_size(), "per_minute": cost_per_minute()}
    try:
        res["vm"] = vm_figures()
    except Exception as exc:  # no node / VM: say so in the results
        res["vm"] = {"error": "%s: %s" % (type(exc).__name__, exc)}
    return res


if __name__ == "__main__":
    import json
    sys.stdout.write(json.dumps(bench(), indent=1) + "\n")
