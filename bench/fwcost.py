"""Benchmark 2: firmware cost.

* heap allocated per steady-state App.step pass, measured inside the real
  MicroPython VM (webassembly port on node, hallclock.vboard.mpvm): gc.mem_alloc()
  before and after thousands of passes with a move running and no event due
  (this port collects only between requests, so mem_alloc only grows inside
  one request: the difference is every byte allocated);
* heap after importing every firmware module (the .mpy build; the board-only
  module that imports ``machine`` gets a stand-in), as the live heap after a
  collection minus that before;
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


def mpy_size():
    from hallclock.vboard.mpvm.checks import build_mpy
    with tempfile.TemporaryDirectory() as out:
        res = build_mpy(FW, out, march="xtensawin")
        sizes = {str(p.relative_to(out)): p.stat().st_size for p in res.compiled}
    return {"bytes": sum(sizes.values()), "files": len(sizes), "errors": res.errors,
            "largest": sorted(sizes.items(), key=lambda kv: -kv[1])[:5]}


def vm_figures(passes=5000):
    """Heap after import and allocation per steady pass, measured the way
    tests/test_micropython.py checks them (hallclock.vboard.wasm): the .mpy build
    mpy-cross makes, the real TM1637 driver on fake pins."""
    from hallclock.vboard.wasm import import_heap, steady_state
    heap, mods = import_heap()
    free = steady_state(passes=passes, period=10, lock=False)
    locked = steady_state(passes=passes, period=10, lock=True)
    return {
        "heap_after_import_bytes": heap, "modules_imported": len(mods),
        "alloc_per_step_bytes": free["allocated"] / passes, "alloc_total_bytes": free["allocated"],
        "heap_lock_failed_at_pass": locked["failed_at"],
        "steady_passes": passes, "steady_pass_period_ms": 10,
        "uart_bytes_during_steady": free["uart_bytes"],
        "vm_seconds_per_pass": round(free["seconds"] / passes, 7),
    }


def cost_per_minute(minutes=2):
    """Event-driven passes and firmware lines executed per simulated minute of
    a running move (a 10-minute move limit, so no warning falls in the window)."""
    from hallclock_fw import settings
    from hallclock.vboard.vdev.runner import Runner
    from hallclock import hostframes
    fw_dir = os.path.join(FW, "hallclock_fw")
    out = {}
    for label, period in (("event_driven", None), ("fixed_10ms", (10, 10))):
        r = Runner("scrabble", settings.parse("scrabble", ["move_s=600"]),
                   [(0, "press", "START"), (200, "press", "B"), (3600000, "end", None)],
                   start_ticks=(1 << 30) - 2000, period=period)
        while r.ms < 5000:
            r.step()
            r.take_output()
        r.feed(hostframes.ack("00000001", r.app.link.seq))
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
    import common
    return common.premise(res, ["the VM figures: " + res["vm"]["error"]
                                if "error" in res["vm"] else None])


if __name__ == "__main__":
    import json
    sys.stdout.write(json.dumps(bench(), indent=1) + "\n")
