"""The live view of ``hallclock log``: one row per clock -- what its two
displays show, whose time runs, the move, warnings / overtime / play-out /
banks, the link state -- redrawn a few times a second with rich, or plain
lines (one per record and per link change) when stdout is not a terminal (or
with ``--plain``).

What a row shows comes from ``hallclock.views.model``: the clock's own core
replayed from its records, asked at the device time now (the newest record's
``t_ms`` plus the host time since it came).  What to say for a mode comes
from the registry ``hallclock.views.modes``.  The table fits the terminal: at 80
columns the essentials (clock, link, both displays, who runs, move, state);
from 120 columns also the mode, the port, the event count and the last event.

It hooks into the logger from outside: ``HostLink.on_record`` brings each
stored record, and the logger loop calls :meth:`LiveView.poll` after every
poll of its ports (``Logger.run(on_poll=...)``).
"""
import sys
import time

from ..errors import shown
from .model import Clocks, record_text
from .modes import clock_text, view_for
from .words import by_name, gong_name, playout_step, plural, warn_min_of

REFRESH_S = 0.25  # redraw at most this often
RESEND_SHOW_S = 2.0  # show 'resending' this long after the link asked for a resend
WIDE = 120  # from this many columns the table shows mode, port, events, last event



def event_text(rec, warn_min=None):
    """One short line for a record on screen (the live view's last events,
    its plain lines): the record's own words (hallclock.views.model.record_text),
    with a gong and a play-out step in this vocabulary, never their log keys."""
    ev = rec.get("event")
    move = rec.get("move")
    at = " in move %s" % move if move is not None else ""
    if ev == "gong":
        return gong_name(rec.get("kind"), warn_min) + at
    if ev == "playout":
        step = rec.get("step")
        return (playout_step(step) if step == "over" else "play-out " + playout_step(step)) + \
            (" from move %s" % move if move is not None and step != "over" else "")
    return record_text(rec)

def link_state(port, link, now, heard=False):
    """'connected' (a clock has been heard on it: ``heard``, or the link
    knows a session), 'silent' (the port is open, nothing heard yet),
    'resending', or the port's own state ('lost', 'closed')."""
    state = getattr(port, "state", "?")
    if state != "connected":
        return state
    sessions = getattr(link, "sessions", {}) or {}
    if not sessions and not heard:
        return "silent"
    asked = max((getattr(s, "asked", 0.0) or 0.0 for s in sessions.values()), default=0.0)
    if asked and now - asked < RESEND_SHOW_S:
        return "resending"
    return "connected"


LINK_STYLE = {"connected": "green", "resending": "bold yellow", "lost": "bold red",
              "silent": "yellow", "closed": "dim"}
KIND_STYLE = {"warn": "yellow", "alert": "bold red", "info": "", "dim": "dim"}


def row_cells(c, face):
    """The cells of one clock's row (plain values and rich styles), from its
    model's face: {'A', 'B', 'runs', 'move', 'state': [(text, kind)], ...}."""
    view = view_for(c.model.mode if c.model is not None else None)
    if face is None:
        return {"A": "", "B": "", "runs": "?", "move": "–", "mode": "?",
                "state": [("not modelled: %s" % (c.error or "no boot heard"), "alert")],
                "styles": ("", "")}
    m = c.model
    state = []
    styles = ["", ""]
    side = ("A", "B").index(face.player) if face.player in ("A", "B") else None
    if face.ended:
        runs = "power lost" if m.power_lost else "ended"
        state.append((runs, "alert" if m.power_lost else "dim"))
        styles = ["dim", "dim"]
    else:
        runs = view.runs(face)
        if face.paused:
            runs = "⏸ " + runs
            state.append(("paused", "info"))
            if side is not None:
                styles[side] = "bold cyan"
        elif face.running and side is not None:
            styles[side] = "bold"
    for text, kind in view.detail(face):
        state.append((text, kind))
    if face.overtime and not face.ended:
        word = view.overtime_word
        state.insert(0, (word, "alert"))
        if side is not None:
            styles[side] = "bold white on red"
    elif side is not None and not face.ended and view.warned(face):
        styles[side] = "bold yellow"
    said = c.reboot_text() if getattr(c, "reboots", None) else None
    if said:  # the clock rebooted: said in words for the rest of the round
        state.insert(0, (said[len(c.name) + 1:] if said.startswith(c.name + " ") else said,
                         "warn"))
    if m.mismatches:
        state.append(("model: %d mismatch%s" % (len(m.mismatches),
                                                "" if len(m.mismatches) == 1 else "es"),
                      "alert"))
    return {"A": face.displays[0].strip(), "B": face.displays[1].strip(), "runs": runs,
            "move": str(face.move) if face.move is not None else "–", "mode": m.mode,
            "state": state, "styles": tuple(styles)}


