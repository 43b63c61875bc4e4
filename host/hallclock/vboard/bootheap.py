"""The firmware's heap after boot on 32 and on 64 bits: the calibration of
the unix port's ``--heap-kib`` (``hallclock.vboard.unixport.calibration``,
docs/micropython.md "The heap model"), and the start of the heap bench's
game (bench/heap32.py: every mode, on the serial link and on Wi-Fi, through a
40-minute game against the ESP32's first 56 000-byte area).

Inside the webassembly VM (32-bit words, the same .mpy files as the board)
garbage is collected only between two requests; the driver (``DRIVER``)
runs one request per interval between two of the firmware's own
collections.  The boot steps (``boot_steps``) run one request each; the
live heap after each, less that before, is the step's share.  Every
allowance is measured in the same run, never a constant:

* the VM's own heap before anything is imported (the interpreter; a board
  has its own at boot, counted in the figures as ``vm_base``);
* the harness: the scenario runner's modules and the scenario's own actions
  (live), and the runner's fakes;
* the qstr pools a board allocates for the firmware's own names
  (``pool_bytes``).

The same boot steps run in the 64-bit unix port (``boot64``): their ratio is
the word-size scale of ``--heap-kib`` and the unix device's heap beyond them
its harness (``unixport.calibration``, measured once per firmware digest).
"""
import json
import os
import subprocess
import sys
import tempfile

# Names interned in the VM's base step, so that its qstr pools (20, 40, ...
# 1 280 entries) are all allocated before the firmware is imported: the
# harness's names (runner, fakes, driver, ~200) then never move a pool's
# allocation into a measured step, and the pools a board needs for the
# firmware's own names are charged from the firmware's count (``pool_bytes``).
QSTR_FILL = 1300

# The driver inside the VM (MicroPython): the Runner with the real firmware,
# the serial FakeUART or a NetLink on a fake broker socket.
DRIVER = r'''
import gc
from binascii import hexlify
from hallclock_fw.core.timing import ticks_add, ticks_diff
from hallclock_fw.hw import device


# What the clock sends in one request, for the host side: one buffer made
# when the driver is imported (the harness's share), written without
# allocating (on a board the bytes go to lwIP, outside the GC heap).
OUT = bytearray(32768)


class FakeSock:
    """The broker's end of a TCP socket: what the clock sends is kept for
    the host side (which speaks MQTT for the broker) in OUT, what the host
    side gives is what recv returns."""
    def __init__(self):
        self.n = 0
        self.rx = []

    def send(self, data):
        k = len(data)
        if self.n + k > len(OUT):
            raise OSError(11)  # EAGAIN: the host side takes it at the end of the request
        OUT[self.n:self.n + k] = data
        self.n += k
        return k

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
    from hallclock.vboard.vdev.runner import Runner
    if not wifi:
        return Runner(mode, settings, actions, clock="bench", sid="0000b32a")

    class NetRunner(Runner):
        def _boot(self, now):
            from hallclock_fw.netlink import NetLink
            sock = FakeSock()
            S[0] = sock
            self.sock = sock
            self.uart = NetLink("hall", "bench", "bench", "pw", lambda now: sock, self.now,
                                key=KEY, hall_key=HALL_KEY, sid=SID)
            from hallclock_fw.netlink import shed
            shed()  # as hw/wifi.link on the board: the link's builders dropped
            Runner._boot(self, now)

        def feed(self, data):
            self.sock.rx.append(data)

        def take_output(self):
            out = bytes(OUT[:self.sock.n])
            self.sock.n = 0
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
        if r.ended:  # after the game the board's loop goes on at its next wake-up
            now = r.clock.now
            st = r.advance(max(1, ticks_diff(r.app.next_wake(now), now)))
        else:
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


KEY = "1f" * 16  # the bench clock's key (its own topics, both ways)
HALL_KEY = "2e" * 16  # the hall's (all/down)
SID = "b32a0001"  # the bench clock's link session (fixed: the same figures every run)


def long_game(mode, minutes=40):
    """(script text, settings pairs) of a steady game of ``minutes`` and a bit:
    Scrabble goes on into the play-out after the round's end gong; a mode
    not named here gets a two-player game on its own defaults."""
    lines = ["0 press START"]
    t = 2000
    if mode == "scrabble":
        lines.append("%d press B" % t)
        who = "A"
        n = 0
        while t < (minutes + 3) * 60000:  # 3 minutes of play-out after the end gong
            n += 1
            t += 25000 + (n * 7919) % 40000  # 25-65 s per move
            lines.append("%d press %s" % (t, who))
            if n % 17 == 0:  # a challenge now and then (ČAS 9.1)
                lines.append("%d press PAUSE" % (t + 5000))
                lines.append("%d press %s" % (t + 35000, "B" if who == "A" else "A"))
                t += 35000
            who = "B" if who == "A" else "A"
        return "\n".join(lines) + "\n%d end\n" % (t + 5000), []
    if mode == "duplicate":
        lines = []
        t = 20000
        n = 0
        while t < minutes * 60000:
            n += 1
            lines.append("%d press START" % t)
            if n % 5 == 0:
                lines.append("%d press PAUSE" % (t + 50000))
                lines.append("%d press PAUSE" % (t + 80000))
                t += 30000
            t += 200000
        return "\n".join(lines) + "\n%d end\n" % t, []
    # backgammon (and a mode not named here): alternating presses, 17 s a
    # move (2 s off backgammon's 15 s delay)
    lines = ["0 press B"]
    t = 0
    who = "A"
    while t < minutes * 60000:
        t += 17000
        lines.append("%d press %s" % (t, who))
        who = "B" if who == "A" else "A"
    text = "\n".join(lines) + "\n%d end\n" % (t + 5000)
    return text, (["match=25"] if mode == "backgammon" else [])


# The ESP32's binascii is built in (C: no interned names, no garbage but its
# result); the webassembly port's is micropython-lib's Python module, which
# interns 45 one-character names at import and makes a big int per byte in
# crc32.  This stand-in does what the board's does at a board's cost: the
# CRC in two 16-bit halves (small ints), its tables in the VM's base heap.
BINASCII_STANDIN = r'''
_HI = []
_LO = []
for _n in range(256):
    _c = _n
    for _k in range(8):
        _c = (_c >> 1) ^ 0xEDB88320 if _c & 1 else _c >> 1
    _HI.append(_c >> 16)
    _LO.append(_c & 0xFFFF)
