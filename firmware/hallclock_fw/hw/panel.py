"""The clock's front panel: buttons, buzzer, player LEDs, hall output and the
two displays, put together from drivers.  The app talks only to this."""
from ..display import render, render_playout, shown_s
from ..signals import (
    OUT_BOTH_LEDS, OUT_BUZZER, OUT_HALL, OUT_LED, PatternPlayer, signal_for)
from micropython import const

from ..core.timing import ticks_diff

_NEVER = const(-(1 << 29) + 1)  # nothing sent yet
_PLAYOUT = const(-(1 << 29) + 10)  # "shown" value of play-out step s: _PLAYOUT - s


class Panel:
    def __init__(self, buttons, buzzer, leds, hall, displays):
        """``leds`` and ``displays``: (A's, B's); any output may be None."""
        self.buttons = buttons
        self.buzzer = PatternPlayer(buzzer) if buzzer is not None else None
        self.leds = tuple(PatternPlayer(x) if x is not None else None for x in leds)
        self.hall = PatternPlayer(hall) if hall is not None else None
        self.displays = displays
        self.digits = (bytearray(4), bytearray(4))
        self.shown = [_NEVER, _NEVER]  # last second value sent to each display
        self.players = tuple(p for p in (self.buzzer, self.hall) + self.leds if p is not None)

    def signal(self, code, v0, v1, v2, now):
        sig = signal_for(code, v0, v1, v2)
        if sig is None:
            return
        pattern, outs = sig
        if outs & OUT_HALL and self.hall is not None:
            self.hall.play(pattern, now)
        if outs & OUT_BUZZER and self.buzzer is not None:
            self.buzzer.play(pattern, now)
        for side in (0, 1):
            led = self.leds[side]
            if led is not None and (outs & OUT_BOTH_LEDS or (outs & OUT_LED and v0 == side)):
                led.play(pattern, now)

    def update(self, now):
        for p in self.players:
            p.update(now)

    def next_deadline(self, now):
        due = None
        for p in self.players:
            t = p.next_deadline()
            if t is not None and (due is None or ticks_diff(t, due) < 0):
                due = t
        return due

    def show(self, side, ms):
        """Show ``ms`` on a player's display; refreshes only on change."""
        disp = self.displays[side]
        if disp is None:
            return
        s = shown_s(ms)
        if s == self.shown[side]:
            return
        self.shown[side] = s
        buf = self.digits[side]
        colon = render(ms, buf)
        disp.show(buf, colon)

    def show_playout(self, side, step):
        """Show the play-out step (ČAS 16.3) on a player's display."""
        disp = self.displays[side]
        if disp is None:
            return
        key = _PLAYOUT - step
        if key == self.shown[side]:
            return
        self.shown[side] = key
        buf = self.digits[side]
        render_playout(step, buf)
        disp.show(buf, False)


def build_panel(button_pins, buzzer_pwm, led_pins, hall_pin, displays, now):
    """The panel from pins (real or fake): the one place drivers are put together.
    ``button_pins`` in button-code order; any output may be None."""
    from .buttons import Buttons
    from .outputs import Buzzer, Lamp

    buttons = Buttons(button_pins, now)
    buzzer = Buzzer(buzzer_pwm) if buzzer_pwm is not None else None
    leds = tuple(Lamp(p) if p is not None else None for p in led_pins)
    hall = Lamp(hall_pin) if hall_pin is not None else None
    return Panel(buttons, buzzer, leds, hall, displays)
