"""hallclock firmware: pure clock rules (core/), the wire protocol, the device
app, and the hardware layer (hw/, the only part that imports ``machine``)."""
VERSION = "0.1.0"

try:
    import micropython  # noqa: F401  (MicroPython: the real module)
except ImportError:  # CPython (virtual device, tests): what the firmware uses of it
    import sys
    import types

    _mp = types.ModuleType("micropython")
    _mp.__dict__.update(const=lambda value: value, native=lambda func: func,
                        viper=lambda func: func, schedule=lambda func, arg: func(arg))
    sys.modules["micropython"] = _mp
