"""Runs the real firmware App on fake hardware in simulated time, driven by
scenario actions.  MicroPython-compatible: the same Runner runs under CPython
and inside the MicroPython VM; a pump (``hallclock.vboard.device``) moves its UART
bytes to and from a serial port.

Simulated time: ``ms`` counts from the start of the scenario; the device's
ticks are ``ticks_add(start_ticks, ms)``, so a start just below 2**30 makes the
ticks wrap during the game.  The loop is either event-driven (each pass
happens exactly at the next deadline, button edge or action: ``period=None``)
or runs with jittered periods ``(lo, hi)`` ms from a fixed pseudo-random
sequence, the same on every interpreter.
"""
from hallclock_fw.core.timing import ticks_add, ticks_diff
from hallclock_fw.events import BUTTON_NAMES
from hallclock_fw.hw.device import hand_back, health_state, make_app, one_pass
from hallclock_fw.hw.panel import build_panel

from .fakes import FakeDisplay, FakeOutput, FakePin, FakeUART, PowerCut, SimClock

PRESS_MS = 100  # a clean press holds the contact this long
# a bouncing contact: (ms after the action, level) then closed until PRESS_MS
BOUNCE = ((0, 0), (1, 1), (3, 0), (4, 1), (6, 0), (7, 1), (9, 0))

RUNNING = 0
DONE = 1
WAITING = 2  # the scenario has ended; events still unacknowledged
HANDED_BACK = 3  # the host took the console (M frame): the clock has stopped
PACED = 4  # no pass: simulated time would outrun real time while events wait (pace)
PACE_GRACE_MS = 100  # real ms simulated time waits for the host's ack before it runs on
CRASH_RESET_MS = 3000  # main.py: an uncaught error, its traceback, 3 s, machine.reset()


def session_after(sid):
    """The virtual board's next session id: a real board takes a random one at
    every start; the virtual one derives it, so logs are reproducible."""
    return "%08x" % ((int(sid, 16) + 0x10001) & 0xFFFFFFFF)


class HostSilence:
    """The host's silence (real ms) that ends a virtual device, counted only
    while the device holds events the host has not acknowledged, from the
    moment they began to wait or the host's last byte since: the firmware's
    link counts it the same way (``heard``, from the first sending none was
    owed before).  A quiet stretch of play has nothing for the host to
    answer, so it is no silence however slowly a loaded machine runs it.
    ``real``: a ticks-like ms clock (``ticks_diff``)."""

    def __init__(self, limit_ms):
        self.limit = limit_ms
        self.start = None  # None: nothing waits for the host

    def heard(self, real):
        if self.start is not None:
            self.start = real

    def over(self, real, waiting):
        """True once events have waited ``limit_ms`` with no host byte."""
        if not waiting:
            self.start = None
            return False
        if self.start is None:
            self.start = real
        return ticks_diff(real, self.start) > self.limit


