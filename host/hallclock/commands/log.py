"""``hallclock log``: the host logger for one or more clocks, with the live view."""
import sys

from ..cliopts import renamed
from ..errors import BadInput, shown

GROUP = "run"  # the director's task (hallclock.cliopts.GROUPS)


def register(sub):
    p = sub.add_parser("log", help="log one or more clocks' events into a file")
    p.add_argument("--port", action="append",
                   help="serial port, or 'auto' for the only ESP32 board (repeatable)")
    p.add_argument("--out", required=True, metavar="LOG",
                   help="the log (JSON Lines; appended to if it is a hallclock log)")
    p.add_argument("--exit-on-end", action="store_true",
                   help="exit once every clock has ended its session and all is logged")
    restore_option(p, default=False)
    p.add_argument("--reset", action="store_true",
                   help="reset each board once when its port is opened (an EN pulse); "
                   "by default opening a port never resets a board (docs/hardware.md)")
    p.add_argument("--plain", action="store_true",
                   help="plain lines instead of the live view (the default when not on a terminal)")
    broker_options(p, "log every clock of the hall through the broker (as 'logger')")
    ship_option(p)
    p.add_argument("--clock", action="append", default=[], metavar="NAME",
                   help="with --broker: a clock --exit-on-end waits for (repeat for every "
                   "clock; default: every clock in --credentials)")
    renamed(p, "--clocks", "--clock NAME (once per clock)",
            "--clocks names the clocks a configuration is written for")
    p.add_argument("--hall-unit", default=None, metavar="NAME",
                   help="with --broker: this clock is the hall unit; its START and GONG "
                   "are relayed to every other clock, as 'hallclock hall' does (docs/hall.md)")
    p.set_defaults(func=cmd_log)


def restore_option(p, default):
    """--restore / --no-restore: a clock that lost power mid-game gets its game
    back (docs/hall.md "When a clock reboots"); the referee's commands
    (``round start``, ``hall``) restore by default, ``log`` only when asked."""
    import argparse
    p.add_argument("--restore", action=argparse.BooleanOptionalAction, default=default,
                   help="after a clock lost power mid-game, send the game back to it: "
                   "move number, whose turn, time left, the round and its play-out "
                   f"(default: {'on; --no-restore to look first' if default else 'off'})")


def broker_options(p, what):
    """--broker HOST:PORT --hall NAME --credentials FILE (the hall network)."""
    p.add_argument("--broker", default=None, metavar="HOST:PORT", help=what)
    p.add_argument("--hall", default=None, metavar="NAME", help="the hall's name (with --broker)")
    p.add_argument("--credentials", default=None, metavar="FILE",
                   help="credentials.json from 'hallclock broker-config' (with --broker)")
    p.add_argument("--tls-ca", default=None, metavar="FILE",
                   help="with --broker on a TLS listener: the hall's CA certificate")


def ship_option(p, hall_options=False):
    """--ship HOST:PORT: a logger on serial ports ships its log to the
    tournament office itself (docs/network.md "Several halls"), with --hall
    and --credentials (added here when the command has no broker options)."""
    p.add_argument("--ship", default=None, metavar="HOST:PORT",
                   help="with serial ports: ship the log to the tournament office as it is "
                   "stored, through the hall's broker at HOST:PORT (broker-config --office), "
                   "with --hall and --credentials (as 'hallclock ship' beside the logger)")
    if hall_options:
        p.add_argument("--hall", default=None, metavar="NAME",
                       help="the hall's name (with --ship)")
        p.add_argument("--credentials", default=None, metavar="FILE",
                       help="the hall's credentials.json, its 'logger' login (with --ship)")
        p.add_argument("--tls-ca", default=None, metavar="FILE",
                       help="with --ship on a TLS listener: the hall's CA certificate")


def ship_to_office(args):
    """--ship: the shipping of the log ``args.out`` to the office
    (hallclock.net.shiploop.Beside: a thread of its own, started with the
    logger's ports), checked before any port is opened; or None
    (``attach_office`` gives it to the logger)."""
    if getattr(args, "ship", None) is None:
        if getattr(args, "broker", None) is None:
            _alone(args, "--ship")
        return None
    from ..net.shiploop import Beside
    address = _hall_login(args, "--ship", args.ship, "the hall's credentials.json, written "
                          "by broker-config --office")
    return Beside(address, args.hall, args.credentials, args.out, tls=args.tls_ca,
                  say=lambda text: print(shown(text), file=sys.stderr, flush=True))


def _alone(args, option):
    """--hall, --credentials or --tls-ca given without ``option``: refused."""
    for opt in ("hall", "credentials", "tls_ca"):
        if getattr(args, opt, None) is not None:
            raise BadInput(f"--{opt.replace('_', '-')} goes with {option} HOST:PORT")


