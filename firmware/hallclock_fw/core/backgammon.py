"""The backgammon slow-play clock (İSTAVDER rules 2.3, 2.4, 4, 6.1, and the
common clock practice of docs/rules.md §3); design notes in
docs/backgammon.md.

One bank per player (``settings.bank_ms``).  A press by the mover ends the
move (rule 4: picking up the dice) and starts the opponent's; the first press
after power-on starts the presser's opponent's move 1.  Each move has a delay
of ``delay_s``:

- ``simple`` (US delay): the move's first ``delay_s`` do not come off the
  bank; while the delay runs the mover's display shows it as ``-0:15`` ...
  ``-0:01``, then the bank.
- ``bronstein``: the bank runs from the press; the time used, up to
  ``delay_s``, is given back after the move.
- ``fischer``: ``delay_s`` is added to the bank after every move.

Every move is kept as one absolute deadline: the tick at which the mover's
bank runs out, with the delay taken into account (``limit`` ms of running
time from the move's start).  Everything else (time used, bank left, delay
left) is derived from it, so nothing drifts and expiry is exact to the ms.
A bank that runs out gives ``expired`` and freezes the clock with the flag
(0:00) until the device is reset.

PAUSE (rule 6.1) stops time; while stopped, a press by a player starts that
player's opponent's time again on the bank as it stood.  Holding PAUSE (a long
press, ``BTN_PAUSE | LONG``) while time is stopped asks for a break (rule 2.3):
both displays show the break length, and the next press of ``A`` or ``B``
names the player who takes it.  A player's third break is refused.
"""
from micropython import const

from ..events import (
    BTN_A, BTN_B, BTN_PAUSE, EV_BREAK, EV_BREAK_END, EV_EXPIRED, EV_PAUSE,
    EV_PRESS_BANK, EV_REFUSED, EV_RESUME_BANK, EV_TURN_BANK, LONG, NULL,
    REFUSED_BREAK)
from .timing import ticks_add, ticks_diff

_IDLE = const(0)  # no move has started yet
_RUNNING = const(1)  # the mover's delay or bank runs
_PAUSED = const(2)  # time stopped (dispute, between games)
_FLAG = const(3)  # a bank ran out: frozen until reset
_SELECT = const(4)  # a break was asked for: A or B names the player
_BREAK = const(5)  # a player's break runs

SIMPLE = const(0)
BRONSTEIN = const(1)
FISCHER = const(2)

BREAK_MS = const(300000)  # rule 2.3: breaks of 5 minutes
BREAKS = const(2)  # rule 2.3: two per player per match

SNAPSHOT = const(8)  # values of a snapshot: see BackgammonClock.snapshot


