"""``hallclock hall-display --log LOG``: the hall's projector page."""
from ..cliopts import pairings_option, renamed

GROUP = "watch"  # the director's task (hallclock.cliopts.GROUPS)


def cmd_hall_display(args):
    from ..hall.display import make_server
    from ..hall.webserver import serve, url_of

    pairings = None
    if args.pairings is not None:
        from ..views.pairings import load
        pairings = load(args.pairings)  # a bad file: one line, before anything starts
    source = _broker_source(args)  # the hall network, as 'viewer' (docs/network.md)
    server = make_server(args.log, args.host, args.http_port, args.clock, source=source,
                         tables=args.tables, pairings=pairings)
    log = args.log if source is None else source.path
    what = f"clock {args.clock} of {log}" if args.clock else log
    print(f"Hall display for {what} on {url_of(server)} — open it in a browser on the "
          "projector, full screen (F11). Ctrl-C stops.", flush=True)
    if server.note:
        print(server.note, flush=True)
    return serve(server)


def register(sub):
    p = sub.add_parser("hall-display",
                       help="serve a projector page: the round time, the hall countdown "
                       "or one clock, live")
    p.add_argument("--log", default=None,
                   help="the game log to show (may still be growing, or not exist yet)")
    p.add_argument("--http-port", type=int, default=8080, metavar="P",
                   help="the page's HTTP port (default 8080)")
    renamed(p, "--port", "--http-port", "--port is always a serial port")
    p.add_argument("--host", default="127.0.0.1", metavar="ADDR",
                   help="address to listen on (0.0.0.0: other machines on the LAN too)")
    p.add_argument("--clock", metavar="NAME",
                   help="show one clock of the log (default: the whole hall -- "
                   "the round, or the hall countdown)")
    p.add_argument("--tables", action="store_true",
                   help="also list every table under the round's time (all on one screen "
                   "up to 40 tables; more turn pages by themselves)")
    pairings_option(p, "shown by each table's times (--tables) and with --clock's")
    from .log import broker_options
    broker_options(p, "show the hall from the broker instead of a log (as 'viewer')")
    p.set_defaults(func=cmd_hall_display)


def _broker_source(args):
    from ..errors import BadInput
    from .log import broker_args
    address = broker_args(args)
    if address is None:
        if args.log is None:
            raise BadInput("give --log LOG, or --broker HOST:PORT --hall NAME --credentials F")
        return None
    if args.log is not None:
        raise BadInput("give --log or --broker, not both")
    from ..net.mqtt import BrokerLogger
    from ..hall.display import BrokerTail
    viewer = BrokerLogger(address, args.hall, args.credentials, None, user="viewer",
                          tls=args.tls_ca)
    viewer.open()
    return BrokerTail(viewer, args.clock)
