"""The clock's own configuration: a small text file on the board
(``hallclock.cfg``), read once at power-on.  Pure: it gets the file's text.

    # hallclock.cfg
    clock = table-07        # the clock's name in the log (letters, digits, - _ .)
    mode = scrabble         # scrabble, duplicate or backgammon
    brightness = 5          # displays, 0-7
    move_s = 120            # any setting of the mode (docs/contract.md)
    # the hall network (docs/network.md; broker-config writes these):
    wifi_ssid = HALL-WIFI
    wifi_password = ...
    broker = 192.168.1.10:1883
    hall = open-2026
    user = table-07
    password = ...
    key = ...               # this clock's frame key (hex; docs/protocol.md "Sealed frames")
    hall_key = ...          # the referee's signals on all/down (hex)
    tls_ca_file = hallclock.ca  # optional: TLS to the broker, pinning this CA (DER)

A missing file means the defaults.  Set-up at the clock and the host's
settings write the file again (hw/cfgsave.py): a power cut at any moment
leaves the old file or the new one whole (``cfgsave.load`` reads it back).
A bad line does not stop the clock: the defaults are used and ``error`` says what was wrong, with its line number (the
device shows it on the console and sounds the refusal signal), and ``code``
names the kind (``CFG<code>``: the console line, the health event's
``cfg=<code>`` that ``hallclock doctor`` words, whytext.CFG_WORDS).

The hall's and the clock's names become MQTT topic levels
(``hallclock/<hall>/<clock>/down``): both must be topic-safe (names.py: no
``+``, ``#``, ``/``, control characters or spaces, not empty, at most 24
characters), or the clock would subscribe to a filter it is never sent, or
to a wildcard, and never connect.
"""
from .. import settings
from micropython import const

from ..names import MAX_NAME, RESERVED, name_error  # noqa: F401 (MAX_NAME: for callers)

# private consts: no interned name on the board (a dropped module's names stay interned)
_DEFAULT_MODE = const("scrabble")
_DEFAULT_BRIGHTNESS = const(7)
# what was wrong (``Config.code``; the host's words: whytext.CFG_WORDS)
_C_LINE = const(1)
_C_CLOCK = const(2)
_C_MODE = const(3)
_C_BRIGHTNESS = const(4)
_C_MISSING = const(5)
_C_BROKER = const(6)
_C_KEY = const(7)
_C_HALL = const(8)
_C_SETTING = const(9)
_C_TLS = const(10)  # tls_ca_file: not a file name (a missing or bad CA: hw/esp32rare.py)
# optional TLS (docs/network.md); over 10 characters: no interned name on a plain clock
_TLS_CA = const("tls_ca_file")
# the hall network's keys: all of them, or none (then the USB serial link)
from .cfgsave import NET_KEYS  # noqa: E402


class Config:
    error: "str | None"  # (for the type checker; no code on the board)

    def __init__(self, clock):
        self.clock = clock
        self.mode = _DEFAULT_MODE
        self.settings = settings.defaults(_DEFAULT_MODE)
        self.brightness = _DEFAULT_BRIGHTNESS
        self.error = None
        self.code = 0  # 0, or what was wrong (_C_*)
        self.net = {}  # {key: text} of NET_KEYS when the clock is on Wi-Fi, else None
        self.net = None


def _fail(cfg, default_clock, message, code):
    out = Config(default_clock)
    out.error = "%s (CFG%d)" % (message, code)
    out.code = code
    return out


def parse(text, default_clock, name="hallclock.cfg"):
    """A Config from the file's text (None: no file)."""
    cfg = Config(default_clock)
    if text is None:
        return cfg
    pairs = []
    net = {}
    lineno = 0
    for raw in text.split("\n"):
        lineno += 1
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if "=" not in line:
            return _fail(cfg, default_clock, "%s:%d: %r is not KEY = VALUE" % (name, lineno, line),
                         _C_LINE)
        key, value = line.split("=", 1)
        key = key.strip()
        value = value.strip()
        if key == "clock":
            why = name_error(value)
            if why is not None:
                return _fail(cfg, default_clock,
                             "%s:%d: clock name %r: %s" % (name, lineno, value, why), _C_CLOCK)
            cfg.clock = value
        elif key == "mode":
            if value not in settings.MODES:
                return _fail(cfg, default_clock, "%s:%d: mode %r is not one of %s" % (
                    name, lineno, value, ", ".join(settings.MODES)), _C_MODE)
            cfg.mode = value
        elif key == "brightness":
            if not value.isdigit() or int(value) > 7:
                return _fail(cfg, default_clock,
                             "%s:%d: brightness %r is not 0-7" % (name, lineno, value),
                             _C_BRIGHTNESS)
            cfg.brightness = int(value)
        elif key == _TLS_CA:
            if name_error(value) is not None:  # a file beside hallclock.cfg
                return _fail(cfg, default_clock, "%s:%d: %s %r is not a file name" % (
                    name, lineno, key, value), _C_TLS)
            net[key] = value
        elif key in NET_KEYS:
            if key == "hall":  # a topic level, as a clock's name (a hall may be "all")
                why = name_error(value) if value not in RESERVED else None
                if why is not None:
                    return _fail(cfg, default_clock, "%s:%d: hall name %r: %s" % (
                        name, lineno, value, why.replace("clock", "hall")), _C_HALL)
            net[key] = value
        else:
            pairs.append((lineno, key + "=" + value))
    if net:
        missing = [k for k in NET_KEYS if k not in net]
        if missing:
            return _fail(cfg, default_clock, "%s: the hall network needs %s too" % (
                name, ", ".join(missing)), _C_MISSING)
        host, _, port = net["broker"].rpartition(":")
        if not host or not port.isdigit():
            return _fail(cfg, default_clock, "%s: broker %r is not HOST:PORT" % (
                name, net["broker"]), _C_BROKER)
        for k in ("key", "hall_key"):  # hex, as broker-config writes them
            v = net[k]
            if len(v) < 32 or len(v) % 2 or v.strip("0123456789abcdefABCDEF"):
                return _fail(cfg, default_clock, "%s: %s is not 32 or more hex digits" % (name, k),
                             _C_KEY)
        cfg.net = net
    try:
        cfg.settings = settings.parse(cfg.mode, [p for _n, p in pairs])
    except ValueError as e:
        # name the line of the setting concerned when we can tell
        where = name
        msg = str(e)
        for n, p in pairs:
            if msg.startswith(p.split("=", 1)[0] + ":") or msg.startswith(p.split("=", 1)[0] + " "):
                where = "%s:%d" % (name, n)
                break
        return _fail(cfg, default_clock, "%s: %s" % (where, msg), _C_SETTING)
    return cfg
