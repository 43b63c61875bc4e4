"""Render the clock's drawings from the data in hardware/ (no other source):

    hardware/netlist.csv  every GPIO branch: signal, GPIO, what hangs on it
    hardware/power.csv    the power path (USB, charger, cell, boost, diodes)
    hardware/headers.csv  the header pins of the two common DevKit boards
    hardware/panel.csv    the holes in the enclosure

into docs/schematic.svg, docs/panel.svg and hardware/headers.md.  Run
``python hardware/render.py`` after changing one of them; the test
(tests/test_hardware.py) re-renders and fails when a committed file is stale,
and checks every pin against firmware/hallclock_fw/hw/board.py.  Deterministic:
the same data gives the same bytes.
"""
import csv
import os
import sys
from xml.sax.saxutils import escape

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUTPUTS = {"docs/schematic.svg": "schematic", "docs/panel.svg": "panel",
           "hardware/headers.md": "headers"}


def rows(name):
    with open(os.path.join(HERE, name), newline="") as f:
        return list(csv.DictReader(f))


class Svg:
    def __init__(self, w, h):
        self.w, self.h, self.out = w, h, []

    def add(self, s):
        self.out.append(s)

    def line(self, x1, y1, x2, y2, **kw):
        self.add(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"{_attrs(kw)}/>')

    def rect(self, x, y, w, h, **kw):
        self.add(f'<rect x="{x}" y="{y}" width="{w}" height="{h}"{_attrs(kw)}/>')

    def circle(self, x, y, r, **kw):
        self.add(f'<circle cx="{x}" cy="{y}" r="{r}"{_attrs(kw)}/>')

    def path(self, d, **kw):
        self.add(f'<path d="{d}"{_attrs(kw)}/>')

    def text(self, x, y, s, size=12, anchor="start", **kw):
        self.add(f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}"'
                 f'{_attrs(kw)}>{escape(s)}</text>')

    def done(self):
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.w}" height="{self.h}" '
                f'viewBox="0 0 {self.w} {self.h}" font-family="DejaVu Sans, Arial, sans-serif" '
                'stroke-linecap="round">\n'
                f'<rect x="0" y="0" width="{self.w}" height="{self.h}" fill="white"/>\n'
                '<g stroke="black" fill="none" stroke-width="1.5">\n')
        body = "\n".join(self.out)
        return head + body + "\n</g>\n</svg>\n"


def _attrs(kw):
    return "".join(f' {k.replace("_", "-")}="{v}"' for k, v in sorted(kw.items()))


T = dict(stroke="none", fill="black")  # text: filled, no outline


# -- symbols (x, y: where the wire comes in from the left) ---------------------------
def ground(s, x, y):
    s.line(x, y, x, y + 8)
    for i, half in enumerate((9, 6, 3)):
        s.line(x - half, y + 8 + 3 * i, x + half, y + 8 + 3 * i)


def rail(s, x, y, name):
    s.line(x, y, x, y - 8)
    s.line(x - 7, y - 8, x + 7, y - 8)
    s.text(x, y - 12, name, 10, "middle", **T)


def resistor(s, x, y, ref, value):
    s.line(x, y, x + 8, y)
    zig = " ".join(f"L{x + 8 + 4 * i + 2},{y + (-5 if i % 2 == 0 else 5)}" for i in range(8))
    s.path(f"M{x + 8},{y} {zig} L{x + 42},{y}")
    s.line(x + 42, y, x + 50, y)
    s.text(x + 25, y - 9, f"{ref} {value}", 10, "middle", **T)
    return x + 50


def switch(s, x, y, ref):
    s.line(x, y, x + 12, y)
    s.circle(x + 14, y, 2)
    s.circle(x + 38, y, 2)
    s.line(x + 15, y - 2, x + 37, y - 10)
    s.line(x + 26, y - 6, x + 26, y - 14)
    s.line(x + 20, y - 14, x + 32, y - 14)
    s.line(x + 40, y, x + 52, y)
    s.text(x + 26, y + 14, ref, 10, "middle", **T)
    return x + 52


def led(s, x, y, ref):
    s.line(x, y, x + 10, y)
    s.path(f"M{x + 10},{y - 7} L{x + 24},{y} L{x + 10},{y + 7} Z")
    s.line(x + 24, y - 7, x + 24, y + 7)
    for dx in (14, 20):
        s.line(x + dx, y - 9, x + dx + 6, y - 15)
    s.line(x + 24, y, x + 34, y)
    s.text(x + 17, y + 18, ref, 10, "middle", **T)
    return x + 34


