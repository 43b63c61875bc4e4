"""The device loop: buttons and host commands -> core -> signals, displays, and
the link.  The same App runs on the ESP32 (main.py), in the virtual device
under CPython, and inside the MicroPython VM.

One pass of the loop is ``step(now)``; ``next_wake(now)`` tells when the next
pass is needed (the core's next event, a signal edge, a display change, a
button settling), so the loop can sleep until then or until a button moves.

The host's commands are taken in the order they arrived (the link queues
them): a press (``C``), a restore after a power loss (``S``), settings
(``K``: taken only while no game runs) and the round's start (``N``).
"""
from micropython import const

from . import VERSION, protocol, settings as settings_mod
from .core.timing import earliest, ticks_add, ticks_diff
from .display import next_change
from .events import (
    BTN_A, BTN_B, EV_BOOT, EV_END, EV_REFUSED, EV_SETTINGS, LONG, NULL,
    REASON_BAD_SETTINGS, REASON_GAME_RUNNING, REASON_ROUND_STARTED, REFUSED_ROUND,
    REFUSED_SETTINGS)
from .link import CMD_RESTORE, CMD_ROUND, CMD_SETTINGS, NO_CMD, DeviceLink
from .modes import make_core, settings_view

_MAX_SLEEP = const(1000)  # wake at least this often (link resends, watchdogs)


class App:
    def __init__(self, panel, uart, mode, settings, clock, sid, now):
        self.panel = panel
        self.mode = mode
        self.settings = settings
        self.t0 = now
        self.core = make_core(mode, settings, self._event)
        self.link = DeviceLink(uart, sid, clock, mode,
                               settings_mod.format_text(mode, settings), VERSION, now)
        self.ended = False
        self.events = 0
        self.view = None  # (ms, ms) on the displays while new settings wait for a press
        self._event(EV_BOOT, now, 0, 0, 0, 0)

    def _event(self, code, now, v0, v1, v2, v3):
        # The signal first: a late beep is the one thing a player notices.
        self.panel.signal(code, v0, v1, v2, now)
        self.events += 1
        self.link.emit(ticks_diff(now, self.t0), code, v0, v1, v2, v3)

    def press(self, code, now):
        """A button event (code, or code | LONG) reaches the core."""
        if self.ended:
            return
        if self.view is not None and (code == BTN_A or code == BTN_B):
            self.view = None  # ČAS 3.2: a player has seen the new settings
            return
        if self.view is not None and code & LONG and (code & ~LONG) <= BTN_B:
            return  # the long press that follows the press that closed the view
        self.core.button(code, now)

    def step(self, now):
        """One pass of the loop.  Allocates nothing when no event is due."""
        panel = self.panel
        buttons = panel.buttons
        code = buttons.poll(now)
        while code != -1:
            self.press(code, buttons.when)  # the moment the contact closed
            code = buttons.poll(now)
        if self.link.receive(now):
            self.commands(now)
        if not self.ended:
            self.core.tick(now)
        panel.update(now)
        self.refresh(now)
        self.link.send(now)  # this pass's events leave in this pass

    def commands(self, now):
        """Every command the host sent, in the order it arrived."""
        link = self.link
        cmd = link.next_command()
        while cmd != NO_CMD:
            if cmd == CMD_RESTORE:
                self.restore(link.payload, now)
            elif cmd == CMD_SETTINGS:
                self.configure(link.payload, now)
            elif cmd == CMD_ROUND:
                self.join_round(link.arg0, link.arg1, now)
            else:
                self.press(cmd, now)
            cmd = link.next_command()

    def refresh(self, now):
        view = self.view
        if view is not None:
            self.panel.show(0, view[0])
            self.panel.show(1, view[1])
            return
        self.core.refresh(self.panel, now)

    def next_wake(self, now):
        core = self.core
        due = ticks_add(now, _MAX_SLEEP)
        due = earliest(now, due, core.next_deadline(now))
        due = earliest(now, due, self.panel.next_deadline(now))
        due = earliest(now, due, self.panel.buttons.next_deadline(now))
        due = earliest(now, due, self.link.next_deadline(now))  # sends, resends
        if core.running():  # the shown second changes
            due = earliest(now, due, ticks_add(now, next_change(core.left_ms(now))))
        return due

    def end(self, now):
        """Close the device session (the scenario's ``end``)."""
        if not self.ended:
            self.ended = True
            self._event(EV_END, now, 0, 0, 0, 0)

    # -- host commands ----------------------------------------------------
    def _take_settings(self, mode, values, now):
        """A new core for ``mode`` with ``values``; logs ``settings``.  A
        round this clock had started (START, or the host's round frame) goes on."""
        old = self.core
        number, elapsed = old.round_info(now)
        self.mode = mode
        self.settings = values
        self.core = make_core(mode, values, self._event)
        gen = self.link.new_settings(mode, settings_mod.format_text(mode, values))
        self._event(EV_SETTINGS, now, gen, 0, 0, 0)
        if elapsed >= 0:
            self.core.join_round(number, elapsed if elapsed > 0 else 1, now)

    def configure(self, tokens, now):
        """``K <mode> <settings>``: taken only while no game runs (no move
        has started, the game is over, or the session has ended); the new
        settings stay on the displays until a player presses (ČAS 3.2)."""
        try:
            mode = tokens[1]
            values = settings_mod.parse_text(mode, tokens[2])
        except ValueError:
            self._event(EV_REFUSED, now, NULL, REFUSED_SETTINGS, REASON_BAD_SETTINGS, 0)
            return False
        if not (self.ended or self.core.fresh() or self.core.over()):
            self._event(EV_REFUSED, now, NULL, REFUSED_SETTINGS, REASON_GAME_RUNNING, 0)
            return False
        self.ended = False  # after ``end`` a new game begins in this session
        self._take_settings(mode, values, now)
        self.view = settings_view(mode, values)
        return True

    def join_round(self, number, elapsed_ms, now):
        """``N <round> <elapsed_ms>``: the round's start, now (0) or in the past."""
        if self.ended or not self.core.join_round(number, elapsed_ms, now):
            self._event(EV_REFUSED, now, NULL, REFUSED_ROUND, REASON_ROUND_STARTED, 0)
            return False
        return True

    def restore(self, tokens, now):
        """``S <mode> <settings> <v0> ... <vn>``: resume a game after a power
        loss from the old session's snapshot.  Only on a fresh core (see
        modes.py); settings other than the clock's own are taken first (and
        logged as ``settings``).  Returns whether the core took it."""
        if tokens is None or self.ended or not self.core.fresh():
            return False
        try:
            mode = tokens[1]
            values = settings_mod.parse_text(mode, tokens[2])
            ints = tuple(protocol.to_int(t) for t in tokens[3:])
        except ValueError:
            return False
        if mode != self.mode or settings_mod.format_text(mode, values) != \
                settings_mod.format_text(self.mode, self.settings):
            self._take_settings(mode, values, now)
        return self.core.restore(ints, now)

    def idle(self):
        """True when the session has ended and the host has every event."""
        return self.ended and self.link.all_acked()
