"""``hallclock simulate`` and ``hallclock device``: the real firmware as a
virtual clock, into a log (simulate) or onto an existing serial port (device)."""
import argparse
import os

from ..errors import BadInput, HallclockError

GROUP = "try"  # the director's task (hallclock.cliopts.GROUPS)

MAX_LOOP_MS = 1000  # a clock whose loop sleeps longer misses presses: not a clock
MAX_SILENCE_S = 3600.0


def _loop(text):
    """--loop event | jitter:LO-HI"""
    if text == "event":
        return None
    if text.startswith("jitter:"):
        try:
            lo, hi = (int(x) for x in text[7:].split("-"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not jitter:LO-HI (e.g. jitter:1-20)")
        if not 1 <= lo <= hi <= MAX_LOOP_MS:
            raise argparse.ArgumentTypeError(f"{text!r}: need 1 <= LO <= HI <= {MAX_LOOP_MS} "
                                             "(a loop pass of at most a second)")
        return (lo, hi)
    raise argparse.ArgumentTypeError(f"{text!r} is not 'event' or 'jitter:LO-HI'")


def _ticks(text):
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    if not 0 <= value < (1 << 30):
        raise argparse.ArgumentTypeError("ticks run from 0 to 2**30-1")
    return value


def _session(text):
    if len(text) != 8 or any(c not in "0123456789abcdef" for c in text):
        raise argparse.ArgumentTypeError(f"{text!r} is not 8 lowercase hex digits")
    return text


def _clock(text):
    """--clock NAME: the clock-name grammar of docs/contract.md (hallclock_fw.names)."""
    from hallclock_fw.names import name_error

    from ..scenario import shown
    why = name_error(text)
    if why is not None:
        raise argparse.ArgumentTypeError(f"{shown(text)}: {why}")
    return text


def mode_help(default="scrabble", modes=None):
    """The --mode help line, from the firmware's list of modes (settings.MODES)."""
    from hallclock_fw.settings import MODES
    names = [m + (" (default)" if m == default else "") for m in (modes or MODES)]
    return "the clock's mode: " + ", ".join(names)


def device_options(p):
    """The options every virtual clock takes (simulate, device)."""
    p.add_argument("--script", required=True, metavar="FILE",
                   help="scenario script (docs/contract.md)")
    p.add_argument("--mode", default="scrabble", help=mode_help())
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the mode (repeatable)")
    p.add_argument("--clock", type=_clock, default="virtual-1", metavar="NAME",
                   help="the virtual clock's identity (1-24 letters, digits, - _ .)")
    p.add_argument("--loop", type=_loop, default=None, metavar="event|jitter:LO-HI",
                   help="device loop: event-driven (default) or jittered periods in ms")
    p.add_argument("--start-ticks", type=_ticks, default=0, metavar="T",
                   help="the device's tick counter at start (e.g. 0x3fff0000 to cross the wrap)")


def hall_options(p, modes=None, mode_note=""):
    """The options every virtual hall takes (hall-simulate, virtual-clocks):
    the family of virtual clocks shares its flags' names and meanings."""
    p.add_argument("--tables", type=int, default=8, metavar="N",
                   help="how many table clocks (default 8)")
    p.add_argument("--mode", default="scrabble", help=mode_help(modes=modes) + mode_note)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the mode, for every clock (repeatable)")
    p.add_argument("--speed", type=float, default=1.0, metavar="X",
                   help="device time per real time (default 1: real time; 60 plays a "
                   "40-minute round in 40 s)")


def check_speed(speed):
    if not 0.01 <= speed <= 1000:  # nan fails this too
        raise BadInput(f"--speed {speed:g}: give 0.01 to 1000")


# -- the device side's interpreter (docs/micropython.md) --
def _heap_kib(text):
    from ..vboard.unixport import MIN_HEAP_KIB
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of KiB")
    if not MIN_HEAP_KIB <= value <= 1 << 20:
        raise argparse.ArgumentTypeError(f"{value}: give {MIN_HEAP_KIB} to {1 << 20} KiB")
    return value


def interpreter_options(p, webassembly=True):
    words = {"cpython": "cpython (default)", "micropython": "micropython (the webassembly VM)",
             "micropython-unix": "micropython-unix (the unix port as its own process, "
             "with a fixed heap)"}
    choices = ("cpython", "micropython", "micropython-unix") if webassembly else \
        ("cpython", "micropython-unix")
    p.add_argument("--interpreter", choices=choices, default="cpython",
                   help="the device side: " + ", ".join(words[c] for c in choices))
    p.add_argument("--heap-kib", type=_heap_kib, default=None, metavar="N",
                   help="micropython-unix: the board's GC heap in KiB (default 56, the "
                        "first GC area of a stock ESP32 since MicroPython 1.22)")
# -- end of the interpreter options --


def check_heap_option(args):
    if args.heap_kib is not None and args.interpreter != "micropython-unix":
        raise BadInput("--heap-kib needs --interpreter micropython-unix "
                       "(only the unix port has a fixed heap)")


def register(sub):
    p = sub.add_parser("simulate", help="run a scenario on a virtual clock into a log")
    device_options(p)
    p.add_argument("--out", required=True, metavar="LOG", help="the log file to write (JSON Lines)")
    interpreter_options(p)
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("device", help="run a virtual clock on an existing serial port")
    device_options(p)
    p.add_argument("--port", default=None, help="the serial port to attach to, e.g. one end "
                   "of a pty pair (or --broker)")
    from .log import broker_options
    broker_options(p, "a virtual clock on the hall network: its own entry in --credentials")
    p.add_argument("--silence-s", type=float, default=30.0, metavar="S",
                   help="give up after S seconds without host contact (default 30)")
    p.add_argument("--session", type=_session, default=None, metavar="HEX",
                   help="the device session id (8 hex digits; default: random, as a board)")
    interpreter_options(p, webassembly=False)
    p.set_defaults(func=cmd_device)


def prepare_device(args):
    """The settings and scenario actions of a virtual clock, checked (BadInput)."""
    from hallclock_fw.settings import MODES

    from .. import scenario
    from ..vboard import device as virtual
    if args.mode not in MODES:
        raise BadInput(f"unknown mode {args.mode!r} (modes: {', '.join(MODES)})")
    values = virtual.check_settings(args.mode, args.set)
    actions = scenario.load(args.script)
    return values, actions


def cmd_simulate(args):
    from ..vboard import device as virtual
    values, actions = prepare_device(args)
    if os.path.exists(args.out) and os.path.getsize(args.out) > 0:
        raise BadInput(f"{args.out} already exists: simulate writes a new log; "
                       "remove it or choose another --out")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        raise BadInput(f"{args.out}: the folder {out_dir} does not exist")
    check_heap_option(args)
    n = virtual.simulate(actions, args.mode, values, args.out, clock=args.clock,
                         interpreter=args.interpreter, period=args.loop,
                         start_ticks=args.start_ticks, heap_kib=args.heap_kib)
    print(f"{n} records written to {args.out}")
    return 0


def cmd_device(args):
    from ..vboard import device as virtual
    values, actions = prepare_device(args)
    if not 0 < args.silence_s <= MAX_SILENCE_S:  # nan and inf fail this too
        raise BadInput(f"--silence-s {args.silence_s:g}: give a number of seconds above 0 "
                       f"and at most {MAX_SILENCE_S:g}")
    check_heap_option(args)
    sid = args.session or os.urandom(4).hex()  # a new session, as a board at power-on
    from .log import broker_args
    address = broker_args(args)
    if address is not None:
        return _device_on_broker(args, address, values, actions, sid)
    if args.port is None:
        raise BadInput("give --port PORT (a serial port) or --broker HOST:PORT "
                       "(the hall network)")
    if args.interpreter == "micropython-unix":
        from ..vboard import unixport as mpunix
        os.close(virtual.open_device_port(args.port))  # a clear error for a bad path
        mpunix.run(args.mode, values, actions, args.port, clock=args.clock, sid=sid,
                   start_ticks=args.start_ticks, period=args.loop, heap_kib=args.heap_kib,
                   silence_s=args.silence_s, timeout=None)
        return 0
    fd = virtual.open_device_port(args.port)
    runner = virtual.make_runner(args.mode, values, actions, clock=args.clock, sid=sid,
                                 start_ticks=args.start_ticks, period=args.loop)
    try:
        ok = virtual.run(runner, fd, silence_s=args.silence_s)
    finally:
        os.close(fd)
    if not ok:
        raise HallclockError(f"no host contact for {args.silence_s:g} s; events not "
                             "acknowledged were not delivered "
                             "(is 'hallclock log' running on the other end?)")
    return 0


def _device_on_broker(args, address, values, actions, sid):
    """``device --broker``: the firmware's own network link to the broker."""
    from ..vboard import device as virtual
    from ..net.broker import load_credentials
    from ..net.mqtt import device_link
    creds = load_credentials(args.credentials, args.clock)
    if args.interpreter == "micropython-unix":  # the same NetLink, on the unix port's sockets
        from ..net.mqtt import run_unix_device
        run_unix_device(address, args.hall, args.clock, creds[args.clock], args.mode, values,
                        actions, sid, silence_s=args.silence_s, heap_kib=args.heap_kib,
                        tls=args.tls_ca)
        return 0
    runner = virtual.make_runner(args.mode, values, actions, clock=args.clock, sid=sid,
                                 start_ticks=args.start_ticks, period=args.loop)
    net = device_link(address, args.hall, args.clock, creds[args.clock], tls=args.tls_ca)
    ok = virtual.run(runner, net, silence_s=args.silence_s)
    if not ok:
        from ..whytext import words
        why = words(net.why or net.client.why)
        raise HallclockError(f"no host contact for {args.silence_s:g} s on the broker "
                             f"{args.broker} ({why or 'no logger answered'}); events not "
                             "acknowledged were not delivered (is 'hallclock log --broker' "
                             "running?)")
    return 0
