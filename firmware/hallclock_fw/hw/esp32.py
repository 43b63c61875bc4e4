"""The real hardware (with hw/esp32rare.py, its parts that run once or
rarely, the only modules besides hw/wifi.py that import ``machine``).

The ESP32 object: the panel built from ``board.py`` (esp32rare.build), the
link to the host and the loop's sleep; hallclock.cfg, the watchdog and the
versions through esp32rare, imported for each call and dropped again.

The link is the DevKit's USB serial port, i.e. the MicroPython console on
UART0, used through ``sys.stdin.buffer``/``sys.stdout.buffer`` with
``select.poll`` (see docs/hardware.md): taking UART0 over with ``machine.UART``
would cut off the REPL, and with it ``mpremote`` (``make deploy``).  Frames
are printable ASCII, but line noise is not: one flipped bit turns ``C`` (0x43)
into 0x03, which the port's UART interrupt turns into a KeyboardInterrupt.  So
the clock runs with ``micropython.kbd_intr(-1)`` (hw/device.py) and hands the
console back on the host's ``M`` frame (docs/protocol.md "Maintenance").
"""
import sys
import time

import machine
import micropython
import select
from micropython import const

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


def load(name):
    """The function ``name`` of hw/esp32rare.py: the module imported for
    this one call and dropped again (its bytecode would take heap the whole
    game).  (``load``: a name the port has already, none more interned.)"""
    from . import esp32rare
    from ..forget import forget
    fn = getattr(esp32rare, name)
    del esp32rare
    forget("hallclock_fw.hw.esp32rare")
    forget("hallclock_fw.hw.board")  # the pin numbers: read by esp32rare.start only
    return fn


class ESP32:
    """The hardware object ``device.run`` takes (see hw/device.py).  What a
    clock runs every pass or every health report is here; what it runs once
    or rarely is in hw/esp32rare.py, imported for the call."""

    def __init__(self):
        self.panel, self.displays, self.default_clock = load("start")()
        self.uart = StdioLink()
        self.wdt = None

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

    def console(self, text):
        sys.stdout.write(text + "\r\n")

    def set_brightness(self, level):
        for d in self.displays:
            d.set_brightness(level)

    # -- once or rarely: hw/esp32rare.py ---------------------------------------
    def read_config(self):
        return load("read_config")(self)

    def save_settings(self, mode, settings_text):
        """hallclock.cfg saved (set-up, the host's settings): hw/cfgsave.py,
        imported for the save alone (not hw/esp32rare.py, whose code is larger,
        on a Wi-Fi clock's heap at that moment)."""
        from . import cfgsave
        from ..forget import forget
        cfgsave.save_settings(cfgsave.BoardFiles(), mode, settings_text)
        del cfgsave
        forget("hallclock_fw.hw.cfgsave")

    def use_network(self, cfg):
        load("use_network")(self, cfg)

    def session_id(self):
        return load("session_id")(self)

    def watchdog(self, ms):
        return load("watchdog")(self, ms)

    def watchdog_off(self):
        load("watchdog_off")(self)

    def info_text(self):
        return load("info_text")(self)

    # -- every health report (docs/hardware.md) --------------------------------
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


def reset():
    machine.reset()
