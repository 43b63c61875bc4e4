"""Running a round from the laptop over the hall's serial ports: the round's
START for every clock with the round number, late joiners, and the referee's
actions from the console.

``RoundControl`` hooks into a ``Logger`` (as ``relay.Relay`` does) whose ports
are all table clocks:

* ``start()`` sends every clock ``N <round> 0``: the round starts now, which is
  the START signal itself (the clock gives its start gong and begins its
  basic time, ČAS 4.1), and the clock logs a ``round`` event; from then on the
  host tags every record of that game with ``round`` (hostlink.tag_round).
* A clock of the round heard without the round (it was off at the start, it
  rebooted, it was plugged in late: a session with no ``round`` event) gets
  ``N <round> <elapsed_ms>``: the round started that long ago, so its ten-minute
  and end gongs come at the hall's times (ČAS 6.1), not from its own start.
  Sent again every ``RETRY_S`` until the session logs ``round`` (at most
  ``TRIES`` times: a clock that never takes it is named at the end).  A clock
  whose round had already started without a number (its own START button)
  refuses it (``refused`` what=round): it is named too, not asked again.
* The console's START round and GONG arrive as ``referee_action`` records in
  the referee log beside the game log (the console writes them, see
  console.py); only those written after this run began are acted on, each
  once.

Times are the host's ``time.monotonic()``; the elapsed time a late clock gets
is measured on the laptop from the moment START was sent.
"""
import json
import os
import time

from hallclock_fw import protocol
from .. import hostframes
from hallclock_fw.events import BTN_GONG

from ..link.logfile import JsonlTail
from ..views.model import epoch_of, pace_between, simulation_text, typical_pace
from ..views.roundreport import referee_log_of
from ..views.words import plural
from ..views.modes import view_for

RETRY_S = 1.0
TRIES = 5
LINKS_EVERY_S = 1.0  # the link status file for the console is rewritten this often


def round_frame(number, elapsed_ms):
    """The firmware's own frame for 'round N started elapsed_ms ago'."""
    return hostframes.round_number(number, elapsed_ms)


class _Seen:
    def __init__(self):
        self.tagged = False  # the session logged its round event (or carries the round)
        self.refused = False  # the clock refused the round (its round had started)
        self.tries = 0
        self.next_try = 0.0


