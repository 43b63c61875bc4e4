"""``hallclock console --log LOG``: the referee's page for the round."""


def register(sub):
    p = sub.add_parser("console", help="serve the referee's console: a grid of every table, "
                       "START round and GONG, pause reasons")
    p.add_argument("--log", required=True,
                   help="the round's log (written by 'hallclock round start'; may still grow)")
    p.add_argument("--port", type=int, default=8090, help="HTTP port (default 8090)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (0.0.0.0: a tablet on the hall's network too)")
    p.add_argument("--token", help="the actions' token (default: a new random one, printed)")
    p.set_defaults(func=cmd_console)


def cmd_console(args):
    from ..projector import url_of
    from ..refconsole import make_server

    server = make_server(args.log, args.host, args.port, token=args.token)
    print(f"Referee console for {args.log} on {url_of(server)}\n"
          f"token for START round, GONG and pause reasons: {server.token}\n"
          f"(the grid needs no token; actions go to {server.referee.path}). Ctrl-C stops.",
          flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        server.referee.close()
    return 0
