"""The clock's boot (``device.start``): hallclock.cfg read (hw/config.py),
the self-test when START is held at power-on (hw/selftest.py), the App built,
the collector set up (its threshold).  Boot-only: device.start drops this module, and those
it imported, again (docs/micropython.md "Boot-only code").
"""
import gc

from micropython import const

from ..app import _MICROPYTHON
from ..events import BTN_PAUSE, BTN_START, EV_REFUSED

# collect after this many bytes allocated, a fixed figure (the ESP32's mem_free counts IDF's)
GC_THRESHOLD = const(6144)
_C_TLS = const(10)  # hallclock.cfg's TLS CA refused (tlslink.py): its settings kept, off the network


def start(hw, make_app):
    """Configuration and self-test, then the App (``make_app``, not yet
    looping); None when PAUSE is held at power-on (the console stays with
    the REPL)."""
    if hw.panel.buttons.held_now(BTN_PAUSE):
        hw.console("hallclock: PAUSE held at power-on: the console is left to the REPL")
        return None
    now = hw.ticks_ms()
    from ..forget import forget
    from . import config as config_mod
    cfg = config_mod.parse(hw.read_config(), hw.default_clock)
    del config_mod
    forget("hallclock_fw.hw.config")
    forget("hallclock_fw.hw.cfgsave")  # its hall-network keys: read by config.py
    forget("hallclock_fw.names")  # the name grammar: read by config.py only
    hw.set_brightness(cfg.brightness)
    if hw.panel.buttons.held_now(BTN_START):
        from . import selftest
        selftest.run(hw, now)  # until a long press of START ends it
        del selftest
        now = hw.ticks_ms()
    if cfg.net is not None and hasattr(hw, "use_network"):
        hw.use_network(cfg)  # the hall network (Wi-Fi) instead of the USB serial link
    if cfg.error is not None:  # (after: a CA the network cannot pin refuses the cfg too)
        hw.console("hallclock: " + cfg.error + (" (on USB, not the network)" if cfg.code == _C_TLS
                                                else " (using the defaults)"))
        hw.cfg_note = ";cfg=%d" % cfg.code  # the doctor's health answer names it
    app = make_app(hw.panel, hw.uart, cfg.mode, cfg.settings, cfg.clock, hw.session_id(), now)
    if hasattr(hw, "save_settings"):
        app.store = hw  # set-up at the clock saves hallclock.cfg
    if cfg.net is not None and cfg.net.get("tls_ca_file") is not None:
        # a TLS handshake holds the loop: it minds this clock's deadlines (strings: no name here)
        setattr(__import__("hallclock_fw.tlslink", None, None, ("opener",)), "_minded_clock",
                (lambda: app, hw.ticks_ms))
    if cfg.error is not None:
        hw.panel.signal(EV_REFUSED, -1, 0, 0, now)  # audible: the file was not used
        # visible: CFG<code> on both displays, over the idle faces, until they change
        app.refresh(now)
        # display.CHARS: C F G and a digit, or C F and two digits (CF10)
        code = bytearray((15, 18, 19, cfg.code) if cfg.code < 10 else
                         (15, 18, cfg.code // 10, cfg.code % 10))
        for disp in hw.panel.displays:
            if disp is not None:
                disp.show(code, False)
    forget("hallclock_fw.hw.selftest")
    if _MICROPYTHON:
        # an IRQ's traceback with the heap full; collections left to the loop (docs/micropython.md)
        import micropython
        emergency = getattr(micropython, "alloc_emergency_exception_buf", None)
        if emergency is not None:  # the ESP32 port has it; the unix port does not
            emergency(100)
        gc.threshold(getattr(hw, "gc_threshold", GC_THRESHOLD))
    return app
