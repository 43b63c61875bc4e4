"""Serial transports: a real or virtual port opened with pyserial (reopened
when it vanishes and comes back), and pty pairs for virtual devices."""
import errno
import os
import termios
import time
import tty

import serial

from ..errors import BadInput
from .locks import InUse, port_in_use

BAUD = 115200
READ_MAX = 65536  # bytes taken from a port per read
OUT_MAX = 4096  # bytes kept for a port that does not read (then frames are dropped)
RESET_HOLD_S = 0.1  # --reset: EN held low this long (the DevKit's EN RC is ~10 ms)


# -- the DevKit's reset lines (docs/hardware.md, "The reset lines") -------------
# An ESP32 DevKit's auto-reset circuit: EN (reset) is low while RTS is asserted
# and DTR is not; IO0 (boot mode) is low while DTR is asserted and RTS is not.
# Both asserted or both released leave the board alone.  Linux raises both
# lines together when a tty is opened and drops both together on close (HUPCL);
# pyserial then sets DTR first, RTS second, at open.  So we open with DTR
# asserted and RTS released (from both-raised: DTR unchanged, then RTS drops;
# from both-released: DTR-only, which a running board ignores), then release
# DTR: the lines rest released, as when nobody has the port, and a logger
# that dies (the kernel drops both together) changes nothing either.  RTS is
# never asserted without DTR, except in the deliberate EN pulse of --reset.

def _set_line(ser, name, level):
    """Set DTR or RTS; a port without modem lines (a pty, a socket) is fine."""
    try:
        setattr(ser, name, level)
    except (OSError, serial.SerialException, ValueError):
        pass


def open_serial(path, reset=False):
    """Open ``path`` without resetting the board; ``reset``: then one clean
    EN pulse (RTS alone, DTR released so IO0 stays high: a normal boot)."""
    ser = serial.Serial()
    ser.port = path
    ser.baudrate = BAUD
    ser.timeout = 0
    ser.write_timeout = 1
    ser.dtr = True  # applied by open() first ...
    ser.rts = False  # ... then this
    ser.exclusive = True  # one program a port (a flock, as for the logs: link.locks)
    try:
        ser.open()
    except serial.SerialException as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise port_in_use(path) from None
        raise
    _set_line(ser, "dtr", False)
    if reset:
        _set_line(ser, "rts", True)  # EN low: the board is held in reset
        time.sleep(RESET_HOLD_S)
        _set_line(ser, "rts", False)  # EN high with IO0 high: it boots the firmware
    return ser


def pty_pair():
    """(device_fd, host_path): the device writes/reads the master end; the host
    opens the slave by its path, exactly as it would open a USB serial port."""
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    path = os.ttyname(slave)
    return master, slave, path


class Port:
    """One serial port.  ``read()`` never raises for a vanished port: it goes
    into the ``lost`` state and tries to reopen it every ``retry_s``."""

    def __init__(self, path, retry_s=0.5, reset=False):
        self.path = path
        self.retry_s = retry_s
        self.reset = reset  # --reset: an EN pulse on the first open only
        self.ser = None
        self.state = "closed"  # connected / lost
        self.next_try = 0.0
        self.reconnects = 0
        self.out = bytearray()  # written but not yet taken by the line
        self.on_change = None  # called when the port's fd comes or goes (pollers)
        # a lost pty stays open until close(): the kernel would give its number
        # (/dev/pts/N) to the next pty made, another program's line
        self.gone = None

    def open(self):
        """First open: a port that cannot be opened is bad input (exit 2)."""
        try:
            self.ser = open_serial(self.path, reset=self.reset)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise BadInput(f"cannot open serial port {self.path}: {exc}. "
                           "Check the cable and the port name ('hallclock ports' lists them)") from None
        self.state = "connected"
        self._changed()

    def _changed(self):
        if self.on_change is not None:
            self.on_change()

    def fileno(self):
        return self.ser.fileno() if self.ser is not None else None

    def _lost(self):
        if self.ser is not None and self.path.startswith("/dev/pts/") \
                and not os.path.islink(self.path) and self.gone is None:
            self.gone = self.ser  # a pty never comes back
        else:
            _shut(self.ser)
        self.ser = None
        self.out = bytearray()
        self.state = "lost"
        self.next_try = time.monotonic() + self.retry_s
        self._changed()

    def _retry(self):
        now = time.monotonic()
        if now < self.next_try:
            return
        self.next_try = now + self.retry_s
        if self.gone is not None:
            if not os.path.exists(self.path):
                return  # the pty is gone; while we hold it no other pty takes its name
            _shut(self.gone)  # still there: the same pty (its name cannot pass on)
            self.gone = None
        try:
            self.ser = open_serial(self.path)  # never a reset: the game goes on
            self.state = "connected"
            self.reconnects += 1
            self._changed()
        except (serial.SerialException, OSError, ValueError, InUse):
            self.ser = None

    def read(self, ready=False):
        """What has arrived, b"" if nothing.  ``ready``: the caller's poller
        said the port is readable, so no data at all means it hung up (a
        vanished USB port reads empty; a closed pty fails)."""
        if self.ser is None:
            self._retry()
            return b""
        try:
            data = os.read(self.ser.fd, READ_MAX)
        except BlockingIOError:
            return b""
        except (OSError, TypeError):
            self._lost()
            return b""
        if not data and ready:
            self._lost()
        return data

    def write(self, data):
        """Send without waiting (the poll loop serves every port): what the
        line does not take now is kept and tried again by the next write or
        ``flush_out``; if the other end stops reading, frames are dropped
        and the protocol repeats them."""
        if self.ser is None:
            return
        if self.out:
            if len(self.out) + len(data) > OUT_MAX:
                return  # nobody reads: drop the frame (acks and asks are repeated)
            self.out += data
        else:
            self.out = bytearray(data)
        self.flush_out()

    def flush_out(self):
        if self.ser is None or not self.out:
            return
        try:
            n = os.write(self.ser.fd, self.out)
        except BlockingIOError:
            return
        except (OSError, TypeError):
            self._lost()
            return
        del self.out[:n]

    def drain(self):
        """Wait until what we wrote has left (tcdrain), if the port is there."""
        self.flush_out()
        if self.ser is None:
            return
        try:
            self.ser.flush()
        except (serial.SerialException, OSError, termios.error):
            pass

    def close(self):
        _shut(self.gone)
        self.gone = None
        if self.ser is not None:
            _shut(self.ser)
            self.ser = None
            self._changed()


def _shut(ser):
    """Close a serial port object (None: nothing); a port already gone is no error."""
    try:
        if ser is not None:
            ser.close()
    except (serial.SerialException, OSError):
        pass


def read_fd(fd, size=4096):
    """Non-blocking read of a pty or port fd: (bytes, True), or (b"", False)
    when nobody has the other end open (EIO) — never raises for either."""
    try:
        return os.read(fd, size), True
    except BlockingIOError:
        return b"", True
    except OSError as exc:
        if exc.errno == errno.EIO:
            return b"", False
        raise


def close_fds(*fds):
    """Close each fd; one already closed (or never opened) is no error."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
