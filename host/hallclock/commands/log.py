"""``hallclock log``: the host logger for one or more clocks, with the live view."""
import sys


def register(sub):
    p = sub.add_parser("log", help="log one or more clocks' events into a file")
    p.add_argument("--port", required=True, action="append",
                   help="serial port, or 'auto' for the only ESP32 board (repeatable)")
    p.add_argument("--out", required=True)
    p.add_argument("--exit-on-end", action="store_true")
    p.add_argument("--restore", action="store_true",
                   help="after a clock lost power mid-game, send the game back to it")
    p.add_argument("--reset", action="store_true",
                   help="reset each board once when its port is opened (an EN pulse); "
                   "by default opening a port never resets a board (docs/hardware.md)")
    p.add_argument("--plain", action="store_true",
                   help="plain lines instead of the live view (the default when not on a terminal)")
    p.set_defaults(func=cmd_log)


def cmd_log(args):
    from ..liveview import LiveView
    from ..logger import Logger
    from .ports import resolve_port
    logger = Logger([resolve_port(p) for p in args.port], args.out, restore=args.restore,
                    reset=args.reset)
    logger.open()
    try:
        with LiveView(logger, plain=True if args.plain else None) as view:
            logger.run(exit_on_end=args.exit_on_end, on_poll=view.poll)
    except KeyboardInterrupt:
        pass
    print(f"hallclock log: {logger.stats()}", file=sys.stderr)
    return 0
