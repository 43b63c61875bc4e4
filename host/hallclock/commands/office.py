"""``hallclock office-config``: the tournament office's broker (Mosquitto),
which every hall's broker bridges its clocks' messages to (docs/network.md
"Several halls")."""
import os
import sys

from ..errors import BadInput

GROUP = "prepare"  # the director's task (hallclock.cliopts.GROUPS)


def register(sub):
    p = sub.add_parser("office-config",
                       help="write the tournament office's Mosquitto configuration: a bridge "
                       "login per hall, read-only logins for the office's tools")
    p.add_argument("--halls", required=True, metavar="NAME[,NAME...]",
                   help="the halls' names, comma-separated (as each hall's broker-config --hall)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write")
    p.add_argument("--broker-port", type=int, default=1883, metavar="P",
                   help="the port the halls' bridges connect to (default 1883)")
    p.add_argument("--bind", default=None, metavar="ADDR",
                   help="that listener only on this address, the office's address the halls "
                   "reach (default: every interface; required with --tls-port)")
    p.add_argument("--local-port", type=int, default=None, metavar="P",
                   help="the office's own tools' listener on 127.0.0.1:P (default: the "
                   "broker's port + 1)")
    p.add_argument("--tls-port", type=int, default=None, metavar="P",
                   help="also a TLS listener for the bridges on P, with a CA generated in "
                   "DIR/tls (each hall gives its tls/ca.crt as --office-ca)")
    p.set_defaults(func=cmd_office_config)

    p = sub.add_parser("office", group="run",
                       help="keep the office's copy of every hall's log (DIR/<hall>.jsonl), "
                       "from what each hall's logger ships through the bridges")
    p.add_argument("--broker", required=True, metavar="HOST:PORT",
                   help="the office's broker, its tools' listener (e.g. 127.0.0.1:1884)")
    p.add_argument("--credentials", required=True, metavar="FILE",
                   help="the office's credentials.json (office-config); the 'office' login")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the folder of the copies: DIR/<hall>.jsonl for every hall")
    p.add_argument("--tls-ca", default=None, metavar="FILE",
                   help="with --broker on a TLS listener: its CA certificate")
    p.add_argument("--http-port", type=int, default=None, metavar="P",
                   help="the HTTP port of the office page (every hall's round and tables, "
                   "read-only; default: no page)")
    p.add_argument("--host", default="127.0.0.1", metavar="ADDR",
                   help="with --http-port: the address to listen on (0.0.0.0: spectators "
                   "on other machines too)")
    p.add_argument("--max-s", type=float, default=None, metavar="S",
                   help="stop after S seconds (a trial run; default: until Ctrl-C)")
    p.set_defaults(func=cmd_office)

    p = sub.add_parser("ship", group="run",
                       help="ship a hall's log to the office through the hall's broker "
                       "(a log kept on serial ports, or the rest of one whose logger ended)")
    p.add_argument("--log", required=True, metavar="LOG", help="the hall's log (JSON Lines)")
    p.add_argument("--broker", required=True, metavar="HOST:PORT",
                   help="the hall's broker, the laptop's listener (e.g. 127.0.0.1:1884)")
    p.add_argument("--hall", required=True, metavar="NAME", help="the hall's name")
    p.add_argument("--credentials", required=True, metavar="FILE",
                   help="the hall's credentials.json (broker-config --office); its 'logger' "
                   "login")
    p.add_argument("--tls-ca", default=None, metavar="FILE",
                   help="with --broker on a TLS listener: the hall's CA certificate")
    p.add_argument("--until-shipped", action="store_true",
                   help="exit once the office holds the whole log (default: follow it as it "
                   "grows until Ctrl-C)")
    p.add_argument("--max-s", type=float, default=None, metavar="S",
                   help="give up after S seconds (exit 1 if the office lacks some of the log)")
    p.set_defaults(func=cmd_ship)