def _warn_min(c):
    """The clock's round_warn_min (its settings as the model holds them)."""
    m = c.model
    settings = getattr(m, "settings", None) if m is not None else None
    if isinstance(settings, dict):
        return warn_min_of(settings)
    v = getattr(settings, "round_warn_min", None) if settings is not None else None
    return v if isinstance(v, int) else None


class LiveView:
    """``with LiveView(logger): logger.run(on_poll=view.poll)``"""

    def __init__(self, logger, console=None, plain=None, clock=time.monotonic, out=None):
        self.logger = logger
        self.clock = clock
        self.out = out or sys.stdout
        if console is None:
            from .terminal import console as Console
            console = Console(file=self.out)
        self.console = console
        self.plain = (not console.is_terminal) if plain is None else plain
        self.clocks = Clocks()
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

    @property
    def order(self):
        return self.clocks.order

    @property
    def states(self):
        return self.clocks.clocks

    # -- the logger's callbacks -------------------------------------------
    def on_record(self, port_index, rec):
        name = str(rec.get("clock"))
        now = self.clock()
        c = self.clocks.feed(rec, now)
        self.port_of[name] = port_index
        text = event_text(rec, _warn_min(c))
        self.recent.append((name, text))
        del self.recent[:-6]
        if self.plain:
            self._plain_line(port_index, c, rec, text, now)
        else:
            self.poll(force=False)

    def _plain_line(self, port_index, c, rec, text, now):
        port = self.logger.ports[port_index]
        t = rec.get("t_ms")
        stamp = clock_text(t, tenths=True) if isinstance(t, int) else "-"
        extra = mark = ""
        face = c.face(now)
        if face is not None:
            view = view_for(face.mode)
            if rec.get("event") in ("turn", "resume", "dup_start", "press", "pause"):
                extra = "  [%s]" % view.plain_left(face)
            if rec.get("event") == "expired":
                mark = "  " + view.overtime_word
        self._line(f"{c.name} {port.path} #{rec.get('seq')} t={stamp} {text}{extra}{mark}")

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
            state = link_state(port, link, now, i in self.port_of.values())
            before = self.link_seen.get(i)
            if before != state:
                self.link_seen[i] = state
                # the first record's own line says the port has a clock
                quiet = (before is None and state in ("connected", "silent")) or \
                    (before == "silent" and state == "connected")
                if self.plain and not quiet:
                    self._line(f"link {port.path}: {state}")

    def _line(self, text):
        print(shown(text), file=self.out, flush=True)  # names from the clocks: escaped

    # -- drawing -----------------------------------------------------------
    def render(self, now=None, width=None):
        from rich import box
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        now = self.clock() if now is None else now
        width = width or self.console.width
        wide = width >= WIDE
        table = Table(title=f"hallclock log → {self.logger.writer.path}", title_justify="left",
                      box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), expand=False,
                      title_style="bold", show_edge=False)
        table.add_column("clock", no_wrap=True, overflow="fold", min_width=10,
                         max_width=14 if not wide else 24)
        if wide:
            table.add_column("port", no_wrap=True, overflow="ellipsis", max_width=24)
        table.add_column("link", no_wrap=True, min_width=9)
        if wide:
            table.add_column("mode", no_wrap=True)
        table.add_column("A", justify="right", no_wrap=True, min_width=5)
        table.add_column("B", justify="right", no_wrap=True, min_width=5)
        table.add_column("runs", justify="center", no_wrap=True, overflow="ellipsis",
                         min_width=4, max_width=10)
        table.add_column("move", justify="right", no_wrap=True, min_width=4)
        table.add_column("state", no_wrap=True, overflow="ellipsis", min_width=12,
                         ratio=1 if not wide else None, max_width=None if not wide else 40)
        if wide:
            table.add_column("events", justify="right", no_wrap=True)
            table.add_column("last event", no_wrap=True, overflow="ellipsis", ratio=1)
        shown_ports = set(self.port_of.get(c.name, 0) for c in self.clocks)
        height = getattr(self.console, "height", 24) or 24
        unheard = [i for i in range(len(self.logger.ports)) if i not in shown_ports]
        # the rows the screen has room for: title, header, rule, counters, the
        # 'more' line and the last line; a clock that does not fit is counted, never dropped
        room = max(1, height - 8)  # the 'more' line may take two
        clocks = by_name(self.clocks, lambda c: c.name)
        hidden = []
        if len(clocks) + len(unheard) > room:
            hidden = clocks[room:]
            clocks = clocks[:room]
            unheard = unheard[:max(0, room - len(clocks))]
        for c in clocks:
            i = self.port_of.get(c.name, 0)
            port, link = self.logger.ports[i], self.logger.links[i]
            ls = link_state(port, link, now, True)
            cells = row_cells(c, c.face(now))
            state = Text()
            for text, kind in cells["state"]:
                if state:
                    state.append(" ")
                state.append(shown(text), style=KIND_STYLE.get(kind, ""))
            row = [shown(c.name)]
            if wide:
                row.append(port.path)
            row.append(Text(ls, style=LINK_STYLE.get(ls, "")))
            if wide:
                row.append(shown(cells["mode"]))
            row += [Text(cells["A"], style=cells["styles"][0]),
                    Text(cells["B"], style=cells["styles"][1]),
                    Text(cells["runs"], style="dim" if cells["runs"] in ("ended", "–")
                         else "bold"),
                    cells["move"], state]
            if wide:
                last = event_text(c.last_record, _warn_min(c)) if c.last_record else ""
                row += [str(c.records), shown(last)]
            table.add_row(*row)
        for i in unheard:
            port, link = self.logger.ports[i], self.logger.links[i]
            if True:
                ls = link_state(port, link, now)
                row = ["(no clock)"] + ([port.path] if wide else [])
                row.append(Text(ls, style=LINK_STYLE.get(ls, "")))
                row += ([""] if wide else []) + ["", "", "", "",
                                                 Text("nothing heard yet" if not wide
                                                      else "nothing heard on this port yet",
                                                      style="dim")]
                if wide:
                    row += ["0", ""]
                table.add_row(*row)
        counters = []
        for port, link in zip(self.logger.ports, self.logger.links):
            counts = (f"{getattr(link, 'records', 0)} stored, {getattr(link, 'dups', 0)} dup, "
                      f"{getattr(link, 'bad', 0)} bad, {getattr(port, 'reconnects', 0)} reconn.")
            counters.append(f"{port.path}: {counts}" if wide or len(self.logger.ports) == 1
                            else counts)
        if not wide and len(counters) > 1:
            total = [sum(getattr(link, k, 0) for link in self.logger.links)
                     for k in ("records", "dups", "bad")]
            counters = ["%d ports: %d stored, %d dup, %d bad" % (len(counters), *total)]
        parts = [table]
        if hidden:
            parts.append(Text(" %s not shown (%s to %s): a taller terminal shows them, "
                              "and hallclock console --log %s every table" % (
                                  plural(len(hidden), "more clock"), shown(hidden[0].name),
                                  shown(hidden[-1].name), shown(self.logger.writer.path)),
                              style="bold yellow"))
        parts.append(Text(" " + " · ".join(counters), style="dim", no_wrap=True,
                          overflow="ellipsis"))
        disk = getattr(self.logger, "disk_problem", lambda: None)()
        if disk:  # a full disk: records held, acks withheld (logger.py)
            parts.append(Text(" DISK FULL: " + disk, style="bold white on red"))
        # the last events, as many as the screen has room for
        room = height - (len(clocks) + len(unheard) + (2 if hidden else 0)) - 6
        recent = self.recent[-max(0, min(len(self.recent), room)):] if room > 0 else []
        if recent:
            parts.append(Text("\n".join(shown(f" {c}: {t}") for c, t in recent), style="dim",
                              no_wrap=True, overflow="ellipsis"))
        parts.append(Text(" Ctrl-C stops logging", style="dim"))
        return Group(*parts)

    # -- context -----------------------------------------------------------
    def __enter__(self):
        if not self.plain:
            from rich.live import Live
            self.live = Live(self.render(), console=self.console, auto_refresh=False,
                             transient=False, vertical_overflow="crop")
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.update(self.render(), refresh=True)
            self.live.__exit__(*exc)
            self.live = None
        return False
