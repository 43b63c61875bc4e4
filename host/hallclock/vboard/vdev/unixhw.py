"""The virtual device as its own MicroPython process (the unix port,
``--interpreter micropython-unix``): the firmware's own ``hw/device.py``
program (``start`` and ``loop``, with its GC policy) on a hardware object
whose pins, outputs and displays are the fakes of ``fakes.py`` and whose link
is a pty (or serial port) this process opens itself.

Simulated time, as the one pump's ``SimPace`` (``pump.py``) gives a Runner;
here the firmware's own loop drives and calls ``wait(due)``, which moves the
bytes between the firmware's UART buffer (the strict console of
``fakes.FakeUART``) and the line, then jumps simulated time to the next
deadline, button edge, host byte or scenario action -- no faster than real
time while events wait for the host's acknowledgement (``Runner.pace``).
After the scenario's ``end`` time runs at the real rate until the host has
every event.  Runs only on the MicroPython unix port (``select.poll`` on a file,
``termios``); CPython never imports it.
"""
import gc
import micropython
import select
import sys
import time

from hallclock_fw.hw import device

from . import scenariofile
from .fakes import PowerCut
from .runner import CRASH_RESET_MS, HostSilence, Runner

EXIT_SILENT = 3  # the host was silent for silence_ms
EXIT_MEMORY = 4  # MemoryError: the heap is too small
_LINE_BUFFER = 1024  # bytes the line holds for a host that does not read
_BALLAST_PIECES = 2048  # pieces of the ballast at most (fill_heap)
_SWEPT = 512  # X (see account_pass) grew this much in a pass: a collection swept


class Done(Exception):
    """The scenario has ended and the host has every event."""


class Silent(Exception):
    """No byte from the host for ``silence_ms`` while events waited for it."""


class Rebooted(Exception):
    """A ``reboot`` action: the loop starts again with the new App."""


class WatchdogReset(BaseException):
    """The fake watchdog fired (no firmware ``except Exception`` catches it)."""


