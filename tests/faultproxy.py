"""A bad serial line for tests: a proxy between two pty pairs.

    virtual device <-> [device pty] <-> FaultProxy <-> [logger pty] <-> hallclock log

The device writes and reads the master of the device pair (``device_fd``);
the logger opens ``path``, a symlink to the slave of the logger pair, exactly
as it would open a USB serial port.  In between the proxy can

- delay bytes (in order), drop, flip and duplicate single bytes, and add
  lines of noise (boot messages, REPL chatter): ``Faults``;
- cut the line for a while (everything in both directions is lost): ``cut``;
- unplug the logger's port: the pty goes away and ``path`` vanishes, and
  comes back later as a new pty: ``unplug``;
- cut the line by itself after the device has sent ``n`` lines:
  ``cut_after`` (so a test can kill the logger mid-session at a known point);
- throttle the line to a baud rate (``baud``: 10 bits a byte, both ways);
- sweep every byte value 0x00..0xff in turn into one direction, a line of a
  few bytes before each chunk (``Faults(sweep=n)``), or inject a burst once:
  ``inject``.

Every fault is counted in ``stats`` so a test can check it really happened.
"""
import errno
import os
import random
import select
import threading
import time
import tty

from hallclock.link.transport import read_fd

NOISE = (b"ets Jun  8 2016 00:22:57\r\n", b"rst:0x1 (POWERON_RESET),boot:0x13\r\n",
         b">>> ", b"MPY: soft reboot\r\n", b"\x00\xff\xfe garbage \x1b[0m\n",
         b"E 00000001 1 0 0 0 0 0 0*00000000\n", b"Traceback (most recent call last):\r\n")


def wait_for(cond, what, timeout=60.0, every=0.01):
    """Poll ``cond()`` until it is true; fail naming ``what`` after ``timeout``
    seconds (time.monotonic).  Tests wait on conditions like this, never on
    sleeps that guess how long another process or thread takes."""
    end = time.monotonic() + timeout
    while True:
        if cond():
            return
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:g} s waiting for: {what}")
        time.sleep(every)


class Faults:
    """Per-direction fault rates (per byte), delays in seconds, and the chance
    of a line of noise before a chunk (the first chunk always gets one)."""

    def __init__(self, drop=0.0, flip=0.0, dup=0.0, delay=(0.0, 0.0), noise=0.0, sweep=0,
                 split=False):
        self.drop = drop
        self.flip = flip
        self.dup = dup
        self.delay = delay
        self.noise = noise
        self.split = split  # every byte its own write (a USB bridge flushing each byte)
        self.sweep = sweep  # bytes of the 0x00..0xff cycle put before each chunk


CLEAN = Faults()


def _raw_pair():
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    return master, slave


