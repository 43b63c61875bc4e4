"""Fake hardware for the virtual device: pins, PWM, displays and a UART that
are plain objects, so the real drivers run on them unchanged."""
from hallclock_fw.display import CHARS


class FakePin:
    IRQ_FALLING = 2
    IRQ_RISING = 1

    def __init__(self, level=1):
        self.level = level
        self.handler = None
        self.trigger = 0

    def value(self, v=None):
        if v is None:
            return self.level
        v = 1 if v else 0
        changed = v != self.level
        self.level = v
        if changed and self.handler is not None:
            self.handler(self)
        return None

    def irq(self, trigger=0, handler=None):
        self.trigger = trigger
        self.handler = handler


class FakeOutput:
    """Records every on/off of a PWM or lamp pin as (tick, freq or 0)."""

    def __init__(self, clock):
        self.clock = clock
        self.level = 0
        self._freq = 1000
        self.changes = []
        self.record = False

    # PWM interface
    def freq(self, f=None):
        if f is None:
            return self._freq
        self._freq = f
        return None

    def duty_u16(self, d=None):
        if d is None:
            return 32768 if self.level else 0
        self._set(1 if d else 0)
        return None

    # Pin interface
    def value(self, v=None):
        if v is None:
            return self.level
        self._set(1 if v else 0)
        return None

    def _set(self, level):
        if level != self.level:
            self.level = level
            if self.record:
                self.changes.append((self.clock.now, self._freq if level else 0))


class FakeDisplay:
    """A 4-digit display that keeps what it shows as text, e.g. ' 1:59'."""

    # display.py's codes as characters, in bytes: a MicroPython str's item is interned
    CHARS = CHARS.encode()

    def __init__(self):
        self.text = "    "
        self.updates = 0

    def show(self, digits, colon):
        chars = self.CHARS
        self.text = bytes((chars[digits[0]], chars[digits[1]], 58 if colon else 32,
                           chars[digits[2]], chars[digits[3]])).decode()
        self.updates += 1


# The ESP32 port's console input (MicroPython ports/esp32/mphalport.c:
# ``static uint8_t stdin_ringbuf_array[260]``): a py/ringbuf.h ring, which keeps
# one slot free, so 259 bytes wait at most; ``ringbuf_put`` refuses the rest
# and the UART interrupt (ports/esp32/uart.c ``uart_irq_handler``, the same in
# usb_serial_jtag.c) ignores the refusal: they are dropped without a trace.
CONSOLE_RING = 260
CONSOLE_HOLDS = CONSOLE_RING - 1
CTRL_C = 3


class FakeUART:
    """The board's console as the link sees it: bytes in from the host
    (``feed``), bytes out to it (``take``), and exactly as strict as the ESP32's
    (docs/micropython.md "The console"):

    - input waits in a ring of ``CONSOLE_HOLDS`` bytes; what arrives while it
      is full is dropped (counted in ``dropped``, which the board cannot do);
    - a byte equal to the interrupt character (3 until ``kbd_intr(-1)``) is
      never stored: like ``mp_sched_keyboard_interrupt`` it makes the
      firmware's next call into the console raise ``KeyboardInterrupt``.

    Bytes the host wrote since the device's last pass arrive at once (the
    pump hands them over between passes).
    """

    def __init__(self):
        self.ring = bytearray(CONSOLE_RING)  # py/ringbuf.h: iget == iput is empty
        self.iget = 0
        self.iput = 0
        self.outbox = bytearray()
        self.intr_char = CTRL_C  # a board boots with Ctrl-C on
        self.interrupt = False  # a KeyboardInterrupt is scheduled
        self.dropped = 0
        self.interrupts = 0

    def _check(self):
        if self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt()

    def waiting(self):
        """Bytes in the ring (for the simulation; the firmware calls ``any``)."""
        return (self.iput - self.iget) % CONSOLE_RING

    def any(self):
        self._check()
        return (self.iput - self.iget) % CONSOLE_RING

    def readinto(self, buf):
        self._check()
        n = 0
        size = len(buf)
        ring = self.ring
        while n < size and self.iget != self.iput:
            buf[n] = ring[self.iget]
            self.iget = (self.iget + 1) % CONSOLE_RING
            n += 1
        return n if n else None

    def write(self, data):
        self._check()
        self.outbox.extend(data)
        return len(data)

    def kbd_intr(self, char):
        """``micropython.kbd_intr``: -1 turns Ctrl-C off, 3 on again."""
        self.intr_char = char

    def feed(self, data):
        """Bytes arriving on the line (the UART interrupt's work)."""
        intr = self.intr_char
        ring = self.ring
        for b in data:
            if b == intr:
                self.interrupt = True
                self.interrupts += 1
                continue
            nxt = (self.iput + 1) % CONSOLE_RING
            if nxt == self.iget:  # full: ringbuf_put refuses, the byte is gone
                self.dropped += 1
            else:
                ring[self.iput] = b
                self.iput = nxt

    def take(self):
        data = bytes(self.outbox)
        self.outbox = bytearray()
        return data

    def reset(self):
        """Power lost: what waited is gone, Ctrl-C is on again (the firmware
        turns it off when it starts the clock)."""
        self.iget = self.iput = 0
        self.outbox = bytearray()
        self.intr_char = CTRL_C
        self.interrupt = False


class PowerCut(Exception):
    """The virtual board's power failed in the middle of a flash write."""


class SimClock:
    def __init__(self, now):
        self.now = now


class FakeWDT:
    """machine.WDT on the virtual board: ``feed()`` by the loop; ``expired()``
    once ``timeout_ms`` of the board's (simulated) time passed without one --
    the harness then restarts the board, as the real watchdog does."""

    def __init__(self, ticks_ms, timeout_ms):
        self.ticks_ms = ticks_ms
        self.timeout_ms = timeout_ms
        self.fed = ticks_ms()

    def feed(self):
        self.fed = self.ticks_ms()

    def expired(self):
        from hallclock_fw.core.timing import ticks_diff
        return ticks_diff(self.ticks_ms(), self.fed) > self.timeout_ms
