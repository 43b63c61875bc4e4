"""make bench: the clock's GC heap on 32-bit sizes against the ESP32's first
56 000-byte area, every mode on the serial link and on Wi-Fi with MQTT
connected, through a 40-minute game with a 5-minute host outage
(hallclock.vboard.heapmodel.game; docs/benchmarks.md "Heap on 32-bit sizes").

    .venv/bin/python bench/heap32.py [--quick]
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

from hallclock.vboard import heapmodel  # noqa: E402
import common  # noqa: E402

GC_AREA = heapmodel.GC_AREA


def game(mode, link, minutes=40, outage=heapmodel.OUTAGE):
    return heapmodel.game(mode, link, minutes, outage)


def bench(quick=False, say=None):
    from hallclock.vboard import unixport as mpunix
    from hallclock_fw.hw.device import GC_THRESHOLD
    minutes = 10 if quick else 40
    outage = (4 * 60000, 9 * 60000) if quick else heapmodel.OUTAGE
    res = {"gc_area": GC_AREA, "gc_threshold": GC_THRESHOLD, "minutes": minutes,
           "outage_ms": list(outage), "runs": []}
    for link in ("serial", "wifi"):
        for mode in ("scrabble", "duplicate", "backgammon"):
            fig = heapmodel.game(mode, link, minutes, outage)
            res["runs"].append(fig)
            line = ("heap32: %-10s %-6s after boot %6d B (margin %6d), peak %6d B (margin %6d) "
                    "to %d B; names %d of the pools' %d (%d built into an ESP32 image: "
                    "%d free on a board)"
                    % (mode, link, fig["after_boot"], fig["after_boot_margin"],
                       fig["peak"], fig["margin"], GC_AREA, fig["qstr_end"],
                       fig["qstr_pools_hold"], fig["qstr_esp32_builtin"],
                       fig["qstr_board_headroom"]))
            (say or (lambda t: sys.stderr.write(t + "\n")))(line)
    res["all_inside"] = all(r["peak"] <= GC_AREA for r in res["runs"])
    res["unix_calibration"] = mpunix.calibration(refresh=True)
    short = [r.get("mode", "?") + "/" + r.get("link", "?") for r in res["runs"]
             if not r.get("peak") or not r.get("after_boot")]
    return common.premise(res, ["no heap measured for " + ", ".join(short) if short else None])


if __name__ == "__main__":
    json.dump(bench("--quick" in sys.argv), sys.stdout, indent=1)
    print()