class RoundControl:
    def __init__(self, logger, number, log_path=None, clock=time.monotonic,
                 wall=time.time, pairings=None):
        self.time = clock
        self.pairings = pairings  # the players' names (--pairings), views.pairings
        self.wall = wall
        self.number = number
        self.ports = logger.ports
        self.links = logger.links
        self.started_at = None  # monotonic s when START was sent
        self.sessions = {}  # (port index, clock, session) -> _Seen
        self.late_sent = 0  # N frames sent to late clocks
        self.gongs = 0  # GONGs the referee sent (the console)
        self.gongs_heard = 0  # gongs the clocks gave in this round (start, warning, end, manual)
        self.referee_log = referee_log_of(log_path) if log_path else None
        self.referee_tail = JsonlTail(self.referee_log) if self.referee_log else None
        self.begun_wall = int(wall() * 1000) / 1000.0  # host_time has whole ms
        self.log = []  # lines for the operator
        self.links_path = None
        if log_path:
            stem = log_path[:-6] if log_path.endswith(".jsonl") else log_path
            self.links_path = stem + ".links.json"  # refconsole.links_file_of
        self.links_next = 0.0
        self.port_of = {}  # clock -> index of the port it spoke on last
        self.heard = {}  # (clock, session) -> [first, pace_from, newest]: (host s, t_ms)
        for i, link in enumerate(self.links):
            link.on_record = self._hook(i, link.on_record)
        if log_path:
            self._resume(log_path)

    def _resume(self, log_path):
        """A logger started again on the round's log (the laptop or the logger
        died): if its clocks took the round, it has started, when the log says;
        START is not sent again (a clock that took it would log a refusal), and
        a clock without it is told how long ago it started."""
        from ..link.logfile import read_records
        from ..views.report import time_of_day
        starts = []
        for r in read_records(log_path):
            at = epoch_of(r.get("host_time"))
            if r.get("event") == "round" and r.get("round") == self.number and \
                    isinstance(r.get("elapsed_ms"), int) and at is not None:
                starts.append((r["elapsed_ms"] != 0, at - max(0, r["elapsed_ms"]) / 1000.0))
        if not starts:
            return
        at = min(starts)[1]  # a clock that took START itself, else a late one's reckoning
        self.started_at = self.time() - max(0.0, self.wall() - at)
        self.log.append(f"round {self.number}: started at {time_of_day(at)} (the log says "
                        "so): START is not sent again; a clock without the round is told "
                        "how long ago it started")

    def table(self, clock):
        """'table-5 (Nováková vs Dvořák)': a clock as the operator's lines
        name it, with its players in this round where the pairings have them."""
        label = self.pairings.label(str(clock), self.number) if self.pairings else ""
        return f"{clock} ({label})" if label else str(clock)

    def pairing_note(self):
        """One line on the pairings against the clocks heard: which have no
        names in this round (so the referee adds their rows before the day
        goes on), or None without --pairings."""
        if self.pairings is None:
            return None
        heard = sorted({str(c) for _i, c, _s in self.sessions if c is not None})
        bare = [c for c in heard if self.pairings.names(c, self.number) is None]
        line = (f"pairings: the players of {len(heard) - len(bare)} of "
                f"{plural(len(heard), 'clock')} heard in round {self.number}")
        if bare:
            line += (f"; no names for {', '.join(bare)} (add their rows to "
                     f"{self.pairings.path})")
        return line

    def _hook(self, index, chained):
        def on_record(record):
            self._record(index, record)
            if chained is not None:
                chained(record)
        return on_record

    def _record(self, index, record):
        self.port_of[record.get("clock")] = index
        t = record.get("t_ms")
        if isinstance(t, int):  # as ClockModel.pace: from a record a second after the first
            at = self.time()
            h = self.heard.setdefault((record.get("clock"), record.get("session")),
                                      [(at, t), None, None])
            if h[1] is None and at >= h[0][0] + 1.0:
                h[1] = (at, t)
            h[2] = (at, t)
        seen = self._seen(index, record.get("clock"), record.get("session"))
        ev = record.get("event")
        if record.get("round") == self.number:
            seen.tagged = True  # its round event, or a record after it (a restarted logger)
            self.gongs_heard += ev == "gong"
        elif ev == "refused" and record.get("what") == "round" and not seen.tagged:
            seen.refused = True

    def _seen(self, index, clock, sid, tagged=False):
        key = (index, clock, sid)
        seen = self.sessions.get(key)
        if seen is None:
            seen = self.sessions[key] = _Seen()
        if tagged:
            seen.tagged = True  # the log says so, though a record came first
        return seen

    def _discover(self):
        """The clock now on each port, from its link: a hello is enough (an
        idle clock whose events are all stored sends no record)."""
        for i, link in enumerate(self.links):
            s = getattr(link, "current", None)
            if s is None or s.ended:
                continue
            self.port_of[s.clock] = i
            self._seen(i, s.clock, s.sid, tagged=s.round == self.number)

    def live(self):
        """Port index -> the clock's live session (not ended) on that port."""
        out = {}
        for i, link in enumerate(self.links):
            s = getattr(link, "current", None)
            if s is not None and not s.ended:
                out[i] = s
        return out

    # -- actions ------------------------------------------------------------
    def ask_who(self):
        """Ask every port who is there (the clocks answer with their hello)."""
        frame = protocol.who()
        for port in self.ports:
            port.write(frame)

    def wait_heard(self, logger, max_s=2.0):
        """Poll until a clock has spoken on every port (at most ``max_s``)."""
        self.ask_who()
        until = time.monotonic() + max_s
        while time.monotonic() < until and len(self.live()) < len(self.ports):
            logger.poll(0.02)
        self._discover()

    def start(self):
        """The round's start (``N <round> 0``) to every clock heard; a port
        with no clock heard yet gets the round when its clock speaks (as a
        late clock: nothing is left waiting in a line nobody reads)."""
        if self.started_at is not None:
            return False
        self._discover()
        self.started_at = self.time()
        first = round_frame(self.number, 0)
        live = set()
        for (index, _clock, _sid), seen in self.sessions.items():
            if seen.tagged or seen.refused:
                continue
            if index not in live:
                self.ports[index].write(first)
                live.add(index)
            seen.next_try = self.started_at + RETRY_S
            seen.tries = 1
        quiet = [p.path for i, p in enumerate(self.ports) if i not in live]
        self.log.append(f"round {self.number}: START sent to {plural(len(live), 'clock')}"
                        + (f"; no clock heard yet on {', '.join(quiet)}: told when it speaks"
                           if quiet else ""))
        return True

    def gong(self):
        frame = hostframes.command(BTN_GONG)
        for port in self.ports:
            port.write(frame)
        self.gongs += 1
        self.log.append("GONG sent to every clock")

    def pace(self):
        """The clocks' time against the host's (``views.model.typical_pace``):
        about 20 for virtual clocks at --speed 20, else 1.0."""
        return typical_pace(pace_between(h[1], h[2]) for h in self.heard.values()) or 1.0

    def elapsed_ms(self):
        """The time since START in the clocks' own time (simulated under --speed)."""
        return int((self.time() - self.started_at) * 1000 * self.pace())

    def service(self):
        """Timers: the round number to clocks that do not have it yet; the
        console's actions."""
        self._referee_actions()
        self._discover()
        self._write_links()
        if self.started_at is None:
            return
        now = self.time()
        for (index, clock, sid), seen in self.sessions.items():
            if seen.tagged or seen.refused or seen.tries >= TRIES or now < seen.next_try:
                continue
            s = getattr(self.links[index], "sessions", {}).get(sid)
            if s is not None and s.restore is not None and \
                    view_for(s.mode).hall_view == "round":
                # its game is being given back with the hall's round (its core counts
                # one), logged just after the resume: told only if that does not come
                seen.next_try = now + RETRY_S
                continue
            self.ports[index].write(round_frame(self.number, self.elapsed_ms()))
            if seen.tries == 0:
                self.late_sent += 1
                sim = simulation_text(self.pace())
                self.log.append(f"{self.table(clock)}: joined late, told round {self.number} "
                                f"started {self.elapsed_ms() / 1000:.1f} s ago"
                                + (f" ({sim})" if sim else ""))
            seen.tries += 1
            seen.next_try = now + RETRY_S

    def _write_links(self):
        """The state of every clock's port for the console (a state file,
        replaced whole; the log itself is never rewritten)."""
        if self.links_path is None:
            return
        now = self.time()
        if now < self.links_next:
            return
        self.links_next = now + LINKS_EVERY_S
        from ..link.logfile import host_time
        clocks = {}
        for clock, index in self.port_of.items():
            port = self.ports[index]
            clocks[str(clock)] = {"port": port.path,
                                  "state": "connected" if port.state == "connected" else "lost"}
        tmp = self.links_path + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"written": host_time(), "round": self.number,
                           "started": self.started_at is not None, "clocks": clocks}, f)
            os.replace(tmp, self.links_path)
        except OSError:
            pass  # the console then says the round process is not running

    def missing(self):
        """Clocks heard whose current session never took the round."""
        latest = {}
        for (index, clock, sid), seen in self.sessions.items():
            latest[clock] = seen
        return sorted(c for c, s in latest.items() if not s.tagged and c is not None)

    def _referee_actions(self):
        if self.referee_tail is None:
            return
        for rec in self.referee_tail.read()[0]:
            if rec.get("event") != "referee_action":
                continue
            if rec.get("done"):
                continue  # the console sent it itself (on the broker)
            at = epoch_of(rec.get("host_time"))
            if at is None or at < self.begun_wall:
                continue  # before this run: done (or refused) by an earlier one
            action = rec.get("action")
            if action == "gong":
                self.gong()
            elif action == "start":
                if rec.get("round") not in (None, self.number):
                    self.log.append(f"console asked to start round {rec.get('round')}: this "
                                    f"run is round {self.number}; ignored")
                elif not self.start():
                    self.log.append(f"round {self.number} already started; START ignored")


