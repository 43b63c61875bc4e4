"""The clock's GC heap on 32-bit sizes against the ESP32's first 56 000-byte
area (docs/micropython.md "The heap model", docs/benchmarks.md): every mode,
on the serial link and on Wi-Fi with MQTT connected, through a 40-minute game
with a 5-minute host outage (minutes 20-25: nothing acknowledged, the ring
filling, resends and hellos).

Inside the webassembly VM (32-bit words, the same .mpy files as the board)
garbage is collected only between two requests.  So the game runs one
request per interval between two of the firmware's own collections: a
request runs passes of the loop until ``hw.device.idle_collect`` (the
firmware's policy) says it would collect, and reads ``gc.mem_alloc()`` there:
the heap's peak of that interval, live plus garbage, just before our
collection.  The top-level collection after the request is that collection.

Every allowance is measured in the same run, never a constant:

* the VM's own heap before anything is imported (the interpreter; a board
  has its own at boot, counted in the figures as ``vm_base``);
* the harness: the scenario runner's modules and the scenario's own actions
  (live), and the garbage each request makes by itself (the compiled request
  and the bytes it carries: a calibration request of the same length that
  runs nothing);
* on Wi-Fi the fake broker socket and its buffers (harness).

    .venv/bin/python bench/heap32.py [--quick]       (make bench runs it)
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GC_AREA = 56000
OUTAGE = (20 * 60000, 25 * 60000)  # the host hears nothing, says nothing

# The driver inside the VM (MicroPython): the Runner with the real firmware,
# the serial FakeUART or a NetLink on a fake broker socket.
DRIVER = r'''
import gc
from binascii import hexlify
from hallclock_fw.core.timing import ticks_add
from hallclock_fw.hw import device


class FakeSock:
    """The broker's end of a TCP socket: what the clock sends is kept for
    the host side (which speaks MQTT for the broker), what the host side
    gives is what recv returns."""
    def __init__(self):
        self.sent = []
        self.rx = []

    def send(self, data):
        self.sent.append(data)
        return len(data)

    def recv(self, n):
        if not self.rx:
            return None
        data = self.rx[0]
        if len(data) > n:
            self.rx[0] = data[n:]
            return data[:n]
        self.rx.pop(0)
        return data

    def close(self):
        pass

    def setblocking(self, flag):
        pass


S = [None]


def make(mode, settings, actions, wifi):
    from hallclock.vdev.runner import Runner
    if not wifi:
        return Runner(mode, settings, actions, clock="bench", sid="0000b32a")

    class NetRunner(Runner):
        def _boot(self, now):
            from hallclock_fw.netlink import NetLink
            sock = FakeSock()
            S[0] = sock
            self.sock = sock
            self.uart = NetLink("hall", "bench", "bench", "pw", lambda now: sock, self.now)
            Runner._boot(self, now)

        def feed(self, data):
            self.sock.rx.append(data)

        def take_output(self):
            out = b"".join(self.sock.sent)
            self.sock.sent = []
            return out
    return NetRunner(mode, settings, actions, clock="bench", sid="0000b32a")


def run(feed):
    """Passes until the firmware would collect; the heap there."""
    r = R
    if device.GC[0]:  # the top-level collection after the last request was ours
        device.GC[4] = gc.mem_alloc()
    if feed:
        r.feed(feed)
    st = 0
    n = 0
    while True:
        st = r.step()
        n += 1
        if st != 0:
            break
        now = r.clock.now
        if device.idle_collect(now, ticks_add(now, r.ms - r.last_ms), r.app.events):
            break
    used = gc.mem_alloc()
    out = r.take_output()
    print("@@", used, st, r.ms, n, r.app.link.seq, hexlify(out).decode() if out else "-")


def calibrate(feed):
    print("@@", gc.mem_alloc())
'''


def _mqtt_replies(buf, out_frames):
    """The broker's side of the clock's MQTT bytes: replies (bytes) and the
    frames the clock published (appended to out_frames).  Returns the rest
    of ``buf`` (an incomplete packet)."""
    replies = b""
    while len(buf) >= 2:
        n, shift, i = 0, 0, 1
        while True:
            if i >= len(buf):
                return replies, buf
            b = buf[i]
            n |= (b & 127) << shift
            i += 1
            if not b & 128:
                break
            shift += 7
        if i + n > len(buf):
            return replies, buf
        first, body = buf[0], buf[i:i + n]
        buf = buf[i + n:]
        kind = first >> 4
        if kind == 1:  # CONNECT
            replies += b"\x20\x02\x00\x00"
        elif kind == 8:  # SUBSCRIBE: one granted QoS 0 per topic
            pid = body[:2]
            topics, at = 0, 2
            while at < len(body):
                tl = (body[at] << 8) | body[at + 1]
                at += 2 + tl + 1
                topics += 1
            replies += bytes((0x90, 2 + topics)) + pid + b"\x00" * topics
        elif kind == 12:  # PINGREQ
            replies += b"\xd0\x00"
        elif kind == 3:
            tl = (body[0] << 8) | body[1]
            out_frames.append(bytes(body[2 + tl:]))
    return replies, buf


def game(mode, link, minutes=40, outage=OUTAGE):
    """One mode on one link: the heap figures (32-bit, harness taken out)."""
    sys.path.insert(0, os.path.join(ROOT, "host"))
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from hallclock.mpdevice import device_files
    from hallclock.mpvm import VMProcess
    from hallclock_fw import protocol, settings as settings_mod
    from hallclock_fw.mqtt import publish_packet
    from hallclock_fw.netlink import topic
    import unixheap
    text, pairs = unixheap.long_game(mode, minutes)
    actions = []
    for line in text.splitlines():
        parts = line.split()
        t, action = int(parts[0]), parts[1]
        arg = parts[2] if len(parts) > 2 else None
        actions.append((t, action, arg))
    values = settings_mod.parse(mode, pairs)
    wifi = link == "wifi"
    files = device_files()
    files["benchdrv.py"] = DRIVER
    files["network.py"] = "STA_IF = 0\nclass WLAN:\n    def __init__(self, *a): pass\n"
    files["socket.py"] = "AF_INET = 2\nSOCK_STREAM = 1\n"
    from hallclock.mpdevice import MACHINE_STANDIN
    files["machine.py"] = MACHINE_STANDIN + "def unique_id(): return b'\\x00\\x01\\x02'\n"
    fig = {"mode": mode, "link": link}
    with VMProcess(files, "", obj_expr=None, timeout=600, heap_bytes=1 << 20) as vm:
        vm.exec("import machine, micropython, select")  # the stand-in is not the board's
        base = vm.heap_live()

        def qstrs():
            import re
            text = vm.exec("micropython.qstr_info()")
            return {k: int(v) for k, v in re.findall(r"(n_\w+)=(\d+)", text)}
        # the firmware's modules, as a board imports them: hw/device.py (the
        # event ring first), the mode's core, on Wi-Fi the network modules
        core = {"scrabble": "scrabble", "duplicate": "duplicate",
                "backgammon": "backgammon"}[mode]
        # (hw/config.py is parsed at boot and dropped, as device.start does:
        # its names stay interned)
        imports = ("from hallclock_fw.hw import device, esp32\nfrom hallclock_fw.hw import config\n"
                   "del config\ndevice._forget('hallclock_fw.hw.config')\n"
                   "import hallclock_fw.core.%s\n" % core)
        imports += "import hallclock_fw.hw.panel, hallclock_fw.hw.tm1637\n"
        if wifi:
            imports += "import hallclock_fw.netlink, hallclock_fw.mqtt\n"
            try:
                vm.exec("import select")
                imports += "import hallclock_fw.hw.wifi\n"
                fig["wifi_module"] = True
            except Exception:
                fig["wifi_module"] = False  # no select in this VM: wifi.py not counted
        vm.exec(imports)
        fw_modules = vm.heap_live()
        fig["qstr_firmware"] = qstrs()
        # the harness: the runner's modules and the driver, then the scenario
        vm.exec("import hallclock.vdev.runner, hallclock.vdev.fakes\nimport benchdrv\n"
                "from benchdrv import run, calibrate\n")
        harness_mods = vm.heap_live()
        vm.exec("ACTS = %r\nSET = %r\n" % (actions, dict(values)))
        scenario = vm.heap_live()
        vm.exec("R = benchdrv.make(%r, SET, ACTS, %r)\nbenchdrv.R = R\n" % (mode, wifi))
        booted = vm.heap_live()
        # the Runner's own (the board has pins, outputs, its UART in C): a
        # second Runner without its App is not buildable, so this is the
        # fakes' share measured on a bare set of them
        vm.exec("from hallclock.vdev.fakes import FakePin, FakeOutput, FakeUART, SimClock\n"
                "_c = SimClock(0)\n"
                "_f = ([FakePin(1) for _ in range(5)], FakeOutput(_c), (FakeOutput(_c), "
                "FakeOutput(_c)), FakeOutput(_c), FakeUART(), [], _c)\n")
        with_fakes = vm.heap_live()
        vm.exec("del _f, _c\n")
        fakes = with_fakes - booted
        after_boot = (fw_modules - base) + (booted - scenario) - fakes
        fig.update({"vm_base": base, "firmware_modules": fw_modules - base,
                    "harness_modules": harness_mods - fw_modules,
                    "scenario_objects": scenario - harness_mods,
                    "fakes_and_runner": fakes,
                    "after_boot": after_boot})
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
        mbuf = b""
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
            if net > peak:
                peak, peak_at = net, ms
            if outage[0] <= ms < outage[1] + 60000 and net > outage_peak:
                outage_peak = net
            frames = []
            if wifi:
                replies, mbuf = _mqtt_replies(mbuf + raw, frames)
            else:
                replies = b""
                frames = [ln + b"\n" for ln in raw.split(b"\n") if ln]
            for f in frames:
                tokens = protocol.check(protocol.unframe(f))
                if tokens and tokens[0] == "E":
                    seen = max(seen, int(tokens[2]))
            host = b""
            if not (outage[0] <= ms < outage[1]) and seen > acked:
                host = protocol.ack("0000b32a", seen)
                acked = seen
            if wifi:
                feed = replies + (publish_packet(down, host) if host else b"")
            else:
                feed = host
            if st == 1:  # DONE: the scenario ended and the host has every event
                break
            if ms > (minutes + 10) * 60000:
                raise RuntimeError("the game did not end (status %d at %d ms)" % (st, ms))
            live = vm.heap_live()
        end_live = vm.heap_live()
        fig.update({"peak": peak, "peak_at_ms": peak_at, "peak_in_outage": outage_peak,
                    "margin": GC_AREA - peak, "after_boot_margin": GC_AREA - after_boot,
                    "intervals": intervals, "passes": passes,
                    "calibration": calib, "live_end": end_live - (booted - after_boot),
                    "events": seq})
    return fig


def bench(quick=False):
    minutes = 10 if quick else 40
    outage = (4 * 60000, 9 * 60000) if quick else OUTAGE
    res = {"gc_area": GC_AREA, "minutes": minutes, "outage_ms": list(outage), "runs": []}
    for link in ("serial", "wifi"):
        for mode in ("scrabble", "duplicate", "backgammon"):
            fig = game(mode, link, minutes, outage)
            res["runs"].append(fig)
            sys.stderr.write("heap32: %-10s %-6s after boot %6d B (margin %6d), peak %6d B "
                             "(margin %6d) to %d B\n" % (
                                 mode, link, fig["after_boot"], fig["after_boot_margin"],
                                 fig["peak"], fig["margin"], GC_AREA))
    res["all_inside"] = all(r["peak"] <= GC_AREA for r in res["runs"])
    return res


if __name__ == "__main__":
    json.dump(bench("--quick" in sys.argv), sys.stdout, indent=1)
    print()
