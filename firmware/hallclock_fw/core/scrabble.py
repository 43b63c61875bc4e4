"""The Czech Scrabble move clock (ČAS rules 16.8, 4.2, 5.1.2-5.1.4, 8.7.1, 9.1,
10.1, 10.2.6, 11.1-11.2) and, through ``core.round``, the round's hall signals.

PAUSE stops the time; a second PAUSE goes on with the time left as it stood
(8.7.1: nobody gains time by stopping and restarting the clock; warnings
already given are not repeated).  Only a player's press while the time is
stopped starts a fresh limit: the opponent's press restarts the paused player
after a challenge (9.1, 10.1), the paused player's own press ends that move
and starts the opponent's (a STOP ruled so, 11.2).

Time enters as integer ticks (ms).  Deadlines are absolute ticks made with
``ticks_add``; what is left is computed from them, never accumulated.
"""
from micropython import const

from ..events import (
    BTN_A, BTN_B, BTN_GONG, BTN_PAUSE, BTN_START, EV_EXPIRED, EV_PAUSE,
    EV_PRESS, EV_RESUME, EV_TURN, EV_WARN, NULL)
from .round import STEP_OVER, Round
from .timing import ticks_add, ticks_diff

_IDLE = const(0)  # no move has started
_RUNNING = const(1)  # the player's limit is running
_OVERTIME = const(2)  # the limit ran out; the clock counts the overtime
_PAUSED = const(3)
SNAPSHOT = const(8)  # values of a snapshot: see ScrabbleClock.snapshot


