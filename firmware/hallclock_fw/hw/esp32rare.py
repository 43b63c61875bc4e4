"""The parts of the real hardware object (hw/esp32.py) a clock runs once or
rarely: building the pins and the panel, hallclock.cfg read at boot, the hall
network taken up, the session id, the watchdog started
and handed to a timer, the versions for ``hallclock doctor``.

On a stock image the bytecode of every imported module lives in the GC heap
for the whole game (docs/micropython.md "Boot-only code"): ``esp32.load``
imports this module for one call and drops it again, so none of it takes
room while the clock runs.  Each function but ``start`` takes the ESP32
object first.
"""
import os
import sys
import time

import machine
from machine import PWM, Pin

from . import board


def start():
    """``ESP32()``: (panel, displays, default clock name): pins, PWM and
    displays from ``board.py``, the panel put together with
    ``panel.build_panel`` (the same call the virtual device makes on fake
    pins)."""
    from .panel import build_panel
    from .tm1637 import TM1637
    now = time.ticks_ms()
    buttons = [Pin(n, Pin.IN, Pin.PULL_UP) for n in board.BUTTONS]
    buzzer = PWM(Pin(board.BUZZER), freq=2000, duty_u16=0)
    leds = tuple(Pin(n, Pin.OUT, value=0) for n in board.LEDS)
    hall = Pin(board.HALL, Pin.OUT, value=0)
    displays = tuple(
        TM1637(Pin(clk, Pin.OPEN_DRAIN, Pin.PULL_UP, value=1),
               Pin(dio, Pin.OPEN_DRAIN, Pin.PULL_UP, value=1))
        for clk, dio in board.DISPLAYS)
    panel = build_panel(buttons, buzzer, leds, hall, displays, now)
    panel.buttons.arm()
    # (format strings longer than 10 characters: not interned names on the board)
    return (panel, displays,
            "clock-%02x%02x%02x" % tuple(machine.unique_id()[-3:]))


def use_network(hw, cfg):
    """hallclock.cfg names a hall network: the link goes over Wi-Fi and
    the broker (docs/network.md); the USB console stays for people."""
    net = cfg.net
    tls = None
    if net.get("tls_ca_file") is not None:  # (hw/config.py; longer than 10: not interned)
        # TLS to the broker: its module only on a clock that asks, by a string (no
        # name on the plain path); None: no CA to pin, the cfg refused (CFG10)
        tls = __import__("hallclock_fw.tlslink", None, None, ("opener",)).opener(cfg)
        if tls is None:
            return
    from . import wifi  # imported only by a clock on Wi-Fi
    hw.uart = wifi.link(net, cfg.clock, hw.ticks_ms, tls)


def read_config(hw):
    from . import cfgsave
    from ..forget import forget
    text = cfgsave.load(open)  # hallclock.cfg (cfgsave.CFG_FILE)
    del cfgsave
    forget("hallclock_fw.hw.cfgsave")
    return text


def session_id(hw):
    return "%02x%02x%02x%02x" % tuple(os.urandom(4))


def watchdog(hw, ms):
    """The hardware watchdog, started: the loop feeds it every pass; a
    pass that hangs for ``ms`` restarts the board.  Once started it
    cannot be stopped (ESP32 task watchdog)."""
    hw.wdt = machine.WDT(timeout=ms)
    return hw.wdt


def watchdog_off(hw):
    """The console is handed back (M frame): a timer feeds the watchdog
    from now on, so the REPL and mpremote are not reset under a person."""
    wdt = hw.wdt
    if wdt is None:
        return
    hw.wdt_timer = machine.Timer(0)
    hw.wdt_timer.init(period=1000, callback=lambda _t: wdt.feed())


def info_text(hw):
    """``mp=<version>;part=<label>:<KiB>,...`` for ``hallclock doctor``."""
    v = sys.implementation.version
    text = "mp=%d.%d.%d" % (v[0], v[1], v[2])
    try:
        import esp32
        parts = []
        for kind in (esp32.Partition.TYPE_APP, esp32.Partition.TYPE_DATA):
            for p in esp32.Partition.find(kind):
                info = p.info()
                parts.append("%s:%d" % (info[4], info[3] // 1024))
        text = text + ";part=" + ",".join(parts)
    except (ImportError, AttributeError):
        pass
    return text[:80]  # the frame's line limit (protocol.MAX_LINE)
