"""The hardware drivers on fake pins: debounced buttons (bounce patterns), the
TM1637 driver against a decoder of its bit-banged protocol, the signal
patterns, the self-test, the device configuration and the device loop."""
import itertools

import pytest
from hypothesis import given, settings, strategies as st

from hallclock.vboard.vdev.fakes import FakeDisplay, FakeOutput, FakePin, FakeUART, SimClock
from hallclock.vboard.vdev.runner import BOUNCE
from hallclock_fw import signals
from hallclock_fw.core.timing import ticks_add, ticks_diff
from hallclock_fw.display import BLANK, MINUS, render
from hallclock_fw.events import (
    BTN_A, BTN_B, BTN_GONG, BTN_PAUSE, BTN_START, BUTTON_NAMES, EV_ANNOUNCE, EV_DUP_END,
    EV_DUP_START, EV_EXPIRED, EV_GONG, EV_PLAYOUT, EV_REFUSED, EV_WARN, GONG_END,
    GONG_MANUAL, GONG_START, GONG_TEN, LONG)
from hallclock_fw.hw import config, device
from hallclock_fw.hw.buttons import DEBOUNCE_MS, LONG_MS, Buttons
from hallclock_fw.hw.outputs import Buzzer
from hallclock_fw.hw.panel import build_panel
from hallclock_fw.hw.selftest import SelfTest
from hallclock_fw.hw.tm1637 import TM1637

START = (1 << 30) - 700  # ticks wrap during every test that runs long enough


# -- buttons ----------------------------------------------------------------
def drive(edges, end_ms, scan_every=None, n=1, long_ms=LONG_MS):
    """Apply ``edges`` [(ms, pin, level)] to fake pins; scan the debouncer the
    way the device loop does: at every edge (the pin interrupt) and at the
    debouncer's own deadlines, or every ``scan_every`` ms.  Returns the events
    [(code, ms when it happened)]."""
    pins = [FakePin(1) for _ in range(n)]
    b = Buttons(pins, START, long_ms=long_ms)
    b.arm()
    edges = sorted(edges)
    out = []
    ms = 0
    while ms <= end_ms:
        while edges and edges[0][0] <= ms:
            _t, pin, level = edges.pop(0)
            pins[pin].value(level)
        now = ticks_add(START, ms)
        code = b.poll(now)
        while code != -1:
            out.append((code, ticks_diff(b.when, START)))
            code = b.poll(now)
        if scan_every:
            nxt = ms + scan_every
        else:
            due = b.next_deadline(now)
            nxt = ms + ticks_diff(due, now) if due is not None else end_ms + 1
            if edges and edges[0][0] < nxt:
                nxt = edges[0][0]
        ms = max(nxt, ms + 1)
    return out


SCANS = [None, 1, 3, 5]


@pytest.mark.parametrize("scan", SCANS)
def test_clean_press_counts_once_at_the_moment_of_contact(scan):
    events = drive([(100, 0, 0), (200, 0, 1)], 1000, scan)
    assert [c for c, _ in events] == [BTN_A]
    # seen at the next scan after the contact closed (the device's loop wakes
    # within a few ms of the pin interrupt): never before, never a scan late
    assert 100 <= events[0][1] < 100 + (scan or 1)


@pytest.mark.parametrize("scan", SCANS)
def test_bouncing_press_counts_once_when_the_contact_closed_for_good(scan):
    edges = [(1000 + dt, 0, level) for dt, level in BOUNCE] + [(1100, 0, 1)]
    last_close = 1000 + max(dt for dt, level in BOUNCE if level == 0)
    events = drive(edges, 2000, scan)
    if scan in (None, 1):  # the loop sees every edge: exact time
        assert events == [(BTN_A, last_close)]
    else:  # a coarse scan sees the contact closed a little later, never earlier
        assert len(events) == 1 and events[0][0] == BTN_A
        assert last_close <= events[0][1] < last_close + scan


@pytest.mark.parametrize("scan", SCANS)
def test_bouncing_release_and_glitches_while_held_are_no_press(scan):
    edges = [(100, 0, 0),
             (150, 0, 1), (151, 0, 0),  # a 1 ms glitch while held
             (300, 0, 1), (301, 0, 0), (303, 0, 1), (304, 0, 0), (306, 0, 1)]  # release bounce
    assert [c for c, _ in drive(edges, 1000, scan)] == [BTN_A]


