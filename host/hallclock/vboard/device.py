"""The virtual device on the host: a Runner (CPython, or inside the
webassembly VM) built from a scenario, the pump's serial line (``FdLine``:
a pty end or a port path), the one device thread every virtual clock, hall
and test runs in, and ``simulate`` (scenario -> device -> pty -> logger).

The pump itself is ``hallclock.vboard.vdev.pump`` (MicroPython-compatible, shared
with the unix port's network device): see its docstring for the paces.  On
a serial line simulated time runs as fast as the machine allows while the
host has every event; while the device holds events the host has not
acknowledged, no faster than real time (``Runner.pace``): the link's resend
(up to 1.5 s) and hello (5 s) timers then fire as on a board, so a slow line (9600
baud) or a logger that is not there yet gets resends at a board's rate, not
hundreds of them, and a device with no host plays its script at the board's
pace.  After the scenario's ``end`` time runs at the real rate.  The pump
gives up after ``silence_s`` of real time without a byte from the host while
events wait for it (the contract's 30 s; ``vdev.runner.HostSilence``).
"""
import errno
import os
import select
import threading
import time
import tty

from hallclock_fw import settings as settings_mod

from ..errors import BadInput, HallclockError, LinkError
from ..link.transport import close_fds, read_fd
from .vdev.pump import RealPace, SimPace, mark, pump, since  # noqa: F401 (for callers)
from .vdev.runner import Runner

SILENCE_S = 30.0  # the contract: exit after 30 s without host contact


def make_runner(mode, values, actions, clock="virtual-1", sid="00000001", start_ticks=0,
                period=None, interpreter="cpython", record=False):
    plain = [a.as_tuple() if hasattr(a, "as_tuple") else a for a in actions]
    if interpreter == "micropython":
        from .wasm import MicroPythonRunner
        return MicroPythonRunner(mode, values, plain, clock=clock, sid=sid,
                                 start_ticks=start_ticks, period=period)
    if interpreter != "cpython":  # micropython-unix is a process: simulate / mpunix.run
        raise ValueError(f"no in-process runner for --interpreter {interpreter}")
    return Runner(mode, values, plain, clock=clock, sid=sid, start_ticks=start_ticks,
                  period=period, record=record)


class FdLine:
    """The pump's line on a file descriptor (a pty end, or a port path's):
    non-blocking writes of what the Runner's UART sends, reads that never
    block; a hang-up (nobody on the other end, EIO) reads as no bytes.  The
    caller owns the fd (``close`` leaves it open)."""

    def __init__(self, fd):
        os.set_blocking(fd, False)
        self.fd = fd
        self.out = b""
        self.peer = True

    def ready(self):
        return True

    def send(self, data):
        out = self.out + data if data else self.out
        if out:
            try:
                out = out[os.write(self.fd, out):]
            except BlockingIOError:
                pass
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise
        self.out = out

    def receive(self):
        data, self.peer = read_fd(self.fd)
        return data

    def wait(self, ms):
        """Sleep until host bytes arrive or ``ms`` pass."""
        if self.peer:
            select.select([self.fd], [], [], ms / 1000.0)
        else:  # nobody on the other end: select would return at once (hang-up)
            time.sleep(ms / 1000.0)

    def sent_all(self):
        return not self.out

    def close(self):
        pass


def line_of(line):
    """A pump line: an fd (FdLine), a firmware NetLink (NetLine), or a line."""
    if isinstance(line, int):
        return FdLine(line)
    if hasattr(line, "readinto") and hasattr(line, "service"):
        from .vdev.netpump import NetLine
        return NetLine(line)
    return line


def run(runner, line, pace=None, silence_s=SILENCE_S, stop=None, after_pass=None):
    """The one pump (``vdev.pump``) on ``line`` (see :func:`line_of`) until
    the host has every event (True) or was silent for ``silence_s`` (False);
    a network line is closed at the end.  ``pace``: SimPace by default (on
    the network ``SimPace(netpump.HOLD_MS)``), RealPace for a virtual hall."""
    line = line_of(line)
    if pace is None and not isinstance(line, FdLine):
        from .vdev.netpump import HOLD_MS
        pace = SimPace(HOLD_MS)
    ms = int(silence_s * 1000)
    try:
        return pump(runner, line, pace, silence_ms=ms, connect_ms=ms, stop=stop,
                    after_pass=after_pass)
    finally:
        line.close()


