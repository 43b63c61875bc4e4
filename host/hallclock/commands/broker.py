"""``hallclock broker-config`` and ``hallclock broker``: the hall's MQTT broker
(Mosquitto) for clocks on Wi-Fi (docs/network.md, docs/hall.md)."""
import os
import sys

from ..cliopts import renamed
from ..errors import BadInput, HallclockError


def register(sub):
    p = sub.add_parser("broker-config", group="prepare",
                       help="write a Mosquitto configuration for one hall "
                       "(credentials for every clock and host, each clock's hallclock.cfg)")
    p.add_argument("--hall", default=None, metavar="NAME",
                   help="the hall's name (part of every topic; required but with --rotate)")
    p.add_argument("--clocks", default=None, metavar="NAME[,NAME...]",
                   help="the clocks of the hall, comma-separated (required but with --rotate)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write")
    p.add_argument("--rotate", action="store_true",
                   help="a new hall key for the hall configured in --out (each tournament "
                   "day): credentials.json and clocks/*.cfg; then put the cfg files on the "
                   "clocks with 'hallclock deploy --cfg-dir DIR/clocks'")
    p.add_argument("--broker-port", type=int, default=1883, metavar="P",
                   help="the broker's own port (default 1883)")
    renamed(p, "--port", "--broker-port", "--port is always a serial port")
    p.add_argument("--bind", default=None, metavar="ADDR",
                   help="the hall's listeners only on this address, the laptop's address on "
                   "the hall network (default: every interface; required with --tls-port)")
    p.add_argument("--local-port", type=int, default=None, metavar="P",
                   help="the laptop's own tools' listener on 127.0.0.1:P, which the hall "
                   "cannot reach (default: the broker's port + 1)")
    p.add_argument("--address", default=None, metavar="HOST",
                   help="the laptop's address on the hall network, written into the "
                   "clocks' cfg files (default: --bind, or a placeholder to fill in)")
    p.add_argument("--tls-port", type=int, default=None, metavar="P",
                   help="also a TLS listener on P, with a CA generated in DIR/tls")
    p.add_argument("--tls-clocks", default=None, metavar="NAME[,NAME...]|all",
                   help="with --tls-port: these clocks speak TLS to the broker, pinning the "
                   "hall's CA (their cfg names the TLS port and clocks/hallclock.ca, which "
                   "deploy puts on the board); only where 'hallclock doctor' says TLS fits")
    p.add_argument("--office", default=None, metavar="HOST:PORT",
                   help="also bridge the hall's log (shipped by its logger) to the tournament "
                   "office's broker (hallclock office-config) at HOST:PORT")
    p.add_argument("--office-credentials", default=None, metavar="FILE",
                   help="with --office: the hall's login at the office, halls/<hall>.json "
                   "from the office's folder")
    p.add_argument("--office-ca", default=None, metavar="FILE",
                   help="with --office on the office's TLS port: the office's CA "
                   "certificate (its tls/ca.crt); the bridge then speaks TLS")
    p.set_defaults(func=cmd_broker_config)

    p = sub.add_parser("broker", group="run",
                       help="run Mosquitto on a broker-config folder (foreground)")
    p.add_argument("--dir", required=True, metavar="DIR", help="the folder broker-config wrote")
    p.set_defaults(func=cmd_broker)

    p = sub.add_parser("referee", group="run",
                       help="the referee's START / GONG / PAUSE to every clock "
                       "of the hall through the broker (no logger needed)")
    p.add_argument("button", choices=("START", "GONG", "PAUSE"),
                   help="the referee's button to press on every clock")
    p.add_argument("--long", action="store_true", help="a long press")
    _hall_options(p, "referee")
    p.set_defaults(func=cmd_referee)

    p = sub.add_parser("view", group="watch",
                       help="the live view of the hall from the broker, as 'viewer' "
                       "(a second laptop: nothing is written or sent)")
    _hall_options(p, "viewer")
    p.add_argument("--plain", action="store_true", help="plain lines instead of the table")
    p.add_argument("--exit-on-end", action="store_true",
                   help="exit once every clock of the hall has ended its session")
    p.set_defaults(func=cmd_view)