class UnixHW(Runner):
    """The hardware object of hw/device.py (panel, uart, ticks_ms, wait, ...)
    around the scenario Runner's fake pins and schedule."""

    def __init__(self, link, mode, settings, actions, clock, sid, start_ticks=0,
                 period=None, silence_ms=30000, account=False, word_scale=1.0, harness=0,
                 board_free=None):
        self.line = link
        self.poller = select.poll()
        self.poller.register(link, select.POLLIN)
        self.rxbuf = bytearray(256)
        self.pending_out = b""
        self.silence = HostSilence(silence_ms)
        self.last_real = time.ticks_ms()
        self.booted = 0
        self.panel = None
        self.reserve = None
        self.default_clock = clock
        # heap accounting per pass (tests, bench): see account_pass
        self.account = account
        self.pass_start = 0
        self.pass_runs = 0
        self.prev_total = micropython.mem_total()
        self.since_collect = 0  # bytes allocated since the loop's last collection
        self.gross_max = 0
        self.pass_x = 0
        self.auto_collections = 0  # passes in which a collection swept garbage
        self.rounding_max = 0  # the largest change of X without one (block rounding)
        self.min_free = 1 << 30
        self.own_collections = 0
        self.high_water = 0
        self.max_pass_alloc = 0
        self.longest_collect_us = 0
        self.collect_total_us = 0  # the loop's collections (no list: it would take heap)
        self.collect_n = 0
        self.wdt = None
        self.watchdog_resets = 0
        self.crash_resets = 0
        from hallclock_fw.hw.boot import GC_THRESHOLD  # (device.start drops it again)
        self.gc_threshold = int(GC_THRESHOLD * word_scale) + harness
        self.harness_gc = harness
        self.board_free = board_free
        self.ballast = None
        Runner.__init__(self, mode, settings, actions, clock=clock, sid=sid,
                        start_ticks=start_ticks, period=period)

    def make_displays(self):
        """The real TM1637 driver on fake pins, as on the board (its path
        allocates nothing; FakeDisplay's text would), no bit delay."""
        from hallclock_fw.hw.tm1637 import TM1637

        from .fakes import FakePin
        return tuple(TM1637(FakePin(), FakePin(), delay_us=0) for _ in range(2))

    # -- hw/device.py's hardware object ------------------------------------
    def _boot(self, now):
        if self.ballast:  # a reset: the board's whole heap is the new boot's
            self.ballast = None
            gc.collect()
        from hallclock_fw.hw.panel import build_panel
        self.panel = build_panel(self.pins, self.buzzer, self.leds, self.hall,
                                 self.displays, now)
        self.panel.buttons.arm()
        if self.reserve is not None:
            self.reserve = None
            gc.collect()
        self.booted += 1
        self.app = device.start(self)
        gc.collect()
        if self.board_free is not None:
            self.fill(self.board_free)
        self.heap_after_start = gc.mem_alloc()
        self.modules_after_start = sorted(m for m in sys.modules if m.startswith("hallclock_fw"))
        # boot ended with a collection (device.start's, and the one above): count from here
        self.prev_total = micropython.mem_total()
        self.since_collect = 0
        self.mark_pass()

    def fill(self, free):
        """The heap of a board (``fill_heap``): the ballast is kept here."""
        self.ballast = fill_heap(free, self.harness_gc)

    def ticks_ms(self):
        wdt = self.wdt
        if wdt is not None and wdt.expired():
            self.wdt = None
            raise WatchdogReset()
        return self.now()

    # -- the watchdog, the clock's figures (hw/device.py's optional parts) ---
    def watchdog(self, ms):
        from .fakes import FakeWDT
        self.wdt = FakeWDT(self.now, ms)
        return self.wdt

    def watchdog_off(self):
        self.wdt = None  # the board's timer feeds it while the REPL has the console

    def heap_figures(self):
        """The largest free block (bisected: the board cannot tell it); no IDF
        heap on the unix port.  The bisection's allocations and sweep are the
        harness's, kept out of the pass's accounting."""
        largest = largest_free()
        if self.account:
            self.pass_x = micropython.mem_current() - gc.mem_alloc()
            self.prev_total = micropython.mem_total()
        return largest, -1, -1

    def info_text(self):
        v = sys.implementation.version
        return "mp=%d.%d.%d;port=unix" % (v[0], v[1], v[2])

    def arm_fault(self):
        """A ``hang`` or ``crash`` action: the firmware's next pass fails in
        its core's tick -- it spins reading the time until the watchdog fires,
        or raises."""
        fault = self.fault
        self.fault = None
        core = self.app.core
        if fault == "hang":
            def tick(now):
                while True:
                    self.ms += 1
                    self.ticks_ms()
        else:
            def tick(now):
                raise RuntimeError("a fault injected by the scenario's crash")
        core.tick = tick

    def reboot(self):
        """A ``reboot`` action: leave the loop first (its frame holds the old
        App), so the new App is built on a heap the old one no longer holds,
        as after a board's reset."""
        raise Rebooted()

    def reboot_now(self):
        # The old App may still be seen by the conservative collector (a
        # stale slot of the caller's frame): take its big parts apart, as the
        # reset does with all of it.
        old = self.app
        self.app = None
        if old is not None:
            old.link.ring = None
            old.link = None
            old.core = None
            if old.setup is not None or self.flash is not None:
                from .flash import forget_transient
                forget_transient()  # set-up's modules: a power cut came in its save
            old.setup = None
        old = None
        gc.collect()
        # A board's reset wipes the heap; here the old App's blocks are free
        # but the harness's objects stay between them.  Keep the largest free
        # block (the old event ring's) for the new App, as a reset would: the
        # new panel is built around it, and it is given back just before.
        self.reserve = bytearray(largest_free())
        Runner.reboot(self)
        self._apply()  # the rest of what is due at this time, on the new App

    def read_config(self):
        if self.flash is not None and self.flash.files:  # set-up saved (vdev/flash.py)
            return Runner.read_config(self)
        from hallclock_fw import settings as settings_mod
        lines = ["clock = " + self.clock_name, "mode = " + self.mode]
        text = settings_mod.format_text(self.mode, self.settings)
        lines.extend(p for p in text.split(";") if p)
        return "\n".join(lines) + "\n"

    def session_id(self):
        return self.sid

    def console(self, text):
        sys.stderr.write(text + "\n")

    def set_brightness(self, level):
        for d in self.displays:
            d.set_brightness(level)

    # -- heap accounting ------------------------------------------------------
    def mark_pass(self):
        if self.account:
            self.pass_start = gc.mem_alloc()
            self.pass_runs = device.GC[0]
            self.pass_x = micropython.mem_current() - self.pass_start

    def account_pass(self):
        """After a pass (and the loop's own idle collection, if any): did a
        collection the loop did not start fall inside the pass?

        ``micropython.mem_current()`` counts the bytes allocated less those
        freed explicitly (``m_free``: call states, reallocations); a
        collection's sweep frees blocks without it.  ``gc.mem_alloc()`` counts
        the blocks in use.  So ``X = mem_current - mem_alloc`` changes within
        a pass only by block rounding (tens of bytes) -- unless a collection
        swept garbage, which makes it jump by what it swept.  A pass whose X
        grew by more than ``_SWEPT`` saw a collection; the loop's own one comes
        after the pass (``device.GC[1]`` is the heap just before it).

        Also kept: the bytes allocated between two of the loop's collections
        (``micropython.mem_total()``, every allocation, the harness's included),
        against ``gc.threshold()``."""
        cur = micropython.mem_current()
        total = micropython.mem_total()
        used = gc.mem_alloc()
        self.since_collect += total - self.prev_total
        self.prev_total = total
        gross = self.since_collect
        if device.GC[0] != self.pass_runs:
            self.own_collections += device.GC[0] - self.pass_runs
            end = device.GC[1]  # the heap just before the loop collected
            self.since_collect = 0
        else:
            end = used
        dx = (cur - end) - self.pass_x
        if dx > _SWEPT:
            self.auto_collections += 1
        elif dx > self.rounding_max:
            self.rounding_max = dx
        if gross > self.gross_max and not self.ended:  # the game, not the wait after it
            self.gross_max = gross
        if end - self.pass_start > self.max_pass_alloc:
            self.max_pass_alloc = end - self.pass_start
        if end > self.high_water:
            self.high_water = end
        free = gc.mem_free()
        if free < self.min_free:
            self.min_free = free

    def report(self):
        from hallclock_fw.hw.device import GC
        return {"own_collections": self.own_collections, "loop_collections": GC[0],
                "auto_collections": self.auto_collections, "rounding_max": self.rounding_max,
                "gross_max": self.gross_max, "min_free": self.min_free,
                "high_water": self.high_water,
                "max_pass_alloc": self.max_pass_alloc, "passes": self.passes,
                "heap_after_start": self.heap_after_start, "heap_total": gc.mem_free() +
                gc.mem_alloc(), "longest_collect_us": self.longest_collect_us,
                "mean_collect_us": self.collect_total_us // (self.collect_n or 1),
                "threshold": gc.threshold(), "firmware_from": device.__file__,
                "modules_after_start": self.modules_after_start,
                "free_end": gc.mem_free(), "alloc_end": gc.mem_alloc(),
                "largest_free_end": largest_free(),
                "watchdog_resets": self.watchdog_resets, "crash_resets": self.crash_resets}

    # -- the line ------------------------------------------------------------
    def _write(self):
        out = self.pending_out
        if self.uart.outbox:
            out = self.uart.take() if not out else out + self.uart.take()
        if out:
            n = self.line.write(out)
            if n:  # (none taken, a full line: no copy, the waits spin on it)
                out = out[n:] if n < len(out) else b""
            if len(out) > _LINE_BUFFER:  # nobody reads: the USB bridge drops the rest
                out = out[:_LINE_BUFFER]
        self.pending_out = out

    def flush(self, limit_ms=2000):
        """Send what is left (the firmware's last words) before stopping."""
        t0 = time.ticks_ms()
        while True:
            self._write()
            if not self.pending_out or time.ticks_diff(time.ticks_ms(), t0) > limit_ms:
                return
            self._read(20)

    def _read(self, ms):
        # no for loop: its frame would not fit the C stack and every call (the
        # waits spin on it) would take heap the loop's collections must count
        ready = next(self.poller.ipoll(ms), None)
        if ready is None or not ready[1] & select.POLLIN:
            return False
        rx = self.rxbuf
        n = self.line.readinto(rx)
        if not n:
            return False
        self.uart.feed(rx[:n])
        self.silence.heard(time.ticks_ms())
        return True

    def wait(self, due):
        """After a pass: move time on as the pump's ``SimPace`` does for the
        Runner (pace, host bytes, the real-time wait after the end), then what
        is due at the new time.  Raises Done when the host has every event."""
        if self.account:
            self.account_pass()
        self.last_ms = self.ms  # the pass just run
        self.passes += 1
        app = self.app
        if self.ended:
            status = 1 if app.idle() else 2  # DONE / WAITING (vdev.runner)
        else:
            status = 0
            self.ms = self._move_on(self._wake)
            self._wake = -1
        while True:
            self._write()
            got = self._read(0)
            if status == 1:  # ended, all acknowledged: flush and stop
                if not self.pending_out:
                    raise Done()
                self._read(20)
                continue
            real = time.ticks_ms()
            if self.silence.over(real, not app.link.all_acked()):
                raise Silent()
            if status == 2:  # after the end: real time
                if not got:
                    self._read(20)
                    real = time.ticks_ms()
                self.cap = None
                step = time.ticks_diff(real, self.last_real)
                self.ms += step if step > 0 else 1
                break
            self.pace(real)  # simulated time no faster than real while events wait
            cap = self.cap
            if cap is not None and self.ms > cap:
                if app.link.all_acked():
                    self.cap = None
                    self._anchor = None
                elif not self.uart.waiting():
                    self.last_real = real
                    if not got:
                        self._read(5)
                    continue
            cap = self.cap
            if cap is not None and self.ms > cap:  # host bytes wake the loop now
                self._wake = self.ms  # (Runner._move_on)
                self.ms = cap if cap > self.last_ms else self.last_ms
            break
        self.last_real = real
        self.last_ms = self.ms
        self.clock.now = self.now()
        self._apply()  # may raise Rebooted
        if self.fault is not None:
            self.arm_fault()
        self.mark_pass()


