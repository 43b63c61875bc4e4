"""The event catalogue: one table shared by the device (to emit and frame
events) and the host (to turn frames into log records).

Every event is a code plus up to four integer values.  ``EVENTS[code]`` gives
the log name and the fields those integers fill, each with a type letter:

    i  integer                 n  integer, or null when -1
    p  player: 0 -> "A", 1 -> "B", -1 -> null
    g  gong kind (GONG_KINDS)  s  play-out step (PLAYOUT_STEPS)
    w  what a refusal refused (REFUSED_WHAT)

Adding an event: add a code and a row here; the protocol and the host follow.
"""
from micropython import const

EV_BOOT = const(0)
EV_GONG = const(1)
EV_TURN = const(2)  # Scrabble: limit_ms
EV_PRESS = const(3)
EV_WARN = const(4)
EV_EXPIRED = const(5)
EV_PAUSE = const(6)
EV_RESUME = const(7)
EV_ANNOUNCE = const(8)
EV_DUP_START = const(9)
EV_DUP_END = const(10)
EV_END = const(11)
EV_TURN_BANK = const(12)  # backgammon: bank_ms
EV_PRESS_BANK = const(13)  # backgammon: bank_ms after the move
EV_PLAYOUT = const(14)
EV_BREAK = const(15)
EV_BREAK_END = const(16)
EV_REFUSED = const(17)
EV_RESUME_BANK = const(18)
EV_SELFTEST = const(19)

NULL = const(-1)

# code -> (event name, ((field, type), ...))
EVENTS = (
    ("boot", ()),  # mode and settings are added from the device's configuration
    ("gong", (("kind", "g"), ("move", "n"))),
    ("turn", (("player", "p"), ("move", "i"), ("limit_ms", "i"))),
    ("press", (("player", "p"), ("move", "i"), ("used_ms", "i"))),
    ("warn", (("player", "p"), ("move", "i"), ("left_s", "i"))),
    ("expired", (("player", "p"), ("move", "i"))),
    ("pause", (("player", "p"), ("move", "n"))),
    ("resume", (("player", "p"), ("move", "n"), ("limit_ms", "n"))),
    ("announce", (("move", "i"), ("left_s", "i"))),
    ("dup_start", (("move", "i"), ("limit_ms", "i"))),
    ("dup_end", (("move", "i"),)),
    ("end", ()),
    ("turn", (("player", "p"), ("move", "i"), ("bank_ms", "i"))),
    ("press", (("player", "p"), ("move", "i"), ("used_ms", "i"), ("bank_ms", "i"))),
    ("playout", (("step", "s"), ("move", "n"))),
    ("break", (("player", "p"), ("number", "i"), ("break_ms", "i"))),
    ("break_end", (("player", "p"), ("number", "i"))),
    ("refused", (("player", "p"), ("what", "w"))),
    ("resume", (("player", "p"), ("move", "n"), ("bank_ms", "i"))),
    ("selftest", (("step", "i"),)),
)

PLAYERS = ("A", "B")
GONG_KINDS = ("start", "ten_minutes", "end", "manual")
GONG_START = const(0)
GONG_TEN = const(1)
GONG_END = const(2)
GONG_MANUAL = const(3)
# ČAS 16.3: play-out steps after the end-of-time signal
PLAYOUT_STEPS = ("finish_round", "one_more_move", "last_move", "over")

# what a refused request was (EV_REFUSED "what")
REFUSED_BREAK = const(1)
REFUSED_WHAT = ("", "break")


def code_of(name):
    """First code whose log name is ``name`` (host side; not for the tick path)."""
    for code in range(len(EVENTS)):
        if EVENTS[code][0] == name:
            return code
    return NULL

# Inputs: button codes as the app hands them to a core.  A long press arrives
# as its own event (code | LONG) after the ordinary press of the same button.
BTN_A = const(0)
BTN_B = const(1)
BTN_PAUSE = const(2)
BTN_START = const(3)
BTN_GONG = const(4)
LONG = const(8)
BUTTON_NAMES = ("A", "B", "PAUSE", "START", "GONG")
