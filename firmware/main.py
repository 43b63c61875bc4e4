"""On the board: build the hardware, read hallclock.cfg, run the clock.

Kept tiny on purpose: MicroPython runs main.py from source at every boot, so
everything else lives in the precompiled package (hallclock_fw/hw/device.py).
"""
import sys
import time

from hallclock_fw.hw import device, esp32

try:
    device.run(esp32.ESP32())  # returns when the host takes the console (M frame)
except KeyboardInterrupt:  # Ctrl-C before the clock runs (the keyboard interrupt is
    raise                  # off while it does: docs/hardware.md "The console")
except Exception as e:  # a bug must not leave a silent clock: report, restart
    sys.print_exception(e)
    time.sleep_ms(3000)
    esp32.reset()
