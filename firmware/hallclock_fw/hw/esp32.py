"""The real hardware: the only module that imports ``machine``.

Builds pins, PWM and displays from ``board.py``, puts the panel together with
``panel.build_panel`` (the same call the virtual device makes on fake pins),
and provides the link to the host and the loop's sleep.

The link is the DevKit's USB serial port, i.e. the MicroPython console on
UART0, used through ``sys.stdin.buffer``/``sys.stdout.buffer`` with
``select.poll`` (see docs/hardware.md): taking UART0 over with ``machine.UART``
would cut off the REPL, and with it ``mpremote`` (``make deploy``).  Frames
are printable ASCII, but line noise is not: one flipped bit turns ``C`` (0x43)
into 0x03, which the port's UART interrupt turns into a KeyboardInterrupt.  So
the clock runs with ``micropython.kbd_intr(-1)`` (hw/device.py) and hands the
console back on the host's ``M`` frame (docs/protocol.md "Maintenance").
"""
import os
import sys
import time

import machine
import micropython
import select
from machine import PWM, Pin
from micropython import const

from . import board
from .panel import build_panel
from .tm1637 import TM1637

CONFIG_FILE = "hallclock.cfg"
_SLICE_MS = const(5)  # a button edge is noticed within this long


class StdioLink:
    """The USB serial console as the UART the link wants (any/readinto/write)."""

    def __init__(self):
        self.rx = sys.stdin.buffer
        self.tx = sys.stdout.buffer
        self.poller = select.poll()
        self.poller.register(sys.stdin, select.POLLIN)
        self.one = bytearray(1)

    def any(self):
        for _ in self.poller.ipoll(0):  # ipoll: allocation-free
            return 1
        return 0

    def wait(self, ms):
        """Sleep up to ``ms`` (the CPU idles); True as soon as bytes arrive."""
        for _ in self.poller.ipoll(ms):
            return True
        return False

    def readinto(self, buf):
        # stdin's own readinto blocks until ``buf`` is full: take what is there
        n = 0
        one = self.one
        size = len(buf)
        while n < size and self.any():
            self.rx.readinto(one)
            buf[n] = one[0]
            n += 1
        return n if n else None

    def write(self, data):
        return self.tx.write(data)

    def kbd_intr(self, char):
        """The console's Ctrl-C: -1 off (the clock runs), 3 on (the REPL)."""
        micropython.kbd_intr(char)


class ESP32:
    """The hardware object ``device.run`` takes (see hw/device.py)."""

    def __init__(self):
        now = time.ticks_ms()
        buttons = [Pin(n, Pin.IN, Pin.PULL_UP) for n in board.BUTTONS]
        buzzer = PWM(Pin(board.BUZZER), freq=2000, duty_u16=0)
        leds = tuple(Pin(n, Pin.OUT, value=0) for n in board.LEDS)
        hall = Pin(board.HALL, Pin.OUT, value=0)
        self.displays = tuple(
            TM1637(Pin(clk, Pin.OPEN_DRAIN, Pin.PULL_UP, value=1),
                   Pin(dio, Pin.OPEN_DRAIN, Pin.PULL_UP, value=1))
            for clk, dio in board.DISPLAYS)
        self.panel = build_panel(buttons, buzzer, leds, hall, self.displays, now)
        self.panel.buttons.arm()
        self.uart = StdioLink()
        self.wdt = None
        self.wdt_timer = None
        self.default_clock = "clock-" + "".join("%02x" % b for b in machine.unique_id()[-3:])

    ticks_ms = staticmethod(time.ticks_ms)

    def wait(self, due):
        buttons = self.panel.buttons
        uart = self.uart
        while not buttons.woken:
            left = time.ticks_diff(due, time.ticks_ms())
            if left <= 0:
                return
            if uart.wait(left if left < _SLICE_MS else _SLICE_MS):
                return

    def use_network(self, cfg):
        """hallclock.cfg names a hall network: the link goes over Wi-Fi and
        the broker (docs/network.md); the USB console stays for people."""
        from . import wifi  # imported only by a clock on Wi-Fi
        self.uart = wifi.link(cfg.net, cfg.clock, time.ticks_ms)

    def read_config(self):
        from . import config
        return config.load(open, CONFIG_FILE)

    def save_settings(self, mode, values):
        """Set-up at the clock saves (hw/config.py: old or new, never broken)."""
        from . import cfgsave
        from .device import _forget
        text = cfgsave.cfg_text(self.read_config(), mode, values)
        cfgsave.save(cfgsave.BoardFiles(), text, CONFIG_FILE)
        del cfgsave
        _forget("hallclock_fw.hw.cfgsave")  # only for the save
        _forget("hallclock_fw.hw.config")  # boot-only again
        _forget("hallclock_fw.names")

    def session_id(self):
        return "".join("%02x" % b for b in os.urandom(4))

    def console(self, text):
        sys.stdout.write(text + "\r\n")

    def set_brightness(self, level):
        for d in self.displays:
            d.set_brightness(level)

    # -- the watchdog and the clock's own figures (docs/hardware.md) ----------
    def watchdog(self, ms):
        """The hardware watchdog, started: the loop feeds it every pass; a
        pass that hangs for ``ms`` restarts the board.  Once started it
        cannot be stopped (ESP32 task watchdog)."""
        self.wdt = machine.WDT(timeout=ms)
        return self.wdt

    def watchdog_off(self):
        """The console is handed back (M frame): a timer feeds the watchdog
        from now on, so the REPL and mpremote are not reset under a person."""
        wdt = self.wdt
        if wdt is None:
            return
        self.wdt_timer = machine.Timer(0)
        self.wdt_timer.init(period=1000, callback=lambda _t: wdt.feed())

    def heap_figures(self):
        """(largest free GC block, IDF heap free, its largest free block).  The
        port tells no largest free GC block (-1); gc.mem_free() on 1.22+
        already counts the largest IDF block (docs/micropython.md)."""
        try:
            import esp32
            free = 0
            largest = 0
            for _total, f, big, _min in esp32.idf_heap_info(esp32.HEAP_DATA):
                free += f
                if big > largest:
                    largest = big
            return -1, free, largest
        except (ImportError, AttributeError):
            return -1, -1, -1

    def info_text(self):
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


def reset():
    machine.reset()
