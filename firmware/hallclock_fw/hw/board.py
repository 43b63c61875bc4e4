"""Every pin of the clock, and nothing else (ESP32-WROOM-32 DevKit, GPIO numbers).

Chosen to be safe on the module: no strapping pin (0, 2, 5, 12, 15), no flash
pin (6-11), not the USB serial pins (1, 3: the link to the host), not the
input-only pins 34-39 (they have no internal pull-up), and not 16/17 (PSRAM on
WROVER modules, so the same wiring works on those boards).  The reasons for each
choice are in docs/hardware.md; hardware/diagram.json wires exactly these pins
(tests/test_hardware.py checks that they agree).
"""
from micropython import const

# Buttons: to GND, pulled up, in button-code order; RTC GPIOs (a deep sleep can wake on them)
BTN_A = const(32)
BTN_B = const(33)
BTN_PAUSE = const(25)
BTN_START = const(26)
BTN_GONG = const(27)
BUTTONS = (BTN_A, BTN_B, BTN_PAUSE, BTN_START, BTN_GONG)

# Passive buzzer on a PWM (LEDC) channel.
BUZZER = const(13)

# (private: no interned name on the board; hardware/headers.md names them without the _)
# Player LEDs (optical warnings, ČAS 16.8), through 330 ohm to GND.
_LED_A = const(4)
_LED_B = const(14)  # GPIO14 flickers during boot: harmless on an LED
LEDS = (_LED_A, _LED_B)

# Hall gong relay (high-level trigger): GPIO23 is quiet through reset and boot, no gong at power-on
HALL = const(23)

# TM1637 4-digit displays facing player A and player B (CLK, DIO).
_DISP_A_CLK = const(18)
_DISP_A_DIO = const(19)
_DISP_B_CLK = const(21)
_DISP_B_DIO = const(22)
DISPLAYS = ((_DISP_A_CLK, _DISP_A_DIO), (_DISP_B_CLK, _DISP_B_DIO))
