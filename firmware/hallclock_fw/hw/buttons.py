"""Debounced buttons (active low, pull-up), allocation-free.

A press counts once the contact has read "pressed" for ``debounce_ms`` without
a bounce in between; a long press is reported (as ``code | LONG``) when the
button has been held ``long_ms``.  A pin interrupt only raises a flag, so the
loop can sleep until a button moves.
"""
from micropython import const

from ..core.timing import ticks_add, ticks_diff
from ..events import LONG

DEBOUNCE_MS = const(12)
LONG_MS = const(1500)
_QUEUE = const(8)


class Buttons:
    def __init__(self, pins, now, debounce_ms=DEBOUNCE_MS, long_ms=LONG_MS):
        """``pins[i]`` is the Pin of button code i (None if the device lacks it)."""
        self.pins = pins
        n = len(pins)
        self.debounce_ms = debounce_ms
        self.long_ms = long_ms
        self.stable = bytearray(n)  # 1 = pressed
        self.raw = bytearray(n)
        self.long_sent = bytearray(n)
        self.since = [now] * n  # tick of the last raw change
        self.held = [now] * n  # tick the debounced press began
        self.queue = bytearray(_QUEUE)
        self.qtick = [now] * _QUEUE  # when each queued event happened
        self.when = now  # when the event ``poll`` last returned happened
        self.qhead = 0
        self.qlen = 0
        self.woken = False  # set by the pin interrupt
        self.dropped = 0
        for i in range(n):
            if pins[i] is not None and pins[i].value() == 0:
                self.raw[i] = 1
                self.stable[i] = 1  # held at power-on: no press, but long counts
                self.long_sent[i] = 1

    def arm(self):
        """Wake the loop on any edge (the handler only sets a flag)."""
        for pin in self.pins:
            if pin is not None:
                pin.irq(trigger=pin.IRQ_FALLING | pin.IRQ_RISING, handler=self._irq)

    def _irq(self, _pin):
        self.woken = True

    def held_now(self, code):
        return self.stable[code] == 1

    def _push(self, code, tick):
        if self.qlen >= _QUEUE:
            self.dropped += 1
            return
        slot = (self.qhead + self.qlen) % _QUEUE
        self.queue[slot] = code
        self.qtick[slot] = tick
        self.qlen += 1

    def scan(self, now):
        self.woken = False
        pins = self.pins
        for i in range(len(pins)):
            pin = pins[i]
            if pin is None:
                continue
            level = 1 if pin.value() == 0 else 0
            if level != self.raw[i]:
                self.raw[i] = level
                self.since[i] = now
            elif level != self.stable[i] and ticks_diff(now, self.since[i]) >= self.debounce_ms:
                self.stable[i] = level
                if level:
                    # the press happened when the contact closed for good
                    self.held[i] = self.since[i]
                    self.long_sent[i] = 0
                    self._push(i, self.since[i])
            if (self.stable[i] and not self.long_sent[i]
                    and ticks_diff(now, self.held[i]) >= self.long_ms):
                self.long_sent[i] = 1
                self._push(i | LONG, ticks_add(self.held[i], self.long_ms))

    def poll(self, now):
        """The next button event (a code, or code | LONG), or -1; ``when``
        then holds the tick at which it happened."""
        if self.qlen == 0:
            self.scan(now)
            if self.qlen == 0:
                return -1
        code = self.queue[self.qhead]
        self.when = self.qtick[self.qhead]
        self.qhead = (self.qhead + 1) % _QUEUE
        self.qlen -= 1
        return code

    def next_deadline(self, now):
        """When a scan is next needed (a bounce settling, a long press), or None."""
        due = None
        for i in range(len(self.pins)):
            if self.pins[i] is None:
                continue
            t = None
            if self.raw[i] != self.stable[i]:
                t = ticks_add(self.since[i], self.debounce_ms)
            elif self.stable[i] and not self.long_sent[i]:
                t = ticks_add(self.held[i], self.long_ms)
            if t is not None and (due is None or ticks_diff(t, due) < 0):
                due = t
        return due

