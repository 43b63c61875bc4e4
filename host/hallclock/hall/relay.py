"""The hall relay: one hall unit (the referee's clock with START and GONG) and many
table clocks, all on one host, logged into ONE log (each record names its
``clock``).  The host relays the referee's signals from the hall unit to every
table clock as ``C`` frames (a remote button press), so all games of a round
start on the same signal (ČAS 4.1; duplicate: Polish rules II.13).

What is relayed, triggered by the hall unit's logged events:

    hall event              sent to every table
    gong  kind=start        START   (the table gives its own start gong and
                                     from then on its own ten-minute and end
                                     gongs, measured from that start)
    gong  kind=manual       GONG
    dup_start               START   (duplicate: the move's countdown)
    pause / resume          PAUSE   (duplicate only: stop / restart the countdown)

Only events stored for the first time are relayed (the log's resume logic
drops events already logged), so a host restart does not start a round twice.
A ``C`` frame has no acknowledgement of its own: the host watches each table's
log for the event the relay should cause and sends the press again
(``RETRY_S``, at most ``TRIES`` times) if it does not come.  START is safe to
repeat (a table ignores a second START), so the retry can only start a table
late, never twice.

``simulate_hall`` runs the whole hall on virtual devices over ptys, each paced
against one shared real-time origin, so device ``t_ms`` of different clocks
are comparable and the spread between tables' start times can be measured.
"""
import os
import time

from .. import hostframes
from hallclock_fw.events import BTN_GONG, BTN_PAUSE, BTN_START

from ..errors import BadInput, LinkError
from ..views.modes import view_for
from ..link.transport import close_fds

RETRY_S = 1.0  # resend a relayed press when the table has not reacted by then
TRIES = 3  # sends of one relayed press at most


def relay_key(record, hall_mode):
    """(key, button) a hall record is relayed as, or None.  ``key`` names the
    table event that shows the press arrived."""
    ev = record.get("event")
    if ev == "gong":
        if record.get("kind") == "start":
            return "start", BTN_START
        if record.get("kind") == "manual":
            return "manual", BTN_GONG
        return None
    if ev == "dup_start":
        return "start", BTN_START
    if ev in ("pause", "resume") and view_for(hall_mode).relays_pause:
        return "pause", BTN_PAUSE
    return None


def table_key(record):
    """The relay key a table's record answers, or None."""
    ev = record.get("event")
    if ev == "gong":
        kind = record.get("kind")
        return "start" if kind == "start" else "manual" if kind == "manual" else None
    if ev == "dup_start":
        return "start"
    if ev in ("pause", "resume") and record.get("player") is None:
        return "pause"
    return None


class Table:
    def __init__(self, index, send):
        self.index = index
        self.send = send
        self.clock = None
        self.mode = None
        self.seen = {}  # key -> table events of that kind
        self.want = {}  # key -> relayed presses of that kind
        self.pending = []  # [key, button, next_try, tries]
        self.starts = []  # (host monotonic s, t_ms) of each start the table logged


class Relay:
    """Hooks into a ``Logger`` whose first port is the hall unit and whose
    other ports are table clocks."""

    def __init__(self, logger, clock=time.monotonic):
        self.time = clock
        self.links = logger.links
        self.hall_mode = None
        self.hall_starts = []  # (host monotonic s, t_ms, relayed-at s)
        self.relayed = 0
        self.retries = 0
        self.tables = []
        for i, (port, link) in enumerate(zip(logger.ports[1:], logger.links[1:])):
            t = Table(i, port.write)
            self.tables.append(t)
            link.on_record = self._table_record(t, link.on_record)
        logger.links[0].on_record = self._hall_record(logger.links[0].on_record)

    def _hall_record(self, chained):
        def on_record(record):
            got = self.time()
            if record.get("event") == "boot":
                self.hall_mode = record.get("mode")
            relay = relay_key(record, self.hall_mode)
            if relay is not None:
                key, button = relay
                frame = hostframes.command(button)
                for t in self.tables:
                    t.send(frame)
                    t.want[key] = t.want.get(key, 0) + 1
                    t.pending.append([key, button, got + RETRY_S, 1])
                self.relayed += 1
                if key == "start":
                    self.hall_starts.append((got, record.get("t_ms"), self.time()))
            if chained is not None:
                chained(record)
        return on_record

    def _table_record(self, table, chained):
        def on_record(record):
            if record.get("event") == "boot":
                table.clock = record.get("clock")
                table.mode = record.get("mode")
            key = table_key(record)
            if key is not None:
                table.seen[key] = table.seen.get(key, 0) + 1
                if key == "start":
                    table.starts.append((self.time(), record.get("t_ms")))
            if chained is not None:
                chained(record)
        return on_record

    def service(self):
        """Resend relayed presses a table has not answered in time."""
        now = self.time()
        for t in self.tables:
            if not t.pending:
                continue
            keep = []
            for item in t.pending:
                key, button, due, tries = item
                if t.seen.get(key, 0) >= t.want.get(key, 0):
                    continue  # answered
                if now < due:
                    keep.append(item)
                    continue
                if tries >= TRIES:
                    continue  # given up: the table's log shows it never started
                if key == "pause":
                    continue  # a toggle: a resend could undo a late one
                t.send(hostframes.command(button))
                self.retries += 1
                item[2] = now + RETRY_S
                item[3] = tries + 1
                keep.append(item)
            t.pending = keep

    def spread(self, n=0):
        """Figures for the ``n``-th start relayed: a dict with the hall's t_ms,
        each table's start t_ms and host receive delay (ms) after the hall's
        record, or None if it was not relayed."""
        if n >= len(self.hall_starts):
            return None
        got, hall_t, _sent = self.hall_starts[n]
        tables = []
        for t in self.tables:
            if n < len(t.starts):
                host_s, t_ms = t.starts[n]
                tables.append((t.clock, t_ms, (host_s - got) * 1000.0))
            else:
                tables.append((t.clock, None, None))
        return {"hall_t_ms": hall_t, "tables": tables}


