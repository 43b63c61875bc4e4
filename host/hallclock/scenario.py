"""Scenario scripts (docs/contract.md): parse and validate, with file:line errors.

Actions: ``press BUTTON``, ``end`` (the contract), and the project's own
``bounce BUTTON`` (a press whose contact bounces), ``hold BUTTON MS`` (a press
held MS ms: a long press from 1500 ms), ``command BUTTON`` / ``command-long
BUTTON`` (a press sent by the host over the link, as the hall relays START and
GONG), and ``reboot`` (the board loses power and starts again: a new device
session; events the host had not acknowledged are lost, like RAM).
"""
from dataclasses import dataclass

from hallclock_fw.events import BUTTON_NAMES

from .errors import BadInput

ACTIONS = {"press": 1, "bounce": 1, "hold": 2, "end": 0, "command": 1,
           "command-long": 1, "reboot": 0}


@dataclass(frozen=True)
class Action:
    t_ms: int
    action: str
    arg: object
    line: int

    def as_tuple(self):
        return (self.t_ms, self.action, self.arg)


def _int(text, what, where):
    try:
        value = int(text)
    except ValueError:
        raise BadInput(f"{where}: {what} {text!r} is not a whole number of milliseconds") from None
    if value < 0:
        raise BadInput(f"{where}: {what} {value} is negative")
    return value


def parse_text(text, name="<script>"):
    actions = []
    last_t = 0
    ended = False
    for lineno, raw in enumerate(text.splitlines(), 1):
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
            raise BadInput(f"{where}: unknown action {words[1]!r} "
                           f"(actions: {', '.join(sorted(ACTIONS))})")
        args = words[2:]
        if len(args) != ACTIONS[action]:
            raise BadInput(f"{where}: '{action}' takes {ACTIONS[action]} argument(s), "
                           f"got {len(args)}: {raw.strip()!r}")
        if t < last_t:
            raise BadInput(f"{where}: time {t} comes before the previous line's {last_t} "
                           "(times must not decrease)")
        if ended:
            raise BadInput(f"{where}: action after 'end' (the simulation has stopped)")
        arg = None
        if action in ("press", "bounce", "hold", "command", "command-long"):
            button = args[0].upper()
            if button not in BUTTON_NAMES:
                raise BadInput(f"{where}: unknown button {args[0]!r} "
                               f"(buttons: {', '.join(BUTTON_NAMES)})")
            arg = button
            if action == "hold":
                arg = (button, _int(args[1], "hold length", where))
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
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such script file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read the script ({exc})") from None
    return parse_text(text, str(path))
