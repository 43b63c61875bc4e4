"""Modes and their settings: defaults, parsing and validation, written once.

The host validates ``--set KEY=VALUE`` with this module (bad values exit 2
before anything runs), and the device reads its configuration with it.  The
canonical text form ``key=value;key=value`` travels in the boot frame and the
settings frame.  Whole numbers follow the protocol's one grammar
(``protocol.to_int``: an optional ``-`` and ASCII digits, nothing else, no
spaces), the same on every interpreter.
"""
from micropython import const

from .protocol import to_int

DELAY_KINDS = ("simple", "bronstein", "fischer")

# The modes' catalogue (MODES, SPEC) is the table ROWS at the end of this file.


# What is wrong, as a code (the words: settingswords.py, loaded only when an
# error is shown: on the host, or on the clock for a bad hallclock.cfg at boot;
# a refused host frame is a reason code in the log, never words on the heap)
_E_WHOLE = const(1)
_E_SCORE_FORM = const(2)
_E_ONE_OF = const(3)
_E_KIND = const(4)
_E_MODE = const(5)
_E_PAIR = const(6)
_E_KEY = const(7)
_E_LOW = const(8)
_E_HIGH = const(9)
_E_BETWEEN = const(10)
_E_TWICE = const(11)
_E_ROUND_WARN = const(12)
_E_SCORE = const(13)
_E_BANK = const(14)


class SettingsError(ValueError):
    """``SettingsError(code, values...)``: a setting refused; ``str()`` gives
    the words (a plain text message is taken as it is, too)."""

    def __str__(self):
        args = self.args
        if not args or not isinstance(args[0], int):
            return ValueError.__str__(self)
        from .settingswords import WORDS
        return WORDS[args[0]] % args[1:]


def _int(key, text):
    try:
        return to_int(text)
    except ValueError:
        raise SettingsError(_E_WHOLE, key, text)


def _parse_value(key, kind, text):
    if kind == "i":
        return _int(key, text)
    if kind == "l":
        if not text:
            return ()
        return tuple(_int(key, part) for part in text.split(","))
    if kind == "score":
        parts = text.split("-")
        if len(parts) != 2:
            raise SettingsError(_E_SCORE_FORM, key, text)
        return (_int(key, parts[0]), _int(key, parts[1]))
    if kind == "delay":
        if text not in DELAY_KINDS:
            raise SettingsError(_E_ONE_OF, key, text, ", ".join(DELAY_KINDS))
        return text
    raise SettingsError(_E_KIND, key, kind)


def format_value(kind, value):
    """One value in the canonical text form (a list 30,20,10; a score 3-5)."""
    if kind == "l":
        return ",".join(str(v) for v in value)
    if kind == "score":
        return "%d-%d" % value
    return str(value)


def _spec(mode):
    if mode not in SPEC:
        raise SettingsError(_E_MODE, mode, ", ".join(MODES))
    return SPEC[mode]


def defaults(mode):
    values = {}
    for key, _kind, default in _spec(mode):
        values[key] = default
    return values


def parse(mode, pairs):
    """Settings for ``mode`` from ``["key=value", ...]``, validated."""
    spec = _spec(mode)
    values = defaults(mode)
    for pair in pairs:
        if "=" not in pair:
            raise SettingsError(_E_PAIR, pair)
        key, text = pair.split("=", 1)
        kind = None
        for name, k, _d in spec:
            if name == key:
                kind = k
        if kind is None:
            raise SettingsError(_E_KEY, key, mode, ", ".join(s[0] for s in spec))
        values[key] = _parse_value(key, kind, text)
    validate(mode, values)
    return values


def parse_text(mode, text):
    """Settings from the canonical ``key=value;key=value`` form."""
    return parse(mode, [p for p in text.split(";") if p])


def format_text(mode, values):
    """The canonical text form (only settings that are set)."""
    out = []
    for key, kind, _d in _spec(mode):
        if values.get(key) is not None:
            out.append(key + "=" + format_value(kind, values[key]))
    return ";".join(out)


def bank_ms(values):
    """Backgammon bank per player (İSTAVDER 2.4): bank_s if set, otherwise the
    points the trailing player still needs to win the match × per_point_s."""
    if values.get("bank_s") is not None:
        return values["bank_s"] * 1000
    a, b = values["score"]
    trailing = a if a < b else b
    return (values["match"] - trailing) * values["per_point_s"] * 1000


