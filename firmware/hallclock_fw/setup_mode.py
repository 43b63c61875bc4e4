"""Set-up at the clock (docs/contract.md "Set-up at the clock"): the mode and
its settings chosen with the clock's own buttons, no laptop at the table.

Pure (no ``machine``), and imported only while set-up runs: the app drops it
again when set-up ends, so its code costs the clock's heap nothing the rest of
the time.  The gesture, the same on every clock:

- while no game runs, PAUSE held 5 s opens set-up (app.py) with a short beep;
- fields: ``mode``, then that mode's settings in the order of settings.SPEC
  (= the settings table of docs/contract.md; backgammon's score is two fields,
  A's points and B's); A's display names the field, B's shows its value;
- ``A`` lowers, ``B`` raises, by a step that fits the field; a value that
  ``settings.validate`` would refuse is never reached (the step is not taken,
  or a choice skips it);
- ``PAUSE`` (released before 1.5 s) goes to the next field; after the last
  field it saves; PAUSE held 1.5 s leaves without saving.

In backgammon the match and score fields show on B's display the bank they
give (İSTAVDER 2.4, ``settings.bank_ms``: the code ``backgammon-time`` uses),
the points on A's display beside the field's letter.
"""
from . import settings as settings_mod
from .display import BLANK, CHARS, render
from .events import BTN_A, BTN_B, BTN_PAUSE, LONG
from .modes import make_core

# set-up opens: short, high, unlike every signal of signals.py (a pattern as there)
P_SETUP = (3000, 40, 60, 40)
# A's display in the mode field; the other fields' labels, each mode's name
# and its steps are in its row of settings.ROWS
_MODE_LABEL = "tyPE"
# the warning and announcement patterns offered, as presets
_PRESETS = {
    "warn_s": ((30, 20, 10), (60, 30, 10), (20, 10), (10,), ()),
    "announce_s": ((120, 60, 30), (60, 30), (30,), ()),
}
_DELAY_TEXT = {"simple": "US  ", "bronstein": "bron", "fischer": "FiSh"}


def fields(mode):
    """The field names of ``mode`` in order."""
    out = ["mode"]
    for key, _kind, _default in settings_mod.SPEC[mode]:
        if key == "score":
            out.append("score_a")
            out.append("score_b")
        else:
            out.append(key)
    return out


def _row(mode):
    """(set-up words, steps) of ``mode``'s row in settings.ROWS."""
    for row in settings_mod.ROWS:
        if row[0] == mode:
            return row[3], row[4]
    raise ValueError(mode)


def _get(values, field):
    if field == "score_a":
        return values["score"][0]
    if field == "score_b":
        return values["score"][1]
    return values[field]


def _put(values, field, value):
    out = dict(values)
    if field == "score_a":
        out["score"] = (value, values["score"][1])
    elif field == "score_b":
        out["score"] = (values["score"][0], value)
    else:
        out[field] = value
    return out


