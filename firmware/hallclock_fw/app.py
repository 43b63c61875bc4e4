"""The device loop: buttons and host commands -> core -> signals, displays, and
the link.  The same App runs on the ESP32 (main.py), in the virtual device
under CPython, and inside the MicroPython VM.

One pass of the loop is ``step(now)``; ``next_wake(now)`` tells when the next
pass is needed (the core's next event, a signal edge, a display change, a
button settling), so the loop can sleep until then or until a button moves.
"""
from micropython import const

from . import VERSION, settings as settings_mod
from .core.timing import earliest, ticks_add, ticks_diff
from .display import next_change
from .events import EV_BOOT, EV_END, LONG
from .link import CMD_RESTORE, NO_CMD, DeviceLink
from .modes import make_core

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
        self._event(EV_BOOT, now, 0, 0, 0, 0)

    def _event(self, code, now, v0, v1, v2, v3):
        # The signal first: a late beep is the one thing a player notices.
        self.panel.signal(code, v0, v1, v2, now)
        self.events += 1
        self.link.emit(ticks_diff(now, self.t0), code, v0, v1, v2, v3)

    def press(self, code, now):
        """A button event (code, or code | LONG) reaches the core."""
        if not self.ended:
            self.core.button(code, now)

    def step(self, now):
        """One pass of the loop.  Allocates nothing when no event is due."""
        panel = self.panel
        buttons = panel.buttons
        code = buttons.poll(now)
        while code != -1:
            self.press(code, buttons.when)  # the moment the contact closed
            code = buttons.poll(now)
        cmd = self.link.receive(now)
        if cmd != NO_CMD:
            if cmd == CMD_RESTORE:
                self.restore(now)
            else:
                self.press(cmd, now)
        if not self.ended:
            self.core.tick(now)
        panel.update(now)
        self.refresh(now)
        self.link.send(now)  # this pass's events leave in this pass

    def refresh(self, now):
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

    def restore(self, now):
        """Resume a game the host sends back after a power loss (issue 6)."""
        tokens = self.link.restore
        self.link.restore = None
        core_restore = getattr(self.core, "restore", None)
        if tokens is None or core_restore is None:
            return
        try:
            mode = tokens[1]
            values = settings_mod.parse_text(mode, tokens[2])
        except ValueError:
            return
        if mode != self.mode:
            return
        self.settings = values
        core_restore(int(tokens[3]), int(tokens[4]), int(tokens[5]), now)

    def idle(self):
        """True when the session has ended and the host has every event."""
        return self.ended and self.link.all_acked()
