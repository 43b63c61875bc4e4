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
