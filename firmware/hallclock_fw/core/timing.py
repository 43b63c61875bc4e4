"""Tick arithmetic: the only place that knows how ticks wrap.

On MicroPython these are the VM's own ``time.ticks_add``/``time.ticks_diff``
(ticks wrap at 2**30 ms on the ESP32).  Under CPython (the virtual device and
the tests) the same arithmetic is given here, with the same 2**30 period, so
the clock cores see identical values on every interpreter.

Every other module handles tick values only through these two functions:
never ``+``, ``-`` or ``<`` on a tick value.
"""
# pyright: reportAssignmentType=false
# (the CPython fallback below has its own signatures; timing.pyi types both as int)
from micropython import const

_MASK = const((1 << 30) - 1)  # ticks wrap at 2**30 (no interned name: const)
_HALF = const(1 << 29)

try:
    from time import ticks_add, ticks_diff  # MicroPython
except ImportError:  # CPython: same semantics as the ESP32 port
    def ticks_add(ticks, delta):
        return (ticks + delta) & _MASK

    def ticks_diff(due, now):  # (the names: interned on the board anyway)
        return ((due - now + _HALF) & _MASK) - _HALF

TICKS_MAX = _MASK


def earliest(now, a, b):
    """The sooner of two deadlines (either may be None) as seen from ``now``."""
    if a is None:
        return b
    if b is None:
        return a
    return a if ticks_diff(a, now) <= ticks_diff(b, now) else b
