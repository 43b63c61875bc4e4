"""The program a clock runs (``main.py`` calls ``run``): configuration, the
self-test when START is held at power-on, then the App in an event-driven loop.

It gets the hardware as one object (``hw/esp32.py`` builds the real one; tests
build one on fake pins), so this module never imports ``machine``:

    hw.panel            the front panel (hw/panel.py)
    hw.uart             the link to the host: any(), readinto(buf), write(data),
                        kbd_intr(char) (the console's Ctrl-C: -1 off, 3 on)
    hw.ticks_ms()       the millisecond tick counter
    hw.wait(due)        sleep until tick ``due``, a button edge or host bytes
    hw.read_config()    the text of hallclock.cfg, or None
    hw.save_settings(mode, values)  optional: set-up at the clock saves hallclock.cfg
    hw.default_clock    the clock name when the file gives none
    hw.session_id()     8 hex digits, new at every power-on
    hw.console(text)    a line for a person on the USB console (not on the tick path)
    hw.set_brightness(level)
    hw.use_network(cfg)  optional: hw.uart becomes the hall-network link (hw/wifi.py)

Garbage collection happens at moments the loop chooses (docs/micropython.md,
"GC at our moments"): ``gc_setup`` at boot reserves the emergency exception
buffer and sets ``gc.threshold``; the loop collects when it is idle and the
next deadline is at least ``_GC_IDLE_MS`` away.  Boot-only code (config
parsing, the self-test) is imported lazily and dropped again after boot.
"""
import gc
import sys

from micropython import const

from ..app import App
from ..core.timing import ticks_diff
from ..events import BTN_PAUSE, BTN_START, EV_REFUSED

_GC_IDLE_MS = const(50)  # collect only when the next pass is at least this far away
_GC_EVERY_MS = const(900)  # ... and at most about once a second
_GC_MIN_THRESHOLD = const(8192)
# [collections the loop started, heap in use just before the last one, tick
#  of the last one, app.events at the last one] -- read by the unix VM's heap
#  accounting (tests, bench)
GC = [0, 0, 0, 0]
# CPython (the tests of this module on fakes) has its own collector and none
# of MicroPython's heap figures: there these steps do nothing.
_MICROPYTHON = sys.implementation.name == "micropython"


def _forget(name):
    """Drop a boot-only module, so the next collection frees its code (on
    MicroPython; CPython keeps its modules, tests hold references to them)."""
    if not _MICROPYTHON or name not in sys.modules:
        return
    del sys.modules[name]
    parent, _dot, attr = name.rpartition(".")
    pkg = sys.modules.get(parent)
    if pkg is not None and attr in pkg.__dict__:
        delattr(pkg, attr)


