"""``hallclock round start``: the round's START for every clock, with the round
number, and the hall logged while it runs (late clocks learn the round's start
time); and the round's report (``hallclock report --round N LOG…``)."""
import argparse
import sys

from ..errors import BadInput


def register(sub):
    p = sub.add_parser("round", help="run a round: START with the round number for every clock")
    rsub = p.add_subparsers(dest="round_command", required=True, metavar="start")
    s = rsub.add_parser(
        "start", help="give every clock START and the round number, and log the round",
        description="Gives every clock START (each gives its start gong and counts its "
        "basic time, ČAS 4.1, 6.1) and the round number: from then on every record of that "
        "game carries 'round'. It goes on logging every clock into --out; a clock that "
        "joins later (rebooted, plugged in late) is told when the round started and gives "
        "its gongs at the hall's times. Ctrl-C stops (or --exit-on-end).")
    s.add_argument("--round", dest="number", type=int, required=True, metavar="N",
                   help="the round number (1 or more)")
    s.add_argument("--port", action="append", default=[], metavar="PORT",
                   help="serial port of a clock (repeat for every clock; 'auto' for the only board)")
    s.add_argument("--out", metavar="LOG", help="the round's log (JSON Lines); needed with --port")
    s.add_argument("--wait", action="store_true",
                   help="do not start at once: wait for START round in the console")
    s.add_argument("--exit-on-end", action="store_true",
                   help="exit once every clock's session has ended")
    s.add_argument("--max-s", type=float, default=None, help=argparse.SUPPRESS)
    s.set_defaults(func=cmd_round_start)


def check_round(n):
    if n is None or not 1 <= n <= 999:
        raise BadInput(f"--round {n}: give the round number, 1 to 999")
    return n


def cmd_round_start(args):
    from ..logger import Logger
    from ..roundctl import RoundControl, run_round
    from .ports import resolve_port
    check_round(args.number)
    if not args.port:
        raise BadInput("round start: give the clocks' ports (--port P, once per clock)")
    if not args.out:
        raise BadInput("round start --port: give --out LOG, the round's log")
    ports = [resolve_port(p) for p in args.port]
    if len(set(ports)) != len(ports):
        raise BadInput("a port is given twice: every clock needs its own port")
    logger = Logger(ports, args.out)
    logger.open()
    control = RoundControl(logger, args.number, log_path=args.out)
    if not args.wait:
        control.start()
    else:
        print(f"round {args.number}: waiting for START round in the console", flush=True)
    shown = [0]

    def show():
        while shown[0] < len(control.log):
            print(control.log[shown[0]], flush=True)
            shown[0] += 1

    try:
        run_round(logger, control, exit_on_end=args.exit_on_end, on_poll=show,
                  max_s=args.max_s)
    except KeyboardInterrupt:
        pass
    show()
    missing = control.missing()
    print(f"round {args.number}: {len(control.sessions)} clock session(s) heard, "
          f"{control.late_sent} told late, {control.gongs} gong(s)"
          + (f"; never took the round: {', '.join(missing)}" if missing else ""))
    print(f"hallclock round: {logger.stats()}", file=sys.stderr)
    return 0 if control.started_at is not None else 1


def cmd_report_round(args):
    from .. import roundreport
    if args.round is None:
        raise BadInput("several logs: give --round N (the round's report across the logs)")
    check_round(args.round)
    logs = [args.log] + list(args.more_logs)
    tables = roundreport.load_round(args.round, logs)
    roundreport.print_round(args.round, tables)
    if args.csv:
        roundreport.write_csv(args.round, tables, args.csv)
        print(f"CSV written to {args.csv}")
    if args.plot:
        roundreport.write_plot(args.round, tables, args.plot)
        print(f"plot written to {args.plot}")
    return 0

