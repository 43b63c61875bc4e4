"""Scenario scripts (docs/contract.md): parse and validate, with file:line errors.

Actions: ``press BUTTON``, ``end`` (the contract), and the project's own
``bounce BUTTON`` (a press whose contact bounces), ``hold BUTTON MS`` (a press
held MS ms: a long press from 1500 ms), ``command BUTTON`` / ``command-long
BUTTON`` (a press sent by the host over the link, as the hall relays START and
GONG), ``reboot`` (the board loses power and starts again: a new device
session; events the host had not acknowledged are lost, like RAM), ``hang``
(the next pass of the loop never returns: the watchdog restarts the board),
``crash`` (the next pass raises: main.py restarts the board 3 s later) and
``power-cut-save N`` (the power fails after N flash operations of the next
save of hallclock.cfg, then the board starts again) and ``configure MODE
KEY=VALUE;...`` (the host's settings frame ``K`` arrives over the link, as
``hallclock configure`` sends it).
"""
from dataclasses import dataclass

from hallclock_fw.core.timing import TICKS_MAX
from hallclock_fw.events import BUTTON_NAMES

from .errors import BadInput

# The clock counts its time with ticks_diff on a 2**30 tick counter: a
# difference holds -2**29 .. 2**29-1 ms, and the log's t_ms is the ticks_diff
# from the session's start.  So no time of a script, nor the end of a held
# press, may lie beyond 2**29-1 ms (6 d 5 h 7 min 50.911 s): a later time would
# come back negative (docs/contract.md, extensions).
MAX_T_MS = (TICKS_MAX + 1) // 2 - 1

ACTIONS = {"press": 1, "bounce": 1, "hold": 2, "end": 0, "command": 1,
           "command-long": 1, "reboot": 0, "hang": 0, "crash": 0, "power-cut-save": 1,
           "configure": 2}


@dataclass(frozen=True)
class Action:
    t_ms: int
    action: str
    arg: object
    line: int

    def as_tuple(self):
        return (self.t_ms, self.action, self.arg)


MAX_SCRIPT_BYTES = 4 << 20  # a whole tournament day is a few thousand lines


def shown(text, width=40):
    """``text`` for an error message: quoted, and cut if it is long."""
    return repr(text) if len(text) <= width else repr(text[:width]) + f"… ({len(text)} characters)"


def _int(text, what, where):
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()):
        raise BadInput(f"{where}: {what} {shown(text)} is not a whole number of milliseconds")
    if text.startswith("-"):
        raise BadInput(f"{where}: {what} {shown(text)} is negative")
    if len(digits) > 15 or int(digits) > MAX_T_MS:
        raise BadInput(f"{where}: {what} {shown(text)} ms is beyond what the clock can count "
                       f"(at most {MAX_T_MS} ms, about 6 days)")
    return int(digits)


def _settings(mode, text, where):
    """(mode, settings text) of a ``configure`` line, as the K frame carries them."""
    from hallclock_fw import settings as settings_mod
    if mode not in settings_mod.MODES:
        raise BadInput(f"{where}: configure: unknown mode {shown(mode)} "
                       f"(modes: {', '.join(settings_mod.MODES)})")
    try:
        values = settings_mod.parse_text(mode, text)
    except ValueError as exc:
        raise BadInput(f"{where}: configure: {exc}") from None
    return (mode, settings_mod.format_text(mode, values))


def parse_text(text, name="<script>"):
    actions = []
    last_t = 0
    ended = False
    for lineno, raw in enumerate(text.split("\n"), 1):
        where = f"{name}:{lineno}"
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        t = _int(words[0], "time", where)
        if len(words) < 2:
            raise BadInput(f"{where}: no action after the time {t} (expected e.g. '{t} press A')")
        action = words[1].lower()
        if action not in ACTIONS:
            raise BadInput(f"{where}: unknown action {shown(words[1])} "
                           f"(actions: {', '.join(sorted(ACTIONS))})")
        args = words[2:]
        if len(args) != ACTIONS[action]:
            raise BadInput(f"{where}: '{action}' takes {ACTIONS[action]} argument(s), "
                           f"got {len(args)}: {shown(raw.strip())}")
        if t < last_t:
            raise BadInput(f"{where}: time {t} comes before the previous line's {last_t} "
                           "(times must not decrease)")
        if ended:
            raise BadInput(f"{where}: action after 'end' (the simulation has stopped)")
        arg = None
        if action in ("press", "bounce", "hold", "command", "command-long"):
            button = args[0].upper()
            if button not in BUTTON_NAMES:
                raise BadInput(f"{where}: unknown button {shown(args[0])} "
                               f"(buttons: {', '.join(BUTTON_NAMES)})")
            arg = button
            if action == "hold":
                arg = (button, _int(args[1], "hold length", where))
                if t + arg[1] > MAX_T_MS:
                    raise BadInput(f"{where}: the press held from {t} ms for {arg[1]} ms "
                                   f"ends beyond what the clock can count ({MAX_T_MS} ms)")
        if action == "power-cut-save":
            arg = _int(args[0], "flash operation count", where)
        if action == "configure":
            arg = _settings(args[0], args[1], where)
        if action == "end":
            ended = True
        actions.append(Action(t, action, arg, lineno))
        last_t = t
    if not actions:
        raise BadInput(f"{name}: the script has no actions")
    if not ended:
        raise BadInput(f"{name}: the script has no 'end' line (add e.g. '{last_t + 1000} end')")
    return actions


def load(path):
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SCRIPT_BYTES + 1)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such script file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a folder, not a script file") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the script ({exc.strerror})") from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise BadInput(f"{path}: more than {MAX_SCRIPT_BYTES >> 20} MiB: not a scenario script")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not UTF-8 text (byte {exc.start}): not a scenario script") from None
    return parse_text(text, str(path))
