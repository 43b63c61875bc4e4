"""The program a clock runs (``main.py`` calls ``run``): configuration, the
self-test when START is held at power-on, then the App in an event-driven loop.

It gets the hardware as one object (``hw/esp32.py`` builds the real one; tests
build one on fake pins), so this module never imports ``machine``:

    hw.panel            the front panel (hw/panel.py)
    hw.uart             the link to the host: any(), readinto(buf), write(data)
    hw.ticks_ms()       the millisecond tick counter
    hw.wait(due)        sleep until tick ``due``, a button edge or host bytes
    hw.read_config()    the text of hallclock.cfg, or None
    hw.default_clock    the clock name when the file gives none
    hw.session_id()     8 hex digits, new at every power-on
    hw.console(text)    a line for a person on the USB console (not on the tick path)
    hw.set_brightness(level)
    hw.use_network(cfg)  optional: hw.uart becomes the hall-network link (hw/wifi.py)
"""
from ..app import App
from ..events import BTN_START, EV_REFUSED
from . import config as config_mod
from .selftest import SelfTest


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
    if cfg.net is not None and hasattr(hw, "use_network"):
        hw.use_network(cfg)  # the hall network (Wi-Fi) instead of the USB serial link
    app = App(hw.panel, hw.uart, cfg.mode, cfg.settings, cfg.clock, hw.session_id(), now)
    if cfg.error is not None:
        hw.panel.signal(EV_REFUSED, -1, 0, 0, now)  # audible: the file was not used
    return app


def loop(hw, app, passes=-1):
    """The device loop: one pass, then sleep until the app's next wake-up (a
    deadline, a signal edge, a display change) or a button or host byte.
    ``passes`` < 0: for ever (tests give a number)."""
    ticks_ms = hw.ticks_ms
    wait = hw.wait
    while passes != 0:
        now = ticks_ms()
        app.step(now)
        wait(app.next_wake(now))
        if passes > 0:
            passes -= 1


def run(hw):
    loop(hw, start(hw))