def box(s, x, y, w, label, ref, h=24):
    s.line(x, y, x + 10, y)
    s.rect(x + 10, y - h // 2, w, h)
    s.text(x + 10 + w // 2, y + 4, f"{ref} {label}", 10, "middle", **T)
    return x + 10 + w


# -- the schematic ------------------------------------------------------------------------
ROW = 46
TOP = 100


def schematic():
    branches = rows("netlist.csv")
    power = rows("power.csv")
    n = len(branches)
    y0 = TOP + ROW * n + 50  # the power path
    notes_y = y0 + 30 + ((len(power) + 2) // 3) * 70 + 10
    height = notes_y + 14 * len(power) + 20
    s = Svg(1100, height)
    s.text(20, 28, "hallclock: one clock (ESP32 DevKit) - rendered from hardware/netlist.csv "
           "and hardware/power.csv by hardware/render.py", 14, **T)
    s.text(20, 48, "pins: firmware/hallclock_fw/hw/board.py (checked by tests/test_hardware.py); "
           "buttons switch to GND on the internal pull-ups", 11, **T)
    bx, bw = 40, 190
    s.rect(bx, TOP - 30, bw, ROW * n + 30, stroke_width="2")
    s.text(bx + bw // 2, TOP - 12, "U1 ESP32 DevKit", 13, "middle", **T)
    for i, b in enumerate(branches):
        y = TOP + 20 + ROW * i
        g = int(b["gpio"])
        s.add(f'<g data-signal="{b["signal"]}" data-gpio="{g}" data-refs="{b["refs"]}">')
        s.text(bx + bw - 8, y + 4, f"GPIO{g}", 12, "end", **T)
        x = bx + bw
        s.line(x, y, x + 40, y)
        s.text(x + 44, y + 4, b["signal"], 11, **T)
        x += 170
        s.line(x - 30, y, x, y)
        refs = b["refs"].split()
        kind = b["kind"]
        if kind == "button":
            x = switch(s, x, y, refs[0])
            s.line(x, y, x + 20, y)
            ground(s, x + 20, y)
        elif kind == "led":
            x = resistor(s, x, y, refs[0], "330 Ω")
            x = led(s, x, y, refs[1])
            ground(s, x, y)
        elif kind == "buzzer":
            x = resistor(s, x, y, refs[0], "1 kΩ")
            s.circle(x + 16, y, 14)  # NPN: base from the left, C up, E down
            s.line(x, y, x + 10, y)
            s.line(x + 10, y - 8, x + 10, y + 8)
            s.line(x + 10, y - 4, x + 22, y - 12)
            s.line(x + 10, y + 4, x + 22, y + 12)
            s.path(f"M{x + 17},{y + 11} L{x + 22},{y + 12} L{x + 20},{y + 7}")
            s.text(x + 34, y + 20, f"{refs[1]} PN2222A (E to GND)", 10, **T)
            ground(s, x + 22, y + 12)
            s.line(x + 22, y - 12, x + 60, y - 12)
            s.rect(x + 60, y - 22, 60, 20)
            s.text(x + 90, y - 8, refs[2] + " piezo", 10, "middle", **T)
            s.line(x + 120, y - 12, x + 140, y - 12)
            rail(s, x + 140, y - 12, "+5V")
            s.text(x + 150, y + 4, f"{refs[3]} 1 kΩ across {refs[2]}", 10, **T)
        elif kind == "relay":
            x = box(s, x, y, 230, "relay module IN (5 V coil)", refs[0])
            s.text(x + 8, y + 4, "VCC 5V, GND; COM/NO switch the bell circuit", 10, **T)
        elif kind == "display":
            x = box(s, x, y, 170, b["label"], refs[0])
            s.text(x + 8, y + 4, "TM1637 module, VCC 3V3 (not 5 V), GND", 10, **T)
        else:
            raise ValueError(f"netlist.csv: unknown kind {kind!r} for {b['signal']}")
        if kind in ("button", "led"):
            s.text(x + 34, y + 4, b["label"], 10, **T)
        s.add("</g>")
    # the power path, in the order of power.csv, three blocks to a line
    s.text(20, y0, "Power: holds a game through a power cut (docs/hardware.md, 'Power')", 13, **T)
    s.text(20, y0 + 16, "each block joins the nets it names (from → to); one name = one wire; "
           "GND common to all", 10, **T)
    for i, p in enumerate(power):
        col, line = i % 3, i // 3
        x, y = 20 + col * 360, y0 + 30 + line * 70 + 6
        s.add(f'<g data-power="{p["ref"]}">')
        s.rect(x, y, 300, 44)
        s.text(x + 8, y + 16, f'{p["ref"]} {p["block"]}', 11, **T)
        s.text(x + 8, y + 34, f'{p["from"] or "-"} → {p["to"]}', 10, **T)
        s.add("</g>")
    for j, p in enumerate(power):
        s.text(20, notes_y + 14 * j, f'{p["ref"]}: {p["note"]}', 10, **T)
    return s.done()


# -- the panel ------------------------------------------------------------------------------
def panel():
    holes = rows("panel.csv")
    faces = []
    for h in holes:
        if h["face"] not in faces:
            faces.append(h["face"])
    scale = 2.0  # px per mm
    sizes = {}
    for h in holes:
        w, d = float(h["face_w_mm"]), float(h["face_h_mm"])
        sizes[h["face"]] = (w, d)
    height = 60 + sum(max(sizes[f][1] * scale, 16 * sum(h["face"] == f for h in holes) + 10)
                      + 70 for f in faces)
    s = Svg(1000, int(height))
    s.text(20, 28, "hallclock: enclosure faces and holes, in mm from each face's top-left "
           "corner, seen from outside (hardware/panel.csv)", 14, **T)
    y = 60
    for f in faces:
        w, d = sizes[f]
        s.text(20, y + 12, f"{f}: {w:g} × {d:g} mm", 12, **T)
        ox, oy = 20, y + 20
        s.rect(ox, oy, w * scale, d * scale, stroke_width="2")
        listed = 0
        for h in (h for h in holes if h["face"] == f):
            cx, cy = ox + float(h["x_mm"]) * scale, oy + float(h["y_mm"]) * scale
            s.add(f'<g data-hole="{h["ref"]}">')
            half_h = float(h["h_mm"] or h["w_mm"]) * scale / 2
            if h["shape"] == "round":
                s.circle(f"{cx:g}", f"{cy:g}", f'{float(h["w_mm"]) * scale / 2:g}')
                size = f'⌀ {h["w_mm"]} mm'
            else:
                hw = float(h["w_mm"]) * scale
                s.rect(f"{cx - hw / 2:g}", f"{cy - half_h:g}", f"{hw:g}", f"{2 * half_h:g}")
                size = f'{h["w_mm"]} × {h["h_mm"]} mm'
            s.line(f"{cx - 4:g}", f"{cy:g}", f"{cx + 4:g}", f"{cy:g}", stroke_width="0.7")
            s.line(f"{cx:g}", f"{cy - 4:g}", f"{cx:g}", f"{cy + 4:g}", stroke_width="0.7")
            s.text(f"{cx:g}", f"{cy - half_h - 4:g}", h["ref"], 10, "middle", **T)
            s.text(ox + w * scale + 30, oy + 14 + 16 * listed,
                   f'{h["ref"]} {h["part"]}: {size}, centre at ({h["x_mm"]}, {h["y_mm"]})',
                   11, **T)
            listed += 1
            s.add("</g>")
        y = oy + max(d * scale, 16 * listed + 10) + 50
    return s.done()


# -- header maps ----------------------------------------------------------------------------
def headers():
    pins = rows("headers.csv")
    by_gpio = {}
    for b in rows("netlist.csv"):
        by_gpio[b["gpio"]] = b["signal"]
    boards = []
    for p in pins:
        if p["board"] not in boards:
            boards.append(p["board"])
    out = ["# Header maps (generated by hardware/render.py from hardware/headers.csv)", "",
           "Which header pin of each common DevKit carries each signal of",
           "`firmware/hallclock_fw/hw/board.py`. Pins are counted from the antenna end",
           "(pin 1) towards the USB socket, the board seen from the",
           "top with the antenna pointing up; the label is what is printed on the board.",
           "Check the print on your board: clones differ in print, not in GPIO numbers.",
           "Sources: Espressif's ESP32-DevKitC V4 user guide (headers J1 and J3) and the",
           "DOIT ESP32 DevKit V1 pinout (30 pins; no GPIO 6-11, which are the flash).", ""]
    out += ["| signal | GPIO | " + " | ".join(boards) + " |",
            "| --- | --- | " + " | ".join("---" for _ in boards) + " |"]
    for gpio, signal in sorted(by_gpio.items(), key=lambda kv: kv[1]):
        cells = []
        for b in boards:
            at = [p for p in pins if p["board"] == b and p["gpio"] == gpio]
            cells.append(", ".join(f'{p["header"]} pin {p["pin"]} ({p["label"]})' for p in at)
                         or "-")
        out.append(f"| {signal} | {gpio} | " + " | ".join(cells) + " |")
    for what, labels in (("3V3 (displays)", ("3V3",)), ("GND", ("GND",)),
                         ("5V / VIN", ("5V", "VIN"))):
        cells = []
        for b in boards:
            at = [p for p in pins if p["board"] == b and p["label"] in labels]
            cells.append(", ".join(f'{p["header"]} pin {p["pin"]}' for p in at) or "-")
        out.append(f"| {what} | - | " + " | ".join(cells) + " |")
    for b in boards:
        out += ["", f"## {b}: every pin", "", "| header | pin | label | GPIO | used for |",
                "| --- | --- | --- | --- | --- |"]
        for p in (p for p in pins if p["board"] == b):
            out.append(f'| {p["header"]} | {p["pin"]} | {p["label"]} | {p["gpio"] or "-"} | '
                       f'{by_gpio.get(p["gpio"], "")} |')
    return "\n".join(out) + "\n"


RENDER = {"schematic": schematic, "panel": panel, "headers": headers}


def render_all():
    return {path: RENDER[kind]() for path, kind in OUTPUTS.items()}


if __name__ == "__main__":
    for path, text in render_all().items():
        with open(os.path.join(ROOT, path), "w", encoding="utf-8") as f:
            f.write(text)
        print("wrote", path, file=sys.stderr)
