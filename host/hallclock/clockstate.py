"""What one clock is showing, rebuilt from its log records.

Used by the live view of ``hallclock log`` and by the hall display.  The log
holds events, not the displays, so the time left is estimated: the last
``turn``/``resume``/``dup_start`` record gives the device time ``t_ms`` at
which a limit (``limit_ms``) or bank (``bank_ms``) began to run, and the device
time *now* is the newest record's ``t_ms`` plus the host time that has passed
since that record arrived.  ``now`` is whatever host clock the caller feeds in
with the records (``time.monotonic()`` live, the log's ``host_time`` as epoch
seconds when reading a file), so the estimate is only as good as the host's
view of the device: a few tens of ms on a working link.
"""
from datetime import datetime

NO_TIME = None


def epoch_of(host_time):
    """ISO 8601 ``host_time`` of a log record -> epoch seconds (None if absent)."""
    if not host_time:
        return None
    try:
        return datetime.fromisoformat(str(host_time).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def describe(rec):
    """One short human line for a record: 'turn A move 3 (2:00)'."""
    ev = rec.get("event", "?")
    parts = [ev]
    if rec.get("kind"):
        parts.append(str(rec["kind"]))
    if rec.get("player"):
        parts.append(str(rec["player"]))
    if rec.get("move") is not None and ev not in ("boot", "end"):
        parts.append(f"move {rec['move']}")
    if ev == "boot":
        parts.append(str(rec.get("mode", "?")))
    for key, label in (("limit_ms", "limit"), ("bank_ms", "bank"), ("used_ms", "used")):
        if isinstance(rec.get(key), int):
            parts.append(f"{label} {clock_text(rec[key])}")
    if rec.get("left_s") is not None:
        parts.append(f"{rec['left_s']} s left")
    if rec.get("step"):
        parts.append(str(rec["step"]))
    if ev == "gap":
        parts.append("missing %s" % (rec.get("missing"),))
    return " ".join(parts)


def clock_text(ms, tenths=False):
    """Milliseconds as a clock face shows them: 1:59, 0:05.3, -0:04 (overtime).
    Counting down, a display shows a second until it has fully passed, so
    positive values round up to the second."""
    if ms is None:
        return "--:--"
    neg = ms < 0
    a = -ms if neg else ms
    if tenths:
        s, rest = divmod(a, 1000)
        text = f"{s // 60}:{s % 60:02d}.{rest // 100}"
    else:
        s = a // 1000 if neg else (a + 999) // 1000
        text = f"{s // 60}:{s % 60:02d}"
    return ("-" + text) if neg else text


class ClockState:
    """One clock's face, from its records (any mode)."""

    def __init__(self, clock):
        self.clock = clock
        self.reset()
        self.events = 0  # records of this clock, all sessions
        self.port = None  # the port it spoke on last (live view)

    def reset(self):
        self.session = None
        self.mode = "?"
        self.settings = {}
        self.player = None  # whose time runs (or stood, when paused)
        self.move = None
        self.running = False
        self.paused = False
        self.anchor_t = 0  # device ms at which the current limit/bank segment began
        self.anchor_left = None  # ms left at anchor_t
        self.frozen_left = None  # ms left when paused / stopped
        self.delay_ms = 0  # backgammon: time per move not taken off the bank
        self.delay_from = 0  # device ms from which the delay counts
        self.warnings = []  # left_s of the warnings reached in this move
        self.expired = False
        self.last_t = None  # newest device time seen
        self.last_at = None  # host clock when it arrived
        self.last_event = ""
        self.round_start = None  # device ms of the start gong
        self.round_ms = None
        self.gongs = []  # (t_ms, kind, move)
        self.announcements = []  # (t_ms, move, left_s)
        self.playout = None
        self.ended = False
        self.dup_over = False
        self.history = []  # last few (t_ms, text)

    # -- records in ------------------------------------------------------
    def feed(self, rec, now):
        ev = rec.get("event")
        t = rec.get("t_ms")
        self.events += 1
        if ev == "boot" or (self.session is not None and rec.get("session") not in (None, self.session)):
            self.reset()
        if rec.get("session") is not None:
            self.session = rec.get("session")
        if isinstance(t, int):
            if self.last_t is None or t >= self.last_t:
                self.last_t = t
                self.last_at = now
        self.last_event = describe(rec)
        self.history.append((t, self.last_event))
        del self.history[:-8]
        if ev == "boot":
            self.mode = rec.get("mode", "?")
            self.settings = rec.get("settings") or {}
            if self.mode == "scrabble" and isinstance(self.settings.get("round_min"), int):
                self.round_ms = self.settings["round_min"] * 60000
            if self.mode == "backgammon" and self.settings.get("delay") in ("simple", "bronstein"):
                self.delay_ms = int(self.settings.get("delay_s") or 0) * 1000
            if self.mode == "duplicate" and isinstance(self.settings.get("move_s"), int):
                self.frozen_left = self.settings["move_s"] * 1000
        elif ev in ("turn", "dup_start"):
            self.player = rec.get("player")
            self.move = rec.get("move")
            left = rec.get("limit_ms", rec.get("bank_ms"))
            self._run(t, left)
            self.delay_from = t
            self.warnings = []
            self.expired = False
            self.dup_over = False
        elif ev == "press":
            self.frozen_left = self._left_at(t)
            if isinstance(rec.get("bank_ms"), int):
                self.frozen_left = rec["bank_ms"]
            self.running = False
        elif ev == "resume":
            self.player = rec.get("player", self.player)
            if rec.get("move") is not None:
                self.move = rec["move"]
            left = rec.get("limit_ms", rec.get("bank_ms"))
            if not isinstance(left, int):
                left = self.frozen_left
            self.paused = False
            self._run(t, left)
        elif ev == "pause":
            self.frozen_left = self._left_at(t)
            self.running = False
            self.paused = True
        elif ev == "warn":
            self.warnings.append(rec.get("left_s"))
        elif ev == "expired":
            self.expired = True
        elif ev == "announce":
            self.announcements.append((t, rec.get("move"), rec.get("left_s")))
        elif ev == "dup_end":
            self.running = False
            self.frozen_left = 0
            self.dup_over = True
        elif ev == "gong":
            self.gongs.append((t, rec.get("kind"), rec.get("move")))
            if rec.get("kind") == "start" and isinstance(t, int):
                self.round_start = t
        elif ev == "playout":
            self.playout = rec.get("step")
        elif ev == "end":
            if self.running:
                self.frozen_left = self._left_at(t)
            self.running = False
            self.ended = True

    def _run(self, t, left):
        if isinstance(t, int) and isinstance(left, int):
            self.anchor_t = t
            self.anchor_left = left
            self.running = True
        else:
            self.running = False

    def _left_at(self, t):
        if not self.running or self.anchor_left is None or not isinstance(t, int):
            return self.frozen_left
        elapsed = max(0, t - self.anchor_t)
        if self.delay_ms:
            # simple/Bronstein delay: the first delay_ms of a move stay on the bank
            free = max(0, self.delay_from + self.delay_ms - self.anchor_t)
            elapsed = max(0, elapsed - free)
        return self.anchor_left - elapsed

    # -- the face now ----------------------------------------------------
    def device_now(self, now):
        """Estimated device time (ms) at host clock ``now``."""
        if self.last_t is None:
            return None
        if self.ended or self.last_at is None or now is None:
            return self.last_t
        return self.last_t + max(0, int((now - self.last_at) * 1000))

    def left_ms(self, now):
        """Time left on the running (or stopped) limit/bank; negative = overtime."""
        if self.running:
            return self._left_at(self.device_now(now))
        return self.frozen_left

    def overtime(self, now):
        left = self.left_ms(now)
        return self.expired or (self.running and left is not None and left < 0)

    def round_left_ms(self, now):
        """Scrabble: basic playing time left (None before the start gong)."""
        if self.round_ms is None:
            return None
        if self.round_start is None:
            return self.round_ms
        dnow = self.device_now(now)
        return self.round_start + self.round_ms - (dnow if dnow is not None else self.round_start)

    def status(self, now):
        """'running', 'paused', 'overtime', 'ended', 'idle'."""
        if self.ended:
            return "ended"
        if self.paused:
            return "paused"
        if self.running:
            return "overtime" if self.overtime(now) else "running"
        return "idle"


class Hall:
    """Every clock of a log or link, by name."""

    def __init__(self):
        self.clocks = {}
        self.order = []

    def feed(self, rec, now):
        name = str(rec.get("clock"))
        state = self.clocks.get(name)
        if state is None:
            state = self.clocks[name] = ClockState(name)
            self.order.append(name)
        state.feed(rec, now)
        return state

    def newest(self):
        """The clock that spoke last (by host clock), or None."""
        best = None
        for name in self.order:
            s = self.clocks[name]
            if s.last_at is not None and (best is None or s.last_at >= best.last_at):
                best = s
        return best
