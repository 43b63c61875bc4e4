"""``hallclock log``: the host logger for one or more clocks, with the live view."""
import sys

from ..errors import BadInput


def register(sub):
    p = sub.add_parser("log", help="log one or more clocks' events into a file")
    p.add_argument("--port", action="append",
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
    broker_options(p, "log every clock of the hall through the broker (as 'logger')")
    p.add_argument("--clocks", default=None, metavar="NAME[,NAME...]",
                   help="with --broker: the clocks --exit-on-end waits for (default: "
                   "every clock in --credentials)")
    p.set_defaults(func=cmd_log)


def broker_options(p, what):
    """--broker HOST:PORT --hall NAME --credentials FILE (the hall network)."""
    p.add_argument("--broker", default=None, metavar="HOST:PORT", help=what)
    p.add_argument("--hall", default=None, help="the hall's name (with --broker)")
    p.add_argument("--credentials", default=None, metavar="FILE",
                   help="credentials.json from 'hallclock broker-config' (with --broker)")
    p.add_argument("--tls-ca", default=None, metavar="FILE",
                   help="with --broker on a TLS listener: the hall's CA certificate")


def broker_args(args):
    """(host, port) of --broker with --hall and --credentials checked, or None."""
    if args.broker is None:
        for opt in ("hall", "credentials", "tls_ca"):
            if getattr(args, opt, None) is not None:
                raise BadInput(f"--{opt.replace('_', '-')} goes with --broker HOST:PORT")
        return None
    from ..broker import check_name, parse_broker
    address = parse_broker(args.broker)
    if args.hall is None or args.credentials is None:
        raise BadInput("--broker needs --hall NAME and --credentials FILE "
                       "(the credentials.json broker-config wrote)")
    check_name("hall name", args.hall)
    if getattr(args, "port", None):
        raise BadInput("give --port or --broker, not both")
    return address


def cmd_log(args):
    from ..liveview import LiveView
    from ..logger import Logger
    from .ports import resolve_port
    if args.reset and args.broker is not None:  # --reset: serial ports only
        raise BadInput("--reset is for serial ports (it pulses a DevKit's EN line); "
                       "a clock on the hall network resets from its own button")
    address = broker_args(args)
    if address is not None:
        from ..mqtthost import BrokerLogger
        from ..broker import parse_clocks
        clocks = parse_clocks(args.clocks) if args.clocks else None
        logger = BrokerLogger(address, args.hall, args.credentials, args.out, clocks=clocks,
                              restore=args.restore, tls=args.tls_ca)
    elif not args.port:
        raise BadInput("give --port PORT (a serial port) or --broker HOST:PORT "
                       "(the hall network)")
    else:
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