def summary(relay):
    """What ``hall`` and ``log --hall-unit`` print at the end: the signals
    relayed and resent, and each relayed start's spread."""
    lines = [f"relayed {relay.relayed} signal(s) to {len(relay.tables)} table(s), "
             f"{relay.retries} resent"]
    n = 0
    while True:
        sp = relay.spread(n)
        if sp is None:
            return "\n".join(lines)
        lines.append(f"start {n + 1}: " + format_spread(sp))
        n += 1


def format_spread(sp):
    started = [x for x in sp["tables"] if x[1] is not None]
    lines = []
    if len(started) < len(sp["tables"]):
        missing = [x[0] or "?" for x in sp["tables"] if x[1] is None]
        lines.append("tables that did NOT start: " + ", ".join(missing))
    if not started:
        return "\n".join(lines)
    dev = [x[1] - sp["hall_t_ms"] for x in started]
    host = [x[2] for x in started]
    lines.append(
        "start relayed to %d table(s): device start after the hall's %d..%d ms "
        "(spread %d ms); host received %.1f..%.1f ms after the hall's start "
        "(spread %.1f ms)" % (len(started), min(dev), max(dev), max(dev) - min(dev),
                              min(host), max(host), max(host) - min(host)))
    return "\n".join(lines)


def run_devices(logger, devices, timeout_s, relay=None):
    """A virtual hall: start its clocks (threads with ``error`` and ``halt``),
    relay and log them until every clock's session has ended; a clock that
    fails, or a hall that does not end within ``timeout_s``, is a LinkError.
    Returns the relay (its counts)."""
    for d in devices:
        d.start()
    failed = lambda: any(d.error is not None for d in devices)  # noqa: E731
    ended, relay = run_hall(logger, exit_on_end=True, stop=failed, max_s=timeout_s,
                            relay=relay)
    for d in devices:
        d.join(timeout=5)
        d.halt = True
    for d in devices:
        if d.error is not None:
            raise LinkError(f"a virtual device failed: {d.error!r}") from d.error
    if not ended:
        raise LinkError(f"the hall simulation did not finish within {timeout_s:.0f} s: "
                        "some clock's log has no 'end'")
    return relay


def run_hall(logger, exit_on_end=False, stop=None, max_s=None, poll_s=0.01, relay=None):
    """Log the hall and relay until every session has ended (``exit_on_end``),
    ``stop()``, or ``max_s``.  Returns (ended, relay)."""
    if relay is None:
        relay = Relay(logger)
    ended = logger.run(exit_on_end, stop, max_s, on_poll=relay.service, poll_s=poll_s,
                       linger=False)
    return ended, relay


# -- the whole hall on virtual devices -------------------------------------------
def simulate_hall(hall_actions, table_actions, mode, values, out, speed=1.0,
                  timeout_s=None):
    """A hall unit and ``len(table_actions)`` table clocks, each a virtual
    device on its own pty, logged and relayed by the real host into ``out``.
    Returns (records written, relay)."""
    from ..link.logger import Logger
    from ..link.transport import pty_pair
    from ..vboard.device import DeviceThread, RealPace, make_runner, mark

    specs = [("hall", "a0000001", hall_actions)]
    for i, acts in enumerate(table_actions):
        specs.append(("table-%d" % (i + 1), "%08x" % (0xb0000001 + i), acts))
    last_t = max(a[0] if isinstance(a, tuple) else a.t_ms
                 for _c, _s, acts in specs for a in acts)
    if timeout_s is None:
        timeout_s = last_t / 1000.0 / speed + 60.0
    runners, fds, paths = [], [], []
    try:
        for clock, sid, acts in specs:
            runners.append(make_runner(mode, values, acts, clock=clock, sid=sid))
            master, slave, path = pty_pair()
            fds += [master, slave]
            paths.append(path)
        logger = Logger(paths, out)
        logger.open()
        pace = RealPace(mark(), speed)
        devices = [DeviceThread(r, fds[2 * i], pace) for i, r in enumerate(runners)]
        relay = run_devices(logger, devices, timeout_s)
    finally:
        close_fds(*fds)
    return logger.writer.count, relay


def check_table_count(n):
    if not 1 <= n <= 64:
        raise BadInput(f"--tables {n}: give 1 to 64 table clocks")
    return n