_HEX = b"0123456789abcdef"


def crc32(data, crc=0):
    hi = (crc >> 16) ^ 0xFFFF
    lo = (crc & 0xFFFF) ^ 0xFFFF
    for b in data:
        i = (lo ^ b) & 255
        lo = (((hi & 255) << 8) | (lo >> 8)) ^ _LO[i]
        hi = (hi >> 8) ^ _HI[i]
    return ((hi ^ 0xFFFF) << 16) | (lo ^ 0xFFFF)


def hexlify(data):
    out = bytearray(2 * len(data))
    j = 0
    for b in data:
        out[j] = _HEX[b >> 4]
        out[j + 1] = _HEX[b & 15]
        j += 2
    return bytes(out)


def unhexlify(text):
    if isinstance(text, str):
        text = text.encode()
    if len(text) & 1:
        raise ValueError("odd-length string")
    out = bytearray(len(text) // 2)
    for j in range(len(out)):
        v = 0
        for b in (text[2 * j], text[2 * j + 1]):
            if 48 <= b <= 57:
                d = b - 48
            elif 97 <= b <= 102:
                d = b - 87
            elif 65 <= b <= 70:
                d = b - 55
            else:
                raise ValueError("non-hex digit found")
            v = v * 16 + d
        out[j] = v
    return bytes(out)
'''


def _files():
    from .wasm import MACHINE_STANDIN, device_files
    files = device_files()
    files["binascii.py"] = BINASCII_STANDIN
    files["benchdrv.py"] = DRIVER.replace("key=KEY, hall_key=HALL_KEY, sid=SID",
                                          "key=%r, hall_key=%r, sid=%r" % (KEY, HALL_KEY, SID))
    files["network.py"] = "STA_IF = 0\nclass WLAN:\n    def __init__(self, *a): pass\n"
    files["socket.py"] = "AF_INET = 2\nSOCK_STREAM = 1\n"
    files["machine.py"] = MACHINE_STANDIN + "def unique_id(): return b'\\x00\\x01\\x02'\n"
    return files


def qstr_figures(text):
    """[(n_pool, n_qstr, pool bytes)] of every ``micropython.qstr_info()`` line
    in ``text`` (the pools' bytes: n_total_bytes less the names' own bytes)."""
    import re
    out = []
    for m in re.finditer(r"n_pool=(\d+), n_qstr=(\d+), n_str_data_bytes=(\d+), "
                         r"n_total_bytes=(\d+)", text):
        pools, n, data, total = (int(g) for g in m.groups())
        out.append((pools, n, total - data))
    return out


def pool_table(figures):
    """{pools: (capacity in names, bytes of that many pools)}, from the VM's
    own qstr_info while the base step interned its fill names one by one."""
    table = {}
    for pools, n, nbytes in figures:
        cap = table.get(pools, (0, 0))[0]
        table[pools] = (max(cap, n), nbytes)
    return table


def pool_bytes(table, names):
    """The bytes of the qstr pools a board allocates for ``names`` interned
    names (the pools that hold them; the last one is allocated whole)."""
    for pools in sorted(table):
        cap, nbytes = table[pools]
        if names <= cap and pools < max(table):
            return nbytes, pools
    raise RuntimeError("more interned names (%d) than the pool table knows" % names)


def boot_steps(mode, link, actions, values):
    """[(label, code)]: what a board imports and builds, then the harness.
    The live heap after each step, less that before, is the step's share."""
    wifi = link == "wifi"
    # the firmware's modules, as a board imports them: hw/device.py (the event
    # ring first), the board's hardware module; the boot-only ones imported
    # and dropped again (their names stay interned): hw/esp32rare.py with
    # board.py (ESP32(), hallclock.cfg, the session id, the watchdog),
    # hw/boot.py with hw/config.py (device.start); the mode's core, on Wi-Fi
    # the network
    imports = ("from hallclock_fw.hw import device, esp32\n"
               "from hallclock_fw.hw import esp32rare, boot, config\n"
               "del esp32rare, boot, config\n"
               "from hallclock_fw.forget import forget\n"
               "forget('hallclock_fw.hw.esp32rare')\n"
               "forget('hallclock_fw.hw.board')\n"
               "forget('hallclock_fw.hw.boot')\n"
               "forget('hallclock_fw.hw.config')\n"
               "forget('hallclock_fw.hw.cfgsave')\n"
               "forget('hallclock_fw.names')\n"
               "del forget\n"
               "import hallclock_fw.core.%s\n" % mode)
    imports += "import hallclock_fw.hw.panel, hallclock_fw.hw.tm1637\n"
    if wifi:
        imports += "import hallclock_fw.netlink, hallclock_fw.mqtt, hallclock_fw.hw.wifi\n"
        # hw/wifi.link (ESP32.use_network) drops the serial link's class
        imports += "from hallclock_fw.hw import esp32\nesp32.__dict__.pop('StdioLink')\n"
        # ... and, once its link is built, its own builder
        # (the rest of what hw/wifi.link drops is netlink.shed: the bench's link)
        imports += ("from hallclock_fw.hw import wifi\nwifi.__dict__.pop('link')\n"
                    "wifi.__dict__.pop('_build')\ndel wifi\n")
    return [
        # the stand-ins of the ESP32's built-in modules (in its image, not its heap)
        ("base", "import machine, micropython, select, network, socket, binascii\n"
                 "class _Q:\n    pass\n_q = _Q()\n"
                 "for _i in range(%d):\n"
                 "    setattr(_q, '_q%%d' %% _i, 0)\n"
                 "    micropython.qstr_info()\n"
                 "del _q, _Q, _i\n" % QSTR_FILL),
        ("firmware_modules", imports),
        # the harness: the runner's modules and the driver, then the scenario
        ("harness_modules", "import hallclock.vboard.vdev.runner, hallclock.vboard.vdev.fakes\n"
                            "import benchdrv\nfrom benchdrv import run, calibrate\n"),
        ("scenario_objects", "ACTS = %r\nSET = %r\n" % (actions, dict(values))),
        ("booted", "R = benchdrv.make(%r, SET, ACTS, %r)\nbenchdrv.R = R\n" % (mode, wifi)),
        # the Runner's fakes (the board has pins, outputs, its UART in C),
        # measured on a bare set of them
        ("fakes", "from hallclock.vboard.vdev.fakes import FakePin, FakeOutput, FakeUART, SimClock\n"
                  "_c = SimClock(0)\n"
                  "_f = ([FakePin(1) for _ in range(5)], FakeOutput(_c), (FakeOutput(_c), "
                  "FakeOutput(_c)), FakeOutput(_c), FakeUART(), [], _c)\n"),
    ]


def _shares(live):
    """The figures of the boot steps' live heaps (label -> bytes)."""
    fw = live["firmware_modules"] - live["base"]
    fakes = live["fakes"] - live["booted"]
    return {"vm_base": live["base"], "firmware_modules": fw,
            "harness_modules": live["harness_modules"] - live["firmware_modules"],
            "scenario_objects": live["scenario_objects"] - live["harness_modules"],
            "fakes_and_runner": fakes,
            "after_boot": fw + (live["booted"] - live["scenario_objects"]) - fakes}


def _scenario(mode, minutes):
    from hallclock_fw import settings as settings_mod
    text, pairs = long_game(mode, minutes)
    actions = []
    for line in text.splitlines():
        parts = line.split()
        actions.append((int(parts[0]), parts[1], parts[2] if len(parts) > 2 else None))
    return actions, settings_mod.parse(mode, pairs)


def boot64(mode, tree, binary, link="serial"):
    """The boot steps in the 64-bit unix port (its collections work inside a
    script): the same shares as ``boot32``'s, on 64-bit sizes.  ``tree`` and
    ``binary``: the unix port's device tree and interpreter (vboard.unixport,
    which calls this: the arrow points one way)."""
    actions, values = _scenario(mode, 3)
    d = tempfile.mkdtemp(prefix="hallclock-boot64-")
    for name, text in _files().items():
        # the stand-ins and the driver (the firmware is the .mpy tree; the unix
        # port's binascii is built in, as the board's)
        if "/" not in name and name != "binascii.py":
            with open(os.path.join(d, name), "w") as f:
                f.write(text if isinstance(text, str) else text.decode())
    code = "import gc\n"
    for label, step in boot_steps(mode, link, actions, values):
        code += step + "\ngc.collect()\nprint('@@', %r, gc.mem_alloc())\n" % label
    env = dict(os.environ)
    env["MICROPYPATH"] = str(tree) + ":" + d
    p = subprocess.run([binary, "-X", "heapsize=2M", "-c", code], capture_output=True,
                       text=True, env=env, timeout=120)
    live = {}
    for line in p.stdout.splitlines():
        if line.startswith("@@ "):
            _at, label, value = line.split()
            live[label.strip("'")] = int(value)
    if "fakes" not in live:
        raise RuntimeError("the unix-port boot probe failed: " + p.stderr.strip()[-300:])
    return _shares(live)


def open_vm():
    """The webassembly VM with the firmware, the driver and the board's
    built-in modules' stand-ins, for ``boot32``."""
    from .mpvm import VMProcess
    return VMProcess(_files(), "", obj_expr=None, timeout=600, heap_bytes=1 << 20,
                     fix_errno=False)


def boot32(vm, mode, link, minutes=40):
    """The boot steps in ``vm`` (``open_vm``), the clock set for the steady
    game of ``minutes`` (``long_game``): (the figures, 32-bit, harness taken
    out; the steps' live heaps, names and name sets, and the qstr pool table
    that a game run on in the same VM reads)."""
    actions, values = _scenario(mode, minutes)
    fig = {"mode": mode, "link": link}

    def qstrs():
        return qstr_figures(vm.exec("import micropython\nmicropython.qstr_info()"))[-1][1]

    def interned():
        out = vm.exec("import micropython\nmicropython.qstr_info(1)")
        return set(ln.strip()[2:-1] for ln in out.splitlines()
                   if ln.strip().startswith("Q(") and ln.strip().endswith(")"))
    live = {}
    names = {"vm_start": qstrs()}  # the runner's own names: a board's main.py's stand-in
    sets = {"vm_start": interned()}
    table = None
    for label, step in boot_steps(mode, link, actions, values):
        out = vm.exec(step)
        live[label] = vm.heap_live()
        names[label] = qstrs()
        sets[label] = interned()
        if label == "base":
            table = pool_table(qstr_figures(out))
    vm.exec("del _f, _c\n")
    fig.update(_shares(live))
    # the names the clock interns (its modules, the App built), without
    # the VM's stand-ins of the board's built-in modules and the harness's
    fw_names = names["vm_start"] + (names["firmware_modules"] - names["base"]) \
        + (names["booted"] - names["scenario_objects"])
    pools, n_pools = pool_bytes(table, fw_names)
    fig.update({"qstr_firmware": fw_names, "qstr_pools": n_pools,
                "qstr_pool_bytes": pools, "qstr_pool_table": table,
                "after_boot_no_pools": fig["after_boot"]})
    fig["after_boot"] += pools
    return fig, {"live": live, "names": names, "sets": sets, "table": table,
                 "fw_names": fw_names, "qstrs": qstrs, "interned": interned}


def boot_figures(mode, link):
    """``boot32``'s figures in a VM of their own (unixport.calibration)."""
    with open_vm() as vm:
        return boot32(vm, mode, link)[0]
