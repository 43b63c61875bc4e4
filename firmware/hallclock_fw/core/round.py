"""The round's hall signals for Scrabble (ČAS 4.1, 6.1, 16.3).

START gives the start gong and begins the basic playing time (``round_min``,
4.1); the ten-minute gong sounds ``round_warn_min`` before its end and the end
gong at its end (6.1), each logged with the move in progress.  Only the first
START of a session counts (one start signal per round): a START relayed twice
by the hall host, or pressed again by mistake, changes nothing; GONG gives a
manual gong at any time.

From the end gong on the play-out is counted (16.3), as ``playout`` events:

    (a) ``finish_round``  the round in progress is finished (from the end gong)
    (b) ``one_more_move`` each player plays one more normal move
    (c) ``last_move``     each player plays a last move without drawing
        ``over``          B has ended the last move: the game is over

A round of moves is A's move and B's reply (A's moves are odd, B's even), so
the round in progress ends with the next even-numbered move: with move 13 in
progress at the end gong, 14 finishes the round, 15-16 are (b), 17-18 (c).
If no move has started yet (move null), (b) begins with move 1.  The step
changes when the first move of the next step starts (``playout`` comes just
before that move's ``turn``) and ``over`` when the last move is pressed.

The end gong itself is the signal of step (a); (b), (c) and ``over`` have
their own blink patterns on both LEDs and the buzzer (signals.py).
"""
from micropython import const

from ..events import (
    EV_GONG, EV_PLAYOUT, GONG_END, GONG_MANUAL, GONG_START, GONG_TEN, NULL)
from .timing import ticks_add, ticks_diff

_MIN = const(60000)
STEP_FINISH = const(0)
STEP_ONE_MORE = const(1)
STEP_LAST = const(2)
STEP_OVER = const(3)


class Round:
    def __init__(self, settings, emit):
        self._emit = emit
        self.round_ms = settings["round_min"] * _MIN
        self.warn_ms = settings["round_warn_min"] * _MIN
        self.started = False
        self.ten_at = 0
        self.end_at = 0
        self.ten_due = False
        self.end_due = False
        self.step = NULL  # play-out step, NULL before the end gong
        self.round_last = 0  # last move of the round in progress at the end gong

    def start(self, now, move):
        if self.started:
            return  # one start signal per round; GONG gives extra gongs
        self.started = True
        self.end_at = ticks_add(now, self.round_ms)
        self.ten_at = ticks_add(self.end_at, -self.warn_ms)
        self.ten_due = self.warn_ms > 0
        self.end_due = True
        self._emit(EV_GONG, now, GONG_START, move, 0, 0)

    def manual(self, now, move):
        self._emit(EV_GONG, now, GONG_MANUAL, move, 0, 0)

    def left_ms(self, now):
        """Basic time left (negative after the end gong); the full time before START."""
        if not self.started:
            return self.round_ms
        return ticks_diff(self.end_at, now)

    def tick(self, now, move):
        if self.ten_due and ticks_diff(now, self.ten_at) >= 0:
            self.ten_due = False
            self._emit(EV_GONG, now, GONG_TEN, move, 0, 0)
        if self.end_due and ticks_diff(now, self.end_at) >= 0:
            self.end_due = False
            self._emit(EV_GONG, now, GONG_END, move, 0, 0)
            # 16.3: the move in progress is the one the players circle.
            m = move if move > 0 else 0
            self.round_last = m + (m & 1)
            self._set_step(now, STEP_FINISH, move)

    def next_deadline(self, now):
        if self.ten_due:
            return self.ten_at
        if self.end_due:
            return self.end_at
        return None

    def _set_step(self, now, step, move):
        if step != self.step:
            self.step = step
            self._emit(EV_PLAYOUT, now, step, move, 0, 0)

    def move_started(self, now, move):
        if self.step == NULL or self.step == STEP_OVER:
            return
        extra = move - self.round_last
        if extra <= 0:
            step = STEP_FINISH
        elif extra <= 2:
            step = STEP_ONE_MORE
        elif extra <= 4:
            step = STEP_LAST
        else:
            step = STEP_OVER
        self._set_step(now, step, move)

    def move_ended(self, now, move):
        if self.step != NULL and move >= self.round_last + 4:
            self._set_step(now, STEP_OVER, move)
