"""make bench: the clock's GC heap on 32-bit sizes against the ESP32's first
56 000-byte area, every mode on the serial link and on Wi-Fi with MQTT
connected, through a 40-minute game with a 5-minute host outage (minutes
20-25: nothing acknowledged, the ring filling, resends and hellos;
docs/benchmarks.md "Heap on 32-bit sizes").

The game starts with the boot steps of hallclock.vboard.bootheap and runs on
in the same webassembly VM: one request per interval between two of the
firmware's own collections (the driver's ``run``: passes until
``hw.device.idle_collect`` says it would collect), ``gc.mem_alloc()`` read
there, the peak of that interval, live plus garbage.  Beyond the boot's
allowances, each request's own garbage (a calibration request of the same
length that runs nothing) and, on Wi-Fi, the fake broker socket and its
buffers are taken out.

    .venv/bin/python bench/heap32.py [--quick]
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

import common  # noqa: E402
from hallclock.vboard import bootheap  # noqa: E402
from hallclock.vboard.bootheap import HALL_KEY, KEY, SID  # noqa: E402

GC_AREA = 56000
OUTAGE = (20 * 60000, 25 * 60000)  # the host hears nothing, says nothing


class FakeBroker:
    """The broker's and the host's side of the clock's MQTT bytes, in CPython.
    The packets are split by the firmware's own ``mqtt.split`` (the one MQTT
    reader of the project), the frames opened and the host's acks sealed by
    the firmware's own ``seal`` under the clock's key, as a host does
    (hallclock.net.seal.ClockSeal)."""

    def __init__(self):
        from hallclock_fw import seal
        self.seal = seal
        self.mac = seal.Mac(seal.key_bytes(KEY))
        self.buf = b""
        self.down_ctr = 0
        self.up_ctr = 0
        self.refused = 0

    def take(self, raw, out_frames):
        """The replies (bytes) to what the clock sent; the frames it published
        (opened, with their newline) appended to ``out_frames``."""
        from hallclock_fw import mqtt
        buf = self.buf + raw
        replies = b""
        while True:
            head, n = mqtt.split(buf, len(buf))
            if head <= 0:
                break
            first, body = buf[0], buf[head:head + n]
            buf = buf[head + n:]
            kind = first >> 4
            if kind == 1:  # CONNECT
                replies += b"\x20\x02\x00\x00"
            elif kind == 8:  # SUBSCRIBE (id 1): the clock's two topics, QoS 0 granted
                replies += b"\x90\x04" + body[:2] + b"\x00\x00"
            elif kind == 12:  # PINGREQ
                replies += b"\xd0\x00"
            elif kind == 3:  # PUBLISH (QoS 0): a sealed frame on the clock's up topic
                tl = (body[0] << 8) | body[1]
                got = self.seal.open_sealed(self.mac, b"U", bytes(body[2 + tl:]))
                # the session carries the newest D counter the clock took (its echo)
                if got is None or got[1].split(":")[0] != SID or got[2] <= self.up_ctr:
                    self.refused += 1
                    continue
                self.up_ctr = got[2]
                out_frames.append(got[0])
        if head < 0:
            raise RuntimeError("the clock sent a packet MQTT does not allow: %r" % buf[:40])
        self.buf = buf
        return replies

    def down(self, frame):
        """A host frame as the message on the clock's down topic."""
        self.down_ctr += 1
        return self.seal.seal(self.mac, b"D", frame, SID, self.down_ctr)


def esp32_image_names():
    """The names a stock ESP32 image has built in, as far as its stubs tell
    (PyPI ``micropython-esp32-stubs``, made on a board from each built-in
    and frozen module's attributes): every ``def``, ``class`` and attribute
    name they list.  On the board those are ROM qstrs, so a firmware name
    among them takes no pool entry there (the VM interns it: its image
    lacks ``machine``, ``network``, the frozen ``umqtt``...).  On the safe
    side: a parameter of a ``def`` split over lines does not count (a C
    function's keywords are qstrs, its positional parameters are not), nor
    a word in a docstring."""
    import re
    from importlib import metadata
    head = re.compile(r"\s*(?:def|class)\s+([A-Za-z_]\w*)|\s*([A-Za-z_]\w*)\s*[:=]")
    names = set()
    for f in metadata.distribution("micropython-esp32-stubs").files or ():
        if not str(f).endswith(".pyi"):
            continue
        depth = 0  # open brackets: inside them a line is a parameter, not a name
        doc = False  # inside a docstring: words, not names
        for line in f.read_text().splitlines():
            m = head.match(line) if depth == 0 and not doc else None
            if m:
                names.add(m.group(1) or m.group(2))
            if (line.count('"""') + line.count("'''")) % 2:
                doc = not doc
            if doc:
                continue
            code = line.split("#", 1)[0]
            depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
            depth = max(depth, 0)
    return names


def game(mode, link, minutes=40, outage=OUTAGE, trace=None):
    """One mode on one link through the game: the heap figures (32-bit,
    harness taken out); ``trace``: a list that gets (ms, heap, passes, bytes
    out, bytes in) of every interval."""
    with bootheap.open_vm() as vm:
        return _game(vm, mode, link, minutes, outage, trace)