def open_device_port(path):
    """A port path for the virtual device's end of the line (e.g. a pty)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        raise BadInput(f"cannot open serial port {path}: {exc.strerror}. "
                       "Give the path of an existing serial port or pty") from None
    try:
        tty.setraw(fd)
    except Exception:
        pass
    return fd


class DeviceThread(threading.Thread):
    """One virtual clock in a thread (every virtual hall, the tests): the one
    pump (:func:`run`) with ``result`` (its answer), ``error`` (what it
    raised, for the caller to surface) and ``halt`` (set it to stop)."""

    def __init__(self, runner, line, pace=None, silence_s=SILENCE_S, after_pass=None):
        super().__init__(daemon=True, name="virtual-" + getattr(runner, "clock_name", "device"))
        self.runner = runner
        self.line = line
        self.pace = pace
        self.silence_s = silence_s
        self.after_pass = after_pass
        self.result = None
        self.error = None
        self.halt = False

    def run(self):
        try:
            self.result = run(self.runner, self.line, self.pace, self.silence_s,
                              stop=lambda: self.halt, after_pass=self.after_pass)
        except BaseException as exc:  # surfaced by the caller
            self.error = exc


def check_settings(mode, pairs):
    try:
        return settings_mod.parse(mode, pairs)
    except ValueError as exc:
        raise BadInput(f"bad --set: {exc}") from None


def simulate(actions, mode, values, out, clock="virtual-1", interpreter="cpython",
             period=None, start_ticks=0, timeout_s=600.0, restore=None, heap_kib=None,
             romfs=None, figures=None, gc_policy="firmware"):
    """Scenario -> virtual device -> pty -> real host logger -> ``out``;
    ``restore``: the logger's restorer (``hallclock.views.model.restore_for``) or None."""
    if interpreter == "micropython-unix":
        return _simulate_unix(actions, mode, values, out, clock, period, start_ticks,
                              timeout_s, restore, heap_kib, romfs, figures, gc_policy)
    from ..link.logger import Logger
    from ..link.transport import pty_pair

    runner = make_runner(mode, values, actions, clock=clock, start_ticks=start_ticks,
                         period=period, interpreter=interpreter)
    master, slave, path = pty_pair()
    logger = Logger([path], out, restore=restore)
    try:
        logger.open()
        device = DeviceThread(runner, master)
        device.start()
        # The device stops once the host has acknowledged its every event
        # (so the logger has stored them); the logger stops with it.
        started = time.monotonic()
        logger.run(stop=lambda: not device.is_alive(), max_s=timeout_s)
        waited = time.monotonic() - started
        device.halt = True
        device.join(timeout=10)
        if isinstance(device.error, HallclockError):
            raise device.error
        if device.error is not None:
            raise LinkError(f"the virtual device failed: {device.error!r}") from device.error
        if not device.result or not logger.all_ended():
            why = (f"the virtual device heard nothing from the logger for {SILENCE_S:.0f} s"
                   if not device.is_alive() and device.result is False else
                   f"the log has no 'end' after {waited:.0f} s")
            raise LinkError(f"the simulation did not finish: {why}")
    finally:
        logger.close()
        close_fds(master, slave)
        close = getattr(runner, "close", None)
        if close is not None:
            close()
    return logger.writer.count


def _simulate_unix(actions, mode, values, out, clock, period, start_ticks, timeout_s,
                   restore, heap_kib, romfs, figures, gc_policy="firmware"):
    """The device as its own MicroPython unix-port process on the pty's
    device end (handed over as a file descriptor); ``figures``, a dict, gets
    the process's heap figures."""
    from ..link.logger import Logger
    from .unixport import UnixDevice
    from ..link.transport import pty_pair

    master, slave, path = pty_pair()
    os.set_blocking(master, False)
    device = UnixDevice(mode, values, actions, master, clock=clock, start_ticks=start_ticks,
                        period=period, heap_kib=heap_kib, romfs=romfs,
                        account=figures is not None, pass_fds=(master,),
                        gc_policy=gc_policy)
    logger = Logger([path], out, restore=restore)
    try:
        logger.open()
        device.start()
        logger.run(stop=lambda: not device.is_alive(), max_s=timeout_s)
        device.stop()
        got = device.finish()
        if figures is not None and got:
            figures.update(got)
        if not logger.all_ended():
            raise LinkError("the simulation did not finish: the log has no 'end' "
                            f"after {timeout_s:.0f} s")
    finally:
        device.stop()
        logger.close()
        close_fds(master, slave)
    return logger.writer.count