def fill_heap(free, harness_gc):
    """The heap of a board: all of this process's free heap but ``free``
    (the board's, after boot, on this port's sizes) and the harness's
    garbage room ``harness_gc`` is taken by a ballast, which is returned
    (keep it).  MemoryError if the firmware after boot does not fit the
    board's heap at all.  The serial device (UnixHW) and the network one
    (netpump.main) both hold their clock to the board's heap here.

    What is left free is in few large blocks, as on a board after boot (its
    heap filled from one end): the ballast first takes every free block it
    can get, the largest first, down to the smallest holes, then gives back
    its largest pieces until ``free + harness_gc`` bytes are free again."""
    if free < 0:
        raise MemoryError("the firmware after boot needs %d bytes more than the heap"
                          % -free)
    gc.collect()
    keep = free + harness_gc
    if gc.mem_free() <= keep:
        return []
    # nothing below may allocate but the pieces (the heap is full): the list
    # of them is made first, indices are small ints, no range() iterator
    ballast = [None] * _BALLAST_PIECES
    n = 0
    size = gc.mem_free()
    while size >= 16 and n < _BALLAST_PIECES:
        try:
            ballast[n] = bytearray(size)
            n += 1
        except MemoryError:
            size //= 2
    given = 0
    while n and given < keep:
        big = 0  # the largest piece
        i = 1
        while i < n:
            if len(ballast[i]) > len(ballast[big]):
                big = i
            i += 1
        k = len(ballast[big]) + 16
        n -= 1
        ballast[big] = ballast[n]
        ballast[n] = None
        if given + k > keep:  # give back only part of it: the rest taken again,
            gc.collect()  # where it was (every other hole is the ballast's)
            rest = given + k - keep - 16
            if rest >= 16:
                ballast[n] = bytearray(rest)
                n += 1
        given += k
    gc.collect()
    return ballast