def _game(vm, mode, link, minutes, outage, trace):
    from hallclock import hostframes
    from hallclock_fw import protocol
    from hallclock_fw.mqtt import _packet, _str
    from hallclock_fw.netlink import topic

    wifi = link == "wifi"
    fig, st0 = bootheap.boot32(vm, mode, link, minutes)
    live, names, sets, table = st0["live"], st0["names"], st0["sets"], st0["table"]
    fw_names, qstrs, interned = st0["fw_names"], st0["qstrs"], st0["interned"]
    base = live["base"]
    fw_modules = live["firmware_modules"]
    harness_mods = live["harness_modules"]
    scenario = live["scenario_objects"]
    booted = live["booted"]
    fakes = fig["fakes_and_runner"]
    after_boot = fig["after_boot"]
    calib = {}
    down = topic("hall", "bench", "down").encode()

    def overhead(feed):
        """The garbage of a request that runs nothing but carries ``feed``."""
        key = len(feed)
        if key not in calib:
            live = vm.heap_live()
            out = vm.exec("calibrate(%r)" % (feed,))
            calib[key] = int(out.split("@@")[-1].split()[0]) - live
        return calib[key]

    peak = 0
    peak_at = None
    intervals = 0
    outage_peak = 0
    acked = 0
    seen = 0
    broker = FakeBroker() if wifi else None
    feed = b""
    live = booted
    passes = 0
    while True:
        o = overhead(feed)
        out = vm.exec("run(%r)" % (feed,))
        words = out.split("@@")[-1].split()
        used, st, ms, n, seq = (int(w) for w in words[:5])
        try:
            raw = bytes.fromhex(words[5]) if words[5] != "-" else b""
        except ValueError:
            raise RuntimeError(repr(out[-300:]))
        passes += n
        intervals += 1
        # live heap at our last collection + this interval's garbage,
        # less the request's own (calibrated) and the harness's live share
        # (serial: the fake UART's outbox holds this request's output)
        net = used - o - (harness_mods - fw_modules) - (scenario - harness_mods) - fakes \
            - base - (0 if wifi else len(raw))
        if trace is not None:
            trace.append((ms, net, n, len(raw), len(feed)))
        if net > peak:
            peak, peak_at = net, ms
        if outage[0] <= ms < outage[1] + 60000 and net > outage_peak:
            outage_peak = net
        frames = []
        if wifi:
            replies = broker.take(raw, frames)
        else:
            replies = b""
            frames = [ln + b"\n" for ln in raw.split(b"\n") if ln]
        for f in frames:
            tokens = protocol.check(protocol.unframe(f))
            if tokens and tokens[0] == "E":
                seen = max(seen, int(tokens[2]))
        host = b""
        if not (outage[0] <= ms < outage[1]) and seen > acked:
            host = hostframes.ack("0000b32a", seen)
            acked = seen
        if wifi:
            # the broker's PUBLISH of the host's sealed frame (QoS 0)
            feed = replies + (_packet(0x30, _str(down) + broker.down(host)) if host else b"")
        else:
            feed = host
        if st == 1:  # DONE: the scenario ended and the host has every event
            break
        if ms > (minutes + 10) * 60000:
            raise RuntimeError("the game did not end (status %d at %d ms)" % (st, ms))
        live = vm.heap_live()
    end_live = vm.heap_live()
    # names interned during the game (the firmware's: the harness's
    # requests use names interned before)
    end_names = fw_names + qstrs() - names["fakes"]
    end_pools, n_end = bootheap.pool_bytes(table, end_names)
    peak += end_pools
    outage_peak += end_pools
    # the same names as a set, and those a stock ESP32 image has built in
    fw_set = sets["vm_start"] | (sets["firmware_modules"] - sets["base"]) \
        | (sets["booted"] - sets["scenario_objects"]) | (interned() - sets["fakes"])
    builtin = sorted(fw_set & esp32_image_names())
    cap = table[n_end][0]
    fig.update({"qstr_end": end_names, "qstr_pools_end": n_end,
                "qstr_pools_hold": cap, "qstr_headroom": cap - end_names,
                "qstr_counted": len(fw_set), "qstr_esp32_builtin": len(builtin),
                "qstr_esp32_builtin_names": builtin,
                "qstr_board_end": end_names - len(builtin),
                "qstr_board_headroom": cap - end_names + len(builtin)})
    if wifi:  # messages refused by either end (a bad seal, a replay): none in a sound run
        fig["host_refused"] = broker.refused
        fig["clock_refused"] = int(vm.exec("print(R.uart.refused)").split()[-1])
    fig.update({"peak": peak, "peak_at_ms": peak_at, "peak_in_outage": outage_peak,
                "margin": GC_AREA - peak, "after_boot_margin": GC_AREA - after_boot,
                "intervals": intervals, "passes": passes,
                "calibration": calib, "live_end": end_live - (booted - after_boot),
                "events": seq})
    return fig


def runs():
    """[(mode, link)]: every mode of the registry on both links."""
    from hallclock_fw import settings
    return [(mode, link) for link in ("serial", "wifi") for mode in settings.MODES]


def bench(quick=False, say=None):
    from hallclock.vboard import unixport as mpunix
    from hallclock_fw.hw.boot import GC_THRESHOLD
    minutes = 10 if quick else 40
    outage = (4 * 60000, 9 * 60000) if quick else OUTAGE
    res = {"gc_area": GC_AREA, "gc_threshold": GC_THRESHOLD, "minutes": minutes,
           "outage_ms": list(outage), "runs": []}
    for mode, link in runs():
        fig = game(mode, link, minutes, outage)
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