def gc_setup():
    """At boot: the emergency exception buffer (a traceback out of an IRQ even
    with the heap full), a first collection, and the automatic-collection
    threshold: three quarters of the free heap, far above what a steady game
    allocates between two of the loop's collections (a second, or one
    event's pass: frames, and the call states MicroPython takes from the heap
    for larger functions and frees at once, which count towards the threshold
    too), so the only collections in a steady game are the loop's own,
    between passes."""
    if not _MICROPYTHON:
        return
    import micropython
    emergency = getattr(micropython, "alloc_emergency_exception_buf", None)
    if emergency is not None:  # the ESP32 port has it; the unix port does not
        emergency(100)
    gc.collect()
    free = gc.mem_free()
    gc.threshold(max(_GC_MIN_THRESHOLD, free * 3 // 4))


def idle_collect(now, due, events=0):
    """Collect now if the loop is idle long enough (the next deadline at
    least _GC_IDLE_MS away) and either events were made since the last
    collection (their frames are the garbage) or it is _GC_EVERY_MS ago (the
    host's frames).  A steady game wakes every second (the shown second
    changes), so garbage never builds up to the threshold between two."""
    if not _MICROPYTHON or ticks_diff(due, now) < _GC_IDLE_MS:
        return False
    if GC[0] and events == GC[3] and ticks_diff(now, GC[2]) < _GC_EVERY_MS:
        return False
    GC[1] = gc.mem_alloc()
    gc.collect()
    GC[0] += 1
    GC[2] = now
    GC[3] = events
    return True


# The link is the MicroPython console (docs/hardware.md "The console"): while
# the clock runs a 0x03 on it is a byte of line noise, not Ctrl-C.
_KBD_OFF = const(-1)
_KBD_CTRL_C = const(3)


def make_app(panel, uart, mode, settings, clock, sid, now):
    """The clock on its link, the console's keyboard interrupt off.  The board
    (``start``) and the virtual device (vdev/runner.py) both build it here."""
    uart.kbd_intr(_KBD_OFF)
    return App(panel, uart, mode, settings, clock, sid, now)


def hand_back(uart):
    """The console back to the REPL: Ctrl-C works again (mpremote needs it)."""
    uart.kbd_intr(_KBD_CTRL_C)


def selftest(hw, now):
    """Run the self-test until a long press of START ends it."""
    from .selftest import SelfTest
    st = SelfTest(hw.panel, now, hw.console)
    while not st.done:
        now = hw.ticks_ms()
        st.step(now)
        if not st.done:
            hw.wait(st.next_wake(now))
    # let the outputs finish what they play, then on to the clock
    hw.panel.update(hw.ticks_ms())
    return st


def start(hw):
    """Configuration and self-test, then the App (not yet looping)."""
    now = hw.ticks_ms()
    from . import config as config_mod
    cfg = config_mod.parse(hw.read_config(), hw.default_clock)
    del config_mod
    _forget("hallclock_fw.hw.config")
    hw.set_brightness(cfg.brightness)
    if hw.panel.buttons.held_now(BTN_START):
        selftest(hw, now)
        now = hw.ticks_ms()
    if cfg.error is not None:
        hw.console("hallclock: " + cfg.error + " (using the defaults)")
    if cfg.net is not None and hasattr(hw, "use_network"):
        hw.use_network(cfg)  # the hall network (Wi-Fi) instead of the USB serial link
    app = make_app(hw.panel, hw.uart, cfg.mode, cfg.settings, cfg.clock, hw.session_id(), now)
    if hasattr(hw, "save_settings"):
        app.store = hw  # set-up at the clock saves hallclock.cfg
    if cfg.error is not None:
        hw.panel.signal(EV_REFUSED, -1, 0, 0, now)  # audible: the file was not used
    _forget("hallclock_fw.hw.selftest")
    gc_setup()
    return app


def loop(hw, app, passes=-1):
    """The device loop: one pass, then sleep until the app's next wake-up (a
    deadline, a signal edge, a display change) or a button or host byte.
    ``passes`` < 0: for ever (tests give a number).  Ends early when the host
    asked for the console (an ``M`` frame, docs/protocol.md "Maintenance")."""
    ticks_ms = hw.ticks_ms
    wait = hw.wait
    link = app.link
    while passes != 0 and not link.maintenance:
        now = ticks_ms()
        app.step(now)
        due = app.next_wake(now)
        idle_collect(now, due, app.events)
        wait(due)
        if passes > 0:
            passes -= 1


def run(hw):
    """The clock until the host asks for the console; then back to main.py
    and the REPL.  PAUSE held at power-on: no clock, the console stays with
    the REPL (maintenance when the firmware itself is broken)."""
    if hw.panel.buttons.held_now(BTN_PAUSE):
        hw.console("hallclock: PAUSE held at power-on: the console is left to the REPL")
        return
    app = start(hw)
    try:
        loop(hw, app)
    finally:  # a crash too: main.py's 3 s before the reset can be Ctrl-C'd
        hand_back(hw.uart)
    hw.console("hallclock: console handed back for maintenance; the clock has stopped "
               "(reset the board to start it again)")
