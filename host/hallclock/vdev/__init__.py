"""The virtual device: the real firmware App and drivers on fake pins, time and
UART.  Everything in this package is MicroPython-compatible, because the same
code also runs inside the MicroPython VM (``--interpreter micropython``)."""