def largest_free():
    """The largest block the heap can still give (bisected with allocations):
    fragmentation, next to ``gc.mem_free()``."""
    gc.collect()
    lo, hi = 0, gc.mem_free()
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            b = bytearray(mid)
            del b
            lo = mid
        except MemoryError:
            hi = mid - 1
    gc.collect()
    return lo


def open_line(path_or_fd):
    """The link: a port path this process opens (raw, reads that never block),
    or a file descriptor handed over by the host tool (a pty's master end)."""
    if isinstance(path_or_fd, int):
        return open(path_or_fd, "r+b")
    f = open(path_or_fd, "r+b")
    import termios
    termios.setraw(f.fileno())
    attrs = termios.tcgetattr(f.fileno())
    cc = attrs[6]
    cc[6] = 0  # VMIN: a read returns what is there ...
    cc[5] = 0  # VTIME: ... at once
    termios.tcsetattr(f.fileno(), termios.TCSANOW, attrs)
    return f


def _timed_collect(hw):
    """The firmware's idle collection, timed (the longest ``gc.collect()``)."""
    inner = device.idle_collect

    def idle_collect(now, due, events=0):
        t0 = time.ticks_us()
        done = inner(now, due, events)
        if done:
            t = time.ticks_diff(time.ticks_us(), t0)
            hw.collect_total_us += t
            hw.collect_n += 1
            if t > hw.longest_collect_us:
                hw.longest_collect_us = t
        return done
    device.idle_collect = idle_collect


