"""hallclock firmware: pure clock rules (core/), the wire protocol, the device
app, and the hardware layer (hw/, the only part that imports ``machine``)."""
VERSION = "0.1.0"

try:
    import micropython  # noqa: F401  (MicroPython: the real module)
except ImportError:  # CPython (virtual device, tests): what the firmware uses of it
    # (no new names: each is an interned string on the board, even here)
    import sys

    sys.modules["micropython"] = type(sys)("micropython")
    sys.modules["micropython"].const = lambda value: value
