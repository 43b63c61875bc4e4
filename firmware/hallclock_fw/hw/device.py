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
    hw.default_clock    the clock name when the file gives none
    hw.session_id()     8 hex digits, new at every power-on
    hw.console(text)    a line for a person on the USB console (not on the tick path)
    hw.set_brightness(level)
"""
from micropython import const

from ..app import App
from ..events import BTN_PAUSE, BTN_START, EV_REFUSED
from . import config as config_mod
from .selftest import SelfTest

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
    cfg = config_mod.parse(hw.read_config(), hw.default_clock)
    hw.set_brightness(cfg.brightness)
    if hw.panel.buttons.held_now(BTN_START):
        selftest(hw, now)
        now = hw.ticks_ms()
    if cfg.error is not None:
        hw.console("hallclock: " + cfg.error + " (using the defaults)")
    app = make_app(hw.panel, hw.uart, cfg.mode, cfg.settings, cfg.clock, hw.session_id(), now)
    if cfg.error is not None:
        hw.panel.signal(EV_REFUSED, -1, 0, 0, now)  # audible: the file was not used
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
        wait(app.next_wake(now))
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