def test_noise_shorter_than_the_debounce_time_is_no_press():
    edges = [(100, 0, 0), (100 + DEBOUNCE_MS - 2, 0, 1)]
    assert drive(edges, 500) == []


def test_two_quick_real_presses_are_two():
    edges = [(100, 0, 0), (160, 0, 1), (200, 0, 0), (260, 0, 1)]
    assert drive(edges, 600) == [(BTN_A, 100), (BTN_A, 200)]


@pytest.mark.parametrize("scan", [None, 1, 5])
def test_long_press_recognised_once(scan):
    edges = [(100, 0, 0), (100 + LONG_MS + 700, 0, 1)]
    events = drive(edges, 4000, scan)
    assert [c for c, _t in events] == [BTN_A, BTN_A | LONG]
    assert events[1][1] == events[0][1] + LONG_MS
    # held just short of the long time: an ordinary press only
    assert [c for c, _ in drive([(100, 0, 0), (100 + LONG_MS - 50, 0, 1)], 4000, scan)] == [BTN_A]


def test_button_held_at_power_on_is_no_press_and_no_long_press():
    pins = [FakePin(0), FakePin(1)]
    b = Buttons(pins, START)
    assert b.held_now(0) and not b.held_now(1)
    for ms in range(0, 3 * LONG_MS, 7):
        assert b.poll(ticks_add(START, ms)) == -1


def test_each_button_reports_its_own_code():
    edges = []
    for i in range(len(BUTTON_NAMES)):
        edges += [(100 + 200 * i, i, 0), (150 + 200 * i, i, 1)]
    events = drive(edges, 2000, None, n=len(BUTTON_NAMES))
    assert events == [(i, 100 + 200 * i) for i in range(len(BUTTON_NAMES))]


def test_interrupt_only_raises_a_flag_and_a_scan_clears_it():
    pins = [FakePin(1)]
    b = Buttons(pins, START)
    b.arm()
    pins[0].value(0)
    assert b.woken and b.qlen == 0  # nothing decided in the handler
    b.poll(START)
    assert not b.woken


bounce_gaps = st.lists(st.integers(1, DEBOUNCE_MS - 1), min_size=0, max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(bounce_gaps, st.integers(DEBOUNCE_MS + 1, 400), bounce_gaps,
                          st.integers(DEBOUNCE_MS + 1, 300)), min_size=1, max_size=5),
       st.sampled_from(SCANS[:2]))
def test_any_bounce_pattern_gives_one_press_per_press(presses, scan):
    """Each press: contact bounces (gaps shorter than the debounce time), stays
    closed, bounces open, stays open.  No press is lost, none doubled, and
    each is timed at the moment the contact closed for good."""
    edges, want, t = [], [], 50

    def chatter(level, gaps):
        """The contact moves to ``level``, then toggles after each gap, and
        ends at ``level``; returns the time it got there for good."""
        nonlocal t
        edges.append((t, 0, level))
        last = t
        for gap in gaps + ([1] if len(gaps) % 2 else []):
            t += gap
            level ^= 1
            edges.append((t, 0, level))
            last = t
        return last

    for close_bounce, hold, open_bounce, rest in presses:
        want.append(chatter(0, close_bounce))
        t += hold
        chatter(1, open_bounce)
        t += rest
    events = drive(edges, t + 10, scan, long_ms=10 ** 6)
    assert [c for c, _ in events] == [BTN_A] * len(presses)
    assert [ms for _, ms in events] == want


# -- TM1637 -------------------------------------------------------------------
class Bus:
    """Two open-drain lines; records every change of (CLK, DIO)."""

    def __init__(self):
        self.clk = self.dio = 1
        self.trace = [(1, 1)]

    def set(self, which, v):
        setattr(self, which, 1 if v else 0)
        state = (self.clk, self.dio)
        if state != self.trace[-1]:
            self.trace.append(state)


class Line:
    def __init__(self, bus, which):
        self.bus, self.which = bus, which

    def value(self, v=None):
        if v is None:
            return getattr(self.bus, self.which)
        self.bus.set(self.which, v)


