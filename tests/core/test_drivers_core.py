"""The pure drivers — debounced buttons, the TM1637 driver, the pattern
player and the display digits — on fake pins.  MicroPython-compatible: these
run under CPython and inside the MicroPython VM (tests/test_drivers.py has
the CPython-only property tests)."""
from hallclock.vboard.vdev.fakes import FakePin
from hallclock_fw.core.timing import ticks_add, ticks_diff
from hallclock_fw.display import BLANK, MINUS, render, render_playout
from hallclock_fw.events import EV_WARN, LONG
from hallclock_fw.hw.buttons import Buttons
from hallclock_fw.hw.tm1637 import TM1637
from hallclock_fw.signals import PatternPlayer, signal_for

from .harness import WRAP_START


def press_events(edges, end_ms, long_ms=1500):
    """Edges [(ms, level)] on one button, scanned at every edge and at the
    debouncer's deadlines (as the event-driven loop does): [(code, ms)]."""
    pin = FakePin(1)
    b = Buttons([pin], WRAP_START, long_ms=long_ms)
    out = []
    ms = 0
    i = 0
    while ms <= end_ms:
        while i < len(edges) and edges[i][0] <= ms:
            pin.value(edges[i][1])
            i += 1
        now = ticks_add(WRAP_START, ms)
        code = b.poll(now)
        while code != -1:
            out.append((code, ticks_diff(b.when, WRAP_START)))
            code = b.poll(now)
        due = b.next_deadline(now)
        nxt = ms + ticks_diff(due, now) if due is not None else end_ms + 1
        if i < len(edges) and edges[i][0] < nxt:
            nxt = edges[i][0]
        ms = nxt if nxt > ms else ms + 1
    return out


def test_clean_press_counts_once_at_the_contact():
    assert press_events([(100, 0), (200, 1)], 1000) == [(0, 100)]


def test_bouncing_contact_counts_once_when_closed_for_good():
    edges = [(100, 0), (101, 1), (103, 0), (104, 1), (106, 0), (300, 1), (301, 0), (302, 1)]
    assert press_events(edges, 1000) == [(0, 106)]


def test_glitch_shorter_than_debounce_is_no_press():
    assert press_events([(100, 0), (105, 1)], 1000) == []


def test_long_press_once():
    assert press_events([(100, 0), (2000, 1)], 3000) == [(0, 100), (0 | LONG, 1600)]


def test_held_at_power_on_is_no_press():
    pin = FakePin(0)
    b = Buttons([pin], 0)
    for ms in range(0, 3000, 5):
        assert b.poll(ms) == -1


class Bus:
    def __init__(self):
        self.lines = [1, 1]  # clk, dio
        self.trace = [(1, 1)]

    def set(self, i, v):
        self.lines[i] = 1 if v else 0
        s = (self.lines[0], self.lines[1])
        if s != self.trace[-1]:
            self.trace.append(s)


class Line:
    def __init__(self, bus, i):
        self.bus = bus
        self.i = i

    def value(self, v=None):
        if v is None:
            return self.bus.lines[self.i]
        self.bus.set(self.i, v)
        return None


def transactions(trace):
    """Bytes between start and stop conditions, LSB first, 9th clock = ack."""
    out = []
    cur = None
    bits = []
    for k in range(1, len(trace)):
        c0, d0 = trace[k - 1]
        c1, d1 = trace[k]
        if c0 == 1 and c1 == 1 and d0 != d1:
            if d1 == 0:
                cur = []
                bits = []
            else:
                out.append(cur)
                cur = None
        elif c0 == 0 and c1 == 1:
            bits.append(d1)
            if len(bits) == 9:
                assert bits[8] == 1
                v = 0
                for j in range(8):
                    v |= bits[j] << j
                cur.append(v)
                bits = []
    return out


SEG = {0x3F: "0", 0x06: "1", 0x5B: "2", 0x4F: "3", 0x66: "4", 0x6D: "5", 0x7D: "6",
       0x07: "7", 0x7F: "8", 0x6F: "9", 0x40: "-", 0x00: " ", 0x73: "P"}


def shown(bus):
    ram = [0, 0, 0, 0]
    for tr in transactions(bus.trace):
        if tr[0] & 0xC0 == 0xC0:
            for j in range(1, len(tr)):
                ram[(tr[0] & 0x0F) + j - 1] = tr[j]
    text = SEG[ram[0]] + SEG[ram[1] & 0x7F] + (":" if ram[1] & 0x80 else " ")
    return text + SEG[ram[2]] + SEG[ram[3]]


def test_tm1637_shows_time_overtime_and_playout():
    bus = Bus()
    disp = TM1637(Line(bus, 0), Line(bus, 1))
    buf = bytearray(4)
    for ms, want in ((119000, " 1:59"), (9001, " 0:10"), (-65000, "-1:05"), (600000, "10:00")):
        colon = render(ms, buf)
        disp.show(buf, colon)
        assert shown(bus) == want, (ms, shown(bus))
    render_playout(1, buf)
    disp.show(buf, False)
    assert shown(bus) == "P-  2"
    disp.show(bytearray([8, MINUS, BLANK, 0]), False)
    assert shown(bus) == "8-  0"


class Out:
    def __init__(self):
        self.log = []

    def on(self, freq):
        self.log.append(("on", freq))

    def off(self):
        self.log.append(("off", 0))


def test_pattern_player_switches_at_the_pattern_edges():
    out = Out()
    p = PatternPlayer(out)
    p.play(signal_for(EV_WARN, 0, 1, 20)[0], WRAP_START)  # 2000 Hz: 120 on, 120 off, 120 on
    edges = []
    ms = 0
    while p.active():
        due = p.next_deadline()
        ms = ms + ticks_diff(due, ticks_add(WRAP_START, ms))
        n = len(out.log)
        p.update(ticks_add(WRAP_START, ms))
        if len(out.log) > n:
            edges.append((ms, out.log[-1][0]))
    assert out.log[0] == ("on", 2000)
    assert edges == [(120, "off"), (240, "on"), (360, "off")]
