"""Fake hardware for the virtual device: pins, PWM, displays and a UART that
are plain objects, so the real drivers run on them unchanged."""


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

    CHARS = "0123456789- P"

    def __init__(self):
        self.text = "    "
        self.updates = 0

    def show(self, digits, colon):
        chars = self.CHARS
        t = chars[digits[0]] + chars[digits[1]] + (":" if colon else " ")
        self.text = t + chars[digits[2]] + chars[digits[3]]
        self.updates += 1


class FakeUART:
    """Bytes in from the host (``feed``), bytes out to it (``take``)."""

    def __init__(self):
        self.inbox = bytearray()
        self.outbox = bytearray()

    def any(self):
        return len(self.inbox)

    def readinto(self, buf):
        n = min(len(buf), len(self.inbox))
        if not n:
            return None
        buf[:n] = self.inbox[:n]
        self.inbox = self.inbox[n:]
        return n

    def write(self, data):
        self.outbox.extend(data)
        return len(data)

    def feed(self, data):
        self.inbox.extend(data)

    def take(self):
        data = bytes(self.outbox)
        self.outbox = bytearray()
        return data


class SimClock:
    def __init__(self, now):
        self.now = now
