"""TM1637 4-digit 7-segment display, bit-banged on two pins, allocation-free.

Takes two Pin objects (CLK, DIO), already set up by the caller as open-drain
outputs with pull-ups (the modules also carry their own): ``value(1)`` releases
the line, ``value(0)`` pulls it low, so the chip can pull DIO low to acknowledge
each byte without fighting the ESP32.

The protocol (TM1637 datasheet): start = DIO falls while CLK is high; a byte
goes out least significant bit first, each bit set while CLK is low and read by
the chip on CLK's rising edge; a ninth clock is the chip's acknowledge (DIO
released); stop = DIO rises while CLK is high.  One ``show`` sends
  [start] 0x40 [stop]                  data command: write, auto-increment
  [start] 0xC0 d0 d1 d2 d3 [stop]      digits from address 0
  [start] 0x88|brightness [stop]       display on
"""
from micropython import const

import time


# CPython (tests): no need to wait for a fake pin
sleep_us = getattr(time, "sleep_us", lambda _us: None)

_CMD_DATA = const(0x40)
_CMD_ADDR = const(0xC0)
_CMD_CTRL = const(0x88)  # display on; low 3 bits = brightness 0-7
_SEG_COLON = const(0x80)  # the colon is bit 7 of the second digit

# segments (bit 0 = a ... bit 6 = g) of display.py's codes: 0-9, minus, blank, P, letters
SEGMENTS = (b"\x3f\x06\x5b\x4f\x66\x6d\x7d\x07\x7f\x6f\x40\x00\x73"
            # A b C d E F G H L n o r S t U y i c h (display.CHARS, from code 13)
            b"\x77\x7c\x39\x5e\x79\x71\x3d\x76\x38\x54\x5c\x50\x6d\x78\x3e\x6e\x04\x58\x74")


class TM1637:
    def __init__(self, clk, dio, brightness=7, delay_us=10):
        self.clk = clk
        self.dio = dio
        self.brightness = brightness & 7
        self.delay = delay_us
        self.segs = bytearray(4)
        clk.value(1)
        dio.value(1)

    # -- bits ----------------------------------------------------------------
    def _start(self):
        self.dio.value(0)
        sleep_us(self.delay)
        self.clk.value(0)
        sleep_us(self.delay)

    def _stop(self):
        self.dio.value(0)
        sleep_us(self.delay)
        self.clk.value(1)
        sleep_us(self.delay)
        self.dio.value(1)
        sleep_us(self.delay)

    def _byte(self, b):
        clk = self.clk
        dio = self.dio
        d = self.delay
        for _ in range(8):
            dio.value(b & 1)
            sleep_us(d)
            clk.value(1)
            sleep_us(d)
            clk.value(0)
            b >>= 1
        dio.value(1)  # release: the chip acknowledges by pulling DIO low
        sleep_us(d)
        clk.value(1)
        sleep_us(d)
        clk.value(0)
        sleep_us(d)

    def _command(self, cmd):
        self._start()
        self._byte(cmd)
        self._stop()

    # -- the display -----------------------------------------------------------
    def write(self, segs):
        """Send four raw segment bytes."""
        self._command(_CMD_DATA)
        self._start()
        self._byte(_CMD_ADDR)
        for i in range(4):
            self._byte(segs[i])
        self._stop()
        self._command(_CMD_CTRL | self.brightness)

    def show(self, digits, colon):
        """Show four digit codes (display.py: 0-9, 10 minus, 11 blank, 12 P, 13 on letters)."""
        segs = self.segs
        for i in range(4):
            code = digits[i]
            segs[i] = SEGMENTS[code] if 0 <= code < len(SEGMENTS) else 0
        if colon:
            segs[1] |= _SEG_COLON
        self.write(segs)

    def set_brightness(self, level):
        self.brightness = level & 7
        self._command(_CMD_CTRL | self.brightness)
