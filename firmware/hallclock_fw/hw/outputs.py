"""Signal outputs: anything with ``on(freq)`` / ``off()`` for a PatternPlayer."""


class Buzzer:
    """A passive buzzer on a PWM channel."""

    def __init__(self, pwm):
        self.pwm = pwm
        self.pwm.duty_u16(0)

    def on(self, freq):
        self.pwm.freq(freq)
        self.pwm.duty_u16(32768)

    def off(self):
        self.pwm.duty_u16(0)


class Lamp:
    """An LED or the hall relay/MOSFET on a plain output pin (frequency unused)."""

    def __init__(self, pin):
        self.pin = pin
        self.pin.value(0)

    def on(self, _freq):
        self.pin.value(1)

    def off(self):
        self.pin.value(0)
