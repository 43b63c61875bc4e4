"""hallclock firmware: pure clock rules (core/), the wire protocol, the device
app, and the hardware layer (hw/, the only part that imports ``machine``)."""
VERSION = "0.1.0"

try:
    import micropython  # noqa: F401  (MicroPython: the real module)
except ImportError:  # CPython (virtual device, tests): what the firmware uses of it
    import sys
    import types

    _mp = types.ModuleType("micropython")
    _mp.const = lambda value: value
    _mp.native = _mp.viper = lambda func: func
    _mp.schedule = lambda func, arg: func(arg)
    sys.modules["micropython"] = _mp
