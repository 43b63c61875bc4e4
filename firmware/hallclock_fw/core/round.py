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

A clock that learns of the round late (the host's round frame, ``join``,
after a reboot or a reconnect; or a restore after a power loss) places the
round's START ``elapsed_ms`` in the past: the gongs still ahead sound at
START + 30 and START + 40 min as for every other table, the gongs already
past are not given again (no start gong either), and a clock that joins after
the end gong counts the play-out from the moment it joins, with the move in
progress then (the players circle that number, 16.3).

A restore (the game sent back after a power loss) brings the round of the old
session, and it wins over a round begun since the reboot (a START pressed, or
a round frame taken, before the restore came): ``give_way``.
"""
from micropython import const

from ..events import (
    EV_GONG, EV_PLAYOUT, EV_ROUND, GONG_END, GONG_MANUAL, GONG_START, GONG_TEN, NULL)
from .timing import ticks_add, ticks_diff

_MIN = const(60000)
_MAX_ELAPSED = const(1 << 28)  # a start further back than this is far past any end
_STEP_FINISH = const(0)
_STEP_ONE_MORE = const(1)
_STEP_LAST = const(2)
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
        self.number = 0  # the round's number, when the host told it (0: unknown)

    def start(self, now, move):
        if self.started:
            return  # one start signal per round; GONG gives extra gongs
        self._begin(now, 0)
        self._emit(EV_GONG, now, GONG_START, move, 0, 0)

    def _begin(self, now, elapsed):
        """The round's START was ``elapsed`` ms before ``now``: the gongs
        still ahead are due, those already past are not."""
        if elapsed > _MAX_ELAPSED:
            elapsed = _MAX_ELAPSED
        self.started = True
        self.end_at = ticks_add(ticks_add(now, -elapsed), self.round_ms)
        self.ten_at = ticks_add(self.end_at, -self.warn_ms)
        self.ten_due = self.warn_ms > 0 and elapsed < self.round_ms - self.warn_ms
        self.end_due = elapsed < self.round_ms

    def join(self, now, number, elapsed_ms, move, step=NULL, last=0):
        """The host's round frame: round ``number`` started ``elapsed_ms`` ago
        (0: now, and this is the start signal with its gong), or a round sent
        back after a power loss (with the play-out ``step`` and ``last``, the
        round's last move, of the old session's ``snapshot``).  Logs ``round``.
        Taken once: False if this clock's round has started already."""
        if self.started:
            return False
        if not move:
            move = NULL  # logged as null before the first move
        self.number = number
        self._emit(EV_ROUND, now, number, elapsed_ms, 0, 0)
        if elapsed_ms <= 0:
            self.start(now, move)
            return True
        self._begin(now, elapsed_ms)
        if step >= 0:  # the end gong was given before the outage
            self.end_due = False
            self.ten_due = False
            self.round_last = last
            self._set_step(now, step, move)
        elif not self.end_due:  # joined after the end gong: no gong now
            self._end_reached(now, move)
        return True

    def give_way(self):
        """A round begun on this clock since it booted (START, or the host's
        round frame) gives way to the round of a restore: the snapshot's round
        is the hall's, whose basic time ran on through the power loss (4.1,
        6.1; the restore is taken only before the first move).  A following
        ``join`` places the restored START; its ``playout`` is logged again."""
        self.started = False
        self.step = NULL
        self.round_last = 0

    def elapsed_ms(self, now):
        """Ms since the round's START (NULL before it)."""
        if not self.started:
            return NULL
        return self.round_ms - ticks_diff(self.end_at, now)

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
            self._emit(EV_GONG, now, GONG_END, move, 0, 0)
            self._end_reached(now, move)  # no longer due from here on

    def _end_reached(self, now, move):
        # 16.3: the move in progress is the one the players circle.
        self.end_due = False
        self.ten_due = False
        m = move if move > 0 else 0
        self.round_last = m + (m & 1)
        self._set_step(now, _STEP_FINISH, move)

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
            step = _STEP_FINISH
        elif extra <= 2:
            step = _STEP_ONE_MORE
        elif extra <= 4:
            step = _STEP_LAST
        else:
            step = STEP_OVER
        self._set_step(now, step, move)

    def move_ended(self, now, move):
        if self.step != NULL and move >= self.round_last + 4:
            self._set_step(now, STEP_OVER, move)
