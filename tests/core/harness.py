"""Helpers for the pure-core tests.  Everything under tests/core/ is plain
MicroPython-compatible Python (no pytest imports, no fixtures): pytest runs
it under CPython, and tests/test_core_micropython.py runs the very same test
functions inside a real MicroPython VM."""
from hallclock_fw.core.timing import ticks_add, ticks_diff
from hallclock.catalog import EVENTS

WRAP_START = (1 << 30) - 5000  # ticks 5 s below the wrap


class Recorder:
    """An ``emit`` that keeps (t_ms since base, name, fields dict) per event."""

    def __init__(self, base):
        self.base = base
        self.events = []

    def __call__(self, code, now, v0, v1, v2, v3):
        name, fields = EVENTS[code]
        vals = (v0, v1, v2, v3)
        d = {}
        for i in range(len(fields)):
            if fields[i][1] == "r" and vals[i] == 0:
                continue  # as the catalogue: no reason given, no field
            d[fields[i][0]] = vals[i]
        self.events.append((ticks_diff(now, self.base), name, d))

    def names(self):
        return [e[1] for e in self.events]

    def of(self, name):
        return [e for e in self.events if e[1] == name]

    def clear(self):
        self.events = []


class Sim:
    """Drives a core in simulated time: ``at(ms)`` is ticks ``base + ms``."""

    def __init__(self, core_class, settings, base=0):
        self.base = base
        self.rec = Recorder(base)
        self.core = core_class(settings, self.rec)
        self.ms = 0

    def t(self, ms):
        return ticks_add(self.base, ms)

    def run_to(self, ms, period=None):
        """Tick the core up to ``ms``: event-driven (jump from deadline to
        deadline) or every ``period`` ms."""
        guard = 0
        while True:
            guard += 1
            assert guard < 1000000, "the core keeps asking for a tick at the same time"
            if period is None:
                due = self.core.next_deadline(self.t(self.ms))
                if due is None:
                    break
                nxt = self.ms + ticks_diff(due, self.t(self.ms))
                if nxt > ms:
                    break
                self.ms = nxt if nxt > self.ms else self.ms
            else:
                nxt = self.ms + period
                if nxt > ms:
                    break
                self.ms = nxt
            self.core.tick(self.t(self.ms))
        self.ms = ms
        self.core.tick(self.t(ms))

    def press(self, ms, code):
        self.run_to(ms)
        self.core.button(code, self.t(ms))