def decode(trace):
    """The TM1637's view of a trace: a list of transactions, each the list of
    bytes received between a start and a stop condition."""
    out, cur, bits = [], None, []
    for (c0, d0), (c1, d1) in zip(trace, trace[1:]):
        if c0 == 1 and c1 == 1 and d0 != d1:  # DIO moves while CLK is high
            if d1 == 0:  # start
                assert cur is None, "start inside a transaction"
                cur, bits = [], []
            else:  # stop
                assert cur is not None, "stop without start"
                # the clock rises once (DIO low) to set up the stop: not a byte
                assert len(bits) <= 1, "stop in the middle of a byte"
                out.append(cur)
                cur = None
        elif c0 == 0 and c1 == 1:  # rising clock: the chip samples DIO
            assert cur is not None, "clock outside a transaction"
            bits.append(d1)
            if len(bits) == 9:
                assert bits[8] == 1, "DIO not released for the acknowledge bit"
                cur.append(sum(b << i for i, b in enumerate(bits[:8])))
                bits = []
    assert cur is None, "transaction never stopped"
    return out


# segments by letter (a top, b upper right, ... g middle): independent of the driver
SEGS = {"0": "abcdef", "1": "bc", "2": "abdeg", "3": "abcdg", "4": "bcfg", "5": "acdfg",
        "6": "acdefg", "7": "abc", "8": "abcdefg", "9": "abcdfg", "-": "g", " ": ""}
BYTE_TO_CHAR = {sum(1 << "abcdefg".index(s) for s in segs): ch for ch, segs in SEGS.items()}


def shown(trace):
    """(text as 'dd:dd' / 'dd dd', brightness) the display ends up showing."""
    ram = [0, 0, 0, 0]
    on, bright = False, None
    mode_auto = None
    for tr in decode(trace):
        cmd = tr[0]
        if cmd & 0xC0 == 0x40:
            assert len(tr) == 1
            mode_auto = not cmd & 0x04
        elif cmd & 0xC0 == 0xC0:
            assert mode_auto, "address command without the data command first"
            addr = cmd & 0x0F
            for b in tr[1:]:
                ram[addr] = b
                addr += 1
        elif cmd & 0xC0 == 0x80:
            on, bright = bool(cmd & 0x08), cmd & 7
    assert on, "display never switched on"
    colon = ram[1] & 0x80
    chars = [BYTE_TO_CHAR[b & 0x7F] for b in ram]
    return chars[0] + chars[1] + (":" if colon else " ") + chars[2] + chars[3], bright


def make_display(**kw):
    bus = Bus()
    return TM1637(Line(bus, "clk"), Line(bus, "dio"), **kw), bus


@pytest.mark.parametrize("ms,text", [(119_000, " 1:59"), (600_000, "10:00"), (9_001, " 0:10"),
                                     (-65_000, "-1:05"), (0, " 0:00"), (7_200_000, " 2:00")])
def test_tm1637_shows_what_the_clock_renders(ms, text):
    disp, bus = make_display(brightness=5)
    buf = bytearray(4)
    colon = render(ms, buf)
    disp.show(buf, colon)
    assert shown(bus.trace) == (text, 5)


def test_tm1637_every_digit_and_blank_and_no_colon():
    disp, bus = make_display()
    for a, b, c, d in [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, MINUS, BLANK)]:
        bus.trace = [bus.trace[-1]]
        disp.show(bytearray([a, b, c, d]), False)
        want = "".join("0123456789- "[x] for x in (a, b))
        want += " " + "".join("0123456789- "[x] for x in (c, d))
        assert shown(bus.trace) == (want, 7)


def test_tm1637_brightness():
    disp, bus = make_display()
    disp.set_brightness(2)
    bus.trace = [bus.trace[-1]]
    disp.show(bytearray([1, 2, 3, 4]), True)
    assert shown(bus.trace) == ("12:34", 2)


def test_tm1637_decoder_rejects_a_wrong_bit_order():
    """The decoder is strict enough to catch a driver that sends MSB first."""
    class MsbFirst(TM1637):
        def _byte(self, b):
            rev = int("{:08b}".format(b)[::-1], 2)
            TM1637._byte(self, rev)

    bus = Bus()
    disp = MsbFirst(Line(bus, "clk"), Line(bus, "dio"))
    disp.show(bytearray([1, 2, 3, 4]), False)
    with pytest.raises((AssertionError, KeyError)):
        assert shown(bus.trace)[0] == "12 34"


