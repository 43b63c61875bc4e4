"""The device loop: buttons and host commands -> core -> signals, displays, and
the link.  The same App runs on the ESP32 (main.py), in the virtual device
under CPython, and inside the MicroPython VM.

One pass of the loop is ``step(now)``; ``next_wake(now)`` tells when the next
pass is needed (the core's next event, a signal edge, a display change, a
button settling), so the loop can sleep until then or until a button moves.

The host's commands are taken in the order they arrived (the link queues
them): a press (``C``), a restore after a power loss (``S``), settings
(``K``: taken only while no game runs) and the round's start (``N``).
Settings the host sends are the clock's until changed: saved to
hallclock.cfg (``store``) in the pass after the frame's (``_save``).

Set-up at the clock (setup_mode.py, docs/contract.md): PAUSE held
``_SETUP_HOLD_MS`` while no game runs opens it; its module is imported only
then and dropped when set-up ends.  ``store`` (the hardware object, or the
virtual board) saves what it chose to hallclock.cfg.
"""
import gc
import sys

from micropython import const

try:  # for the type checker's annotations only (MicroPython has no typing)
    from typing import Any
except ImportError:
    pass

from . import VERSION, protocol
from .core.timing import earliest, ticks_add, ticks_diff
from .display import next_change
from .events import (BTN_A, BTN_B, BTN_PAUSE, EV_BOOT, EV_END, EV_HEALTH, EV_REFUSED,
                     EV_ROUND, EV_SAVE_FAILED, EV_SETTINGS, NULL)
from .link import DeviceLink

_MAX_SLEEP = const(1000)  # wake at least this often (link resends, watchdogs)
# a refused event's "what" and "reason" (hallclock.catalog.REFUSED_WHAT, REFUSED_REASONS)
_REFUSED_SETTINGS = const(2)
_REFUSED_ROUND = const(3)
_REASON_GAME_RUNNING = const(1)
_REASON_BAD_SETTINGS = const(2)
_REASON_ROUND_STARTED = const(3)
_SETUP_HOLD_MS = const(5000)  # PAUSE held this long while no game runs: set-up
# on the hall network passes that take or send are this far apart: a collection between
_SPLIT_MS = const(20)


# CPython (the host's clocks) has its own collector: the heap's steps do nothing there
_MICROPYTHON = sys.implementation.name == "micropython"


def _module(modes) -> "Any":
    """modes.py (``modes`` true) or settings.py, imported again if the clock
    dropped it (hw/device.py shed), with a collection before and after so
    the import's garbage and the frame's never add up (docs/micropython.md
    "Boot-only code")."""
    if _MICROPYTHON:
        gc.collect()
    if modes:
        from . import modes as mod
    else:
        from . import settings as mod
    if _MICROPYTHON:
        gc.collect()
    return mod


