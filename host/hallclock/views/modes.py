"""Host code for each mode, behind one registry beside the firmware's
``hallclock_fw.modes.make_core``: what the host reads from a mode's core (its
facts), how it restores one, and what the live view, the hall display and
the report show for it.  No other host module branches on a mode's name;
adding a mode is a core in the firmware plus one ``ModeView`` here
(docs/design.md, "Adding a mode").

Every value shown comes from the firmware's own core (``hallclock.views.model``
replays it); this module only picks which of the core's answers to show and
words them.
"""
from hallclock_fw.core.timing import ticks_diff
from hallclock_fw.display import shown_s
from hallclock_fw.settings import DELAY_KINDS

from ..catalog import PLAYERS, PLAYOUT_STEPS


def clock_text(ms, tenths=False):
    """Milliseconds as text the way a clock display counts them, with the
    firmware's own rounding (``display.shown_s``): 1:59 (time left rounds up:
    a second shows until it has fully passed), -0:04 (overtime counts up);
    with ``tenths`` the exact time, 0:05.3."""
    if ms is None:
        return "--:--"
    neg = ms < 0
    a = -ms if neg else ms
    if tenths:
        s, rest = divmod(a, 1000)
        text = "%d:%02d.%d" % (s // 60, s % 60, rest // 100)
    else:
        s = abs(shown_s(ms))
        text = "%d:%02d" % (s // 60, s % 60)
    return ("-" + text) if neg else text


def display_text(text):
    """A 4-digit display's text (' 1:59', 'P- 1') without the leading blank."""
    return text.strip()


def minutes(n):
    """'1 minute', '10 minutes'."""
    return "%d minute%s" % (n, "" if n == 1 else "s")


class ModeView:
    """The host side of one mode.  Subclasses answer for their core."""

    name = "?"
    players = PLAYERS  # the players a report lists (none for the hall countdown)
    overtime_word = "OVERTIME"  # what the live view calls core.overtime()
    # the hall display without --clock: 'round' (the clocks of this mode make
    # one round: its time and gongs), 'countdown' (one hall countdown: the
    # first clock's), 'tables' (independent games: pick one with --clock)
    hall_view = "tables"
    relays_pause = False  # the hall relays the hall unit's PAUSE to every table
    # the clocks of this mode take the hall unit's START and GONG (hall, hall-simulate)
    hall_signals = False
    # the round report names the rule a restart after a pause followed (ČAS 9.1,
    # 10.1, 11.2: hallclock.views.roundreport)
    restart_rules = False

    # -- read from the core -------------------------------------------------
    def facts(self, core, now):
        """The mode's own facts at ``now`` (a dict of plain values)."""
        return {}

    def move_result(self, face):
        """What the report takes from the core at a move's end (its press, or
        the session's end): (flag, bank_ms, overtime_ms) -- a bank clock's flag
        fall and the mover's bank left (None: no bank), the time over the limit."""
        over = max(0, -face.left_ms) if face.overtime and face.left_ms is not None else 0
        return False, None, over

    # -- the live view (hallclock.views.liveview) -------------------------------------
    def runs(self, face):
        """Who the 'time runs' column names."""
        return face.player or "–"

    def detail(self, face):
        """The 'state' column's words: [(text, kind)], kind 'warn', 'alert',
        'info' or 'dim' (the live view styles them)."""
        return []

    def warned(self, face):
        """True when the running time is in its warning zone."""
        return False

    def plain_left(self, face):
        """What a plain log line says of the time: '1:59 left'."""
        return "%s left" % clock_text(face.left_ms)

    # -- the hall display (hallclock.hall.display) ---------------------------------
    def round(self, face):
        """The hall's round as this clock counts it, or None (no round in
        this mode): {started, left_ms, warn_ms, playout}."""
        return None

    def hall(self, clock, face, now_epoch):
        """{title, subtitle, left_ms, running, last, banks?} for the projector."""
        return {"title": self.name, "subtitle": "", "left_ms": face.left_ms,
                "running": face.running, "last": False}


class ScrabbleView(ModeView):
    name = "scrabble"
    hall_signals = True
    restart_rules = True

    overtime_word = "OVERTIME"  # the limit ran out; the display counts the overtime up

    def facts(self, core, now):
        r = core.round
        step = r.step
        return {"warned_s": tuple(w // 1000 for w in core.warn_ms[:core.next_warn])
                if core.move else (),
                "round_left_ms": r.left_ms(now), "round_started": r.started,
                "round_ms": r.round_ms, "round_warn_ms": r.warn_ms,
                "playout": PLAYOUT_STEPS[step] if 0 <= step < len(PLAYOUT_STEPS) else None,
                "limit_ms": core.limit_ms}

    def runs(self, face):
        if face.move is None:
            return "–"
        return face.player or "–"

    def detail(self, face):
        f = face.facts
        out = []
        if f["warned_s"] and not face.ended and not face.overtime:  # overtime: all were given
            out.append((" ".join("%ds" % w for w in f["warned_s"]), "warn"))
        if f["playout"]:
            from .words import playout_step
            out.append((playout_step(f["playout"]), "warn"))
        elif f["round_started"] and not face.ended:
            out.append(("round " + clock_text(max(0, f["round_left_ms"])), "dim"))
        return out

    def warned(self, face):
        return bool(face.facts["warned_s"])

    hall_view = "round"

    def round(self, face):
        f = face.facts
        return {"started": f["round_started"], "left_ms": f["round_left_ms"],
                "warn_ms": f["round_warn_ms"], "playout": f["playout"]}

    def hall(self, clock, face, now_epoch):
        f = face.facts
        left = f["round_left_ms"]
        started = f["round_started"]
        out = {"title": "round time left", "left_ms": max(0, left),
               "running": started and not face.ended and left > 0,
               "last": started and left <= f["round_warn_ms"]}
        if not started:
            out["subtitle"] = "waiting for the start gong"
        elif left <= 0:
            out["subtitle"] = "basic time is over"
        else:
            out["subtitle"] = ""
        return out


class DuplicateView(ModeView):
    name = "duplicate"
    players = ()
    hall_view = "countdown"
    relays_pause = True  # one countdown for the hall: a dispute stops every clock
    hall_signals = True

    def facts(self, core, now):
        left = core.left_ms(now)
        return {"countdown_ms": left, "over": core.move > 0 and not core.running()
                and not core.paused() and left == 0, "limit_ms": core.limit_ms}

    def runs(self, face):
        if face.running or face.paused:
            return "hall"
        return "–"

    def detail(self, face):
        return [("time is up", "info")] if face.facts.get("over") else []

    def warned(self, face):
        return face.running and face.facts["countdown_ms"] <= 30000

    def hall(self, clock, face, now_epoch):
        f = face.facts
        out = {"title": "move %d" % face.move if face.move else "duplicate",
               "left_ms": max(0, f["countdown_ms"]), "running": face.running,
               "digits": display_text(face.displays[0]),
               "last": f["countdown_ms"] <= 30000}
        if face.paused:
            out["subtitle"] = "time stopped"
        elif f["over"]:
            out["subtitle"] = "time is up: no more changes"
        elif not face.running:
            out["subtitle"] = "waiting for the referee's start"
        else:
            out["subtitle"] = ""
        return out


class BackgammonView(ModeView):
    name = "backgammon"
    overtime_word = "FLAG"  # a bank ran out: the clock stands at 0:00 until reset
    # how the settings' delay kinds read (backgammon-time)
    delay_words = {"simple": "simple (US) delay", "bronstein": "Bronstein delay",
                   "fischer": "Fischer increment"}

    def facts(self, core, now):
        banks = (core.bank_left(now, 0), core.bank_left(now, 1))
        delay_left = 0
        if core.running() and core.player in (0, 1) and not core.paused():
            to_go = ticks_diff(core.deadline, now)
            if to_go > core.bank0:
                delay_left = to_go - core.bank0  # a simple delay runs
        bp = core.break_player
        return {"banks_ms": banks, "delay": DELAY_KINDS[core.kind],
                "delay_ms": core.delay_ms, "delay_left_ms": delay_left,
                "breaks": (core.breaks_used(0), core.breaks_used(1)),
                "break_player": PLAYERS[bp] if bp in (0, 1) and core.paused()
                and core.running() else None,
                "break_left_ms": core.left_ms(now) if core.paused() and core.running() else None,
                "flag": core.overtime()}

    def move_result(self, face):
        # a bank clock stands at 0:00 when the bank runs out: a flag, no overtime
        f = face.facts
        bank = f["banks_ms"][PLAYERS.index(face.player)] if face.player in PLAYERS else None
        return bool(f["flag"]), bank, 0

    def runs(self, face):
        f = face.facts
        if f.get("break_player"):
            return "break " + f["break_player"]
        return face.player or "–"

    def detail(self, face):
        f = face.facts
        out = []
        if f["flag"]:
            out.append(("%s's bank ran out" % face.player, "alert"))
        if f["delay_left_ms"] > 0 and not face.ended:
            out.append(("delay " + clock_text(f["delay_left_ms"]), "info"))
        if f["break_player"] and not face.ended:
            out.append(("break %s %s" % (f["break_player"], clock_text(f["break_left_ms"])),
                        "info"))
        if f["breaks"] != (0, 0):
            out.append(("breaks A %d B %d" % f["breaks"], "dim"))
        return out

    def plain_left(self, face):
        a, b = face.facts["banks_ms"]
        return "A %s B %s" % (clock_text(a), clock_text(b))

    def hall(self, clock, face, now_epoch):
        f = face.facts
        a, b = f["banks_ms"]
        side = PLAYERS.index(face.player) if face.player in PLAYERS else None
        out = {"title": "%s to move" % face.player if face.player else "backgammon",
               "left_ms": face.left_ms if face.player else None,
               # the mover's display as the clock shows it (the delay, then the bank)
               "digits": display_text(face.displays[side]) if side is not None else "",
               "running": face.running and not face.paused, "last": False,
               "banks": [{"player": "A", "ms": a, "text": clock_text(a),
                          "runs": face.player == "A" and face.running},
                         {"player": "B", "ms": b, "text": clock_text(b),
                          "runs": face.player == "B" and face.running}]}
        if f["flag"]:
            out["subtitle"] = "%s's bank ran out" % face.player
        elif f.get("break_player"):
            out["subtitle"] = "break: %s" % f["break_player"]
        elif face.paused:
            out["subtitle"] = "time stopped"
        elif f["delay_left_ms"] > 0:
            out["subtitle"] = "delay %s" % clock_text(f["delay_left_ms"])
        else:
            out["subtitle"] = ""
        return out


VIEWS = {v.name: v for v in (ScrabbleView(), DuplicateView(), BackgammonView())}
UNKNOWN = ModeView()


def view_for(mode):
    """The host side of ``mode`` (a neutral view for a mode the host does not know)."""
    return VIEWS.get(mode, UNKNOWN)


def hall_modes():
    """The modes whose clocks take the hall unit's START and GONG (docs/hall.md),
    in the firmware's order of modes."""
    from hallclock_fw.settings import MODES
    return tuple(m for m in MODES if view_for(m).hall_signals)


