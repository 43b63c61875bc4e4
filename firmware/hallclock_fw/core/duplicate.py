"""The duplicate ("belgijka") hall countdown (Polish rules II.3, II.13).

All players hold the same tiles, so there is one clock for the whole hall.
Right after announcing the tiles the referee presses START (II.13): the next
move's countdown (``move_s``, default 3 minutes) begins (``dup_start``, moves
numbered from 1).  The hall is told the time at each ``announce_s`` left
(II.3: every minute, and when the last 30 seconds begin), and at 0 the final
signal sounds (``dup_end``): no card may be changed after it (II.5, II.7).

PAUSE stops the countdown and a second PAUSE starts it again with the time
that was left (a dispute must not cost the hall its time); announcements
already given are not repeated.  START while a countdown runs or stands is
ignored: one press, one move.  GONG gives a manual gong.  There are no player
buttons: the ``player`` of ``pause``/``resume`` is null.

Between moves the displays show 0:00 (time is up, cards down), before the
first move the full countdown.  Time enters as integer ticks; deadlines are
absolute ticks made with ``ticks_add``.
"""
from micropython import const

from ..events import (
    BTN_GONG, BTN_PAUSE, BTN_START, EV_ANNOUNCE, EV_DUP_END, EV_DUP_START,
    EV_GONG, EV_PAUSE, EV_RESUME, GONG_MANUAL, NULL)
from .timing import ticks_add, ticks_diff

_IDLE = const(0)  # before the first START
_RUNNING = const(1)
_PAUSED = const(2)
_DONE = const(3)  # the move's time is up; waiting for the next START
SNAPSHOT = const(3)  # values of a snapshot: (move, left_ms, paused)


class DuplicateTimer:
    """The referee's countdown.  ``emit(code, now, v0, v1, v2, v3)`` receives
    events; the interface is that of ``core.scrabble.ScrabbleClock``."""

    def __init__(self, settings, emit):
        self._emit = emit
        self.limit_ms = settings["move_s"] * 1000
        self.announce_ms = tuple(s * 1000 for s in settings["announce_s"])  # descending
        self.state = _IDLE
        self.player = NULL  # no player buttons in duplicate
        self.move = 0  # the move whose countdown runs or ran last
        self.deadline = 0
        self.next_ann = 0  # index into announce_ms of the next announcement due
        self.paused_left = 0
        self.restored = False
        self.round = None  # no round gongs in duplicate (the app logs the round)

    # -- inputs ---------------------------------------------------------
    def button(self, code, now):
        if code == BTN_START:
            if self.state == _IDLE or self.state == _DONE:
                self.move += 1
                self.deadline = ticks_add(now, self.limit_ms)
                self.next_ann = 0
                self.state = _RUNNING
                self._emit(EV_DUP_START, now, self.move, self.limit_ms, 0, 0)
        elif code == BTN_PAUSE:
            if self.state == _RUNNING:
                # the loop reads buttons before it ticks: a pause on the final
                # signal's ms comes too late (II.5), the signal sounds first
                self.tick(now)
            if self.state == _RUNNING:
                self.paused_left = ticks_diff(self.deadline, now)
                self.state = _PAUSED
                self._emit(EV_PAUSE, now, NULL, self.move, 0, 0)
            elif self.state == _PAUSED:
                self.deadline = ticks_add(now, self.paused_left)
                self.state = _RUNNING
                self._emit(EV_RESUME, now, NULL, self.move, self.paused_left, 0)
        elif code == BTN_GONG:
            self._emit(EV_GONG, now, GONG_MANUAL, self.move if self.move else NULL, 0, 0)
        # A, B and long presses: nothing (the hall has no player buttons)

    # -- restore (the core interface of modes.py) ---------------------------
    def fresh(self):
        return self.state == _IDLE and not self.restored

    def over(self):
        """Duplicate has no end the clock knows of (I.7): between moves the
        hall's game still runs."""
        return False

    def snapshot(self, now, hall_now=None):
        """(move, left_ms, paused): the move whose countdown runs, stands or
        ran last, and what is left of it (0 once its time is up)."""
        return (self.move, self.left_ms(now), 1 if self.state == _PAUSED else 0)

    def restore(self, values, now):
        """The countdown of the old session's move goes on with the time it
        had left (announcements already past are not repeated); a move whose
        time was up waits for the next START.  Only on a fresh timer."""
        if len(values) != SNAPSHOT or not self.fresh():
            return False
        move, left, paused = values
        if move < 1:
            return False
        if left > self.limit_ms:
            left = self.limit_ms
        self.restored = True
        self.move = move
        if left <= 0:
            self.state = _DONE
            self._emit(EV_RESUME, now, NULL, move, 0, 0)
            return True
        ann = self.announce_ms
        i = 0
        while i < len(ann) and ann[i] >= left:
            i += 1
        self.next_ann = i
        self.paused_left = left
        self.state = _PAUSED
        self.button(BTN_PAUSE, now)  # goes on as after a pause: logs ``resume``
        if paused:
            self.button(BTN_PAUSE, now)
        return True

    # -- time -----------------------------------------------------------
    def tick(self, now):
        """Emit every event due at ``now``.  Allocates nothing."""
        if self.state != _RUNNING:
            return
        ann = self.announce_ms
        while self.next_ann < len(ann):
            left = ann[self.next_ann]
            if ticks_diff(now, ticks_add(self.deadline, -left)) < 0:
                break
            self.next_ann += 1
            self._emit(EV_ANNOUNCE, now, self.move, left // 1000, 0, 0)
        if ticks_diff(now, self.deadline) >= 0:
            self.state = _DONE
            self._emit(EV_DUP_END, now, self.move, 0, 0, 0)

    def next_deadline(self, now):
        if self.state != _RUNNING:
            return None
        if self.next_ann < len(self.announce_ms):
            return ticks_add(self.deadline, -self.announce_ms[self.next_ann])
        return self.deadline

    # -- display --------------------------------------------------------
    def left_ms(self, now):
        """Ms of the countdown left: running, as it stood when paused, the full
        time before the first move, 0 once a move's time is up."""
        if self.state == _RUNNING:
            left = ticks_diff(self.deadline, now)
            return left if left > 0 else 0
        if self.state == _PAUSED:
            return self.paused_left
        if self.state == _DONE:
            return 0
        return self.limit_ms

    def refresh(self, panel, now):
        """The countdown on both displays (the hall reads either).  Allocates
        nothing."""
        left = self.left_ms(now)
        panel.show(0, left)
        panel.show(1, left)

    def running(self):
        return self.state == _RUNNING

    def paused(self):
        return self.state == _PAUSED

    def overtime(self):
        return False