class App:
    shed: "Any"  # (for the type checker: hw/device.py sets it; no code on the board)
    store: "Any"  # (the same: hw/boot.py, or the virtual board, sets it)

    def __init__(self, panel, uart, mode, settings, clock, sid, now):
        self.panel = panel
        self.mode = mode
        self.settings = settings
        self.t0 = now
        self.floor = now  # no press is timed before the game it acts on began (a restore)
        self.core = _module(True).make_core(mode, settings, self._event)
        self.link = DeviceLink(uart, sid, clock, mode,
                               _module(False).format_text(mode, settings), VERSION, now)
        # the hall network's link counts the messages it took: a pass takes or sends
        self.taker = uart if hasattr(uart, "took") else None
        self.split = False  # this pass left the network's work to a later one
        self.io_at = ticks_add(now, -_SPLIT_MS)  # the last pass that took or sent
        self.ended = False
        self.events = 0
        self.view = False  # new settings wait for a player's press (ČAS 3.2)
        self.store = None  # save_settings(mode, text): hallclock.cfg (hw/device.py)
        self.unsaved = False  # the host's settings wait for their save (``_save``)
        self.setup = None  # set-up at the clock while it runs (setup_mode.Setup)
        self.armed = False  # PAUSE went down while no game ran: set-up at 5 s
        self.setup_next = False  # in set-up: PAUSE is down (next field on release)
        # shed(app): drops the modules only new settings need (hw/device.py make_app)
        self.shed = None
        self._event(EV_BOOT, now, 0, 0, 0, 0)

    def _event(self, code, now, v0, v1, v2, v3):
        # The signal first: a late beep is the one thing a player notices.
        self.panel.signal(code, v0, v1, v2, now)
        self.events += 1
        self.link.emit(ticks_diff(now, self.t0), code, v0, v1, v2, v3)

    def health(self, now, used, free, largest, longest_ms, text=None):
        """A ``health`` event: the clock's own margins (hw/device.py reports
        them at boot, every 10 minutes and when the host asks with ``I``)."""
        link = self.link
        link.health_seq = link.seq + 1
        link.health_text = text
        self._event(EV_HEALTH, now, used, free, largest, longest_ms)

    def press(self, code, now):
        """A button event (code, or code | LONG) reaches the core."""
        if self.ended:
            return
        if ticks_diff(now, self.floor) < 0:  # its contact closed before the restore came
            now = self.floor
        if self.setup is not None and self.setup.button(self, code, now):
            return
        if code == BTN_PAUSE:
            core = self.core
            self.armed = core.fresh() or core.over()
        if self.view and (code == BTN_A or code == BTN_B):
            self.view = False  # ČAS 3.2: a player has seen the new settings
            return  # (a long press that follows does nothing in any mode)
        self.core.button(code, now)

    def step(self, now):
        """One pass of the loop.  Allocates nothing when no event is due."""
        panel = self.panel
        buttons = panel.buttons
        code = buttons.poll(now)
        while code != -1:
            self.press(code, buttons.when)  # the moment the contact closed
            code = buttons.poll(now)
        if self.armed or self.setup_next:
            self._setup_hold(now)
        if self.unsaved:
            self._save(now)
        link = self.link
        taker = self.taker
        # on the hall network a pass takes or sends, at most once every _SPLIT_MS
        io = taker is None or ticks_diff(now, self.io_at) >= _SPLIT_MS
        took = taker.took if taker is not None else 0
        self.split = False
        if io and link.receive(now):
            self.commands(now)
        if not self.ended:
            self.core.tick(now)
        panel.update(now)
        self.refresh(now)
        if taker is None:
            link.send(now)  # this pass's events leave in this pass
        elif not io or taker.took != took:
            if io:
                self.io_at = now  # a message taken: this pass's frames wait
            self.split = True
        else:
            sent = taker.sent
            link.send(now)
            if taker.sent != sent:
                self.io_at = now

    def commands(self, now):
        """Every command the host sent, in the order it arrived."""
        link = self.link
        cmd = link.next_command()
        while cmd is not None:
            if isinstance(cmd, int):
                self.press(cmd, now)
            else:
                self.host_frame(cmd, now)
            cmd = link.next_command()

    def refresh(self, now):
        if self.setup is not None:
            self.setup.refresh(self.panel)
        else:
            self.core.refresh(self.panel, now)

    def next_wake(self, now):
        core = self.core
        due = ticks_add(now, _MAX_SLEEP)
        due = earliest(now, due, core.next_deadline(now))
        due = earliest(now, due, self.panel.next_deadline(now))
        due = earliest(now, due, self.panel.buttons.next_deadline(now))
        due = earliest(now, due, self.link.next_deadline(now))  # sends, resends
        if self.split:  # the network's turn comes again _SPLIT_MS after its last
            due = earliest(now, due, ticks_add(self.io_at, _SPLIT_MS))
        if self.unsaved:  # the host's settings are saved in the next pass
            due = earliest(now, due, ticks_add(now, 1))
        if self.armed:  # set-up opens when PAUSE has been held long enough
            due = earliest(now, due, ticks_add(self.panel.buttons.held[BTN_PAUSE],
                                               _SETUP_HOLD_MS))
        if core.running():  # the shown second changes
            due = earliest(now, due, ticks_add(now, next_change(core.left_ms(now))))
        return due

    def end(self, now):
        """Close the device session (the scenario's ``end``)."""
        if not self.ended:
            self.ended = True
            self._event(EV_END, now, 0, 0, 0, 0)

    # -- set-up at the clock (setup_mode.py) ---------------------------------
    def _setup_hold(self, now):
        """PAUSE still held: set-up opens after _SETUP_HOLD_MS; in set-up,
        PAUSE released (before the long press) goes to the next field."""
        buttons = self.panel.buttons
        if buttons.held_now(BTN_PAUSE):
            if self.armed and ticks_diff(now, ticks_add(buttons.held[BTN_PAUSE],
                                                        _SETUP_HOLD_MS)) >= 0:
                self.armed = False
                from .setup_mode import open_setup
                open_setup(self, now)
            return
        self.armed = False
        setup = self.setup
        if self.setup_next and setup is not None:
            self.setup_next = False
            if setup.next_field():
                setup.save(self, now)

    # -- host commands ----------------------------------------------------
    def _take_settings(self, mode, values, now):
        """A new core for ``mode`` with ``values``; logs ``settings``.  A
        round this clock had started (START, or the host's round frame) goes on."""
        if self.setup is not None:  # the host's settings end a set-up
            self.setup.close(self)
        rnd = self.core.round
        self.mode = mode
        self.settings = values
        # the settings' module first: a backgammon core imports from it too
        text = _module(False).format_text(mode, values)
        self.core = _module(True).make_core(mode, values, self._event)
        link = self.link
        link.mode = mode  # the hellos name the new mode
        link.settings_text = text
        if self.shed is not None:
            self.shed(self)
        self._event(EV_SETTINGS, now, 0, 0, 0, 0)
        if rnd is not None and rnd.started and self.core.round is not None:
            elapsed = rnd.elapsed_ms(now)
            self.core.round.join(now, rnd.number, elapsed if elapsed > 0 else 1, 0)

    def _save(self, now):
        """The host's settings (``K``, or a restore's) saved to hallclock.cfg
        as set-up's are (hw/cfgsave.py: old or new file, whole, whenever the
        power goes), in a pass of their own: the frame's modules are shed
        and collected first, so the save's module and texts are all a Wi-Fi
        clock's heap holds beyond its game (docs/micropython.md).  A save
        that fails is logged (``save_failed``, the flash's errno); the clock
        runs on the new settings until it reboots."""
        self.unsaved = False
        if _MICROPYTHON:
            gc.collect()
        try:
            self.store.save_settings(self.mode, self.link.settings_text)
        except OSError as e:
            no = e.args[0] if e.args else NULL
            self._event(EV_SAVE_FAILED, now, no if isinstance(no, int) else NULL, 0, 0, 0)
        if _MICROPYTHON:
            gc.collect()

    def host_frame(self, tokens, now):
        """A checked ``S``, ``K`` or ``N`` frame from the host; returns whether
        it was taken.

        ``K <mode> <settings>``: taken only while no game runs (no move has
        started, the game is over, or the session has ended); the new settings
        stay on the displays until a player presses (ČAS 3.2).

        ``N <round> <elapsed_ms>``: the round's start, now (0) or in the past.

        ``S <mode> <settings> <v0> ... <vn>``: resume a game after a power
        loss from the old session's snapshot, only on a fresh core (see
        modes.py); settings other than the clock's own are taken first (and
        logged as ``settings``)."""
        kind = tokens[0]
        core = self.core
        if kind == "N":
            number = protocol.to_int(tokens[1])
            elapsed = protocol.to_int(tokens[2])
            rnd = core.round
            if rnd is None and not self.ended:  # no round gongs in this mode: only logged
                self._event(EV_ROUND, now, number, elapsed, 0, 0)
                return True
            if self.ended or rnd is None or \
                    not rnd.join(now, number, elapsed, core.move):
                self._event(EV_REFUSED, now, NULL, _REFUSED_ROUND, _REASON_ROUND_STARTED, 0)
                return False
            return True
        try:
            return self._settings_frame(kind, tokens, now)
        finally:  # the settings' module goes again (hw/device.py shed)
            if self.shed is not None:
                self.shed(self)

    def _settings_frame(self, kind, tokens, now):
        """A ``K`` or ``S`` frame (host_frame); True when taken."""
        core = self.core
        try:
            mode = tokens[1]
            values = _module(False).parse_text(mode, tokens[2])
            ints = [protocol.to_int(t) for t in tokens[3:]]
        except ValueError:
            if kind == "K":
                self._event(EV_REFUSED, now, NULL, _REFUSED_SETTINGS, _REASON_BAD_SETTINGS, 0)
            return False
        if kind == "S":
            if self.ended or not core.fresh():
                return False
            if mode != self.mode or values != self.settings:
                self._take_settings(mode, values, now)
                self.unsaved = self.store is not None
            if not self.core.restore(ints, now):
                return False
            self.floor = now
            return True
        if not (self.ended or core.fresh() or core.over()):
            self._event(EV_REFUSED, now, NULL, _REFUSED_SETTINGS, _REASON_GAME_RUNNING, 0)
            return False
        self.ended = False  # after ``end`` a new game begins in this session
        self._take_settings(mode, values, now)
        self.unsaved = self.store is not None
        self.view = True
        return True

    def idle(self):
        """True when the session has ended and the host has every event."""
        return self.ended and self.link.all_acked()
