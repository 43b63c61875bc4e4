"""The host's model of a clock: a device session's game replayed into the
firmware's OWN code -- its ``App`` (``hallclock_fw.app``: the host commands,
the settings view of ČAS 3.2) around the mode's core
(``hallclock_fw.modes.make_core``) -- so the laptop shows what the clock shows
because it runs the clock's code.  Nothing here knows a clock rule; what a
mode's core holds is read through ``hallclock.views.modes``.

The log holds events, not inputs.  Each event record says that something
happened on the clock at device time ``t_ms``; the model finds the input that
made it by asking the core itself: a record is explained by

1. events the core emitted before and the log has not shown yet (one input
   often gives several events: ``press`` then ``turn``), else
2. time: the clock's loop passed at ``t_ms`` (warnings, expiry, gongs, play-out), else
3. what the record itself names: the session's ``end``, settings the host
   sent (``K``, logged ``settings``), the host's round (``N``, logged
   ``round``), the restore the host sent after a power loss (``S``: its
   values are in the old session's ``power_loss`` record; a viewer, which
   never reads that record, tries the old game's snapshots, and takes the
   one it kept again measured at the hall time a record of the restore's
   events names when that record is not what the guess gave), else
4. one input at ``t_ms`` -- a button, a long press, or the same sent as a
   remote command (the clock cannot tell them apart), else
5. a silent input and then one of (4) (backgammon: a long PAUSE asks for a
   break without an event, the next press names the player; the press that
   closes a settings view),

each tried on a copy of the core; the first whose first event equals the
record (name, ``t_ms`` and every field of hallclock.catalog) is kept.  Records
that nothing explains, and events the core emitted that the log lacks, are
kept in ``mismatches`` -- never hidden.  Ticks come from ``t_ms`` with the
firmware's ``ticks_add``/``ticks_diff`` (2**30 wrap): ``now =
ticks_add(base, t_ms)``, any ``base``.

API (used by the live view, the hall display, the report, the referee
console and ``log --restore``)::

    m = Model.from_records(records)      # one session's records, boot first
    m = Model(mode, settings)            # or feed the records one by one:
    m.feed(record)                        #   -> list of new Mismatch (also m.mismatches)
    m.t_ms                                # device time of the newest record fed
    m.ended / m.end_t_ms                  # the session's end (or power loss) was seen
    f = m.face(t_ms)                      # what the clock shows at device time t_ms
                                          #   (t_ms >= m.t_ms; default m.t_ms; frozen
                                          #   at the end)
    f.displays                            # ('  2:00', ' 1:43'): A's and B's display,
                                          #   the digits the device's displays show
    f.shown                               # (ms, ms): what the core handed each display
    f.player, f.move, f.running, f.paused, f.overtime, f.ended, f.left_ms
    f.facts                               # the mode's own facts (hallclock.views.modes):
                                          #   scrabble: round_left_ms, round_started,
                                          #   playout (step name or None), limit_ms;
                                          #   duplicate: countdown_ms, over;
                                          #   backgammon: banks_ms, delay, delay_left_ms,
                                          #   breaks, break_player, break_left_ms, flag
    m.snapshot(t_ms)                      # the core's restore values at t_ms (the S frame)
    m.restore_frame(t_ms)                 # the S frame bytes, or None

    clocks = Clocks()                     # every clock of a log or link, by name
    c = clocks.feed(record, host_now)     # -> ClockModel (sessions chained through
                                          #   power_loss; host_now: epoch s or monotonic)
    c.model, c.device_now(host_now), c.face(host_now), c.time_of_day(t_ms)
"""
import copy
import time
from datetime import datetime

from hallclock_fw import protocol, settings as settings_mod
from .. import hostframes
from hallclock_fw.app import App
from hallclock_fw.core.timing import ticks_add, ticks_diff
from hallclock_fw.display import render, render_playout
from hallclock_fw.events import BTN_GONG, BTN_PAUSE, BTN_START, BUTTON_NAMES, LONG
from hallclock_fw.hw.panel import Panel

from .. import catalog
from . import modes as host_modes
from ..vboard.vdev.fakes import FakeUART
from .modes import clock_text

# every input a core can get from the panel or a C frame, in the order tried
INPUTS = tuple(range(len(BUTTON_NAMES))) + tuple(b | LONG for b in range(len(BUTTON_NAMES)))
DISPLAY_CHARS = "0123456789- P"  # digit codes -> text, as hallclock.vboard.vdev.fakes.FakeDisplay


def input_name(code):
    """'A', 'PAUSE long', 'restore' ... for an input code (or 'tick')."""
    if code is None:
        return "tick"
    if isinstance(code, str):
        return code
    if isinstance(code, tuple):  # a host command: ('K', mode, text), ('N', n, ms), ('S', ...)
        return {"K": "settings", "N": "round", "S": "restore"}.get(code[0], code[0])
    base = code & ~LONG
    return BUTTON_NAMES[base] + (" long" if code & LONG else "")


