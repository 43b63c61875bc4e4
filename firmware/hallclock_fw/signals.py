"""What each event sounds and shows: pattern data, and a pattern player.

A pattern is a tuple ``(freq_hz, on_ms, off_ms, on_ms, ...)``: the output is on
for ``on_ms``, off for ``off_ms``, and so on.  Outputs: the table buzzer, the
LED of the player concerned (ČAS 16.8: acoustic *and* optical signals), and
the hall gong output (relay / loud buzzer).  Every pattern is distinct, so a
player can tell 30 from 20 from 10 seconds without looking.
"""
from micropython import const

from .core.timing import ticks_add, ticks_diff
from .events import (
    EV_ANNOUNCE, EV_BREAK, EV_BREAK_END, EV_DUP_END, EV_DUP_START, EV_EXPIRED,
    EV_GONG, EV_PLAYOUT, EV_REFUSED, EV_WARN, GONG_END, GONG_MANUAL, GONG_START,
    GONG_TEN)

OUT_BUZZER = const(1)
OUT_LED = const(2)  # the LED of the player named by the event
OUT_HALL = const(4)
OUT_BOTH_LEDS = const(8)

P_WARN_30 = (2000, 120)
P_WARN_20 = (2000, 120, 120, 120)
P_WARN_10 = (2000, 120, 120, 120, 120, 120)
P_EXPIRED = (2500, 2000)  # the long final signal (ČAS 16.8, 5.1.4)
P_GONG_START = (800, 700, 300, 700, 300, 700)
P_GONG_TEN = (800, 700, 300, 700)
P_GONG_END = (800, 2500)
P_GONG_MANUAL = (800, 1000)
P_ANNOUNCE_1 = (1500, 400)  # one per minute left; the last 30 s get three short
P_ANNOUNCE_2 = (1500, 400, 200, 400)
P_ANNOUNCE_30 = (1500, 150, 100, 150, 100, 150)
P_DUP_START = (1500, 80)
P_DUP_END = (1500, 2000)
# ČAS 16.3 play-out steps on both LEDs and the buzzer: (a) finish_round is
# marked by the end gong itself (a pattern here would cut the gong short);
# (b) one_more_move two blinks, (c) last_move three, over one long.
P_PLAYOUT_ONE_MORE = (1000, 250, 250, 250)
P_PLAYOUT_LAST = (1000, 250, 250, 250, 250, 250)
P_PLAYOUT_OVER = (1000, 1500)
P_BREAK = (1200, 300)
P_BREAK_END = (1200, 300, 150, 300, 150, 900)
P_REFUSED = (400, 80, 80, 80, 80, 80, 80, 80)

_GONGS = {GONG_START: P_GONG_START, GONG_TEN: P_GONG_TEN, GONG_END: P_GONG_END,
          GONG_MANUAL: P_GONG_MANUAL}


def signal_for(code, v0, v1, v2):
    """(pattern, outputs) for an event, or None if the event is silent."""
    if code == EV_WARN:
        if v2 >= 30:
            return P_WARN_30, OUT_BUZZER | OUT_LED
        if v2 >= 20:
            return P_WARN_20, OUT_BUZZER | OUT_LED
        return P_WARN_10, OUT_BUZZER | OUT_LED
    if code == EV_EXPIRED:
        return P_EXPIRED, OUT_BUZZER | OUT_LED
    if code == EV_GONG:
        return _GONGS.get(v0, P_GONG_MANUAL), OUT_HALL | OUT_BUZZER | OUT_BOTH_LEDS
    if code == EV_ANNOUNCE:
        if v1 >= 120:
            return P_ANNOUNCE_2, OUT_HALL | OUT_BUZZER
        if v1 >= 60:
            return P_ANNOUNCE_1, OUT_HALL | OUT_BUZZER
        return P_ANNOUNCE_30, OUT_HALL | OUT_BUZZER
    if code == EV_DUP_START:
        return P_DUP_START, OUT_HALL | OUT_BUZZER
    if code == EV_DUP_END:
        return P_DUP_END, OUT_HALL | OUT_BUZZER
    if code == EV_PLAYOUT:
        if v0 == 1:
            return P_PLAYOUT_ONE_MORE, OUT_BUZZER | OUT_BOTH_LEDS
        if v0 == 2:
            return P_PLAYOUT_LAST, OUT_BUZZER | OUT_BOTH_LEDS
        if v0 == 3:
            return P_PLAYOUT_OVER, OUT_BUZZER | OUT_BOTH_LEDS
        return None  # finish_round: the end gong is its signal
    if code == EV_BREAK:
        return P_BREAK, OUT_BUZZER | OUT_LED
    if code == EV_BREAK_END:
        return P_BREAK_END, OUT_BUZZER | OUT_LED
    if code == EV_REFUSED:
        return P_REFUSED, OUT_BUZZER | OUT_LED
    return None


class PatternPlayer:
    """Plays patterns on one output: anything with ``on(freq)`` and ``off()``.
    ``update(now)`` switches only at segment edges and allocates nothing."""

    def __init__(self, output):
        self.out = output
        self.pattern = None
        self.index = 0  # segment in progress (1 = first on)
        self.edge = 0  # tick at which the segment ends
        self.plays = 0  # patterns started (tests and the self-test read it)

    def play(self, pattern, now):
        self.pattern = pattern
        self.plays += 1
        self.index = 1
        self.edge = ticks_add(now, pattern[1])
        self.out.on(pattern[0])

    def active(self):
        return self.pattern is not None

    def update(self, now):
        pattern = self.pattern
        if pattern is None:
            return
        while ticks_diff(now, self.edge) >= 0:
            self.index += 1
            if self.index >= len(pattern):
                self.pattern = None
                self.out.off()
                return
            self.edge = ticks_add(self.edge, pattern[self.index])
            if self.index & 1:
                self.out.on(pattern[0])
            else:
                self.out.off()

    def next_deadline(self):
        return self.edge if self.pattern is not None else None
