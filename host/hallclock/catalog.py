"""The event catalogue, host side: event code -> log name and fields.

The device sends a code and four integers (hallclock_fw.events); this
table says what they mean, so the device never holds field names in RAM.
MicroPython-compatible (the core tests use it inside the VM too).

Field types:
    i  integer                 n  integer, or null when -1
    p  player: 0 -> "A", 1 -> "B", -1 -> null
    g  gong kind (GONG_KINDS)  s  play-out step (PLAYOUT_STEPS)
    w  what a refusal refused (REFUSED_WHAT)
    r  why it was refused (REFUSED_REASONS); a field left out of the record
       when 0 (no reason: a third break needs none)
"""
from hallclock_fw.events import NULL

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
    ("refused", (("player", "p"), ("what", "w"), ("reason", "r"))),
    ("resume", (("player", "p"), ("move", "n"), ("bank_ms", "i"))),
    ("settings", ()),  # mode and settings are added from the event's text, as for boot
    ("round", (("round", "i"), ("elapsed_ms", "i"))),
    # the clock's own margins (hw/device.py); the event's text adds idf_free,
    # idf_largest and, answering the host's I frame, the versions: hallclock.link.health
    ("health", (("gc_used", "n"), ("gc_free", "n"), ("gc_largest", "n"),
                ("longest_pass_ms", "i"))),
    # the host's settings were taken but hallclock.cfg could not be written
    # (the flash's error number): the clock runs on them until it reboots
    ("save_failed", (("errno", "n"),)),
)

PLAYERS = ("A", "B")
GONG_KINDS = ("start", "ten_minutes", "end", "manual")
# ČAS 16.3: play-out steps after the end-of-time signal
PLAYOUT_STEPS = ("finish_round", "one_more_move", "last_move", "over")
REFUSED_WHAT = ("", "break", "settings", "round")
REFUSED_REASONS = ("", "game_running", "bad_settings", "round_started")


def settings_json(mode, values):
    """Settings as the log's JSON object (docs/protocol.md: whole numbers as
    integers, lists always as lists, a score as "A-B", the delay kind as its
    name; unset settings left out).  Host side: the clock never writes JSON."""
    from hallclock_fw.settings import SPEC, format_value
    obj = {}
    for key, kind, _d in SPEC[mode]:
        value = values.get(key)
        if value is None:
            continue
        if kind == "l":
            value = list(value)
        elif kind == "score":
            value = format_value(kind, value)
        obj[key] = value
    return obj


def code_of(name):
    """First code whose log name is ``name``, or -1."""
    for code in range(len(EVENTS)):
        if EVENTS[code][0] == name:
            return code
    return NULL


def _value(kind, v):
    if kind == "i":
        return v
    if v == NULL:
        return None
    if kind == "n":
        return v
    if kind == "p":
        return PLAYERS[v] if 0 <= v < 2 else None
    if kind == "g":
        return GONG_KINDS[v] if 0 <= v < len(GONG_KINDS) else v
    if kind == "s":
        return PLAYOUT_STEPS[v] if 0 <= v < len(PLAYOUT_STEPS) else v
    if kind == "w":
        return REFUSED_WHAT[v] if 0 < v < len(REFUSED_WHAT) else v
    if kind == "r":
        return REFUSED_REASONS[v] if 0 < v < len(REFUSED_REASONS) else v
    return v


def fields_of(code, values):
    """{field: value} of an event with integer values (v0..v3)."""
    out = {}
    fields = EVENTS[code][1]
    for i in range(len(fields)):
        field, kind = fields[i]
        if kind == "r" and values[i] == 0:
            continue
        out[field] = _value(kind, values[i])
    return out


def event_fields(tokens):
    """(seq, t_ms, event name, {field: value}, text) of a checked E frame."""
    code = int(tokens[4])
    values = fields_of(code, [int(tokens[5 + i]) for i in range(4)])
    text = tokens[9] if len(tokens) > 9 else None
    return int(tokens[2]), int(tokens[3]), EVENTS[code][0], values, text
