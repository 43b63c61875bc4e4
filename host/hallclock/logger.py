"""The host logger: one or more ports into one log file."""
import select
import time

from .hostlink import HostLink
from .logfile import LogWriter
from .transport import Port


class Logger:
    def __init__(self, paths, out, retry_s=0.5):
        self.writer = LogWriter(out)
        self.ports = [Port(p, retry_s) for p in paths]
        self.links = []
        for port in self.ports:
            self.links.append(HostLink(self.writer, port.write, port.path))

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
        for port, link in zip(self.ports, self.links):
            data = port.read()
            if data:
                link.feed(data)

    def all_ended(self):
        return all(link.ended() for link in self.links)

    def run(self, exit_on_end=False, stop=None, max_s=None):
        """Log until every port's session has ended (with ``exit_on_end``),
        ``stop()`` says so, or ``max_s`` seconds pass."""
        start = time.monotonic()
        try:
            while True:
                self.poll()
                if exit_on_end and self.all_ended():
                    return True
                if stop is not None and stop():
                    return False
                if max_s is not None and time.monotonic() - start > max_s:
                    return False
        finally:
            self.close()

    def close(self):
        for port in self.ports:
            port.close()
        self.writer.close()