class Setup:
    """The set-up in progress: ``mode``, ``values`` (always valid), the field."""

    def __init__(self, mode, values):
        self.mode = mode
        self.values = dict(values)
        self.seen = {mode: dict(values)}  # a mode left and chosen again keeps its values
        self.index = 0
        self.dirty = True

    def field(self):
        return fields(self.mode)[self.index]

    def last(self):
        return self.index == len(fields(self.mode)) - 1

    def next_field(self):
        """PAUSE: the next field; True when that was the last one (save)."""
        if self.last():
            return True
        self.index += 1
        self.dirty = True
        return False

    def _valid(self, values):
        try:
            settings_mod.validate(self.mode, values)
        except ValueError:
            return False
        return True

    def _choices(self, field):
        if field == "mode":
            return settings_mod.MODES
        if field == "delay":
            return settings_mod.DELAY_KINDS
        presets = _PRESETS.get(field, ())  # a new mode's list: only its own value
        current = self.values[field]
        if current in presets:
            return presets
        return (current,) + presets  # a pattern from the cfg stays choosable

    def change(self, delta):
        """A (-1) or B (+1): the next value that fits; False if there is none."""
        field = self.field()
        if field == "mode":
            choices = settings_mod.MODES
            i = choices.index(self.mode) + delta
            if i < 0 or i >= len(choices):
                return False
            self.seen[self.mode] = self.values
            self.mode = choices[i]
            self.values = self.seen.get(self.mode) or settings_mod.defaults(self.mode)
            self.dirty = True
            return True
        step = _row(self.mode)[1][self.index - 1]
        if step == 0:
            choices = self._choices(field)
            i = choices.index(self.values[field]) + delta
            while 0 <= i < len(choices):
                candidate = _put(self.values, field, choices[i])
                if self._valid(candidate):
                    self.values = candidate
                    self.dirty = True
                    return True
                i += delta  # an impossible pattern is skipped
            return False
        value = _get(self.values, field)
        if field == "bank_s":  # unset: the bank comes from match and score
            if value is None:
                if delta < 0:
                    return False
                value = 0
            elif value + delta * step <= 0:
                candidate = _put(self.values, field, None)
                self.values = candidate
                self.dirty = True
                return True
        candidate = _put(self.values, field, value + delta * step)
        if not self._valid(candidate):
            return False
        self.values = candidate
        self.dirty = True
        return True

    def button(self, app, code, now):
        """A button in set-up; False: not set-up's (START, GONG go to the core)."""
        if code == BTN_A or code == BTN_B:
            self.change(-1 if code == BTN_A else 1)
        elif code == BTN_PAUSE:
            app.setup_next = True  # acted on at the release (app._setup_hold)
        elif code == BTN_PAUSE | LONG:
            self.close(app)  # leave without saving
        elif code != BTN_A | LONG and code != BTN_B | LONG:
            return False
        return True

    def save(self, app, now):
        """PAUSE after the last field: written whole (hw/cfgsave.py ``save``)
        before it is taken, logged as ``settings``, shown until a player's
        press (ČAS 3.2)."""
        mode, values = self.settings()
        store = app.store
        if store is not None:
            store.save_settings(mode, settings_mod.format_text(mode, values))
        self.close(app)
        app._take_settings(mode, values, now)
        app.view = True

    def close(self, app):
        """Set-up ends: the clock's own displays again, and this module and
        the settings' are dropped (their code freed at the next collection)."""
        app.setup = None
        app.setup_next = False
        panel = app.panel
        panel.shown[0] = panel.shown[1] = None
        from .forget import forget
        forget("hallclock_fw.setup_mode", always=True)  # no host code imports it
        if app.shed is not None:  # ... and the settings' module (hw/device.py shed)
            app.shed(app)

    def settings(self):
        """(mode, values) as settings.py reads them back (validated)."""
        mode = self.mode
        return mode, settings_mod.parse_text(mode, settings_mod.format_text(mode, self.values))

    # -- the displays ---------------------------------------------------------
    def texts(self):
        """(A's display, B's display): each a text of 4 characters of
        display.CHARS, or a time in ms (shown as M:SS)."""
        field = self.field()
        words = _row(self.mode)[0]
        if field == "mode":
            return _MODE_LABEL, words[:4]
        label = words[4 * self.index:4 * self.index + 4]
        value = _get(self.values, field)
        if field in ("match", "score_a", "score_b"):
            # the points beside the field's letter; the bank they give on B's
            digits = "%d" % value
            label = label.rstrip()
            text = label + " " * (4 - len(label) - len(digits)) + digits
            return text, settings_mod.bank_ms(self.values)
        if field == "delay":
            return label, _DELAY_TEXT[value]
        if field in _PRESETS:
            if not value:
                return label, "nonE"
            # how many signals, then the first (largest) of them in seconds
            return label, ("%d%3d" % (len(value), value[0]))[-4:]
        if value is None:
            return label, "AUto"
        if field[-2:] == "_s":  # seconds, shown as M:SS
            return label, value * 1000
        return label, "%4d" % value

    def refresh(self, panel):
        """Draw both displays when something changed."""
        if not self.dirty:
            return
        self.dirty = False
        shown = self.texts()
        for side in (0, 1):
            disp = panel.displays[side]
            if disp is None:
                continue
            buf = panel.digits[side]
            what = shown[side]
            if isinstance(what, int):
                colon = render(what, buf)
            else:
                colon = False
                for i in range(4):
                    c = CHARS.find(what[i]) if i < len(what) else -1
                    buf[i] = c if c >= 0 else BLANK
            disp.show(buf, colon)
            panel.shown[side] = None  # the clock redraws its own after set-up


def open_setup(app, now):
    """PAUSE held 5 s while no game ran (app.py): set-up opens, beeping."""
    core = app.core
    if not (core.fresh() or core.over()):
        # the hold's long press asked a fresh backgammon clock for a break
        # (İSTAVDER 2.3): no game ran, so the clock starts fresh again
        app.core = make_core(app.mode, app.settings, app._event)
    app.setup = Setup(app.mode, app.settings)
    app.setup_next = False
    buzzer = app.panel.buzzer
    if buzzer is not None:
        buzzer.play(P_SETUP, now)