def cmd_office(args):
    import time
    from ..net.broker import parse_broker
    from ..net.officecopy import Office
    address = parse_broker(args.broker)
    if args.http_port is not None and not 0 <= args.http_port <= 65535:
        raise BadInput(f"--http-port {args.http_port}: give 1-65535")
    office = Office(address, args.credentials, args.out, tls=args.tls_ca).open()
    page = None
    try:
        if args.http_port is not None:
            from ..hall import officepage
            page = officepage.start(args.out, args.host, args.http_port,
                                    halls=officepage.halls_of(args.credentials))
    except BaseException:
        office.close()
        raise
    where = (f"; the office page on {officepage.url_of(page)}"
             if page is not None else "")
    print(f"office: copying every hall's log into {args.out} (broker {args.broker}){where}; "
          "Ctrl-C stops", flush=True)
    end = None if args.max_s is None else time.monotonic() + args.max_s
    try:
        office.run(stop=None if end is None else (lambda: time.monotonic() > end))
    except KeyboardInterrupt:
        pass  # run() closed the copies: every record taken is on disk
    finally:
        if page is not None:
            officepage.stop(page)
    print(f"hallclock office: {office.stats()}", file=sys.stderr)
    return 0


def cmd_ship(args):
    import time
    from ..errors import HallclockError, shown
    from ..net.broker import check_name, parse_broker
    from ..net.shiploop import ship_file
    address = parse_broker(args.broker)
    check_name("hall name", args.hall)
    if not os.path.isfile(args.log):
        raise BadInput(f"--log {args.log}: no such file (the hall's log, as its logger's --out)")
    end = None if args.max_s is None else time.monotonic() + args.max_s
    behind = ship_file(address, args.hall, args.credentials, args.log, tls=args.tls_ca,
                       until_shipped=args.until_shipped,
                       stop=None if end is None else (lambda: time.monotonic() > end),
                       say=lambda text: print(shown(text), flush=True))
    if behind:
        raise HallclockError(f"the office has not acknowledged the last {behind} bytes of "
                             f"{args.log}: is its link (or 'hallclock office') down? run "
                             "'hallclock ship' again later; nothing is lost")
    print(f"the office holds the whole of {shown(args.log)}", flush=True)
    return 0


def cmd_office_config(args):
    from ..net import broker
    halls = broker.parse_halls(args.halls)
    tls = None
    if args.tls_port is not None:
        from ..net import tls as tlsca
        if args.tls_port == args.broker_port:
            raise BadInput("--tls-port must differ from --broker-port")
        if not args.bind:
            raise BadInput("--tls-port needs --bind ADDR (the office's address the halls "
                           "reach): its certificate names it")
        tls = (args.tls_port,) + tlsca.make_ca(os.path.join(os.path.abspath(args.out), "tls"),
                                               args.bind)
    broker.write_office_config(args.out, halls, port=args.broker_port, bind=args.bind,
                               local_port=args.local_port, tls=tls)
    local, _host = broker.listen_port(os.path.abspath(args.out))
    where = f"{args.bind or 'OFFICE-ADDRESS'}:{args.tls_port or args.broker_port}"
    ca = f" --office-ca {os.path.join(args.out, 'tls', 'ca.crt')}" if tls else ""
    print(f"office: {len(halls)} halls; wrote {os.path.join(args.out, 'mosquitto.conf')}, "
          f"credentials.json and halls/<hall>.json. Next: hallclock broker --dir {args.out}; "
          f"on each hall's laptop: hallclock broker-config --hall NAME --clocks ... --out DIR "
          f"--office {where} --office-credentials halls/NAME.json{ca}; the office's tools "
          f"use --broker 127.0.0.1:{local} with the 'office' login")
    if not args.bind:
        print(f"hallclock office-config: the bridges' listener (port {args.broker_port}) is on "
              "every interface of this machine; give --bind ADDR to keep it off the others",
              file=sys.stderr)
    return 0
