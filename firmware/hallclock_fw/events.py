"""Event and button codes: what the device needs to emit and frame events.

Every event is a code plus up to four integer values.  What the host makes of
them — the log name and the field each value fills — is the table
``hallclock.catalog.EVENTS`` (host side: the device never needs the names, and
every byte of names would sit in the clock's RAM).

Adding an event: add a code here (and raise EV_COUNT), and its row at the
same position in hallclock.catalog.EVENTS; tests/test_catalog.py checks that
the two agree.
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
EV_SETTINGS = const(19)  # settings taken (K frame): text <mode>:<settings>
EV_ROUND = const(20)  # round number, elapsed_ms (N frame, or a restored round)
EV_HEALTH = const(21)  # the clock's own margins (hw/device.py): heap, longest pass; text
EV_SAVE_FAILED = const(22)  # the host's settings not saved to hallclock.cfg: errno

NULL = const(-1)

EV_COUNT = const(23)  # codes 0 .. EV_COUNT-1; names and fields: hallclock.catalog

GONG_START = const(0)
GONG_TEN = const(1)
GONG_END = const(2)
GONG_MANUAL = const(3)

# what a refused request was (EV_REFUSED "what")
REFUSED_BREAK = const(1)
# 2 settings, 3 round, and the reasons (the third value): app.py's _REFUSED_*
# and _REASON_*, named by hallclock.catalog.REFUSED_WHAT and REFUSED_REASONS


# Inputs: button codes as the app hands them to a core.  A long press arrives
# as its own event (code | LONG) after the ordinary press of the same button.
BTN_A = const(0)
BTN_B = const(1)
BTN_PAUSE = const(2)
BTN_START = const(3)
BTN_GONG = const(4)
LONG = const(8)
BUTTON_NAMES = ("A", "B", "PAUSE", "START", "GONG")