class Runner:
    def __init__(self, mode, settings, actions, clock="virtual-1", sid="00000001",
                 start_ticks=0, period=None, seed=12345, record=False):
        self.actions = actions  # [(t_ms, action, arg), ...] in time order
        self.ai = 0
        self.ms = 0
        self.start = start_ticks
        self.period = period
        self.rand = seed % 65537 or 1
        self.clock = SimClock(start_ticks)
        self.pins = [FakePin(1) for _ in BUTTON_NAMES]
        self.buzzer = FakeOutput(self.clock)
        self.leds = (FakeOutput(self.clock), FakeOutput(self.clock))
        self.hall = FakeOutput(self.clock)
        for out in (self.buzzer, self.hall) + self.leds:
            out.record = record
        self.displays = self.make_displays()
        self.uart = FakeUART()
        self.flash = None  # hallclock.cfg once a save wrote it (vdev/flash.py FakeFlash)
        self.mode = mode
        self.settings = settings
        self.clock_name = clock
        self.sid = sid
        self.boots = 1
        self.edges = []  # [(ms, pin index, level)] in time order
        self.ended = False
        self.passes = 0
        self.last_ms = 0  # simulated time of the last pass
        self.cap = None  # no pass beyond this simulated ms (pace)
        self._anchor = None  # (real ms, simulated ms) when events began to wait
        self._wake = -1  # the pass a woken pass came before (UnixHW.wait)
        self.app = None
        self.fault = None  # "hang" or "crash": the next pass fails that way
        self.resets = 0  # restarts by the watchdog or main.py after a fault
        self._boot(start_ticks)

    def make_displays(self):
        """Displays that keep their text (the unix hardware object has the
        real TM1637 driver on fake pins instead, as the board's path)."""
        return (FakeDisplay(), FakeDisplay())

    def _boot(self, now):
        if self.flash is not None and self.flash.files:  # a save wrote it: the board reads it
            from .flash import boot_config
            boot_config(self)
        panel = build_panel(self.pins, self.buzzer, self.leds, self.hall,
                            self.displays, now)
        panel.buttons.arm()
        # as hw/device.py's start(): the keyboard interrupt off while the clock runs
        self.app = make_app(panel, self.uart, self.mode, self.settings, self.clock_name,
                            self.sid, now)
        self.app.store = self  # as hw/device.py's start: set-up saves through it
        self.health = health_state(now)  # as hw/device.py's loop: the first pass reports

    # -- hallclock.cfg on the virtual board's flash (vdev/flash.py) -----------
    def read_config(self):
        from .flash import read_config
        return read_config(self)

    def save_settings(self, mode, settings_text):
        from .flash import save_settings
        save_settings(self, mode, settings_text)

    def reboot(self):
        """Power lost and back: RAM is gone (every event the host has not
        acknowledged, bytes not yet sent or read), and the board starts a new
        session with a new id, like ``main.py`` after a reset."""
        self.uart.reset()
        if self.flash is not None or (self.app is not None and self.app.setup is not None):
            from .flash import forget_transient
            forget_transient()  # a reset drops set-up's modules with the rest of RAM
        self.boots += 1
        self.sid = session_after(self.sid)
        self._boot(self.now())

    # -- the UART, seen from the pump ---------------------------------------
    def feed(self, data):
        self.uart.feed(data)

    def take_output(self):
        return self.uart.take()

    def now(self):
        return ticks_add(self.start, self.ms)

    def ticks_ms(self):
        """hw/device.py's hw.ticks_ms: the board's tick is simulated time."""
        return self.now()

    # -- scenario ------------------------------------------------------------
    def _schedule(self, t, action, arg):
        if action == "press" or action == "hold" or action == "bounce":
            pin = BUTTON_NAMES.index(arg[0] if isinstance(arg, (list, tuple)) else arg)
            if action == "bounce":
                for dt, level in BOUNCE:
                    self._edge(t + dt, pin, level)
                self._edge(t + PRESS_MS, pin, 1)
            else:
                length = arg[1] if action == "hold" else PRESS_MS
                self._edge(t, pin, 0)
                self._edge(t + length, pin, 1)
        elif action == "reboot":
            self.reboot()
        elif action == "hang" or action == "crash":
            self.fault = action
        elif action == "power-cut-save":
            if self.flash is None:
                from .flash import FakeFlash
                self.flash = FakeFlash()
            self.flash.cut_after = arg  # the power goes in the next save (PowerCut)
        elif action == "end":
            self.ended = True
            self.app.end(self.now())
        elif action == "command" or action == "command-long":
            # a press the host sends over the link (the hall relays START, GONG)
            from hallclock.hostframes import command  # a VM has it too (mpvm/files.py)
            code = BUTTON_NAMES.index(arg)
            self.uart.feed(command(code, action == "command-long"))
        elif action == "configure":  # the host's settings (hallclock configure's K frame)
            from hallclock.hostframes import configure
            self.uart.feed(configure(arg[0], arg[1]))

    def _edge(self, t, pin, level):
        e = (t, pin, level)
        i = len(self.edges)
        while i > 0 and self.edges[i - 1][0] > t:
            i -= 1
        self.edges.insert(i, e)

    def _apply(self):
        """Pin edges and actions due at ``self.ms``."""
        while self.edges and self.edges[0][0] <= self.ms:
            _t, pin, level = self.edges.pop(0)
            self.pins[pin].value(level)
        while self.ai < len(self.actions) and self.actions[self.ai][0] <= self.ms \
                and not self.ended:
            t, action, arg = self.actions[self.ai]
            self.ai += 1
            if action == "end":
                self.app.step(self.now())  # what is due at this time comes first
            self._schedule(t, action, arg)
            while self.edges and self.edges[0][0] <= self.ms:
                _t, pin, level = self.edges.pop(0)
                self.pins[pin].value(level)

    def _next_ms(self):
        if self.period is not None:
            lo, hi = self.period
            self.rand = (self.rand * 75 + 74) % 65537
            nxt = self.ms + lo + self.rand % (hi - lo + 1)
            return self._button_wake(nxt)
        now = self.now()
        nxt = self.ms + ticks_diff(self.app.next_wake(now), now)
        if self.edges and self.edges[0][0] < nxt:
            nxt = self.edges[0][0]
        if self.ai < len(self.actions) and self.actions[self.ai][0] < nxt:
            nxt = self.actions[self.ai][0]
        return nxt if nxt > self.ms else self.ms + 1

    def _button_wake(self, nxt):
        """A jittered loop is woken sooner by a button, as the board's
        (hw.wait returns on the pin's edge interrupt): at an edge or a press
        of the script, and at the debouncer's deadline (the press is taken
        then, not at a pass up to a period later).  Only what lies ahead: a
        deadline already due is the next jittered pass's."""
        ms = self.ms
        if self.edges and ms < self.edges[0][0] < nxt:
            nxt = self.edges[0][0]
        if self.ai < len(self.actions) and ms < self.actions[self.ai][0] < nxt \
                and self.actions[self.ai][1] in ("press", "hold", "bounce"):
            nxt = self.actions[self.ai][0]
        now = self.now()
        due = self.app.panel.buttons.next_deadline(now)
        if due is not None:
            at = ms + ticks_diff(due, now)
            if ms < at < nxt:
                nxt = at
        return nxt

    def pace(self, real_ms):
        """Simulated time must not outrun the link: while the device holds
        events the host has not acknowledged, its resend (up to 1.5 s) and hello (5 s)
        timers run in real time, as on a board, so simulated time may run no
        faster than real time from the pass that made them wait.  ``real_ms``
        is the pump's real clock (any origin); the game runs as fast as the
        machine allows while the host has every event.  True while paced."""
        if self.app.link.all_acked():
            self._anchor = None
            self.cap = None
            return False
        if self._anchor is None:
            self._anchor = (real_ms, self.last_ms)
        # For the first PACE_GRACE_MS of the wait simulated time stands still:
        # a host that answers within it (every host on this machine) is heard
        # at the same simulated moment on every run, so logs are reproducible.
        # Past it simulated time catches up with the whole wait, so the
        # link's timers (its resend wait) count the line's real time, as on
        # a board, not the grace on top of it.
        waited = real_ms - self._anchor[0]
        self.cap = self._anchor[1] + (waited if waited > PACE_GRACE_MS else 0)
        return True

    def step(self):
        """One pass of the device loop at the current time, then move time on.
        Returns RUNNING, WAITING, DONE, HANDED_BACK, or PACED (no pass: the
        pass is due later than ``pace`` allows)."""
        if self.cap is not None and self.ms > self.cap:
            if self.app.link.all_acked():  # acknowledged since the last pace()
                self.cap = None
                self._anchor = None
            elif not self.uart.waiting():
                return PACED
        wake = -1
        if self.cap is not None and self.ms > self.cap:
            # host bytes wake the loop in its sleep (hw.wait), at the time real
            # time allows; the pass it slept for stays where it was
            wake = self.ms
            self.ms = self.cap if self.cap > self.last_ms else self.last_ms
        self.last_ms = self.ms
        self.clock.now = self.now()
        self._apply()
        if self.fault is not None:
            self._fail()
        try:  # the board's pass (hw/device.py): its health events, then the App's
            one_pass(self, self.app, self.clock.now, self.health)
        except PowerCut:  # set-up's save was cut: the board starts again, and
            self.reboot()  # its loop's first pass comes at once (as after any reset)
            one_pass(self, self.app, self.clock.now, self.health)
        self.passes += 1
        if self.app.link.maintenance:  # device.loop ends; main.py returns to the REPL
            hand_back(self.uart)
            return HANDED_BACK
        if self.ended:
            return DONE if self.app.idle() else WAITING
        self.ms = self._move_on(wake)
        return RUNNING

    def _fail(self):
        """The pass fails (a ``hang`` or ``crash`` action): the watchdog
        (hw/device.py WDT_MS, never fed by a pass that does not return) or
        main.py (3 s after an uncaught error) restarts the board.  The unix
        hardware object makes the firmware's own pass fail instead."""
        from hallclock_fw.hw.device import WDT_MS
        self.ms += WDT_MS + 1 if self.fault == "hang" else CRASH_RESET_MS
        self.fault = None
        self.resets += 1
        self.last_ms = self.ms
        self.reboot()
        self.clock.now = self.now()
        self._apply()

    def _move_on(self, wake):
        """Simulated time of the next pass.  ``wake`` >= 0: this pass was woken
        by host bytes in the sleep before the pass due at ``wake``, which stays
        where it was (so how the host's bytes fall across reads never changes
        the pass times): an event-driven loop still wakes earlier if the woken
        pass asked for it; a jittered loop keeps its rhythm (no extra draw)."""
        if wake < 0:
            return self._next_ms()
        if self.period is None:
            nxt = self._next_ms()
            return nxt if nxt < wake else wake
        return wake

    def advance(self, ms):
        """After the scenario: let ``ms`` of (real) time pass, then one pass."""
        self.cap = None  # real time already
        self.ms += ms
        return self.step()

    def last_seq(self):
        """The number of the device's newest event (this session)."""
        return self.app.link.seq

    def pending(self):
        """True while the device holds events the host has not acknowledged."""
        return not self.app.link.all_acked()