def run_round(logger, control, exit_on_end=False, stop=None, max_s=None, on_poll=None,
              poll_s=0.02):
    """Log every clock and run the round until every session ended
    (``exit_on_end``), ``stop()``, or ``max_s``.  Returns True if all ended."""
    def serve():
        control.service()
        if on_poll is not None:
            on_poll()
    return logger.run(exit_on_end, stop, max_s, on_poll=serve, poll_s=poll_s)


# -- a virtual hall for the tour and the tests --------------------------------------
def start_virtual_clocks(mode, values, scripts, speed=1.0, prefix="table-"):
    """Virtual table clocks, each on its own pty, against real time ×
    ``speed`` (the pump's RealPace).  Returns (threads, fds, paths); the
    caller keeps the fds open while the clocks run."""
    from ..link.transport import pty_pair
    from ..vboard.device import DeviceThread, RealPace, make_runner, mark

    threads, fds, paths = [], [], []
    pace = RealPace(mark(), speed)
    for i, actions in enumerate(scripts):
        master, slave, path = pty_pair()
        fds += [master, slave]
        paths.append(path)
        runner = make_runner(mode, values, actions, clock="%s%d" % (prefix, i + 1),
                             sid=os.urandom(4).hex())
        th = DeviceThread(runner, master, pace)
        th.start()
        threads.append(th)
    return threads, fds, paths