def _hall_options(p, user):
    p.add_argument("--broker", required=True, metavar="HOST:PORT",
                   help="the hall's broker (hallclock broker)")
    p.add_argument("--hall", required=True, metavar="NAME",
                   help="the hall's name (part of every topic)")
    p.add_argument("--credentials", required=True, metavar="FILE",
                   help=f"credentials.json (its '{user}' entry is used)")
    p.add_argument("--tls-ca", default=None, metavar="FILE",
                   help="with a TLS listener: the hall's CA certificate")


def _tls_clocks(args, clocks):
    """The clocks of --tls-clocks (a list of --clocks, or all), checked."""
    if args.tls_clocks is None:
        return []
    if args.tls_port is None:
        raise BadInput("--tls-clocks needs --tls-port P (the TLS listener the clocks dial)")
    if args.address and args.bind and args.address != args.bind:
        raise BadInput(f"--tls-clocks with --address {args.address}: the broker's certificate "
                       f"names --bind {args.bind}, and a TLS clock refuses a broker its "
                       "certificate does not name; leave out --address")
    if args.tls_clocks.strip() == "all":
        return list(clocks)
    from ..net import broker
    picked = broker.parse_clocks(args.tls_clocks)
    unknown = [c for c in picked if c not in clocks]
    if unknown:
        raise BadInput(f"--tls-clocks {', '.join(unknown)}: not among --clocks; give clocks "
                       "of this hall (or all)")
    return picked


def cmd_broker_config(args):
    from ..net import broker
    if args.rotate:
        if args.hall or args.clocks or args.tls_port is not None or args.office is not None \
                or args.tls_clocks is not None \
                or args.office_credentials is not None or args.office_ca is not None:
            raise BadInput("--rotate changes the hall key of the configuration in --out "
                           "only: leave out --hall, --clocks, --tls-port and --office…")
        clocks = broker.rotate_hall_key(args.out)
        print(f"a new hall key in {os.path.join(args.out, 'credentials.json')} and "
              f"{len(clocks)} clocks' cfg files; the referee uses it at once. Next: "
              f"hallclock deploy --cfg-dir {os.path.join(args.out, 'clocks')} (every "
              "clock refuses the referee's signals until it has its new cfg)")
        return 0
    if args.hall is None or args.clocks is None:
        raise BadInput("broker-config needs --hall NAME and --clocks NAME[,NAME...] "
                       "(or --rotate, for a configuration already in --out)")
    clocks = broker.parse_clocks(args.clocks)
    _tls_clocks(args, clocks)  # refused before anything is written
    office = _office_args(args, broker)
    tls = None
    if args.tls_port is not None:
        from ..net import tls as tlsca
        if args.tls_port == args.broker_port:
            raise BadInput("--tls-port must differ from --broker-port")
        if not args.bind:
            raise BadInput("--tls-port needs --bind ADDR (the laptop's address on the hall "
                           "network): the plaintext listener would otherwise be open on "
                           "every interface, beside the TLS one")
        tls = (args.tls_port,) + tlsca.make_ca(os.path.join(os.path.abspath(args.out), "tls"),
                                               args.bind or args.address or "localhost")
    tls_clocks = _tls_clocks(args, clocks)
    broker.write_config(args.out, args.hall, clocks, port=args.broker_port, bind=args.bind,
                        broker_host=args.address, tls=tls, local_port=args.local_port,
                        tls_clocks=tls_clocks)
    if office is not None:
        broker.add_bridge(args.out, args.hall, *office)
    local, _host = broker.listen_port(os.path.abspath(args.out))
    conf = os.path.join(args.out, "mosquitto.conf")
    print(f"hall {args.hall}: {len(clocks)} clocks; wrote {conf}, "
          f"credentials.json, viewer.json and clocks/*.cfg"
          + (f" ({len(tls_clocks)} on TLS: {', '.join(tls_clocks)}, with clocks/"
             f"{broker.CLOCK_CA}; TLS fits the GC heap of a duplicate clock only: "
             "docs/network.md \"TLS on the clock\")" if tls_clocks else "")
          + f". Next: hallclock broker --dir "
          f"{args.out}; this laptop's tools use --broker 127.0.0.1:{local}")
    if office is not None:
        print(f"the hall's broker bridges the hall's log (hallclock/{args.hall}/office/log, "
              f"shipped by its logger) to the office at {args.office}"
              + (" over TLS" if args.office_ca else ""))
    if not args.bind:
        print(f"hallclock broker-config: the hall listener (port {args.broker_port}) is on every "
              "interface of this laptop; give --bind ADDR (its address on the hall network) "
              "to keep it off the others", file=sys.stderr)
    return 0