def settings_from_json(mode, obj):
    """The settings of a ``boot`` record's JSON object, parsed and validated
    by the firmware's settings module (ValueError if they are not valid)."""
    if not isinstance(obj, dict):
        raise ValueError("settings is not an object")
    pairs = []
    for key, value in obj.items():
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        pairs.append("%s=%s" % (key, value))
    return settings_mod.parse(mode, pairs)


def epoch_of(host_time):
    """ISO 8601 ``host_time`` of a log record -> epoch seconds (None if absent)."""
    if not host_time or not isinstance(host_time, str):
        return None
    try:
        return datetime.fromisoformat(host_time.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class _Sink:
    """Where the clock's events go (instead of the link).  Reached through a
    bound method, so ``copy.deepcopy`` of the app gives the copy its own."""

    def __init__(self):
        self.events = []

    def emit(self, code, now, v0, v1, v2, v3):
        self.events.append((code, now, v0, v1, v2, v3))


class _NoButtons:
    when = 0

    def poll(self, now):
        return -1

    def held_now(self, code):
        return False  # a logged press has ended by the next pass (a PAUSE after the game)

    def next_deadline(self, now):
        return None


class RecordingPanel(Panel):
    """The firmware's own Panel (digit rendering included) on no hardware,
    keeping the text of each display and the raw value the clock showed."""

    def __init__(self):
        super().__init__(_NoButtons(), None, (None, None), None, (None, None))
        self.texts = ["    ", "    "]
        self.ms = [None, None]
        self.steps = [None, None]

    def _text(self, side, buf, colon):
        c = DISPLAY_CHARS
        self.texts[side] = c[buf[0]] + c[buf[1]] + (":" if colon else " ") + c[buf[2]] + c[buf[3]]

    def show(self, side, ms):
        buf = bytearray(4)
        self._text(side, buf, render(ms, buf))
        self.ms[side] = ms
        self.steps[side] = None

    def show_playout(self, side, step):
        buf = bytearray(4)
        render_playout(step, buf)
        self._text(side, buf, False)
        self.ms[side] = None
        self.steps[side] = step


class _NoLink:
    """What the App asks of its link, for a clock with no line: the events
    go to the sink (``_ModelApp._event``), commands are handed in directly."""

    def __init__(self, mode, settings_text):
        self.mode = mode
        self.settings_text = settings_text

    def receive(self, now):
        return 0

    def next_command(self):
        return None

    def send(self, now):
        pass

    def next_deadline(self, now):
        return None

    def all_acked(self):
        return True


class _ModelApp(App):
    """The firmware's App as it is, its events kept instead of framed."""

    def __init__(self, sink, mode, settings, now):
        self.sink = sink
        super().__init__(RecordingPanel(), FakeUART(), mode, settings, "model", "00000000", now)
        self.link = _NoLink(mode, self.link.settings_text)

    def _event(self, code, now, v0, v1, v2, v3):
        self.sink.emit(code, now, v0, v1, v2, v3)


class Mismatch:
    """A record the clock's code could not explain, or an event it emitted
    that the log does not have."""

    def __init__(self, kind, t_ms, record=None, emitted=None, text=""):
        self.kind = kind  # 'unexplained', 'not_logged', 'gap', 'bad_record'
        self.t_ms = t_ms
        self.record = record
        self.emitted = emitted  # the clock's event as a record-like dict
        self.text = text

    def __repr__(self):
        return "Mismatch(%s at %s: %s)" % (self.kind, self.t_ms, self.text)


class Face:
    """What a clock shows at one device time."""

    __slots__ = ("t_ms", "displays", "shown", "steps", "player", "move", "running",
                 "paused", "overtime", "ended", "left_ms", "facts", "mode", "settings_view")

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        return "Face(%s t=%s %r)" % (self.mode, self.t_ms, self.displays)


class Model:
    """One device session's game in the firmware's own App and core."""

    def __init__(self, mode, settings, base=0, session=None, clock=None):
        self.base = base  # device tick of t_ms 0 (any value: only differences count)
        self.session = session
        self.clock = clock
        self.sink = _Sink()
        self.app = _ModelApp(self.sink, mode, settings, base)  # emits its boot
        self.queue = [self._as_record(e, self.app) for e in self.sink.events]
        del self.sink.events[:]
        self.mismatches = []
        self.t_ms = 0  # device time of the newest record fed
        self.power_lost = False
        self.end_t_ms = None
        self.records = 0
        self.inputs = []  # (t_ms, input name): what the replay found
        self.restore_values = None  # (mode, settings text, values) the host sent this session
        self.restore_sent = None  # ... and what it sent the next one (power_loss)
        self.restore_guess = None  # the session before, when its power_loss went unseen
        self._guessed = {}  # a guessed S command -> the old game's moment it was taken at
        self._retake = None  # a guessed restore just taken: how to take it again
        self.boot = None  # the boot record

    # -- what the app holds ---------------------------------------------------
    @property
    def core(self):
        return self.app.core

    @property
    def mode(self):
        return self.app.mode

    @property
    def settings(self):
        return self.app.settings

    @property
    def view(self):
        return host_modes.view_for(self.app.mode)

    @property
    def ended(self):
        """The session has ended (``end``), or the clock lost power."""
        return self.app.ended or self.power_lost

    # -- building -----------------------------------------------------------
    @classmethod
    def from_boot(cls, rec, base=0):
        """A model from a ``boot`` record (ValueError for a bad mode/settings)."""
        mode = rec.get("mode")
        if mode not in settings_mod.MODES:
            raise ValueError("unknown mode %r" % (mode,))
        m = cls(mode, settings_from_json(mode, rec.get("settings") or {}), base,
                rec.get("session"), rec.get("clock"))
        m.boot = rec
        m.feed(rec)
        return m

    @classmethod
    def from_records(cls, records, base=0, restore=None):
        """Replay one session's records (the first is its ``boot``).
        ``restore``: (mode, settings text, values) of the restore the host
        sent to this session (the ``restore`` field of the old session's
        ``power_loss`` record)."""
        records = list(records)
        if not records or records[0].get("event") != "boot":
            raise ValueError("a session's records begin with its boot")
        m = cls.from_boot(records[0], base)
        m.restore_values = restore
        for rec in records[1:]:
            m.feed(rec)
        return m

    def now(self, t_ms):
        return ticks_add(self.base, t_ms)

    # -- records in ---------------------------------------------------------
    def feed(self, rec):
        """Replay one record; returns the mismatches it revealed."""
        before = len(self.mismatches)
        ev = rec.get("event")
        t = rec.get("t_ms")
        if not isinstance(t, int) or not isinstance(ev, str):
            self._mismatch("bad_record", t, rec, text="record without event or t_ms")
            return self.mismatches[before:]
        self.records += 1
        if t > self.t_ms:
            self.t_ms = t
        if ev == "gap":
            self._mismatch("gap", t, rec, text="events %s are missing from the log: the "
                           "model may differ from the clock after them" % (rec.get("missing"),))
        elif ev == "power_loss":
            self._flush_queue()
            self.power_lost = True
            self.end_t_ms = t
            sent = rec.get("restore")  # what log --restore sent the next session
            if isinstance(sent, dict) and isinstance(sent.get("values"), list):
                self.restore_sent = (sent.get("mode"), sent.get("settings"), sent["values"])
        elif ev == "health":
            pass  # the clock's own figures, no rule's event: nothing to replay
        elif catalog.code_of(ev) >= 0:
            self._event(rec, t)
            if ev == "end" and self.end_t_ms is None:
                self.end_t_ms = t
        # other records (the host's own notes): not the clock's, nothing to replay
        return self.mismatches[before:]

    def _event(self, rec, t):
        retake, self._retake = self._retake, None
        if retake is not None and self.queue:
            if same(self.queue[0], rec):  # what the guess gave (a paused game's pause)
                retake[3].append(rec)  # the restore's next event may still name its hall time
                self._retake = retake
            elif self._take_again(retake, rec):
                return
        # 1. what the clock already said
        while self.queue:
            head = self.queue.pop(0)
            if same(head, rec):
                return
            self._mismatch("not_logged", head["t_ms"], rec, head,
                           "the clock emitted %s that the log does not have" % describe(head))
        if self.power_lost:
            self._mismatch("unexplained", t, rec, text="%s after the power loss" % rec["event"])
            return
        trial = self._search(self.now(t), rec)
        if trial is None:
            self._mismatch("unexplained", t, rec, text="nothing explains %s" % describe(rec))
            return
        app, sink, how = trial
        self.app, self.sink = app, sink
        if how:
            self.inputs.append((t, " + ".join(input_name(c) for c in how)))
        events = [self._as_record(e, app) for e in sink.events]
        del sink.events[:]
        self.queue = events[1:]  # the first is rec itself

    def _search(self, now, rec):
        # 2. time (only if something fell due: a pass with nothing due changes nothing)
        due = self.app.core.next_deadline(now)
        if due is not None and ticks_diff(due, now) <= 0:
            trial, _app = self._try(now, rec, ())
            if trial is not None:
                return trial
        # 3. what the record names
        for cmd in self._commands(rec):
            trial, _app = self._try(now, rec, (cmd,))
            if trial is not None:
                if cmd[0] == "S":
                    if cmd in self._guessed:  # a record after may name its hall time
                        self._retake = (self.restore_guess, self._guessed[cmd],
                                        (self.app, self.sink), [rec], now)
                    self.restore_values = self.restore_guess = None  # taken once
                    self._guessed = {}
                return trial
        # 4. one input, 5. a silent one and then one
        silent = []
        for code in _likely_first(rec):
            trial, emitted = self._try(now, rec, (code,))
            if trial is not None:
                return trial
            if not emitted:
                silent.append(code)
        for first in silent:
            for code in _likely_first(rec):
                trial, _emitted = self._try(now, rec, (first, code))
                if trial is not None:
                    return trial
        return None

    def _commands(self, rec):
        """Host commands (or the session's end) the record itself tells of."""
        ev = rec.get("event")
        out = []
        if ev == "end":
            out.append(("end",))
        elif ev == "settings" and rec.get("mode") in settings_mod.MODES:
            try:
                values = settings_from_json(rec["mode"], rec.get("settings") or {})
                out.append(("K", rec["mode"], settings_mod.format_text(rec["mode"], values)))
            except ValueError:
                pass
        elif ev == "round" and isinstance(rec.get("round"), int) \
                and isinstance(rec.get("elapsed_ms"), int):
            out.append(("N", rec["round"], rec["elapsed_ms"]))
        elif ev == "refused" and rec.get("what") == "settings":
            # settings the clock would not take: the log does not keep them, and any
            # would do -- the clock's own settings (a game runs), or none it can read
            app = self.app
            out.append(("K", app.mode, settings_mod.format_text(app.mode, app.settings)))
            out.append(("K", app.mode, "?"))
        elif ev == "refused" and rec.get("what") == "round":
            out.append(("N", 0, 0))  # a round frame this clock could not take
        if self.restore_values is not None:
            # first: the restore the host sent (a game restored before its first move
            # logs only a "round", which an N frame would explain too, but leave fresh)
            mode, stext, values = self.restore_values
            out.insert(0, ("S", mode, stext) + tuple(values))
        elif ev == "resume" and self.restore_guess is not None:
            out.extend(self._guessed_restores(rec))
        return out

    def _guessed_restores(self, rec):
        """The restores that may have given the session before's game back,
        when this model never saw the host's ``power_loss`` record (a viewer
        reads only the clocks): that game's ``snapshot`` at the moment its
        running time had come down to a time ``rec`` names.  The search
        keeps only one that gives ``rec`` exactly."""
        old = self.restore_guess
        first = old.snapshot(old.t_ms)
        if first is None:
            return []
        later = old.snapshot(old.t_ms + 1) or first
        stext = settings_mod.format_text(old.mode, old.settings)
        out, seen = [], set()
        for at in [old.t_ms] + [old.t_ms + k for k in _moments(first, later, rec, (-1,))]:
            values = old.snapshot(at)
            if values is not None and values not in seen:
                seen.add(values)
                cmd = ("S", old.mode, stext) + tuple(values)
                self._guessed[cmd] = at
                out.append(cmd)
        return out

    def _take_again(self, retake, rec):
        """A record of a guessed restore's events (``resume``, a paused
        game's ``pause``, ``round``) is not what the guess gave: the restore's
        hall part (what runs on through the outage, the logger adds the
        outage's wall time) may be named by ``rec`` -- the same snapshot at
        the same moment, measured at the hall time ``rec`` names, taken from
        the clock as it stood before the restore; kept only if it gives the
        records before (``seen``: the ``resume`` first) and ``rec`` exactly."""
        old, at, before, seen, now = retake
        first = old.snapshot(at, at)
        later = old.snapshot(at, at + 1)
        if first is None or later is None:
            return False
        stext = settings_mod.format_text(old.mode, old.settings)
        for k in _moments(first, later, rec, (1, -1)):
            values = old.snapshot(at, at + k)
            if values is None:
                continue
            app, sink = copy.deepcopy(before)
            self._apply(app, ("S", old.mode, stext) + tuple(values), now)
            events = [self._as_record(e, app) for e in sink.events]
            n = len(seen)
            if len(events) > n and all(map(same, events, seen)) and same(events[n], rec):
                del sink.events[:]
                self.app, self.sink = app, sink
                self.queue = events[n + 1:]
                return True
        return False

    def _clone(self):
        return copy.deepcopy((self.app, self.sink))

    @staticmethod
    def _apply(app, cmd, now):
        if isinstance(cmd, int):
            app.press(cmd, now)
        elif cmd[0] == "end":
            app.end(now)
        else:  # a host frame (K, N, S) as the clock's link hands it over: tokens
            app.host_frame([str(x) for x in cmd], now)

    def _try(self, now, rec, inputs):
        """A copy of the clock after ``inputs`` at ``now`` (none: one pass of
        its loop): ((app, sink, inputs) if its first event is ``rec``, else
        None; whether it emitted anything)."""
        app, sink = self._clone()
        if inputs:
            for cmd in inputs:
                self._apply(app, cmd, now)
        else:
            app.step(now)
        if sink.events and same(self._as_record(sink.events[0], app), rec):
            return (app, sink, inputs), True
        return None, bool(sink.events)

    def _as_record(self, e, app):
        """The clock's event as the log would hold it (the fields the host
        adds -- clock, seq, session, host_time -- left out)."""
        code, now, v0, v1, v2, v3 = e
        name = catalog.EVENTS[code][0]
        out = {"event": name, "t_ms": ticks_diff(now, self.base)}
        out.update(catalog.fields_of(code, (v0, v1, v2, v3)))
        if name in ("boot", "settings"):  # the text of these events: <mode>:<settings>
            out["mode"] = app.mode
        return out

    def _flush_queue(self):
        for head in self.queue:
            self._mismatch("not_logged", head["t_ms"], None, head,
                           "the clock emitted %s that the log does not have" % describe(head))
        del self.queue[:]

    def _mismatch(self, kind, t, rec=None, emitted=None, text=""):
        self.mismatches.append(Mismatch(kind, t, rec, emitted, text))

    # -- what the clock shows -------------------------------------------------
    def _at(self, t_ms):
        """The clock as it stands at device time ``t_ms``: (app, t_ms, now).
        The app is a copy if anything fell due since the last record (one
        pass of the loop gives it); otherwise the model's own, to be read
        only (``_read``)."""
        if t_ms is None or t_ms < self.t_ms or self.ended:
            t_ms = self.t_ms
        now = self.now(t_ms)
        app = self.app
        if self.ended:
            return app, t_ms, now
        due = app.core.next_deadline(now)
        if due is not None and ticks_diff(due, now) <= 0:
            app, _sink = self._clone()
            app.step(now)  # one pass of the loop: what falls due by then
        return app, t_ms, now

    def face(self, t_ms=None):
        """What the clock shows at device time ``t_ms`` (default: the newest
        record's).  Times before the newest record are not kept: the model
        moves forward only (feed records and ask in between).  After the
        session's end the face stands as it was at the end."""
        app, t_ms, now = self._at(t_ms)
        core = app.core
        panel = RecordingPanel()
        kept = app.panel
        app.panel = panel
        try:
            app.refresh(now)  # draws on the panel, changes nothing else
        finally:
            app.panel = kept
        f = Face()
        f.mode = app.mode
        f.t_ms = t_ms
        f.displays = tuple(panel.texts)
        f.shown = tuple(panel.ms)
        f.steps = tuple(panel.steps)
        f.settings_view = bool(app.view)
        p = core.player
        f.player = catalog.PLAYERS[p] if p in (0, 1) else None
        f.move = core.move if core.move else None
        f.ended = self.ended
        f.running = core.running() and not self.ended
        f.paused = core.paused()
        f.overtime = core.overtime()
        f.left_ms = core.left_ms(now)
        f.facts = host_modes.view_for(app.mode).facts(core, now)
        return f

    # -- restore (log --restore) -----------------------------------------------
    def snapshot(self, t_ms=None, hall_t_ms=None):
        """The core's ``snapshot`` at ``t_ms`` (default: the last time heard),
        the round measured at ``hall_t_ms`` (the round's basic time runs on
        through an outage); None when nothing had started (nothing to restore)."""
        app, t_ms, now = self._at(t_ms)
        hall_now = self.now(hall_t_ms) if hall_t_ms is not None else None
        values = tuple(app.core.snapshot(now, hall_now))
        # would a fresh clock take it?  (the firmware's own judgement: nothing
        # had started, a flag that fell, ... -- docs/protocol.md)
        fresh = _ModelApp(_Sink(), app.mode, app.settings, 0)
        return values if fresh.core.restore(values, 0) else None

    def restore_frame(self, t_ms=None, hall_t_ms=None):
        """The ``S`` frame that gives this game back to a rebooted clock, or None."""
        values = self.snapshot(t_ms, hall_t_ms)
        if values is None:
            return None
        return hostframes.restore(self.mode, settings_mod.format_text(self.mode, self.settings),
                                *values)


def _moments(first, later, rec, steps):
    """[k]: a snapshot's value that moves by one of ``steps`` (+1 or -1) a
    ms (``first`` at a moment, ``later`` 1 ms on) reaches a time ``rec``
    names (an integer field; a move's time left is negative in overtime)
    ``k`` >= 0 ms on: the moments a guessed restore may have been taken at
    (Model._guessed_restores, Model._take_again)."""
    out = []
    for a, b in zip(first, later):
        if not isinstance(a, int) or isinstance(a, bool) or b - a not in steps:
            continue
        for x in rec.values():
            if isinstance(x, int) and not isinstance(x, bool) and (x - a) * (b - a) >= 0:
                out.append((x - a) * (b - a))
    return out


_HINTS = {"gong": (BTN_START, BTN_GONG), "dup_start": (BTN_START,), "pause": (BTN_PAUSE,),
          "resume": (BTN_PAUSE,)}


def _likely_first(rec):
    """Every input, the likeliest for the record first (the press of the
    player it names, START for a start gong ...): only the order of the tries
    changes, each is still checked by the clock's own code."""
    first = []
    p = rec.get("player")
    if p in catalog.PLAYERS:
        me = catalog.PLAYERS.index(p)
        first += [me, 1 - me]
    first += list(_HINTS.get(rec.get("event"), ()))
    return tuple(first) + tuple(c for c in INPUTS if c not in first)


def same(emitted, rec):
    """True when the core's event (record-like) is the log record."""
    for key, value in emitted.items():
        if rec.get(key) != value:
            return False
    return True


def record_text(rec):
    """One short human line for a record: 'turn A move 3 limit 2:00'."""
    ev = rec.get("event", "?")
    parts = [str(ev)]
    if rec.get("kind"):
        parts.append(str(rec["kind"]))
    if rec.get("player"):
        parts.append(str(rec["player"]))
    if rec.get("move") is not None and ev not in ("boot", "end"):
        parts.append("move %s" % (rec["move"],))
    if ev == "boot":
        parts.append(str(rec.get("mode", "?")))
    for key, label in (("limit_ms", "limit"), ("bank_ms", "bank"), ("used_ms", "used"),
                       ("break_ms", "break")):
        if isinstance(rec.get(key), int):
            parts.append("%s %s" % (label, clock_text(rec[key])))
    if rec.get("left_s") is not None:
        parts.append("%s s left" % (rec["left_s"],))
    if rec.get("step"):
        parts.append(str(rec["step"]))
    if ev == "gap":
        parts.append("missing %s" % (rec.get("missing"),))
    return " ".join(parts)


def describe(rec):
    """A record or a core's event with its device time: 'turn A move 3 limit 2:00 at t=12000'."""
    return "%s at t=%s" % (record_text(rec), rec.get("t_ms"))


# -- every clock of a log ------------------------------------------------------------
ACCELERATED_PACE = 1.5  # a clock whose time runs this many times the host's is simulated


def pace_between(a, b):
    """How many times faster than the host's a clock's time ran from ``a`` to
    ``b`` (each (host s, device t_ms)), or None when the host's clock ran
    less than a second between them."""
    if a is None or b is None:
        return None
    host_s = b[0] - a[0]
    dev_s = (b[1] - a[1]) / 1000.0
    if host_s < 1.0 or dev_s <= 0:
        return None
    return dev_s / host_s


class ClockModel:
    """One clock across its sessions: the model of its newest session, the
    host clock of its newest record (to tell the device time now), and the
    host's time of day of its records."""

    def __init__(self, name):
        self.name = name
        self.model = None
        self.session = None
        self.records = 0  # records of this clock, all sessions
        self.last_t = None  # device ms of the newest record of the session
        self.last_at = None  # host clock when it came
        self.epoch_offset = None  # host epoch s - device s (from host_time), session
        self.first_heard = None  # (host epoch s, t_ms) of the session's earliest record
        self.last_heard = None  # (host epoch s, t_ms) of its newest
        self.round_heard = None  # (host epoch s, t_ms) of its 'round' record (the host's N)
        self.pace_from = None  # (host epoch s, t_ms): the first record a second after the first
        self.last_record = None
        self.error = None  # why the session could not be modelled (bad boot)
        self.previous = None  # the model of the session before (power loss)
        # every power loss of this clock, oldest first: {"lost_at", "back_at" (time
        # of day, host epoch s), "session" (the new one), "restore_sent", "restored"}
        self.reboots = []
        # (time of day of the old session's last record, host epoch it came, the
        # old session ran accelerated): a session after a power loss is anchored
        # after it (``time_of_day``), so no view puts its moves before the old ones
        self.after = None
        self.port = None
        # what the session said to the hall, as logged (host epoch s or None)
        self.gongs = []  # (t_ms, kind, move, epoch)
        self.announcements = []  # (t_ms, move, left_s, epoch)

    def feed(self, rec, host_now):
        self.records += 1
        self.last_record = rec
        sid = rec.get("session")
        ev = rec.get("event")
        t = rec.get("t_ms")
        if ev == "boot":
            self._rebooted(sid)
            old = self.model
            try:
                self.model = Model.from_boot(rec)
                self.error = None
            except ValueError as exc:
                self.model = None
                self.error = str(exc)
            if old is not None and old.power_lost:
                self.previous = old
                if self.model is not None:
                    self.model.restore_values = old.restore_sent
            elif old is not None and self.model is not None and not old.ended \
                    and old.mode == self.model.mode:
                self.model.restore_guess = old  # a viewer: the host's power_loss unseen
            self.session = sid
            self.last_t = t if isinstance(t, int) else 0
            self.last_at = host_now
            self.epoch_offset = None
            self.first_heard = self.last_heard = self.round_heard = self.pace_from = None
            self.gongs = []
            self.announcements = []
            self._epoch(rec)
            return self
        if self.session is not None and sid is not None and sid != self.session:
            # an older session's straggler (power_loss of the one before)
            if ev == "power_loss" and self.model is not None and self.model.session == sid:
                pass
            else:
                return self
        if ev == "power_loss":
            self._power_lost(rec)
        elif ev == "resume" and self.reboots and self.reboots[-1]["session"] == sid:
            self.reboots[-1]["restored"] = True
        if self.model is not None:
            self.model.feed(rec)
        if ev == "gong":
            self.gongs.append((t, rec.get("kind"), rec.get("move"), epoch_of(rec.get("host_time"))))
        elif ev == "announce":
            self.announcements.append((t, rec.get("move"), rec.get("left_s"),
                                       epoch_of(rec.get("host_time"))))
        if isinstance(t, int) and (self.last_t is None or t >= self.last_t):
            self.last_t = t
            self.last_at = host_now
        if ev not in ("power_loss", "gap"):  # the host's records: not a time the clock spoke
            self._epoch(rec)
        return self

    def _power_lost(self, rec):
        heard = self.last_heard
        self.reboots.append({
            "lost_at": self.time_of_day(heard[1]) if heard else None,
            "lost_host": heard[0] if heard else None, "back_at": None,
            "accelerated": self.accelerated, "session": rec.get("next_session"),
            "restore_sent": isinstance(rec.get("restore"), dict), "restored": False})

    def _rebooted(self, sid):
        """A boot: after a power loss of the session before, the new session
        is anchored after the old one's last record (``after``)."""
        if self.session is not None:  # (the report's replay set it: ``follow``)
            self.after = None
        if self.reboots and self.reboots[-1]["session"] == sid:
            r = self.reboots[-1]
            if r["lost_at"] is not None:
                self.after = (r["lost_at"], r["lost_host"], r["accelerated"])

    def follow(self, prev):
        """The report's replay of one session: the session before it (its
        ClockModel) lost power, and this one came next: anchored after it."""
        heard = prev.last_heard
        if heard is not None:
            self.after = (prev.time_of_day(heard[1]), heard[0], prev.accelerated)

    def reboot_text(self, r=None):
        """The last (or ``r``) power loss in words (hallclock.views.words.reboot_words)."""
        from .words import reboot_words
        r = r if r is not None else (self.reboots[-1] if self.reboots else None)
        if r is None:
            return None
        back = r["back_at"]
        if r["session"] == self.session and self.epoch_offset is not None:
            back = r["back_at"] = self.time_of_day(0)
        return reboot_words(self.name, r["lost_at"], back, r["restored"],
                            r["restore_sent"])

    def _epoch(self, rec):
        at = epoch_of(rec.get("host_time"))
        t = rec.get("t_ms")
        if at is None or not isinstance(t, int):
            return
        off = at - t / 1000.0
        # the record that came fastest tells the device's time best
        if self.epoch_offset is None or off < self.epoch_offset:
            self.epoch_offset = off
        if self.first_heard is None or t < self.first_heard[1]:
            self.first_heard = (at, t)
        if self.last_heard is None or t >= self.last_heard[1]:
            self.last_heard = (at, t)
        # the pace is measured from a record a second after the first came: a
        # backlog sent at once (a restarted logger, a resend) says nothing of it
        if self.pace_from is None and at >= self.first_heard[0] + 1.0:
            self.pace_from = (at, t)
        if rec.get("event") == "round" and self.round_heard is None:
            self.round_heard = (at, t)

    @property
    def pace(self):
        """How many times faster than the host's the clock's time ran in this
        session (1.0 for a real clock; a simulation at ``--speed 100``: about
        100), from its first and newest records; None until the host's clock
        has run a second between them."""
        return pace_between(self.pace_from, self.last_heard)

    @property
    def accelerated(self):
        """The clock's time ran faster than the host's (a simulation)."""
        return self.pace is not None and self.pace > ACCELERATED_PACE

    def device_now(self, host_now):
        """The device time (ms) at host clock ``host_now``: the newest record's
        t_ms plus the host time since it came (the end, if the session ended)."""
        if self.last_t is None:
            return None
        m = self.model
        if (m is not None and m.ended) or host_now is None or self.last_at is None:
            return self.last_t
        return self.last_t + max(0, int(round((host_now - self.last_at) * 1000)))

    def face(self, host_now):
        if self.model is None:
            return None
        return self.model.face(self.device_now(host_now))

    def time_of_day(self, t_ms):
        """Host epoch seconds of device time ``t_ms`` in this session, or None:
        the one anchoring of the session's device time to the host's clock
        that every view uses.  A real clock: by the record that came fastest
        (the smallest host_time - t_ms).  An accelerated simulation (its time
        ran faster than the host's, ``accelerated``): the host time of the
        round's start (else the first record) plus the clock's own time since
        it -- a simulated time of day, which the report's header says.  A
        session after a power loss (``after``) never begins before the old
        session's last record; after an accelerated one it begins at that
        record's time of day plus the outage the host measured."""
        if self.epoch_offset is None or not isinstance(t_ms, int):
            return None
        after = self.after
        if after is not None and after[2] and after[0] is not None and after[1] is not None:
            # after a power loss of an accelerated session: from the old
            # session's last time of day plus the outage the host measured
            at, t0 = self.first_heard
            return after[0] + max(0.0, at - t0 / 1000.0 - after[1]) + t_ms / 1000.0
        if self.accelerated:
            at, t0 = self.round_heard or self.first_heard
            value = at + (t_ms - t0) / 1000.0
        else:
            value = self.epoch_offset + t_ms / 1000.0
        if after is not None and after[0] is not None:
            # the new session began after the old one's last record: a backlog
            # that came at once never puts it (or its moves) before that
            value = max(value, after[0] + t_ms / 1000.0)
        return value

    def heard_at(self):
        """Host epoch s (simulated when ``accelerated``) of the session's newest record."""
        return self.time_of_day(self.last_heard[1]) if self.last_heard else None

    def due_at(self, in_ms, host_now):
        """Host epoch s (simulated when ``accelerated``) of what falls ``in_ms``
        of the clock's time after host clock ``host_now``: the same instant
        whenever it is asked, since the device time now plus the time left is."""
        t = self.device_now(host_now)
        return None if t is None else self.time_of_day(t + int(in_ms))


def typical_pace(paces):
    """The median of the accelerated sessions' paces (``ClockModel.pace``), or None."""
    paces = sorted(p for p in paces if p and p > ACCELERATED_PACE)
    return paces[len(paces) // 2] if paces else None


def simulation_note(clocks):
    """What a screen says of a log of an accelerated simulation: 'simulation
    at 20×: times of day simulated', or '' (real clocks)."""
    return simulation_text(typical_pace(c.pace for c in clocks))


def simulation_text(pace):
    """'simulation at 20×: times of day simulated' for a pace above ACCELERATED_PACE, or ''."""
    return f"simulation at {pace:.0f}×: times of day simulated" if (
        pace and pace > ACCELERATED_PACE) else ""


class Clocks:
    """Every clock of a log or a link, in the order first heard."""

    def __init__(self):
        self.clocks = {}
        self.order = []

    def feed(self, rec, host_now):
        name = str(rec.get("clock"))
        c = self.clocks.get(name)
        if c is None:
            c = self.clocks[name] = ClockModel(name)
            self.order.append(name)
        return c.feed(rec, host_now)

    def __iter__(self):
        return (self.clocks[n] for n in self.order)

    def get(self, name):
        return self.clocks.get(name)


# -- the restore after a power loss (the link sends it: hostlink.HostLink) --------
def restore_for(records, wall=None, restored=None, say=None):
    """What ``log --restore`` sends a rebooted clock: (mode, settings text,
    values) of the game in a session's records, or None when there is
    nothing to restore.  The values are the firmware core's own ``snapshot``
    of the session replayed into it (``hallclock.views.model``), at the last time
    the host heard the clock (the outage is not counted against the player),
    the round's part at that time plus the wall-clock time since that record
    was stored (the hall's basic time runs on through the outage, ČAS 4.1,
    6.1): docs/protocol.md, *Power loss and restore*.  ``restored``: what
    the host sent this session when it began (a restore after an earlier power
    loss: the ``restore`` of that ``power_loss`` record), which the replay
    needs.  ``say`` hears of records the clock's code cannot explain."""
    records = [r for r in records if r.get("event") not in ("power_loss",)]
    if not records or records[0].get("event") != "boot":
        return None
    try:
        model = Model.from_records(records, restore=restored)
    except ValueError:
        return None
    if model.mismatches and say is not None:
        say("clock %s: %d record(s) of its last session are not what its own code gives "
            "(first: %s); the time sent back may be off: check it on the clock" % (
                records[0].get("clock"), len(model.mismatches), model.mismatches[0].text))
    hall_t = None
    last = records[-1]
    stored = epoch_of(last.get("host_time"))
    if stored is not None and isinstance(last.get("t_ms"), int):
        now = time.time() if wall is None else wall
        hall_t = last["t_ms"] + max(0, int((now - stored) * 1000))
    values = model.snapshot(None, hall_t)
    if values is None:
        return None
    return (model.mode, settings_mod.format_text(model.mode, model.settings), list(values))
