"""Serial transports: a real or virtual port opened with pyserial (reopened
when it vanishes and comes back), and pty pairs for virtual devices."""
import errno
import os
import termios
import time
import tty

import serial

from .errors import BadInput

BAUD = 115200
READ_MAX = 65536  # bytes taken from a port per read
OUT_MAX = 4096  # bytes kept for a port that does not read (then frames are dropped)


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

    def __init__(self, path, retry_s=0.5):
        self.path = path
        self.retry_s = retry_s
        self.ser = None
        self.state = "closed"  # connected / lost
        self.next_try = 0.0
        self.reconnects = 0
        self.out = bytearray()  # written but not yet taken by the line
        self.on_change = None  # called when the port's fd comes or goes (pollers)

    def open(self):
        """First open: a port that cannot be opened is bad input (exit 2)."""
        try:
            self.ser = serial.Serial(self.path, BAUD, timeout=0, write_timeout=1)
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
        try:
            if self.ser is not None:
                self.ser.close()
        except (serial.SerialException, OSError):
            pass
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
        try:
            self.ser = serial.Serial(self.path, BAUD, timeout=0, write_timeout=1)
            self.state = "connected"
            self.reconnects += 1
            self._changed()
        except (serial.SerialException, OSError, ValueError):
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
        if self.ser is not None:
            try:
                self.ser.close()
            except (serial.SerialException, OSError):
                pass
            self.ser = None
            self._changed()


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
