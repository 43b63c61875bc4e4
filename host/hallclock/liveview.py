"""The live view of ``hallclock log``: one row per clock (mode, whose time runs,
time left, move, warnings, overtime, link state, events) redrawn a few times a
second with rich, or plain lines -- one per record and per link change -- when
stdout is not a terminal (or with ``--plain``).

It hooks into the logger from outside: ``HostLink.on_record`` brings each
stored record, and the logger loop calls :meth:`LiveView.poll` after every
poll of its ports (``Logger.run(on_poll=...)``).  The time left is estimated
from the records (see :mod:`hallclock.clockstate`).
"""
import sys
import time

from .clockstate import ClockState, clock_text, describe

REFRESH_S = 0.25  # redraw at most this often
RESEND_SHOW_S = 2.0  # show 'resending' this long after the link asked for a resend


def link_state(port, link, now):
    """'connected', 'resending' or 'lost' (or the port's own state, e.g. 'closed')."""
    state = getattr(port, "state", "?")
    if state != "connected":
        return state
    sessions = getattr(link, "sessions", {}) or {}
    asked = max((getattr(s, "asked", 0.0) or 0.0 for s in sessions.values()), default=0.0)
    if asked and now - asked < RESEND_SHOW_S:
        return "resending"
    return "connected"


LINK_STYLE = {"connected": "green", "resending": "bold yellow", "lost": "bold red"}


class LiveView:
    """``with LiveView(logger): logger.run(on_poll=view.poll)``"""

    def __init__(self, logger, console=None, plain=None, clock=time.monotonic, out=None):
        self.logger = logger
        self.clock = clock
        self.out = out or sys.stdout
        if console is None:
            from rich.console import Console
            console = Console(file=self.out)
        self.console = console
        self.plain = (not console.is_terminal) if plain is None else plain
        self.states = {}  # clock name -> ClockState
        self.order = []
        self.port_of = {}  # clock name -> index of its port
        self.link_seen = {}  # port index -> last shown link state
        self.live = None
        self.last_draw = 0.0
        self.recent = []  # (clock, text)
        for i, link in enumerate(logger.links):
            chained = link.on_record

            def hook(rec, i=i, chained=chained):
                if chained is not None:
                    chained(rec)
                self.on_record(i, rec)
            link.on_record = hook

    # -- the logger's callbacks -------------------------------------------
    def on_record(self, port_index, rec):
        name = str(rec.get("clock"))
        state = self.states.get(name)
        if state is None:
            state = self.states[name] = ClockState(name)
            self.order.append(name)
        state.feed(rec, self.clock())
        self.port_of[name] = port_index
        text = describe(rec)
        self.recent.append((name, text))
        del self.recent[:-6]
        if self.plain:
            port = self.logger.ports[port_index]
            t = rec.get("t_ms")
            stamp = clock_text(t, tenths=True) if isinstance(t, int) else "-"
            extra = ""
            if rec.get("event") in ("turn", "resume", "dup_start", "press", "pause"):
                left = state.left_ms(self.clock())
                if left is not None:
                    extra = f"  [{clock_text(left)} left]"
            mark = "  OVERTIME" if rec.get("event") == "expired" else ""
            self._line(f"{name} {port.path} #{rec.get('seq')} t={stamp} {text}{extra}{mark}")
        else:
            self.poll(force=False)

    def poll(self, force=False):
        now = self.clock()
        self._link_changes(now)
        if self.plain or self.live is None:
            return
        if force or now - self.last_draw >= REFRESH_S:
            self.last_draw = now
            self.live.update(self.render(now), refresh=True)

    def _link_changes(self, now):
        for i, (port, link) in enumerate(zip(self.logger.ports, self.logger.links)):
            state = link_state(port, link, now)
            if self.link_seen.get(i) != state:
                first = i not in self.link_seen
                self.link_seen[i] = state
                if self.plain and not (first and state == "connected"):
                    self._line(f"link {port.path}: {state}")

    def _line(self, text):
        print(text, file=self.out, flush=True)

    # -- drawing -----------------------------------------------------------
    def render(self, now=None):
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        now = self.clock() if now is None else now
        table = Table(title=f"hallclock log → {self.logger.writer.path}", title_justify="left",
                      expand=False)
        for col in ("clock", "port", "link", "mode", "time runs", "left", "move", "warnings",
                    "events", "last event"):
            table.add_column(col, justify="right" if col in ("left", "move", "events") else
                             "center" if col == "time runs" else "left")
        shown_ports = set()
        for name in self.order:
            s = self.states[name]
            i = self.port_of.get(name, 0)
            shown_ports.add(i)
            port, link = self.logger.ports[i], self.logger.links[i]
            ls = link_state(port, link, now)
            status = s.status(now)
            left = s.left_ms(now)
            if s.mode == "scrabble" and not s.running and not s.paused and s.round_start is None:
                left_cell = Text("–")
            elif status == "overtime" or (s.expired and status == "ended"):
                left_cell = Text(f"OVERTIME {clock_text(left)}", style="bold white on red")
            elif status == "paused":
                left_cell = Text(f"⏸ {clock_text(left)}", style="bold cyan")
            elif s.warnings and status == "running":
                left_cell = Text(clock_text(left), style="bold yellow")
            else:
                left_cell = Text(clock_text(left))
            if status == "ended":
                runs = Text("ended", style="dim")
            elif s.running or s.paused:
                runs = Text(s.player or ("hall" if s.mode == "duplicate" else "?"),
                            style="bold" if s.running else "cyan")
            else:
                runs = Text("–")
            warn = " ".join(f"{w}s" for w in s.warnings)
            if s.playout:
                warn = (warn + " " if warn else "") + f"play-out: {s.playout}"
            warn_cell = Text(warn, style="yellow" if s.warnings else "")
            if s.expired:
                warn_cell.append(" expired", style="bold red")
            table.add_row(name, port.path, Text(ls, style=LINK_STYLE.get(ls, "")), s.mode, runs,
                          left_cell, str(s.move if s.move is not None else "–"), warn_cell,
                          str(s.events), s.last_event)
        for i, (port, link) in enumerate(zip(self.logger.ports, self.logger.links)):
            if i not in shown_ports:
                ls = link_state(port, link, now)
                table.add_row("(waiting)", port.path, Text(ls, style=LINK_STYLE.get(ls, "")),
                              "", "", "", "", "", "0", "")
        counters = []
        for port, link in zip(self.logger.ports, self.logger.links):
            counters.append(f"{port.path}: {getattr(link, 'records', 0)} stored, "
                            f"{getattr(link, 'dups', 0)} duplicates, {getattr(link, 'bad', 0)} bad lines, "
                            f"{getattr(port, 'reconnects', 0)} reconnects")
        recent = Text("\n".join(f"  {c}: {t}" for c, t in self.recent), style="dim")
        return Group(table, Text("  " + " · ".join(counters), style="dim"), recent,
                     Text("  Ctrl-C stops logging", style="dim"))

    # -- context -----------------------------------------------------------
    def __enter__(self):
        if not self.plain:
            from rich.live import Live
            self.live = Live(self.render(), console=self.console, auto_refresh=False,
                             transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.update(self.render(), refresh=True)
            self.live.__exit__(*exc)
            self.live = None
        return False
