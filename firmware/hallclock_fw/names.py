"""Clock names, written once: the board's ``hallclock.cfg``, the host's
``--clock`` options and the MQTT topics all take a name by this grammar
(docs/contract.md, extensions):

    name := [A-Za-z0-9._-]{1,24}   and not one of RESERVED

A name is one protocol token (no space: the hello frame splits on spaces,
and 24 characters keep every frame well inside ``protocol.MAX_LINE``) and one
MQTT topic level (no ``/``, ``+``, ``#``, ASCII only).  ``all`` is the
topic level that reaches every clock of a hall, and ``logger``, ``referee``,
``viewer`` are the host's client names there: no clock may take them.
MicroPython-compatible and pure.
"""
from micropython import const

_NAME_CHARS = const("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
MAX_NAME = 24
RESERVED = ("all", "logger", "referee", "viewer")
GRAMMAR = "1-%d letters, digits, - _ . (not %s)" % (MAX_NAME, ", ".join(RESERVED))


def name_error(value):
    """None if ``value`` is a good clock name, else what is wrong with it."""
    if not isinstance(value, str) or not value:
        return "a clock needs a name: use " + GRAMMAR
    if len(value) > MAX_NAME:
        return "%d characters, at most %d: use %s" % (len(value), MAX_NAME, GRAMMAR)
    if value.strip(_NAME_CHARS):  # strip: a loop over a sound name would intern each character
        c = [c for c in value if c not in _NAME_CHARS][0]
        return "%r is not allowed in a clock name: use %s" % (c, GRAMMAR)
    if value in RESERVED:
        return ("%r is reserved, taken by the hall network (all: every clock's topic; "
                "logger, referee, viewer: the host clients): choose another name" % value)
    return None
