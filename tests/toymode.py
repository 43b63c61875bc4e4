"""A toy mode, added from outside the package as docs/design.md "Adding a
mode" walks it: a core, a face and a catalogue row, nothing else.

The hourglass: every move gets the same sand (``move_s``, default 45 s).
Either player's first press starts the opponent's move 1 (as B's first press
starts A's in Scrabble); pressing your button ends your move and turns the
glass for the opponent (the chess-clock convention of the contract); when the
sand runs out the clock says ``expired`` and the glass stands empty until the
mover presses.  No pause, no round, no restore.

``installed()`` puts the three pieces into the registries (firmware
``settings.ROWS`` and ``modes.CORES``, host ``hallclock.views.modes.VIEWS``) and
takes them out again."""
import contextlib

from hallclock_fw import modes, settings
from hallclock_fw.core.timing import ticks_add, ticks_diff
from hallclock_fw.events import BTN_A, BTN_B, EV_EXPIRED, EV_PRESS, EV_TURN, NULL

from hallclock.views import modes as host_modes

NAME = "hourglass"
_IDLE, _RUNNING, _EMPTY = 0, 1, 2


# -- the core (firmware side: pure, integer time, the interface of modes.py) --
class HourglassClock:
    def __init__(self, values, emit):
        self._emit = emit
        self.limit_ms = values["move_s"] * 1000
        self.state = _IDLE
        self.player = NULL
        self.move = 0
        self.started = 0
        self.deadline = 0
        self.round = None  # no round gongs

    def button(self, code, now):
        if code != BTN_A and code != BTN_B:
            return  # PAUSE, START, GONG and long presses: nothing
        if self.state == _IDLE:
            self._turn(1 - code, now)
        elif code == self.player:
            self._emit(EV_PRESS, now, self.player, self.move,
                       ticks_diff(now, self.started), 0)
            self._turn(1 - code, now)

    def _turn(self, player, now):
        self.move += 1
        self.player = player
        self.started = now
        self.deadline = ticks_add(now, self.limit_ms)
        self.state = _RUNNING
        self._emit(EV_TURN, now, player, self.move, self.limit_ms, 0)

    def tick(self, now):
        if self.state == _RUNNING and ticks_diff(now, self.deadline) >= 0:
            self.state = _EMPTY
            self._emit(EV_EXPIRED, now, self.player, self.move, 0, 0)

    def next_deadline(self, now):
        return self.deadline if self.state == _RUNNING else None

    def left_ms(self, now):
        if self.state == _RUNNING:
            left = ticks_diff(self.deadline, now)
            return left if left > 0 else 0
        return 0 if self.state == _EMPTY else self.limit_ms

    def refresh(self, panel, now):
        for side in (0, 1):
            panel.show(side, self.left_ms(now) if side == self.player else self.limit_ms)

    def running(self):
        return self.state == _RUNNING

    def paused(self):
        return False

    def overtime(self):
        return False

    def fresh(self):
        return self.state == _IDLE

    def over(self):
        return False

    def snapshot(self, now, hall_now=None):
        return (self.move,)

    def restore(self, values, now):
        return False  # the toy does not resume after a power loss


def _check(values):
    if not 1 <= values["move_s"] <= 3600:
        raise settings.SettingsError("move_s must be 1 to 3600, not %d" % values["move_s"])


# -- the catalogue row (settings.ROWS: the mode, its settings, its checks, its
# set-up words: the mode's name and the field's label, and the field's step) --
ROW = (NAME, (("move_s", "i", 45),), _check, "SAndtUrn", (5,))


# -- the face (host side: what the live view, the hall display, the report say) --
class HourglassView(host_modes.ModeView):
    name = NAME

    def facts(self, core, now):
        return {"sand_ms": core.left_ms(now)}

    def detail(self, face):
        return [("empty", "alert")] if face.facts["sand_ms"] == 0 and face.move else []


def _set_rows(rows):
    """settings.ROWS and what the module builds from it (MODES, SPEC)."""
    settings.ROWS = rows
    settings.MODES = tuple(r[0] for r in rows)
    settings.SPEC = dict((r[0], r[1]) for r in rows)


@contextlib.contextmanager
def installed():
    rows, names, spec = settings.ROWS, settings.MODES, settings.SPEC
    _set_rows(rows + (ROW,))
    modes.CORES[NAME] = lambda: HourglassClock
    host_modes.VIEWS[NAME] = HourglassView()
    try:
        yield
    finally:
        settings.ROWS, settings.MODES, settings.SPEC = rows, names, spec
        del modes.CORES[NAME]
        del host_modes.VIEWS[NAME]
