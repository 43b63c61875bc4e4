"""The host logger: one or more ports into one log file."""
import os
import select
import time

from .errors import BadInput
from .hostlink import HostLink
from .logfile import LogWriter
from .transport import Port

from hallclock_fw.link import RESEND_MS

# After the end: our last ack may be lost, and the device repeats its end
# RESEND_MS later; keep answering until the line has been quiet that long.
LINGER_S = RESEND_MS / 1000 + 0.3
LINGER_MAX_S = 10.0


class Logger:
    def __init__(self, paths, out, retry_s=0.5, restore=False):
        folder = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(folder):
            raise BadInput(f"{out}: the folder {folder} does not exist")
        self.writer = LogWriter(out)
        self.ports = [Port(p, retry_s) for p in paths]
        self.links = []
        for port in self.ports:
            self.links.append(HostLink(self.writer, port.write, port.path, restore=restore))

    def open(self):
        for port in self.ports:
            port.open()

    def poll(self, timeout=0.05):
        fds = [p.ser for p in self.ports if p.ser is not None]
        if fds:
            try:
                select.select(fds, [], [], timeout)
            except (OSError, ValueError):
                pass
        else:
            time.sleep(timeout)
        got = False
        for port, link in zip(self.ports, self.links):
            data = port.read()
            if data:
                got = True
                link.feed(data)
            else:
                link.poll()
        return got

    def all_ended(self):
        return all(link.ended() for link in self.links)

    def run(self, exit_on_end=False, stop=None, max_s=None, on_poll=None):
        """Log until every port's session has ended (with ``exit_on_end``),
        ``stop()`` says so, or ``max_s`` seconds pass.  ``on_poll()`` is
        called after every pass (live views)."""
        start = time.monotonic()
        try:
            while True:
                self.poll()
                if on_poll is not None:
                    on_poll()
                if exit_on_end and self.all_ended():
                    self._linger()
                    return True
                if stop is not None and stop():
                    return False
                if max_s is not None and time.monotonic() - start > max_s:
                    return False
        finally:
            self.close()

    def _linger(self):
        """The log is complete; the device may not have our last ack yet.
        Keep answering until the line is quiet for LINGER_S, every port hangs
        up (a virtual device that has all its acks closes its end), or
        LINGER_MAX_S passes."""
        quiet = time.monotonic() + LINGER_S
        stop = time.monotonic() + LINGER_MAX_S
        while time.monotonic() < min(quiet, stop):
            if self.poll(0.02):
                quiet = time.monotonic() + LINGER_S
            if all(p.state == "lost" for p in self.ports):
                break
        for port in self.ports:
            port.drain()

    def stats(self):
        """One line for people: what came in and what was dropped."""
        bad = sum(link.bad for link in self.links)
        dups = sum(link.dups for link in self.links)
        lost = sum(link.power_losses for link in self.links)
        rec = sum(p.reconnects for p in self.ports)
        return (f"{self.writer.count} records written, {dups} repeats dropped, "
                f"{bad} bad lines dropped, {rec} reconnects, {lost} power losses")

    def close(self):
        for port in self.ports:
            port.close()
        self.writer.close()