class BackgammonClock:
    """One table's clock.  ``emit(code, now, v0, v1, v2, v3)`` receives events."""

    def __init__(self, settings, emit):
        # the settings' module only while a clock is built (the clock drops
        # it again: hw/device.py shed)
        from ..settings import DELAY_KINDS, bank_ms
        self._emit = emit
        bank = bank_ms(settings)
        self.bank = [bank, bank]  # each bank as it stands between moves
        self.delay_ms = settings["delay_s"] * 1000
        self.kind = DELAY_KINDS.index(settings["delay"])
        self.state = _IDLE
        self.player = NULL  # the mover (whose time runs, or stopped)
        self.move = 0  # move in progress (1 = the first move made on this clock)
        self.bank0 = 0  # the mover's bank when the move started
        self.limit = 0  # running ms the move may take before the bank is out
        self.deadline = 0  # tick at which the mover's bank runs out (running)
        self.to_go = 0  # ms to that moment when time stopped (paused)
        self.breaks = bytearray(2)  # breaks used by A and B
        self.break_player = NULL
        self.break_end_at = 0  # tick at which the running break ends
        self.after_break = _IDLE  # the state a break select or break returns to
        self.restored = False
        self.round = None  # no round gongs in backgammon (the app logs the round)

    # -- inputs ---------------------------------------------------------
    def button(self, code, now):
        self._due(now)  # what fell due before this press happened comes first
        state = self.state
        if code == BTN_A or code == BTN_B:
            if state == _RUNNING:
                if code == self.player:
                    self._end_move(now)
                    self._start_move(1 - code, now)
                # a press by the player whose time is not running: nothing
            elif state == _IDLE:
                # the first press after power-on: the presser's opponent moves first
                self._start_move(1 - code, now)
            elif state == _PAUSED:
                self._press_while_paused(code, now)
            elif state == _SELECT:
                self._start_break(code, now)
            elif state == _BREAK:
                # back before the five minutes are up; time stays stopped
                self._finish_break(now)
        elif code == BTN_PAUSE:
            if state == _RUNNING:
                self._pause(now)
            elif state == _SELECT:
                self.state = self.after_break  # the break request is withdrawn
        elif code == BTN_PAUSE | LONG:
            if state == _RUNNING:  # only a host command gets here without a PAUSE first
                self._pause(now)
                state = _PAUSED
            if state == _PAUSED or state == _IDLE:
                self.after_break = state
                self.state = _SELECT
        # START, GONG and the other long presses do nothing in backgammon

    def _press_while_paused(self, who, now):
        """6.1: a press starts the presser's opponent's time again, on the
        bank as it stood."""
        other = 1 - who
        if other == self.player:
            self.deadline = ticks_add(now, self.to_go)
            self.state = _RUNNING
        else:  # the mover ends the stopped move: the opponent's move starts
            self._end_move(now)
            self._start_move(other, now)
        self._emit(EV_RESUME_BANK, now, other, self.move, self._bank_left(self.to_go), 0)

    # -- moves ----------------------------------------------------------
    def _start_move(self, who, now):
        bank = self.bank[who]
        self.player = who
        self.move += 1
        self.bank0 = bank
        self.limit = bank + self.delay_ms if self.kind == SIMPLE else bank
        self.to_go = self.limit
        self.deadline = ticks_add(now, self.limit)
        self.state = _RUNNING
        self._emit(EV_TURN_BANK, now, who, self.move, bank, 0)

    def _end_move(self, now):
        """The mover's press (running or paused): the bank after the move."""
        to_go = self.to_go
        if self.state == _RUNNING:
            to_go = ticks_diff(self.deadline, now)
        used = self.limit - to_go
        kind = self.kind
        if kind == SIMPLE:
            bank = self._bank_left(to_go)
        elif kind == BRONSTEIN:
            bank = to_go + (used if used < self.delay_ms else self.delay_ms)
        else:
            bank = to_go + self.delay_ms
        self.bank[self.player] = bank
        self._emit(EV_PRESS_BANK, now, self.player, self.move, used, bank)

    def _bank_left(self, to_go):
        """The mover's bank with ``to_go`` ms to its end (the delay not counted)."""
        return to_go if to_go < self.bank0 else self.bank0

    def _pause(self, now):
        self.to_go = ticks_diff(self.deadline, now)
        self.state = _PAUSED
        self._emit(EV_PAUSE, now, self.player, self.move, 0, 0)

    # -- breaks (rule 2.3) ------------------------------------------------
    def _start_break(self, who, now):
        used = self.breaks[who]
        if used >= BREAKS:
            self.state = self.after_break
            self._emit(EV_REFUSED, now, who, REFUSED_BREAK, 0, 0)
            return
        self.breaks[who] = used + 1
        self.break_player = who
        self.break_end_at = ticks_add(now, BREAK_MS)
        self.state = _BREAK
        self._emit(EV_BREAK, now, who, used + 1, BREAK_MS, 0)

    def _finish_break(self, now):
        self.state = self.after_break
        self._emit(EV_BREAK_END, now, self.break_player, self.breaks[self.break_player], 0, 0)

    # -- time -----------------------------------------------------------
    def _due(self, now):
        """Expiry or the end of a break, if due by ``now``; each is emitted at
        the exact tick it fell due, however late the loop comes."""
        state = self.state
        if state == _RUNNING:
            if ticks_diff(now, self.deadline) >= 0:
                self.state = _FLAG
                self.to_go = 0
                self.bank[self.player] = 0
                self._emit(EV_EXPIRED, self.deadline, self.player, self.move, 0, 0)
        elif state == _BREAK:
            if ticks_diff(now, self.break_end_at) >= 0:
                self._finish_break(self.break_end_at)

    def tick(self, now):
        """Emit every event that is due at ``now``.  Allocates nothing when
        none is due."""
        self._due(now)

    def next_deadline(self, now):
        """The tick of the next event, or None if no event is pending."""
        if self.state == _RUNNING:
            return self.deadline
        if self.state == _BREAK:
            return self.break_end_at
        return None

    # -- restore (the core interface of modes.py) ---------------------------
    def fresh(self):
        return self.state == _IDLE and not self.restored

    def over(self):
        """A bank ran out: the flag fell, the match is decided on the clock."""
        return self.state == _FLAG

    def snapshot(self, now, hall_now=None):
        """(move, player, bank_A, bank_B, paused, breaks_A, breaks_B, flag):
        the move in progress and its mover (0 and -1 before the first move),
        both banks at ``now`` (the mover's without the unused delay), whether
        time is stopped (PAUSE, a break or its select), the breaks each player
        has used (rule 2.3), and 1 when a bank has run out."""
        state = self.state
        paused = 1 if state == _PAUSED or state == _SELECT or state == _BREAK else 0
        a = self.bank_left(now, 0)
        b = self.bank_left(now, 1)
        return (self.move, self.player, a, b, paused, self.breaks[0], self.breaks[1],
                1 if state == _FLAG else 0)

    def restore(self, values, now):
        """Back after a power loss from a ``snapshot`` of the old session:
        both banks and the breaks used as they stood, and the move in progress
        running again from ``now`` on the mover's bank (its delay counts as
        spent), or stopped if time was stopped (a break is not resumed: time
        stays stopped), or the flag if a bank had run out.  Only on a fresh
        clock; returns True when taken.  Logs ``resume`` (``bank_ms``)."""
        if len(values) != SNAPSHOT or not self.fresh():
            return False
        move, player, a, b, paused, breaks_a, breaks_b, flag = values
        if move < 1 or (player != 0 and player != 1):
            return False
        self.restored = True
        self.bank[0] = a if a > 0 else 0
        self.bank[1] = b if b > 0 else 0
        self.breaks[0] = breaks_a if 0 <= breaks_a <= BREAKS else BREAKS
        self.breaks[1] = breaks_b if 0 <= breaks_b <= BREAKS else BREAKS
        left = self.bank[player]
        self.player = player
        self.move = move
        self.bank0 = left
        self.limit = left
        self.to_go = left
        self._press_while_paused(1 - player, now)  # runs again: logs ``resume``
        if flag or left == 0:
            self.state = _FLAG  # the flag as it fell (no second ``expired``)
            self.to_go = 0
        elif paused:
            self._pause(now)
        return True

    # -- display --------------------------------------------------------
    def _to_go(self, now):
        if self.state == _RUNNING:
            return ticks_diff(self.deadline, now)
        return self.to_go

    def left_ms(self, now):
        """The countdown the running display shows, in ms: during a simple
        delay the delay left, then the mover's bank; during a break the break
        left.  When stopped: the mover's bank as it stood (the first mover's
        bank before play; 0 with the flag)."""
        state = self.state
        if state == _BREAK:
            return ticks_diff(self.break_end_at, now)
        if state == _SELECT:
            return BREAK_MS
        if state == _IDLE:
            return self.bank[0]
        to_go = self._to_go(now)
        if to_go > self.bank0:
            return to_go - self.bank0  # simple delay running
        return to_go

    def bank_left(self, now, side):
        """``side``'s bank now (the mover's without the unused delay)."""
        if side == self.player:  # NULL before the first move
            return self._bank_left(self._to_go(now))
        return self.bank[side]

    def refresh(self, panel, now):
        """Both displays.  Allocates nothing.  The mover's display shows the
        bank, or during a simple delay the delay left with a leading dash
        (``-0:15`` ... ``-0:01``); the other display shows that player's bank.
        A break shows its countdown on the taker's display; a break select
        shows the break length on both."""
        state = self.state
        if state == _IDLE:
            panel.show(0, self.bank[0])
            panel.show(1, self.bank[1])
        elif state == _SELECT:
            panel.show(0, BREAK_MS)
            panel.show(1, BREAK_MS)
        elif state == _BREAK:
            side = self.break_player
            panel.show(side, ticks_diff(self.break_end_at, now))
            panel.show(1 - side, self.bank_left(now, 1 - side))
        else:
            side = self.player
            to_go = self._to_go(now)
            if to_go > self.bank0:  # the delay runs: whole seconds, rounded up
                panel.show(side, -((to_go - self.bank0 + 999) // 1000) * 1000)
            else:
                panel.show(side, to_go)
            panel.show(1 - side, self.bank[1 - side])

    def running(self):
        """A countdown runs on a display (a move's delay or bank, or a break)."""
        return self.state == _RUNNING or self.state == _BREAK

    def paused(self):
        """The players' time is stopped by PAUSE (dispute, break select, break)."""
        return self.state == _PAUSED or self.state == _SELECT or self.state == _BREAK

    def overtime(self):
        """A bank ran out: the flag shows until reset."""
        return self.state == _FLAG

    def breaks_used(self, side):
        return self.breaks[side]
