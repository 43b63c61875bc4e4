"""The host logger: one or more ports into one log file."""
import os
import resource
import selectors
import sys
import time

from ..errors import BadInput, shown
from .hostlink import HostLink
from .logfile import LogWriter
from .transport import Port

from hallclock_fw.link import RESEND_MS

# After the end: our last ack may be lost, and the device repeats its end
# RESEND_MS later; keep answering until the line has been quiet that long.
LINGER_S = RESEND_MS / 1000 + 0.3
LINGER_MAX_S = 10.0
TIMERS_S = 0.05  # timers (restores, reconnects, unsent bytes) run at least this often
DISK_REPEAT_S = 30.0  # repeat "the disk is full" this often while it lasts
FDS_PER_PORT = 6  # pyserial: the port and two pipes; and some to spare


def _enough_fds(n_ports):
    """Raise the soft open-file limit (often 1024) when many ports need more."""
    want = FDS_PER_PORT * n_ports + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        except (ValueError, OSError):
            pass


class Logger:
    def __init__(self, paths, out, retry_s=0.5, restore=None, reset=False):
        folder = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(folder):
            raise BadInput(f"{out}: the folder {folder} does not exist")
        self.writer = LogWriter(out)
        self.ports = [Port(p, retry_s, reset=reset) for p in paths]  # reset: --reset
        self.links = []
        for port in self.ports:
            self.links.append(HostLink(self.writer, port.write, port.path, restore=restore))
        self.selector = selectors.DefaultSelector()  # epoll: no 1024-fd limit
        self.watched = {}  # port index -> the fd the selector watches
        self.rewatch = True  # some port's fd came or went since the last _watch
        for port in self.ports:
            port.on_change = self._port_changed
        self.next_timers = 0.0
        self.disk_said = None  # when the full disk was last reported (monotonic), or None
        self.say = lambda text: print(shown(text), file=sys.stderr, flush=True)
        self.office = None  # --ship: hallclock.net.shiploop.Beside, the log to the office

    # -- a full disk (logfile.LogWriter.flush) ------------------------------
    def disk_problem(self):
        """None, or one line on why records wait (for the live view)."""
        w = self.writer
        if w.full is None:
            return None
        return (f"cannot write {w.path}: {w.full}; {w.held()} record(s) held, not "
                "acknowledged (the clocks keep them); free some space")

    def _say_disk(self):
        """Loudly, on stderr: when the disk fills, every DISK_REPEAT_S while it
        stays full, and when the held records are stored."""
        now = time.monotonic()
        problem = self.disk_problem()
        if problem is not None:
            if self.disk_said is None or now - self.disk_said >= DISK_REPEAT_S:
                self.say(f"hallclock log: {problem}")
                self.disk_said = now
        elif self.disk_said is not None:
            self.disk_said = None
            self.say(f"hallclock log: {self.writer.path} is writable again: every held "
                     "record is stored")

    def open(self):
        _enough_fds(len(self.ports))
        for port in self.ports:
            port.open()
        if self.office is not None:
            self.office.start()  # its own thread: the ports never wait on the network

    def _port_changed(self):
        self.rewatch = True

    def _watch(self):
        """Keep the poller in step with the ports (a lost port closes its fd,
        a reconnected one has a new fd): forget first, then watch."""
        if not self.rewatch:
            return
        self.rewatch = False
        for i, port in enumerate(self.ports):
            fd = port.fileno()
            old = self.watched.get(i)
            if old is not None and old != fd:
                self.selector.unregister(old)
                del self.watched[i]
        for i, port in enumerate(self.ports):
            fd = port.fileno()
            if fd is not None and i not in self.watched:
                self.selector.register(fd, selectors.EVENT_READ, i)
                self.watched[i] = fd

    def poll(self, timeout=0.05):
        """One pass: wait up to ``timeout`` for any port, read every port that
        is ready, store every record that came in with ONE write and ONE
        fsync, then acknowledge (never before the fsync).  True if bytes came."""
        self._watch()
        if self.watched:
            try:
                ready = [key.data for key, _ev in self.selector.select(timeout)]
            except InterruptedError:
                ready = []
        else:
            time.sleep(timeout)
            ready = []
        ports, links = self.ports, self.links
        fed = []
        for i in ready:
            data = ports[i].read(ready=True)
            if data:
                links[i].feed(data, flush=False)
                fed.append(i)
        self.writer.flush()
        if self.writer.full is not None or self.disk_said:
            self._say_disk()
        for i in fed:
            links[i].send_acks()
        now = time.monotonic()
        if fed and now < self.next_timers:
            return True
        self.next_timers = now + TIMERS_S
        for port, link in zip(ports, links):
            if port.ser is None:
                port.read()  # a lost port: try to reopen it
            else:
                port.flush_out()
            link.poll()
        return bool(fed)

    def all_ended(self):
        """Every port's clock has ended its game.  A port silent since this
        logger started (restarted on its log, docs/host.md) stands for a clock
        whose game the log already shows ended: as many silent ports as such
        clocks not heard here, and no clock of the log left mid-game."""
        if all(link.ended() for link in self.links):
            return True
        heard = [link for link in self.links if link.sessions]
        if not all(link.ended() for link in heard):
            return False
        silent = len(self.links) - len(heard)
        ended, open_ = self.writer.games_over(
            {s.clock for link in heard for s in link.sessions.values()})
        return not open_ and silent <= len(ended)

    def run(self, exit_on_end=False, stop=None, max_s=None, on_poll=None, poll_s=0.05,
            linger=True):
        """Log until every port's session has ended (with ``exit_on_end``;
        then, with ``linger``, keep answering a while), ``stop()`` says so, or
        ``max_s`` seconds pass: True if every session ended.  ``on_poll()`` is
        called after every pass (live views, the hall relay, the round)."""
        start = time.monotonic()
        try:
            while True:
                self.poll(poll_s)
                if on_poll is not None:
                    on_poll()
                if exit_on_end and self.all_ended():
                    if linger:
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
        full = (f", disk full {self.writer.full_count}× ({self.writer.held()} records still "
                "held)" if self.writer.full_count else "")
        return (f"{self.writer.count} records written, {dups} repeats dropped, "
                f"{bad} bad lines dropped, {rec} reconnects, {lost} power losses{full}")

    def close(self):
        for i in list(self.watched):
            self.selector.unregister(self.watched.pop(i))
        for port in self.ports:
            port.close()
        self.writer.close()
        if self.office is not None:
            office, self.office = self.office, None
            office.finish()  # the clocks are done with: the office gets the rest
