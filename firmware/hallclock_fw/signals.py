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

# The patterns are private consts (``_P_X = const((...))``): no interned name
# and no module global on the board, only the tuple where it is used
# (docs/micropython.md "The heap model"); signal_for() is how others get them.
OUT_BUZZER = const(1)
OUT_LED = const(2)  # the LED of the player named by the event
OUT_HALL = const(4)
OUT_BOTH_LEDS = const(8)

_P_WARN_30 = const((2000, 120))
_P_WARN_20 = const((2000, 120, 120, 120))
_P_WARN_10 = const((2000, 120, 120, 120, 120, 120))
_P_EXPIRED = const((2500, 2000))  # the long final signal (ČAS 16.8, 5.1.4)
_P_GONG_START = const((800, 700, 300, 700, 300, 700))
_P_GONG_TEN = const((800, 700, 300, 700))
_P_GONG_END = const((800, 2500))
_P_GONG_MANUAL = const((800, 1000))
_P_ANNOUNCE_1 = const((1500, 400))  # one per minute left; the last 30 s get three short
_P_ANNOUNCE_2 = const((1500, 400, 200, 400))
_P_ANNOUNCE_30 = const((1500, 150, 100, 150, 100, 150))
_P_DUP_START = const((1500, 80))
_P_DUP_END = const((1500, 2000))
# ČAS 16.3 play-out steps on both LEDs and the buzzer: (a) finish_round is
# marked by the end gong itself (a pattern here would cut the gong short);
# (b) one_more_move two blinks, (c) last_move three, over one long.
_P_PLAYOUT_ONE_MORE = const((1000, 250, 250, 250))
_P_PLAYOUT_LAST = const((1000, 250, 250, 250, 250, 250))
_P_PLAYOUT_OVER = const((1000, 1500))
_P_BREAK = const((1200, 300))
_P_BREAK_END = const((1200, 300, 150, 300, 150, 900))
_P_REFUSED = const((400, 80, 80, 80, 80, 80, 80, 80))



def signal_for(code, v0, v1, v2):
    """(pattern, outputs) for an event, or None if the event is silent."""
    if code == EV_WARN:
        if v2 >= 30:
            return _P_WARN_30, OUT_BUZZER | OUT_LED
        if v2 >= 20:
            return _P_WARN_20, OUT_BUZZER | OUT_LED
        return _P_WARN_10, OUT_BUZZER | OUT_LED
    if code == EV_EXPIRED:
        return _P_EXPIRED, OUT_BUZZER | OUT_LED
    if code == EV_GONG:
        if v0 == GONG_START:
            p = _P_GONG_START
        elif v0 == GONG_TEN:
            p = _P_GONG_TEN
        elif v0 == GONG_END:
            p = _P_GONG_END
        else:
            p = _P_GONG_MANUAL
        return p, OUT_HALL | OUT_BUZZER | OUT_BOTH_LEDS
    if code == EV_ANNOUNCE:
        if v1 >= 120:
            return _P_ANNOUNCE_2, OUT_HALL | OUT_BUZZER
        if v1 >= 60:
            return _P_ANNOUNCE_1, OUT_HALL | OUT_BUZZER
        return _P_ANNOUNCE_30, OUT_HALL | OUT_BUZZER
    if code == EV_DUP_START:
        return _P_DUP_START, OUT_HALL | OUT_BUZZER
    if code == EV_DUP_END:
        return _P_DUP_END, OUT_HALL | OUT_BUZZER
    if code == EV_PLAYOUT:
        if v0 == 1:
            return _P_PLAYOUT_ONE_MORE, OUT_BUZZER | OUT_BOTH_LEDS
        if v0 == 2:
            return _P_PLAYOUT_LAST, OUT_BUZZER | OUT_BOTH_LEDS
        if v0 == 3:
            return _P_PLAYOUT_OVER, OUT_BUZZER | OUT_BOTH_LEDS
        return None  # finish_round: the end gong is its signal
    if code == EV_BREAK:
        return _P_BREAK, OUT_BUZZER | OUT_LED
    if code == EV_BREAK_END:
        return _P_BREAK_END, OUT_BUZZER | OUT_LED
    if code == EV_REFUSED:
        return _P_REFUSED, OUT_BUZZER | OUT_LED
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
