"""The hallclock command line (docs/contract.md).  One exit path: every
error the user can act on is a HallclockError, printed as
``hallclock: message`` on stderr; bad input exits 2."""
import argparse
import importlib
import os
import pkgutil
import sys

from . import __version__, commands
from .errors import BadInput, HallclockError

SAMPLE = os.path.join(os.path.dirname(__file__), "samples", "scrabble_game.txt")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise BadInput(f"{message} (see '{self.prog} --help')")


def _loop(text):
    """--loop event | jitter:LO-HI"""
    if text == "event":
        return None
    if text.startswith("jitter:"):
        try:
            lo, hi = (int(x) for x in text[7:].split("-"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not jitter:LO-HI (e.g. jitter:1-20)")
        if not 1 <= lo <= hi:
            raise argparse.ArgumentTypeError(f"{text!r}: need 1 <= LO <= HI")
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


def _device_options(p):
    p.add_argument("--script", required=True, help="scenario script (docs/contract.md)")
    p.add_argument("--mode", default="scrabble", help="scrabble (default), duplicate, backgammon")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the mode (repeatable)")
    p.add_argument("--clock", default="virtual-1", help="the virtual clock's identity")
    p.add_argument("--loop", type=_loop, default=None, metavar="event|jitter:LO-HI",
                   help="device loop: event-driven (default) or jittered periods in ms")
    p.add_argument("--start-ticks", type=_ticks, default=0, metavar="T",
                   help="the device's tick counter at start (e.g. 0x3fff0000 to cross the wrap)")


def _session(text):
    if len(text) != 8 or any(c not in "0123456789abcdef" for c in text):
        raise argparse.ArgumentTypeError(f"{text!r} is not 8 lowercase hex digits")
    return text


def build_parser():
    parser = _Parser(prog="hallclock", description="Tournament game clocks: virtual "
                     "devices, the serial logger, and reports.")
    parser.add_argument("--version", action="version", version=f"hallclock {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("simulate", help="run a scenario on a virtual clock into a log")
    _device_options(p)
    p.add_argument("--out", required=True, help="the log file to write (JSON Lines)")
    p.add_argument("--interpreter", choices=("cpython", "micropython"), default="cpython")

    p = sub.add_parser("device", help="run a virtual clock on an existing serial port")
    _device_options(p)
    p.add_argument("--port", required=True)
    p.add_argument("--silence-s", type=float, default=30.0, metavar="S",
                   help="give up after S seconds without host contact (default 30)")
    p.add_argument("--session", type=_session, default=None, metavar="HEX",
                   help="the device session id (8 hex digits; default: random, as a board)")

    p = sub.add_parser("log", help="log one or more clocks' events into a file")
    p.add_argument("--port", required=True, action="append",
                   help="serial port, or 'auto' for the only ESP32 board (repeatable)")
    p.add_argument("--out", required=True)
    p.add_argument("--exit-on-end", action="store_true")
    p.add_argument("--restore", action="store_true",
                   help="after a clock lost power mid-game, send the game back to it")
    p.add_argument("--plain", action="store_true",
                   help="plain lines instead of the live view (the default when not on a terminal)")

    p = sub.add_parser("report", help="print the moves of every game in a log")
    p.add_argument("log")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw each player's move times against the limit, pauses and gongs")

    p = sub.add_parser("demo", help="simulate the bundled sample game and print its report")
    p.add_argument("--out-dir", default="hallclock-demo",
                   help="where the demo's log and CSV go (default: ./hallclock-demo)")

    for name, func in COMMANDS.items():
        sub.choices[name].set_defaults(func=func)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"{commands.__name__}.{info.name}").register(sub)
    return parser


def _prepare_device(args):
    from hallclock_fw.settings import MODES

    from . import scenario, virtual
    if args.mode not in MODES:
        raise BadInput(f"unknown mode {args.mode!r} (modes: {', '.join(MODES)})")
    values = virtual.check_settings(args.mode, args.set)
    actions = scenario.load(args.script)
    return values, actions


def cmd_simulate(args):
    from . import virtual
    values, actions = _prepare_device(args)
    if os.path.exists(args.out) and os.path.getsize(args.out) > 0:
        raise BadInput(f"{args.out} already exists: simulate writes a new log; "
                       "remove it or choose another --out")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        raise BadInput(f"{args.out}: the folder {out_dir} does not exist")
    n = virtual.simulate(actions, args.mode, values, args.out, clock=args.clock,
                         interpreter=args.interpreter, period=args.loop,
                         start_ticks=args.start_ticks)
    print(f"{n} records written to {args.out}")
    return 0


def cmd_device(args):
    from . import virtual
    values, actions = _prepare_device(args)
    if args.silence_s <= 0:
        raise BadInput(f"--silence-s {args.silence_s:g}: give a number of seconds above 0")
    sid = args.session or os.urandom(4).hex()  # a new session, as a board at power-on
    fd = virtual.open_device_port(args.port)
    runner = virtual.make_runner(args.mode, values, actions, clock=args.clock, sid=sid,
                                 start_ticks=args.start_ticks, period=args.loop)
    try:
        ok = virtual.pump(runner, fd, silence_s=args.silence_s)
    finally:
        os.close(fd)
    if not ok:
        raise HallclockError(f"no host contact for {args.silence_s:g} s; events not "
                             "acknowledged were not delivered "
                             "(is 'hallclock log' running on the other end?)")
    return 0


def cmd_log(args):
    from .commands.ports import resolve_port
    from .liveview import LiveView
    from .logger import Logger
    logger = Logger([resolve_port(p) for p in args.port], args.out, restore=args.restore)
    logger.open()
    try:
        with LiveView(logger, plain=True if args.plain else None) as view:
            logger.run(exit_on_end=args.exit_on_end, on_poll=view.poll)
    except KeyboardInterrupt:
        pass
    print(f"hallclock log: {logger.stats()}", file=sys.stderr)
    return 0


def cmd_report(args):
    from . import report
    games = report.load_games(args.log)
    report.print_report(games)
    if args.csv:
        report.write_csv(games, args.csv)
        print(f"CSV written to {args.csv}")
    if args.plot:
        report.write_plot(games, args.plot)
        print(f"plot written to {args.plot}")
    return 0


def cmd_demo(args):
    from hallclock_fw.settings import parse

    from . import report, scenario, virtual
    os.makedirs(args.out_dir, exist_ok=True)
    log = os.path.join(args.out_dir, "demo-game.jsonl")
    if os.path.exists(log):
        os.remove(log)  # the demo's own file, made afresh each run
    from rich.console import Console
    console = Console()
    actions = scenario.load(SAMPLE)
    print(f"Simulating the sample Scrabble game ({os.path.basename(SAMPLE)}) on a virtual clock…")
    with console.status("simulating the sample game on a virtual clock…"):
        n = virtual.simulate(actions, "scrabble", parse("scrabble", []), log, clock="demo-table-1")
    games = report.load_games(log)
    report.print_report(games, console)
    csv_path = os.path.join(args.out_dir, "demo-game.csv")
    plot_path = os.path.join(args.out_dir, "demo-game.png")
    report.write_csv(games, csv_path)
    with console.status("drawing the plot…"):
        report.write_plot(games, plot_path)
    print(f"\n{n} log records in {log}\nCSV table in {csv_path}\nplot in {plot_path}")
    return 0


COMMANDS = {"simulate": cmd_simulate, "device": cmd_device, "log": cmd_log,
            "report": cmd_report, "demo": cmd_demo}


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except HallclockError as exc:
        print(f"hallclock: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("hallclock: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