def main(link, scenario, clock, sid, start_ticks=0, period=None,
         silence_ms=30000, account=False, gc_policy="firmware", word_scale=1.0, harness=0,
         board_free=None):
    """Run the scenario to its end; exit code 0 (the host has every event),
    EXIT_SILENT or EXIT_MEMORY.  With ``account`` a line ``@@ {json}`` with the
    heap figures goes to stdout at the end."""
    try:
        mode, settings, actions = scenariofile.load(scenario)
        gc.collect()
        hw = UnixHW(open_line(link), mode, settings, actions, clock, sid,
                    start_ticks=start_ticks, period=period, silence_ms=silence_ms,
                    account=account, word_scale=word_scale, harness=harness,
                    board_free=board_free)
        if account:
            _timed_collect(hw)
        if gc_policy == "off":  # the control: collections where they fall
            device.idle_collect = lambda now, due, events=0: False
            gc.threshold(4096)
        hw._apply()  # what is due at ms 0 (as the Runner's first step)
        if hw.fault is not None:
            hw.arm_fault()
        while True:
            try:
                device.loop(hw, hw.app)
            except Rebooted:
                hw.reboot_now()
                continue
            except WatchdogReset:  # a pass hung: the watchdog restarts the board
                hw.watchdog_resets += 1
                hw.reboot_now()
                continue
            except PowerCut:  # set-up's save was cut (fakes.FakeFlash)
                hw.reboot_now()
                continue
            except Done:
                break
            except (MemoryError, Silent):
                raise
            except Exception as e:  # as main.py: the traceback, 3 s, machine.reset()
                sys.print_exception(e, sys.stderr)
                hw.crash_resets += 1
                hw.ms += CRASH_RESET_MS
                hw.reboot_now()
                continue
            # the loop returned: the host took the console (M frame)
            device.hand_back(hw.uart)
            hw.flush()
            break
    except Silent:
        sys.exit(EXIT_SILENT)
    except MemoryError as e:
        sys.print_exception(e, sys.stderr)
        sys.stderr.write("@@memory\n")
        sys.exit(EXIT_MEMORY)
    if account:
        report = hw.report()  # (the fragmentation figures with the ballast in place)
        hw.ballast = None  # the harness's own last words need room
        gc.collect()
        import json
        print("@@ " + json.dumps(report))
