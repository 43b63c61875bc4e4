# pyright: reportUndefinedVariable=false
# (include/package are given by MicroPython's manifest tool)
# Frozen-module manifest (docs/hardware.md, "ROMFS"): build the esp32 port with
#   make BOARD=ESP32_GENERIC FROZEN_MANIFEST=/path/to/hallclock/firmware/manifest.py
# and the clock's firmware runs from flash, like a ROMFS image, on a board
# whose partition table has no ROMFS partition.  main.py stays a file on the
# board's filesystem (make deploy copies it).
include("$(PORT_DIR)/boards/manifest.py")
package("hallclock_fw")  # firmware/hallclock_fw, relative to this file