def _hall_login(args, option, value, what):
    """(host, port) of ``option``'s ``value``, with --hall and --credentials
    (``what`` the credentials file is) given and the hall's name checked."""
    from ..net.broker import check_name, parse_broker
    address = parse_broker(value)
    if args.hall is None or args.credentials is None:
        raise BadInput(f"{option} needs --hall NAME and --credentials FILE ({what})")
    check_name("hall name", args.hall)
    return address


def attach_office(logger, office):
    if office is not None:
        logger.office = office.of(logger.writer)


def broker_args(args):
    """(host, port) of --broker with --hall and --credentials checked, or None."""
    if args.broker is not None and getattr(args, "ship", None) is not None:
        raise BadInput("--ship is for a logger on serial ports: a logger on --broker ships "
                       "its log itself when broker-config --office marked its login")
    if args.broker is None:
        if getattr(args, "ship", None) is not None:
            return None  # --hall, --credentials: the office's (ship_to_office)
        _alone(args, "--broker")
        return None
    address = _hall_login(args, "--broker", args.broker,
                          "the credentials.json broker-config wrote")
    if getattr(args, "port", None):
        raise BadInput("give --port or --broker, not both")
    if getattr(args, "reset", False):
        raise BadInput("--reset pulses a board's EN line over its USB port: it goes with "
                       "--port, not --broker")
    return address


def cmd_log(args):
    from ..link.logger import Logger
    from .ports import resolve_port
    if args.reset and args.broker is not None:  # --reset: serial ports only
        raise BadInput("--reset is for serial ports (it pulses a DevKit's EN line); "
                       "a clock on the hall network resets from its own button")
    address = broker_args(args)
    if address is not None:
        from ..net.mqtt import BrokerLogger
        from ..net.broker import check_name
        for name in args.clock:
            check_name("clock name", name)
        clocks = list(dict.fromkeys(args.clock)) or None
        if args.hall_unit is not None:
            return _log_hall_on_broker(args, address, clocks)
        logger = BrokerLogger(address, args.hall, args.credentials, args.out, clocks=clocks,
                              restore=restorer(args), tls=args.tls_ca)
    elif args.hall_unit is not None:
        raise BadInput("--hall-unit goes with --broker (on serial ports: hallclock hall)")
    elif not args.port:
        raise BadInput("give --port PORT (a serial port) or --broker HOST:PORT "
                       "(the hall network)")
    else:
        office = ship_to_office(args)
        logger = Logger([resolve_port(p) for p in args.port], args.out, restore=restorer(args),
                        reset=args.reset)
        attach_office(logger, office)
    logger.open()
    run_live(logger, args.plain, args.exit_on_end)
    print(f"hallclock log: {logger.stats()}", file=sys.stderr)
    from ..net.mqtt import check_stored
    check_stored(logger)  # a full disk: records unstored are an error, never exit 0
    return 0


def run_live(logger, plain, exit_on_end):
    """Run an opened logger (or a viewer) under the live view until it ends
    (``exit_on_end``) or Ctrl-C."""
    from ..views.liveview import LiveView
    try:
        with LiveView(logger, plain=True if plain else None) as view:
            logger.run(exit_on_end=exit_on_end, on_poll=view.poll)
    except KeyboardInterrupt:
        pass


def _log_hall_on_broker(args, address, clocks):
    """``log --broker --hall-unit NAME``: the hall relay (hallclock.hall.relay) on the
    hall network: the hall unit first, the tables after it."""
    from ..net.broker import check_name, clocks_of, load_credentials
    from ..net.mqtt import BrokerLogger
    from ..hall.relay import Relay, run_hall, summary
    check_name("clock name", args.hall_unit)
    names = clocks or clocks_of(load_credentials(args.credentials))
    if args.hall_unit not in names:
        raise BadInput(f"--hall-unit {args.hall_unit}: not a clock of the hall "
                       f"({', '.join(names)})")
    order = [args.hall_unit] + [c for c in names if c != args.hall_unit]
    logger = BrokerLogger(address, args.hall, args.credentials, args.out, clocks=order,
                          restore=restorer(args), tls=args.tls_ca)
    logger.open()
    relay = Relay(logger)
    print(f"logging hall {args.hall} on {args.broker}: {args.hall_unit}'s START and GONG "
          f"relayed to {len(order) - 1} clock(s)", flush=True)
    try:
        run_hall(logger, exit_on_end=args.exit_on_end, relay=relay)
    except KeyboardInterrupt:
        pass
    print(shown(summary(relay), lines=True))
    print(f"hallclock log: {logger.stats()}", file=sys.stderr)
    from ..net.mqtt import check_stored
    check_stored(logger)
    return 0


def restorer(args):
    """``--restore``: what sends a rebooted clock its game back (the model's replay)."""
    if not args.restore:
        return None
    from ..views.model import restore_for
    return restore_for