# -- signal patterns ----------------------------------------------------------
def waveform(pattern):
    """What an output does for a pattern, as [(level/freq, ms)], via the real player."""
    clock = SimClock(START)
    out = FakeOutput(clock)
    out.record = True
    player = signals.PatternPlayer(Buzzer(out))
    player.play(pattern, START)
    t = START
    while player.active():
        t = player.next_deadline()
        clock.now = t
        player.update(t)
    ch = out.changes
    return [(f, ticks_diff(ch[i + 1][0], ch[i][0])) for i, (_t, f) in enumerate(ch[:-1])]


SCRABBLE = {
    "warn 30": (EV_WARN, 0, 3, 30), "warn 20": (EV_WARN, 0, 3, 20), "warn 10": (EV_WARN, 0, 3, 10),
    "expired": (EV_EXPIRED, 0, 3, 0),
    "gong start": (EV_GONG, GONG_START, -1, 0), "gong ten": (EV_GONG, GONG_TEN, -1, 0),
    "gong end": (EV_GONG, GONG_END, 7, 0), "gong manual": (EV_GONG, GONG_MANUAL, -1, 0),
    "playout": (EV_PLAYOUT, 1, 7, 0), "refused": (EV_REFUSED, 0, 1, 0),
}
DUPLICATE = {
    "announce 2 min": (EV_ANNOUNCE, 4, 120, 0), "announce 1 min": (EV_ANNOUNCE, 4, 60, 0),
    "announce 30 s": (EV_ANNOUNCE, 4, 30, 0),
    "dup start": (EV_DUP_START, 4, 180000, 0), "dup end": (EV_DUP_END, 4, 0, 0),
    "gong manual": (EV_GONG, GONG_MANUAL, -1, 0),
}


@pytest.mark.parametrize("group", [SCRABBLE, DUPLICATE], ids=["scrabble", "duplicate"])
def test_signals_heard_in_one_mode_have_distinct_rhythms(group):
    """A player cannot tell pitch apart, so each signal differs in rhythm
    (number and lengths of beeps), not only in frequency."""
    rhythms = {}
    for name, (code, v0, v1, v2) in group.items():
        sig = signals.signal_for(code, v0, v1, v2)
        assert sig is not None, name
        rhythm = tuple(ms for _f, ms in waveform(sig[0]))
        assert rhythm == tuple(sig[0][1:]), name  # the player plays the pattern as written
        rhythms.setdefault(rhythm, []).append(name)
    assert all(len(v) == 1 for v in rhythms.values()), rhythms


def test_the_final_signal_is_long_and_the_warnings_short():
    exp = sum(signals.signal_for(EV_EXPIRED, 0, 1, 0)[0][1::2])
    for left in (30, 20, 10):
        warn = signals.signal_for(EV_WARN, 0, 1, left)[0]
        assert max(warn[1::2]) * 4 <= exp


def test_warnings_reach_the_buzzer_and_the_led_of_that_player_only():
    clock = SimClock(START)
    outs = {k: FakeOutput(clock) for k in ("buzzer", "led_a", "led_b", "hall")}
    for o in outs.values():
        o.record = True
    panel = build_panel([FakePin(1) for _ in BUTTON_NAMES], outs["buzzer"],
                        (outs["led_a"], outs["led_b"]), outs["hall"], (None, None), START)
    panel.signal(EV_WARN, 1, 3, 20, START)
    assert outs["buzzer"].level and outs["led_b"].level
    assert not outs["led_a"].level and not outs["hall"].level
    panel.update(ticks_add(START, 5000))
    assert not any(o.level for o in outs.values())
    panel.signal(EV_GONG, GONG_END, 9, 0, START)
    assert all(o.level for o in outs.values())  # hall gong: everything sounds and flashes


