"""The virtual device on a serial line: a pump moves the Runner's UART bytes
to and from a file descriptor (a pty end, or a port path), paces simulated
time against the host, and stops when the host has every event.

Simulated time runs as fast as the machine allows while the host has every
event.  While the device holds events the host has not acknowledged,
simulated time runs no faster than real time (``Runner.pace``): the link's
resend (1.5 s) and hello (5 s) timers then fire as on a board, so a slow line
(9600 baud) or a logger that is not there yet gets resends at a board's
rate, not hundreds of them, and a device with no host plays its script at
the board's pace.  After the scenario's ``end`` time runs at the real rate.
The pump gives up after ``silence_s`` of real time without a byte from the
host (the contract's 30 s).
"""
import errno
import os
import select
import threading
import time
import tty

from hallclock_fw import settings as settings_mod

from .errors import BadInput, HallclockError, LinkError
from .transport import read_fd
from .vdev.runner import DONE, HANDED_BACK, PACED, RUNNING, Runner

SILENCE_S = 30.0  # the contract: exit after 30 s without host contact


def make_runner(mode, values, actions, clock="virtual-1", sid="00000001", start_ticks=0,
                period=None, interpreter="cpython", record=False):
    plain = [a.as_tuple() if hasattr(a, "as_tuple") else a for a in actions]
    if interpreter == "micropython":
        from .mpdevice import MicroPythonRunner
        return MicroPythonRunner(mode, values, plain, clock=clock, sid=sid,
                                 start_ticks=start_ticks, period=period)
    if interpreter != "cpython":  # micropython-unix is a process: simulate / mpunix.run
        raise ValueError(f"no in-process runner for --interpreter {interpreter}")
    return Runner(mode, values, plain, clock=clock, sid=sid, start_ticks=start_ticks,
                  period=period, record=record)


def pump(runner, fd, silence_s=SILENCE_S, ack_wait_s=0.05, stop=None):
    """Run ``runner`` on ``fd`` until the host has every event (True) or the
    host has been silent for ``silence_s`` (False).  A host that takes the
    console (``M`` frame) ends it too (True): the clock has stopped.
    ``ack_wait_s``: the longest real wait for host bytes while the device
    may not move on (paced, or after its end)."""
    os.set_blocking(fd, False)
    last_contact = time.monotonic()
    status = RUNNING
    pending_out = b""
    last_real = time.monotonic()
    while True:
        if stop is not None and stop():
            return False
        pending_out += runner.take_output()
        if pending_out:
            try:
                n = os.write(fd, pending_out)
                pending_out = pending_out[n:]
            except BlockingIOError:
                pass
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise
        data, peer = read_fd(fd)
        if data:
            runner.feed(data)
            last_contact = time.monotonic()
        if status == DONE or status == HANDED_BACK:
            if not pending_out:
                return True
            _wait_fd(fd, peer, 0.02)
            continue
        now = time.monotonic()
        if now - last_contact > silence_s:
            return False
        if status == RUNNING:
            runner.pace(int(now * 1000))
            result = runner.step()
            if result == PACED:  # nothing to do before real time catches up
                if not data:
                    _wait_fd(fd, peer, min(ack_wait_s, 0.005))
            else:
                status = result
            last_real = now
        else:
            if not data:
                _wait_fd(fd, peer, 0.02)
            now = time.monotonic()
            status = runner.advance(max(1, int((now - last_real) * 1000)))
            last_real = now


def _wait_fd(fd, peer, timeout):
    """Sleep until host bytes arrive on ``fd`` or ``timeout`` (s) passes."""
    if peer:
        select.select([fd], [], [], timeout)
    else:  # nobody on the other end: select would return at once (hang-up)
        time.sleep(timeout)


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
    def __init__(self, runner, fd, silence_s=SILENCE_S, ack_wait_s=0.05):
        super().__init__(daemon=True, name="virtual-device")
        self.runner = runner
        self.fd = fd
        self.silence_s = silence_s
        self.ack_wait_s = ack_wait_s
        self.result = None
        self.error = None
        self.halt = False

    def run(self):
        try:
            self.result = pump(self.runner, self.fd, self.silence_s, self.ack_wait_s,
                               stop=lambda: self.halt)
        except BaseException as exc:  # surfaced by the caller
            self.error = exc


def check_settings(mode, pairs):
    try:
        return settings_mod.parse(mode, pairs)
    except ValueError as exc:
        raise BadInput(f"bad --set: {exc}") from None


def simulate(actions, mode, values, out, clock="virtual-1", interpreter="cpython",
             period=None, start_ticks=0, timeout_s=600.0, restore=False, heap_kib=None,
             romfs=None, figures=None, gc_policy="firmware"):
    """Scenario -> virtual device -> pty -> real host logger -> ``out``."""
    if interpreter == "micropython-unix":
        return _simulate_unix(actions, mode, values, out, clock, period, start_ticks,
                              timeout_s, restore, heap_kib, romfs, figures, gc_policy)
    from .logger import Logger
    from .transport import pty_pair

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
        for fd in (master, slave):
            try:
                os.close(fd)
            except OSError:
                pass
        close = getattr(runner, "close", None)
        if close is not None:
            close()
    return logger.writer.count


def _simulate_unix(actions, mode, values, out, clock, period, start_ticks, timeout_s,
                   restore, heap_kib, romfs, figures, gc_policy="firmware"):
    """The device as its own MicroPython unix-port process on the pty's
    device end (handed over as a file descriptor); ``figures``, a dict, gets
    the process's heap figures."""
    from .logger import Logger
    from .mpunix import UnixDevice
    from .transport import pty_pair

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
        for fd in (master, slave):
            try:
                os.close(fd)
            except OSError:
                pass
    return logger.writer.count