class ScrabbleClock:
    """One table's clock.  ``emit(code, now, v0, v1, v2, v3)`` receives events."""

    def __init__(self, settings, emit):
        self._emit = emit
        self.limit_ms = settings["move_s"] * 1000
        self.warn_ms = tuple(s * 1000 for s in settings["warn_s"])  # descending
        self.round = Round(settings, emit)
        self.state = _IDLE
        self.player = NULL  # whose time runs (or stopped, when paused)
        self.move = 0  # move in progress (1 = A's first)
        self.deadline = 0  # tick at which the running limit ends
        self.seg_start = 0  # tick at which the current running segment began
        self.used_ms = 0  # running time of the move before the current segment
        self.next_warn = 0  # index into warn_ms of the next warning due
        self.paused_left = 0  # ms of the limit left when paused (display)
        self.restored = False  # a restore was taken (at most once, before any move)

    # -- inputs ---------------------------------------------------------
    def button(self, code, now):
        if code == BTN_A or code == BTN_B:
            self._player_press(code, now)
        elif code == BTN_PAUSE:
            if self.state == _PAUSED:
                self._go_on(now)  # 8.7.1: the time left as it stood
            elif self.state != _IDLE:
                self._pause(now)
        elif code == BTN_START:
            self.round.start(now, self.move_or_null())
        elif code == BTN_GONG:
            self.round.manual(now, self.move_or_null())

    def _player_press(self, who, now):
        if self.state == _IDLE:
            # 4.2, 5.1.2: after the start signal B starts A's first move.
            if who == BTN_B:
                self._start_move(0, now)
            return
        other = 1 - who
        if self.state == _PAUSED:
            # 9.1, 10.1, 11.2: a press restarts the opponent's time, fresh limit.
            if other == self.player:
                self._resume(other, now)
            else:
                self._end_move(self.player, now)
                self._start_move(other, now)
                self._emit(EV_RESUME, now, other, self.move, self.limit_ms, 0)
            return
        if who != self.player:
            return  # a press by the player whose time is not running
        self._end_move(who, now)
        self._start_move(other, now)

    # -- moves ----------------------------------------------------------
    def _arm(self, now):
        """A fresh limit from ``now`` (16.8: every press starts a new limit)."""
        self.deadline = ticks_add(now, self.limit_ms)
        self.seg_start = now
        self.next_warn = 0
        self.state = _RUNNING

    def _start_move(self, who, now):
        self.player = who
        self.move += 1
        self.used_ms = 0
        self._arm(now)
        self.round.move_started(now, self.move)
        self._emit(EV_TURN, now, who, self.move, self.limit_ms, 0)

    def _end_move(self, who, now):
        used = self.used_ms
        if self.state != _PAUSED:
            used += ticks_diff(now, self.seg_start)
        self._emit(EV_PRESS, now, who, self.move, used, 0)
        self.round.move_ended(now, self.move)

    def _pause(self, now):
        if self.state == _RUNNING:
            # the loop reads buttons before it ticks: a pause on or after the
            # limit's last ms finds the limit run out, its signal first (5.1.4)
            self._due(now)
        self.used_ms += ticks_diff(now, self.seg_start)
        self.paused_left = ticks_diff(self.deadline, now)
        self.state = _PAUSED
        self._emit(EV_PAUSE, now, self.player, self.move, 0, 0)

    def _resume(self, who, now):
        """A player's press while paused (9.1, 10.1): a fresh limit."""
        self._arm(now)
        self._emit(EV_RESUME, now, who, self.move, self.limit_ms, 0)

    def _go_on(self, now):
        """PAUSE while paused: the same move goes on with the time left as it
        stood (8.7.1); the warnings already given are not repeated, and a move
        paused in overtime goes on counting its overtime."""
        left = self.paused_left
        self.deadline = ticks_add(now, left)
        self.seg_start = now
        self.state = _RUNNING if left > 0 else _OVERTIME
        self._emit(EV_RESUME, now, self.player, self.move, left, 0)

    # -- restore (the core interface of modes.py) ---------------------------
    def fresh(self):
        """No move has started and nothing was restored: a new game."""
        return self.state == _IDLE and not self.restored

    def over(self):
        """The game is over: the play-out has ended (16.3, ``P---``)."""
        return self.round.step == STEP_OVER

    def snapshot(self, now, hall_now=None):
        """Everything needed to resume this game on a fresh clock, as ints:
        (move, player, left_ms, paused, round, round_elapsed_ms, step,
        round_last).  ``left_ms`` is the move's limit left at ``now`` (as it
        stood, when paused); player is -1 and move 0 before the first move.
        The round's part (``core.round``: its number, ms since START or -1,
        the play-out step or -1, the last move of the round at the end gong)
        is measured at ``hall_now`` if given: the hall's basic time runs on
        through a power loss (ČAS 4.1, 6.1) while the move's time does not."""
        rnd = self.round
        return (self.move, self.player, self.left_ms(now), 1 if self.state == _PAUSED else 0,
                rnd.number, rnd.elapsed_ms(now if hall_now is None else hall_now),
                rnd.step, rnd.round_last)

    def restore(self, values, now):
        """Resume a game after a power loss from a ``snapshot`` of the old
        session: the move runs again from ``now`` with its time left (0 or
        less: in overtime, no second ``expired``; paused: stays paused),
        warnings already past are not repeated, and the round's gongs come at
        START + 30 and + 40 min as before the outage (the snapshot's round
        replaces one begun on this clock since it booted: a START pressed
        before the restore came; a snapshot without a round keeps it).  Taken only on a fresh
        clock (no move started, no restore taken); returns True when taken.
        Logs ``resume`` (``limit_ms`` = the time left), ``pause`` when paused,
        and ``round`` (with ``playout``) for the round."""
        if len(values) != SNAPSHOT or not self.fresh():
            return False
        move, player, left_ms, paused, number, elapsed, step, last = values
        if move < 0 or (move > 0 and player != 0 and player != 1):
            return False
        if move == 0 and elapsed < 0:
            return False  # nothing had started: nothing to restore
        self.restored = True
        if move > 0:
            if left_ms > self.limit_ms:
                left_ms = self.limit_ms
            self.player = player
            self.move = move
            self.used_ms = self.limit_ms - left_ms
            warn_ms = self.warn_ms
            i = 0
            while i < len(warn_ms) and warn_ms[i] >= left_ms:
                i += 1
            self.next_warn = i
            self.paused_left = left_ms
            self._go_on(now)  # as a pause undone: the time left as it stood
            if paused:
                self._pause(now)
        if elapsed >= 0:
            # the hall's round as it stood before the outage (4.1, 6.1, 16.3): it
            # wins over a round a START (or the host's N) began since the reboot
            rnd = self.round
            if rnd.started:
                rnd.give_way()
            rnd.join(now, number, elapsed if elapsed else 1, self.move, step, last)
        return True

    def move_or_null(self):
        return self.move if self.move else NULL

    # -- time -----------------------------------------------------------
    def tick(self, now):
        """Emit every event that is due at ``now``.  Allocates nothing when
        none is due."""
        self.round.tick(now, self.move_or_null())
        if self.state == _RUNNING:
            self._due(now)

    def _due(self, now):
        """The player's warnings and expiry due at ``now``."""
        warn_ms = self.warn_ms
        while self.next_warn < len(warn_ms):
            left = warn_ms[self.next_warn]
            if ticks_diff(now, ticks_add(self.deadline, -left)) < 0:
                break
            self.next_warn += 1
            self._emit(EV_WARN, now, self.player, self.move, left // 1000, 0)
        if ticks_diff(now, self.deadline) >= 0:
            # 5.1.4, 10.2.6: the limit has run out; the long final signal, and
            # the clock shows the overtime until the player presses.
            self.next_warn = len(warn_ms)
            self.state = _OVERTIME
            self._emit(EV_EXPIRED, now, self.player, self.move, 0, 0)

    def next_deadline(self, now):
        """The tick of the next event, or None if no event is pending."""
        due = self.round.next_deadline(now)
        if self.state == _RUNNING:
            if self.next_warn < len(self.warn_ms):
                mine = ticks_add(self.deadline, -self.warn_ms[self.next_warn])
            else:
                mine = self.deadline
            if due is None or ticks_diff(mine, due) < 0:
                due = mine
        return due

    # -- display --------------------------------------------------------
    def left_ms(self, now):
        """Ms of the limit left for the player whose time runs (negative in
        overtime); the limit as it stood when paused; the full limit when idle."""
        if self.state == _RUNNING or self.state == _OVERTIME:
            return ticks_diff(self.deadline, now)
        if self.state == _PAUSED:
            return self.paused_left
        return self.limit_ms

    def refresh(self, panel, now):
        """Both displays: the running (or stopped) limit on the mover's side,
        a full limit on the other.  Allocates nothing."""
        if self.state == _IDLE:
            panel.show(0, self.limit_ms)
            panel.show(1, self.limit_ms)
            return
        panel.show(self.player, self.left_ms(now))
        if self.round.step >= 0:
            # 16.3: after the end gong the waiting player's display shows the
            # play-out step (P- 1 finish the round, P- 2 one more move,
            # P- 3 last move, P--- over)
            panel.show_playout(1 - self.player, self.round.step)
        else:
            panel.show(1 - self.player, self.limit_ms)

    def running(self):
        return self.state == _RUNNING or self.state == _OVERTIME

    def paused(self):
        return self.state == _PAUSED

    def overtime(self):
        return self.state == _OVERTIME