class FaultProxy(threading.Thread):
    def __init__(self, folder, to_host=CLEAN, to_device=CLEAN, seed=1, device_by_path=False,
                 baud=None):
        super().__init__(daemon=True, name="fault-proxy")
        self.byte_s = 10.0 / baud if baud else 0.0  # a start bit, 8 data bits, a stop bit
        self.line_free = {"host": 0.0, "device": 0.0}  # when each direction is idle again
        self.sweep_next = 0  # next byte value of the sweep
        self.rand = random.Random(seed)
        self.to_host = to_host
        self.to_device = to_device
        self.device_fd, self._dev_slave = _raw_pair()
        self.device_path = None
        if device_by_path:
            # the device opens a path itself (``hallclock device --port``):
            # it gets the slave, the proxy keeps the master
            self.device_path = os.ttyname(self._dev_slave)
            self._dev_slave, self.device_fd = self.device_fd, self._dev_slave
        self.path = os.path.join(folder, "ttyHALL0")
        self._log_master = None
        self._log_slave = None
        self._plug()
        self.lock = threading.Lock()
        self.halt = False
        self.cut_until = 0.0
        self.cut_hold = False  # cut until uncut()
        self.cut_after_lines = None
        self.unplug_until = 0.0
        self.lines_to_host = 0
        self.injections = []
        self.attached = False  # the logger has its end of the line open
        # (deliver at, bytes) per direction, in order
        self.queue = {"host": [], "device": []}
        self.stats = {"dropped": 0, "flipped": 0, "duplicated": 0, "noise": 0,
                      "cut_bytes": 0, "unplugs": 0, "bytes_to_host": 0, "bytes_to_device": 0,
                      "swept": 0, "injected": 0, "lines_from_device": 0}

    # -- the logger's port ----------------------------------------------------
    def _plug(self):
        self._log_master, self._log_slave = _raw_pair()
        name = os.ttyname(self._log_slave)
        tmp = self.path + ".new"
        os.symlink(name, tmp)
        os.replace(tmp, self.path)
        # the proxy does not keep the slave open: the logger is its only user
        os.close(self._log_slave)
        self._log_slave = None

    def _unplug_now(self):
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
        os.close(self._log_master)
        self._log_master = None
        self.stats["unplugs"] += 1

    # -- controls (from the test's thread) -----------------------------------
    def cut(self, seconds):
        with self.lock:
            self.cut_until = time.monotonic() + seconds

    def cut_after(self, lines):
        """Cut the line once the device has sent ``lines`` more lines."""
        with self.lock:
            self.cut_after_lines = lines
            self.lines_to_host = 0

    def uncut(self):
        with self.lock:
            self.cut_hold = False
            self.cut_after_lines = None
            self.cut_until = 0.0

    def unplug(self, seconds):
        with self.lock:
            self.unplug_until = time.monotonic() + seconds

    def inject(self, direction, data):
        """Put ``data`` on the line once, towards "host" or "device", in order
        with what is already under way."""
        with self.lock:
            self.injections.append((direction, bytes(data)))

    def is_cut(self):
        with self.lock:
            return self.cut_hold or time.monotonic() < self.cut_until

    # -- the pump -------------------------------------------------------------
    def _mangle(self, data, faults):
        if faults is CLEAN:
            return data
        out = bytearray()
        r = self.rand
        if faults.noise and (not self.stats["noise"] or r.random() < faults.noise):
            out += r.choice(NOISE)
            self.stats["noise"] += 1
        if faults.sweep:  # a line of noise: the next bytes of the cycle, then a newline
            for _ in range(faults.sweep):
                out.append(self.sweep_next)
                self.sweep_next = (self.sweep_next + 1) & 0xFF
                self.stats["swept"] += 1
            out.append(10)
        for b in data:
            x = r.random()
            if x < faults.drop:
                self.stats["dropped"] += 1
                continue
            x -= faults.drop
            if x < faults.flip:
                b ^= 1 << r.randrange(8)
                self.stats["flipped"] += 1
            elif x - faults.flip < faults.dup:
                out.append(b)
                self.stats["duplicated"] += 1
            out.append(b)
        return bytes(out)

    def _enqueue(self, direction, data, faults):
        now = time.monotonic()
        if self.is_cut():
            self.stats["cut_bytes"] += len(data)
            return
        data = self._mangle(data, faults)
        if faults.split:
            for i in range(len(data)):
                self._put(direction, data[i:i + 1], faults.delay, now)
            return
        self._put(direction, data, faults.delay, now)

    def _put(self, direction, data, delay, now):
        lo, hi = delay
        at = now + (self.rand.uniform(lo, hi) if hi else 0.0)
        q = self.queue[direction]
        if q and q[-1][0] > at:
            at = q[-1][0]  # a serial line keeps the order
        if self.byte_s:  # the bytes take their time on the wire, one after another
            at = max(at, self.line_free[direction]) + len(data) * self.byte_s
            self.line_free[direction] = at
        q.append((at, data))

    def _deliver(self, direction, fd):
        q = self.queue[direction]
        now = time.monotonic()
        while q and q[0][0] <= now:
            _at, data = q.pop(0)
            if fd is None:
                continue  # unplugged: lost
            try:
                os.write(fd, data)
                self.stats["bytes_to_" + direction] += len(data)
            except BlockingIOError:
                pass  # the reader is not keeping up: lost, as on a UART
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise

    @staticmethod
    def _read(fd):
        return read_fd(fd)[0]

    def run(self):
        os.set_blocking(self._dev_slave, False)
        while not self.halt:
            with self.lock:
                unplug = self.unplug_until
            now = time.monotonic()
            if self._log_master is not None and now < unplug:
                self._unplug_now()
            elif self._log_master is None and now >= unplug:
                self._plug()
            if self._log_master is not None:
                os.set_blocking(self._log_master, False)
            fds = [self._dev_slave] + ([self._log_master] if self._log_master is not None else [])
            try:
                ready, _, _ = select.select(fds, [], [], 0.005)
            except OSError:
                ready = []
            if self._dev_slave in ready:
                data = self._read(self._dev_slave)
                if data:
                    self._count_lines(data)
                    self._enqueue("host", data, self.to_host)
                else:
                    time.sleep(0.005)  # EIO: the device is not there (yet)
            if self._log_master is not None and self._log_master in ready:
                data = self._read(self._log_master)
                if data:
                    self.attached = True
                    self._enqueue("device", data, self.to_device)
                else:
                    self.attached = False
                    time.sleep(0.005)  # EIO: the logger is not there (yet)
            elif self._log_master is not None:
                self.attached = True  # not readable: no hang-up, someone holds the slave
            else:
                self.attached = False
            with self.lock:
                injections, self.injections = self.injections, []
            for direction, data in injections:
                self.stats["injected"] += len(data)
                self._put(direction, data, (0.0, 0.0), time.monotonic())
            self._deliver("host", self._log_master)
            self._deliver("device", self._dev_slave)

    def _count_lines(self, data):
        with self.lock:
            self.stats["lines_from_device"] += data.count(b"\n")
            if self.cut_after_lines is None or self.cut_hold:
                return
            self.lines_to_host += data.count(b"\n")
            if self.lines_to_host >= self.cut_after_lines:
                self.cut_hold = True

    def close(self):
        self.halt = True
        if self.is_alive():
            self.join(timeout=5)
        for fd in (self.device_fd, self._dev_slave, self._log_master):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