# -- a panel on fake pins, for the self-test and the device loop --------------
class FakeHW:
    """The hardware object hw/device.py takes, on fake pins and simulated time."""

    def __init__(self, cfg_text=None, held=()):
        self.clock = SimClock(START)
        self.pins = [FakePin(0 if i in held else 1) for i in range(len(BUTTON_NAMES))]
        self.buzzer = FakeOutput(self.clock)
        self.leds = (FakeOutput(self.clock), FakeOutput(self.clock))
        self.hall = FakeOutput(self.clock)
        for o in (self.buzzer, self.hall) + self.leds:
            o.record = True
        self.displays = (FakeDisplay(), FakeDisplay())
        self.panel = build_panel(self.pins, self.buzzer, self.leds, self.hall,
                                 self.displays, START)
        self.panel.buttons.arm()
        self.uart = FakeUART()
        self.cfg_text = cfg_text
        self.default_clock = "clock-abc123"
        self.lines = []
        self.brightness = None
        self.edges = []  # [(ms, pin, level)]
        self.waits = 0
        self.ms = 0

    def ticks_ms(self):
        return self.clock.now

    def press(self, ms, code, hold=100):
        self.edges += [(ms, code, 0), (ms + hold, code, 1)]
        self.edges.sort()

    def wait(self, due):
        """Sleep until ``due`` or the next button edge, like the real loop."""
        self.waits += 1
        target = self.ms + max(0, ticks_diff(due, self.clock.now))
        if self.edges and self.edges[0][0] <= target:
            target = self.edges[0][0]
            self.ms = target
            self.clock.now = ticks_add(START, self.ms)
            while self.edges and self.edges[0][0] <= self.ms:
                _t, pin, level = self.edges.pop(0)
                self.pins[pin].value(level)
            return
        self.ms = target
        self.clock.now = ticks_add(START, self.ms)

    def read_config(self):
        return self.cfg_text

    def session_id(self):
        return "0badcafe"

    def console(self, text):
        self.lines.append(text)

    def set_brightness(self, level):
        self.brightness = level


def run_until(hw, step, wake, done, limit_ms):
    while not done() and hw.ms < limit_ms:
        now = hw.ticks_ms()
        step(now)
        if not done():
            hw.wait(wake(now))


def test_selftest_lights_each_output_then_shows_each_button():
    hw = FakeHW(held=(BTN_START,))
    assert hw.panel.buttons.held_now(BTN_START)
    seen = []
    st_ = SelfTest(hw.panel, START, hw.console)
    seen.append(hw.displays[0].text)
    hw.edges.append((300, BTN_START, 1))  # let go of START
    run_until(hw, st_.step, st_.next_wake, lambda: st_.step_no > 4, 10_000)
    assert seen == ["88:88"]
    # each output on once, in order: buzzer, LED A, LED B, hall relay
    firsts = [(o.changes[0][0], name) for name, o in
              (("buzzer", hw.buzzer), ("led A", hw.leds[0]), ("led B", hw.leds[1]),
               ("hall", hw.hall))]
    assert [n for _t, n in sorted(firsts, key=lambda x: ticks_diff(x[0], START))] == \
        ["buzzer", "led A", "led B", "hall"]
    assert sum(1 for _t, f in hw.hall.changes if f) == 1
    assert hw.displays[0].text == "-- --" == hw.displays[1].text
    # now each button
    t = hw.ms + 100
    expect = []
    for code in (BTN_A, BTN_B, BTN_PAUSE, BTN_START, BTN_GONG, BTN_A):
        hw.press(t, code)
        t += 400
        n = 2 if (code == BTN_A and expect) else 1
        expect.append("%d-0%d" % (code + 1, n))
    got = []
    while hw.edges:
        now = hw.ticks_ms()
        st_.step(now)
        if hw.displays[0].text not in got[-1:]:
            got.append(hw.displays[0].text)
        hw.wait(st_.next_wake(now))
    for _ in range(20):
        now = hw.ticks_ms()
        st_.step(now)
        if hw.displays[0].text not in got[-1:]:
            got.append(hw.displays[0].text)
        hw.wait(st_.next_wake(now))
    assert [g.replace(" ", "") for g in got if g != "-- --"] == expect
    assert hw.displays[1].text == hw.displays[0].text
    # a long press of GONG shows N---; a long press of START leaves
    hw.press(hw.ms + 50, BTN_GONG, hold=LONG_MS + 200)
    run_until(hw, st_.step, st_.next_wake, lambda: "5---" in hw.displays[0].text.replace(" ", ""),
              hw.ms + 5000)
    assert hw.displays[0].text.replace(" ", "") == "5---" and not st_.done
    hw.press(hw.ms + 500, BTN_START, hold=LONG_MS + 200)
    run_until(hw, st_.step, st_.next_wake, lambda: st_.done, hw.ms + 5000)
    assert st_.done
    assert any("button GONG long" in line for line in hw.lines)


def play_device(hw, until_ms):
    app = device.start(hw)
    while hw.ms < until_ms:
        device.loop(hw, app, passes=1)
    return app


