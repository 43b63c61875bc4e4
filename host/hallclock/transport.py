"""Serial transports: a real or virtual port opened with pyserial (reopened
when it vanishes and comes back), and pty pairs for virtual devices."""
import os
import termios
import time
import tty

import serial

from .errors import BadInput

BAUD = 115200


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

    def open(self):
        """First open: a port that cannot be opened is bad input (exit 2)."""
        try:
            self.ser = serial.Serial(self.path, BAUD, timeout=0, write_timeout=1)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise BadInput(f"cannot open serial port {self.path}: {exc}. "
                           "Check the cable and the port name ('hallclock ports' lists them)") from None
        self.state = "connected"

    def fileno(self):
        return self.ser.fileno() if self.ser is not None else None

    def _lost(self):
        try:
            if self.ser is not None:
                self.ser.close()
        except (serial.SerialException, OSError):
            pass
        self.ser = None
        self.state = "lost"
        self.next_try = time.monotonic() + self.retry_s

    def _retry(self):
        now = time.monotonic()
        if now < self.next_try:
            return
        self.next_try = now + self.retry_s
        try:
            self.ser = serial.Serial(self.path, BAUD, timeout=0, write_timeout=1)
            self.state = "connected"
            self.reconnects += 1
        except (serial.SerialException, OSError, ValueError):
            self.ser = None

    def read(self):
        if self.ser is None:
            self._retry()
            return b""
        try:
            n = self.ser.in_waiting
            return self.ser.read(n or 1)
        except (serial.SerialException, OSError, TypeError):
            self._lost()
            return b""

    def write(self, data):
        if self.ser is None:
            return
        try:
            self.ser.write(data)
        except serial.SerialTimeoutException:
            pass  # the other end does not read: the frame is dropped, the protocol repeats it
        except (serial.SerialException, OSError):
            self._lost()

    def drain(self):
        """Wait until what we wrote has left (tcdrain), if the port is there."""
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
