"""``hallclock console (--log LOG | --broker …)``: the referee's page for the round."""
from ..cliopts import renamed
from ..errors import BadInput

GROUP = "watch"  # the director's task (hallclock.cliopts.GROUPS)


def register(sub):
    p = sub.add_parser("console", help="serve the referee's console: a grid of every table, "
                       "START round and GONG, pause reasons")
    p.add_argument("--log", default=None,
                   help="the round's log (written by 'hallclock round start'; may still grow)")
    p.add_argument("--http-port", type=int, default=8090, metavar="P",
                   help="the page's HTTP port (default 8090)")
    renamed(p, "--port", "--http-port", "--port is always a serial port")
    p.add_argument("--host", default="127.0.0.1", metavar="ADDR",
                   help="address to listen on (0.0.0.0: a tablet on the hall's network too)")
    p.add_argument("--token", metavar="T",
                   help="the actions' token (default: a new random one, printed)")
    from .log import broker_options
    broker_options(p, "the hall from the broker instead of a log (as 'viewer'; START round "
                   "and GONG sent as 'referee')")
    p.add_argument("--referee-log", default=None, metavar="FILE",
                   help="with --broker: where the pause reasons and actions go (JSON Lines)")
    from ..cliopts import pairings_option
    pairings_option(p, "shown on each table's card")
    p.set_defaults(func=cmd_console)


def cmd_console(args):
    from ..hall.webserver import serve, url_of
    from ..hall.referee import BrokerRoundTail, BrokerSignals, make_server
    from .log import broker_args

    pairings = None
    if args.pairings is not None:
        from ..views.pairings import load
        pairings = load(args.pairings)  # a bad file: one line, before anything starts
    address = broker_args(args)
    tail = signals = None
    if address is not None:
        if args.log is not None:
            raise BadInput("give --log or --broker, not both")
        if args.referee_log is None:
            raise BadInput("console --broker: give --referee-log FILE, where the pause "
                           "reasons go (the round's report reads it beside the log)")
        from ..net.mqtt import BrokerLogger
        viewer = BrokerLogger(address, args.hall, args.credentials, None, user="viewer",
                              tls=args.tls_ca)
        viewer.open()
        tail = BrokerRoundTail(viewer, args.referee_log)
        signals = BrokerSignals(address, args.hall, args.credentials, tls=args.tls_ca)
    elif args.log is None:
        raise BadInput("give --log LOG (the round's log) or --broker HOST:PORT --hall NAME "
                       "--credentials FILE --referee-log FILE")
    elif args.referee_log is not None:
        raise BadInput("--referee-log goes with --broker (with --log it is the log's "
                       "name with .referee.jsonl)")
    server = make_server(args.log, args.host, args.http_port, token=args.token, tail=tail,
                         signals=signals, pairings=pairings)
    what = args.log if address is None else f"the hall {args.hall} on {args.broker}"
    print(f"Referee console for {what} on {url_of(server)}\n"
          f"token for START round, GONG and pause reasons: {server.token}\n"
          f"(the grid needs no token; actions go to {server.referee.path}). Ctrl-C stops.",
          flush=True)
    if getattr(server, "note", None):
        print(server.note, flush=True)
    return serve(server, close=(server.referee.close,))
