"""The self-test a freshly built clock runs when START is held at power-on.

1. both displays light every segment (88:88) for a second;
2. each output in turn, with its number on both displays: 1 the buzzer (three
   beeps), 2 player A's LED, 3 player B's LED, 4 the hall
   relay (one short click: 200 ms);
3. then every button press shows on both displays as ``N-CC``: N the button
   (1 A, 2 B, 3 PAUSE, 4 START, 5 GONG) and CC how often it was pressed; a long
   press shows ``N---``.  Each press beeps once, and A and B flash their LED.

A long press of START (after letting go of it once) leaves the self-test and the
clock starts normally.  ``report(text)``, if given, gets one line per step (the
device prints them on the USB console: ``make console``).
"""
from micropython import const

from ..core.timing import ticks_add, ticks_diff
from ..display import BLANK, MINUS
from ..events import BUTTON_NAMES, BTN_A, BTN_B, BTN_START, LONG

STEP_MS = const(1000)
P_BEEPS = (2000, 150, 100, 150, 100, 150)
P_LAMP = (1, 600)
P_HALL = (1, 200)
P_KEY = (2500, 40)
P_KEY_LONG = (2500, 300)
N_OUTPUTS = const(4)


class SelfTest:
    def __init__(self, panel, now, report=None):
        self.panel = panel
        self.report = report
        self.step_no = 0  # 0 = segment test, 1..4 outputs, 5 = buttons
        self.edge = ticks_add(now, STEP_MS)
        self.counts = bytearray(len(BUTTON_NAMES))
        self.digits = bytearray(4)
        self.done = False
        self.presses = 0
        self._show(8, 8, 8, 8, True)
        self._say("selftest: displays 88:88")

    def _say(self, text):
        if self.report is not None:
            self.report(text)

    def _show(self, d0, d1, d2, d3, colon=False):
        buf = self.digits
        buf[0] = d0
        buf[1] = d1
        buf[2] = d2
        buf[3] = d3
        for disp in self.panel.displays:
            if disp is not None:
                disp.show(buf, colon)
        self.panel.shown[0] = self.panel.shown[1] = None  # the app redraws after us

    def _output(self, n, now):
        panel = self.panel
        self._show(BLANK, BLANK, BLANK, n)
        player = None
        name = None
        if n == 1:
            player, name = panel.buzzer, "buzzer"
        elif n == 2:
            player, name = panel.leds[0], "LED A"
        elif n == 3:
            player, name = panel.leds[1], "LED B"
        elif n == 4:
            player, name = panel.hall, "hall relay"
        if player is None:
            self._say("selftest: %d %s: not fitted" % (n, name))
            return
        self._say("selftest: %d %s" % (n, name))
        if n == 1:
            player.play(P_BEEPS, now)
        elif n == 4:
            player.play(P_HALL, now)
        else:
            player.play(P_LAMP, now)

    def step(self, now):
        panel = self.panel
        if self.step_no <= N_OUTPUTS and ticks_diff(now, self.edge) >= 0:
            self.step_no += 1
            self.edge = ticks_add(self.edge, STEP_MS)
            if self.step_no <= N_OUTPUTS:
                self._output(self.step_no, now)
            else:
                self._show(MINUS, MINUS, MINUS, MINUS)
                self._say("selftest: press each button; hold START to leave")
        buttons = panel.buttons
        code = buttons.poll(now)
        while code != -1:
            self._button(code, now)
            code = buttons.poll(now)
        panel.update(now)

    def _button(self, code, now):
        panel = self.panel
        base = code & ~LONG
        if base >= len(BUTTON_NAMES):
            return
        self.presses += 1
        if code & LONG:
            self._show(base + 1, MINUS, MINUS, MINUS)
            self._say("selftest: button %s long" % BUTTON_NAMES[base])
            if panel.buzzer is not None:
                panel.buzzer.play(P_KEY_LONG, now)
            if base == BTN_START:
                self.done = True
                self._say("selftest: done")
            return
        c = self.counts[base] = (self.counts[base] + 1) % 100
        self._show(base + 1, MINUS, c // 10, c % 10)
        self._say("selftest: button %s (%d)" % (BUTTON_NAMES[base], c))
        if panel.buzzer is not None:
            panel.buzzer.play(P_KEY, now)
        if base == BTN_A or base == BTN_B:
            led = panel.leds[base]
            if led is not None:
                led.play(P_LAMP, now)

    def next_wake(self, now):
        panel = self.panel
        due = self.edge if self.step_no <= N_OUTPUTS else None
        for t in (panel.next_deadline(now), panel.buttons.next_deadline(now)):
            if t is not None and (due is None or ticks_diff(t, due) < 0):
                due = t
        if due is None:
            due = ticks_add(now, STEP_MS)
        return due


def run(hw, now):
    """At boot (hw/boot.py, START held at power-on): the self-test on the
    hardware object ``hw`` (hw/device.py) until a long press of START ends
    it; then the outputs finish what they play, and on to the clock."""
    st = SelfTest(hw.panel, now, hw.console)
    while not st.done:
        now = hw.ticks_ms()
        st.step(now)
        if not st.done:
            hw.wait(st.next_wake(now))
    hw.panel.update(hw.ticks_ms())
    return st