# Ceilings keep every time far inside ticks_diff's range (2**29 ms, 6 days).
_MAX = {"move_s": 86400, "round_min": 1440, "round_warn_min": 1440, "bank_s": 86400,
        "match": 99, "per_point_s": 3600, "delay_s": 3600}
MAX_BANK_MS = 86400 * 1000


def _positive(values, key, low=1):
    if values[key] < low:
        raise SettingsError(_E_LOW, key, low, values[key])
    high = _MAX.get(key)
    if high is not None and values[key] > high:
        raise SettingsError(_E_HIGH, key, high, values[key])


def _below(values, key, limit_key):
    limit = values[limit_key]
    seen = []
    for v in values[key]:
        if v <= 0 or v >= limit:
            raise SettingsError(_E_BETWEEN, key, v, limit_key, limit - 1)
        if v in seen:
            raise SettingsError(_E_TWICE, key, v)
        seen.append(v)
    values[key] = tuple(sorted(values[key], reverse=True))


def _check_scrabble(values):
    _positive(values, "move_s")
    _below(values, "warn_s", "move_s")
    _positive(values, "round_min")
    _positive(values, "round_warn_min", 0)
    if values["round_warn_min"] >= values["round_min"]:
        raise SettingsError(_E_ROUND_WARN, values["round_warn_min"], values["round_min"])


def _check_duplicate(values):
    _positive(values, "move_s")
    _below(values, "announce_s", "move_s")


def _check_backgammon(values):
    _positive(values, "match")
    _positive(values, "per_point_s")
    _positive(values, "delay_s", 0)
    if values["bank_s"] is not None:
        _positive(values, "bank_s")
    a, b = values["score"]
    for who, pts in (("A", a), ("B", b)):
        if pts < 0 or pts >= values["match"]:
            raise SettingsError(_E_SCORE, who, pts, values["match"], values["match"],
                                values["match"] - 1)
    if bank_ms(values) > MAX_BANK_MS:
        raise SettingsError(_E_BANK, bank_ms(values) // 1000, MAX_BANK_MS // 1000)


def validate(mode, values):
    """The mode's cross-checks (its row's check) on parsed values."""
    for row in ROWS:
        if row[0] == mode:
            row[2](values)
            return
    raise SettingsError(_E_MODE, mode, ", ".join(MODES))


# The catalogue of modes: one row a mode, in the order set-up, help texts and
# reports list them: (mode, its settings, its cross-checks, its set-up words,
# its set-up steps).  Settings are ((key, kind, default), ...); kind: "i" whole
# number, "l" list of whole numbers, "score" A-B, "delay" one of DELAY_KINDS.
# Default None: unset.  Set-up words: 4 characters of display.CHARS for the
# mode, then 4 for each set-up field's label (setup_mode.fields: a score is
# two fields); one text, as one text longer than 10 characters is no
# interned name on the board.  Set-up steps: one a field (0: a choice).
# A mode's core is beside it in modes.CORES; its host side in hallclock.views.modes.
ROWS = (
    ("scrabble", (
        ("move_s", "i", 120),
        ("warn_s", "l", (30, 20, 10)),
        ("round_min", "i", 40),
        ("round_warn_min", "i", 10),
    ), _check_scrabble, "SCrAtUrnSiG rnd rndS", (10, 0, 5, 1)),
    ("duplicate", (
        ("move_s", "i", 180),
        ("announce_s", "l", (120, 60, 30)),
    ), _check_duplicate, "dUPLtUrnAnnC", (10, 0)),
    ("backgammon", (
        ("bank_s", "i", None),
        ("match", "i", 7),
        ("score", "score", (0, 0)),
        ("per_point_s", "i", 150),
        ("delay_s", "i", 15),
        ("delay", "delay", "simple"),
    ), _check_backgammon, "bAcGbAn Pt  A   b   PPt dELSdELy", (60, 1, 1, 1, 15, 1, 0)),
)


# built from the rows (a test that adds a row to ROWS sets these two again)
MODES = tuple(r[0] for r in ROWS)
SPEC = dict((r[0], r[1]) for r in ROWS)
