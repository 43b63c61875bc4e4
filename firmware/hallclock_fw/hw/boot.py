"""The clock's boot (``device.start``): hallclock.cfg read (hw/config.py),
the self-test when START is held at power-on (hw/selftest.py), the App built.
Boot-only: device.start drops this module, and those it imported, again.
"""
from ..events import BTN_START, EV_REFUSED
from .device import _forget, make_app


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
    _forget("hallclock_fw.names")  # the name grammar: read by config.py only
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
    return app