def _office_args(args, broker):
    """(office address, login, CA file or None) of --office, checked, or None."""
    if args.office is None:
        if args.office_credentials is not None or args.office_ca is not None:
            raise BadInput("--office-credentials and --office-ca go with --office HOST:PORT")
        return None
    if args.office_credentials is None:
        raise BadInput("--office needs --office-credentials FILE (halls/<hall>.json from "
                       "the office's folder, which 'hallclock office-config' wrote)")
    address = broker.parse_broker(args.office)
    login = broker.load_bridge_login(args.office_credentials, args.hall)
    if args.office_ca is not None and not os.path.isfile(args.office_ca):
        raise BadInput(f"--office-ca {args.office_ca}: no such file (the office's "
                       "tls/ca.crt, copied to this laptop)")
    return address, login, args.office_ca


def cmd_broker(args):
    from ..net import broker
    conf = broker.check_dir(args.dir)
    problem = broker.reachable_by_broker(args.dir)
    if problem is not None:
        raise BadInput(problem)
    exe = broker.mosquitto_binary()
    port, host = broker.listen_port(args.dir)
    hall = ", ".join(f"{h}:{p}" for p, h in broker.listeners(args.dir)[1:])
    print(f"hallclock broker: mosquitto on 127.0.0.1:{port} for this laptop's tools"
          + (f" and {hall} for the hall" if hall else "") + f" ({conf}); Ctrl-C stops it",
          file=sys.stderr, flush=True)
    _files_for_broker()
    try:  # mosquitto itself in the foreground: its signals and exit status are ours
        os.execv(exe, [exe, "-c", os.path.abspath(conf)])
    except OSError as exc:
        raise HallclockError(f"cannot run mosquitto: {exc}") from None


BROKER_FILES = 4096  # the hall's and the laptop's connection limits stay well under it


def _files_for_broker():
    """A laptop's shell often gives 1 024 open files: raise them for Mosquitto
    (it inherits them) so every listener's limit fits, a big hall's too."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = BROKER_FILES if hard == resource.RLIM_INFINITY else min(BROKER_FILES, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass


def cmd_referee(args):
    from hallclock_fw.events import BUTTON_NAMES

    from ..net.broker import check_name, parse_broker
    from ..net.mqtt import send_signal
    address = parse_broker(args.broker)
    check_name("hall name", args.hall)
    send_signal(address, args.hall, args.credentials, BUTTON_NAMES.index(args.button),
                long=args.long, tls=args.tls_ca)
    print(f"{args.button} sent to every clock of hall {args.hall}")
    return 0


def cmd_view(args):
    from ..net.broker import check_name, parse_broker
    from ..net.mqtt import BrokerLogger
    from .log import run_live
    address = parse_broker(args.broker)
    check_name("hall name", args.hall)
    viewer = BrokerLogger(address, args.hall, args.credentials, None, user="viewer",
                          tls=args.tls_ca)
    viewer.open()
    run_live(viewer, args.plain, args.exit_on_end)
    print(f"hallclock view: {viewer.writer.count} records seen", file=sys.stderr)
    return 0