def test_device_loop_runs_the_clock_event_driven():
    """main.py's program on fake hardware: START, then B starts A's move; the
    warnings sound at 30/20/10 s left, and the loop sleeps between events."""
    hw = FakeHW("clock = table-7\nmove_s = 60\n")
    hw.press(1000, BTN_START)
    hw.press(2000, BTN_B)
    app = play_device(hw, 2000 + 60_000 + 3000)
    assert app.link.clock == "table-7" and app.settings["move_s"] == 60
    assert hw.brightness == config._DEFAULT_BRIGHTNESS  # the file gives none: the default
    starts = [ticks_diff(t, START) for t, f in hw.leds[0].changes if f]
    starts = [t for t in starts if t > 10_000]  # after the start gong's flashes
    # B's press at 2000 starts A's 60 s: warnings at 30, 40, 50 s in, expiry at 60
    assert [t for i, t in enumerate(starts) if i == 0 or t - starts[i - 1] > 1000] == [2000 + 30_000, 2000 + 40_000, 2000 + 50_000, 2000 + 60_000]
    assert not [1 for t, f in hw.leds[1].changes if f and ticks_diff(t, START) > 10_000]
    # event-driven: a pass per display second and signal edge, not a busy loop
    assert hw.waits < 400


def test_device_holding_start_at_power_on_runs_the_selftest_first():
    hw = FakeHW(held=(BTN_START,))
    hw.edges.append((200, BTN_START, 1))
    hw.press(6000, BTN_START, hold=LONG_MS + 100)
    hw.press(9000, BTN_START)  # the clock runs after the self-test: START starts the round
    app = play_device(hw, 10_000)
    assert any("selftest: done" in line for line in hw.lines)
    assert app.core.__class__.__name__ == "ScrabbleClock"
    assert hw.hall.changes and [1 for _t, f in hw.hall.changes if f]


def test_device_holding_pause_at_power_on_runs_no_clock_and_leaves_the_console():
    """PAUSE held at power-on (docs/hardware.md "The console"): no clock, no
    session (nothing on the link, hallclock.cfg not read), the console's
    Ctrl-C left on for the REPL, one line for the person at the console."""
    hw = FakeHW("mode = no-such-mode\n", held=(BTN_PAUSE,))
    kbd = []
    hw.uart.kbd_intr = kbd.append
    hw.read_config = None  # (a call would raise: the file is not read)
    assert device.start(hw) is None
    device.run(hw)  # returns at once: main.py goes back to the REPL
    assert hw.lines == ["hallclock: PAUSE held at power-on: the console is left to the REPL"] * 2
    assert kbd == [] and hw.uart.take() == b""


def test_device_with_a_bad_config_runs_on_defaults_and_says_so():
    hw = FakeHW("mode = scrabble\nmove_s = soon\n")
    app = play_device(hw, 500)
    assert app.settings["move_s"] == 120
    assert hw.lines and "hallclock.cfg:2" in hw.lines[0] and "move_s" in hw.lines[0]
    refused = signals.signal_for(EV_REFUSED, 0, 0, 0)[0]
    assert hw.buzzer.changes[0] == (START, refused[0])


# -- configuration -------------------------------------------------------------
def test_config_defaults_without_a_file():
    cfg = config.parse(None, "clock-1")
    assert (cfg.clock, cfg.mode, cfg.error) == ("clock-1", "scrabble", None)
    assert cfg.settings["move_s"] == 120


def test_config_reads_mode_settings_and_name():
    cfg = config.parse("# club clock\nclock = hall-3\nmode = duplicate  # hall\n"
                       "move_s = 200\nbrightness = 3\n", "x")
    assert cfg.error is None
    assert (cfg.clock, cfg.mode, cfg.brightness, cfg.settings["move_s"]) == \
        ("hall-3", "duplicate", 3, 200)


@pytest.mark.parametrize("text,line,word", [
    ("mode = chess\n", 1, "chess"),
    ("\nclock = table 7\n", 2, "clock"),
    ("mode = scrabble\nwarn_s = 30,200\n", 2, "warn_s"),
    ("brightness = 9\n", 1, "brightness"),
    ("just words\n", 1, "KEY"),
    ("colour = red\n", None, "colour"),
])
def test_config_errors_name_the_line(text, line, word):
    cfg = config.parse(text, "clock-1")
    assert cfg.error is not None and word in cfg.error
    if line is not None:
        assert cfg.error.startswith("hallclock.cfg:%d:" % line)
    assert cfg.clock == "clock-1" and cfg.settings == config.Config("x").settings
