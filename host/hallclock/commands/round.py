"""``hallclock round start``: the round's START for every clock, with the round
number, and the hall logged while it runs (late clocks learn the round's start
time); and the round's report (``hallclock report --round N LOG…``)."""
import sys

from ..errors import BadInput
from ..errors import shown as escaped


def register(sub):
    p = sub.add_parser("round", group="run",
                       help="run a round: START with the round number for every clock")
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
    s.add_argument("--ports-file", metavar="FILE",
                   help="the clocks' ports, one a line (as many --port)")
    s.add_argument("--out", metavar="LOG", help="the round's log (JSON Lines); needed with --port")
    s.add_argument("--wait", action="store_true",
                   help="do not start at once: wait for START round in the console")
    s.add_argument("--exit-on-end", action="store_true",
                   help="exit once every clock's session has ended")
    from .log import broker_options
    broker_options(s, "the hall network instead of serial ports (this command is then the "
                   "hall's logger: run no 'log --broker' beside it)")
    from .log import ship_option
    ship_option(s)
    from .log import restore_option
    restore_option(s, default=True)
    s.add_argument("--max-s", type=float, default=None, metavar="S",
                   help="stop after S seconds at most (a trial run)")
    from ..cliopts import pairings_option
    pairings_option(s, "shown by each table this command names")
    s.set_defaults(func=cmd_round_start)

    v = sub.add_parser(
        "virtual-clocks", group="try", help="table clocks as virtual devices on ptys, for a round "
        "without hardware (configure, round start, console)",
        description="Starts N virtual table clocks (the real firmware), each on its own "
        "pty, against real time x --speed, and writes their port paths to --ports-file "
        "(one a line) for 'configure' and 'round start --ports-file'. The clocks stop when "
        "their scripts have ended and a host has every event (or after 30 s without one).")
    from .simulate import hall_options
    hall_options(v, mode_note=" (until configure sends others)")
    v.add_argument("--script", action="append", required=True, metavar="FILE",
                   help="the tables' scenario: once for all, or once per table")
    v.add_argument("--ports-file", required=True, metavar="FILE",
                   help="where the clocks' port paths go")
    v.add_argument("--force", action="store_true",
                   help="replace an existing --ports-file")
    v.add_argument("--detach", action="store_true",
                   help="run in the background: return once the ports are there")
    v.set_defaults(func=cmd_virtual_clocks)


def check_round(n):
    if n is None or not 1 <= n <= 999:
        raise BadInput(f"--round {n}: give the round number, 1 to 999")
    return n


def cmd_round_start(args):
    from ..link.logger import Logger
    from ..hall.round import RoundControl, run_round
    from .ports import resolve_port
    from .log import broker_args, restorer
    check_round(args.number)
    args.port = args.port + read_ports_file(args.ports_file)
    address = broker_args(args)
    if address is None and not args.port:
        raise BadInput("round start: give the clocks' ports (--port P, once per clock) or "
                       "--broker HOST:PORT --hall NAME --credentials FILE")
    if not args.out:
        raise BadInput("round start: give --out LOG, the round's log")
    pairings = None
    if args.pairings is not None:
        from ..views.pairings import load
        pairings = load(args.pairings)  # a bad file: one line, before any clock is told
    if address is not None:
        from ..net.mqtt import BrokerLogger
        logger = BrokerLogger(address, args.hall, args.credentials, args.out, tls=args.tls_ca,
                              restore=restorer(args))
    else:
        from .log import attach_office, ship_to_office
        office = ship_to_office(args)
        ports = [resolve_port(p) for p in args.port]
        if len(set(ports)) != len(ports):
            raise BadInput("a port is given twice: every clock needs its own port")
        logger = Logger(ports, args.out, restore=restorer(args))
        attach_office(logger, office)
    logger.open()
    control = RoundControl(logger, args.number, log_path=args.out, pairings=pairings)
    control.wait_heard(logger)
    if pairings is not None:
        print(escaped(control.pairing_note()), flush=True)
    if not args.wait:
        control.start()
    elif control.started_at is None:  # (a round its log shows started goes on: _resume)
        print(f"round {args.number}: waiting for START round in the console", flush=True)
    shown = [0]

    def show():
        while shown[0] < len(control.log):
            print(escaped(control.log[shown[0]]), flush=True)  # names from the clocks
            shown[0] += 1

    try:
        run_round(logger, control, exit_on_end=args.exit_on_end, on_poll=show,
                  max_s=args.max_s)
    except KeyboardInterrupt:
        pass
    show()
    missing = control.missing()
    from ..views.words import plural
    print(escaped(f"round {args.number}: {plural(len(control.sessions), 'clock session')} heard, "
          f"{control.late_sent} told late, {plural(control.gongs_heard, 'gong')} given by the "
          f"clocks, {plural(control.gongs, 'GONG')} sent by the referee"
          + (f"; never took the round: {', '.join(map(control.table, missing))}"
             if missing else "")))
    print(f"hallclock round: {logger.stats()}", file=sys.stderr)
    return 0 if control.started_at is not None else 1


def read_ports_file(path):
    """The port paths of a --ports-file (one a line, # comments), or []."""
    if path is None:
        return []
    try:
        with open(path, encoding="utf-8") as f:
            lines = [ln.split("#", 1)[0].strip() for ln in f]
    except OSError as exc:
        raise BadInput(f"--ports-file {path}: cannot read it ({exc.strerror})") from None
    ports = [ln for ln in lines if ln]
    if not ports:
        raise BadInput(f"--ports-file {path}: no port in it (one port path a line)")
    return ports


def cmd_virtual_clocks(args):
    import os
    import time

    from hallclock_fw.settings import MODES

    from .. import scenario
    from ..vboard import device as virtual
    from ..hall.round import start_virtual_clocks
    if args.mode not in MODES:
        raise BadInput(f"unknown mode {args.mode!r} (modes: {', '.join(MODES)})")
    values = virtual.check_settings(args.mode, args.set)
    if not 1 <= args.tables <= 64:
        raise BadInput(f"--tables {args.tables}: give 1 to 64 clocks")
    from .simulate import check_speed
    check_speed(args.speed)
    if len(args.script) not in (1, args.tables):
        raise BadInput(f"--script given {len(args.script)} times: once for every table, "
                       f"or {args.tables} times")
    loaded = [scenario.load(p) for p in args.script]
    scripts = [loaded[i if len(loaded) > 1 else 0] for i in range(args.tables)]
    from ..views.outfiles import check_outputs, write_file
    check_outputs([("--ports-file", args.ports_file)], inputs=args.script, force=args.force)
    ready = None
    if args.detach:
        r, w = os.pipe()
        if os.fork():
            os.close(w)
            ok = os.read(r, 1) == b"1"  # the child has its ports
            os.close(r)
            if not ok:
                raise BadInput("the virtual clocks did not start")
            print(f"{args.tables} virtual clocks in the background; ports in {args.ports_file}")
            return 0
        os.close(r)
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        ready = w
    try:
        threads, fds, paths = start_virtual_clocks(args.mode, values, scripts,
                                                   speed=args.speed)
        write_file(args.ports_file, lambda f: f.write("".join(p + "\n" for p in paths)),
                   force=args.force, what="ports file")
        if ready is not None:
            os.write(ready, b"1")
            os.close(ready)
        else:
            print(f"{args.tables} virtual clocks; ports in {args.ports_file}: "
                  + " ".join(paths) + " (Ctrl-C stops)", flush=True)
        try:
            while any(t.is_alive() for t in threads):
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        for t in threads:
            t.halt = True
        for fd in fds:
            os.close(fd)
    finally:
        if ready is not None:
            os._exit(0)
    return 0


def cmd_report_round(args):
    from ..views import roundreport
    if args.round is None:
        raise BadInput("several logs: give --round N (the round's report across the logs)")
    check_round(args.round)
    logs = [args.log] + list(args.more_logs)
    from ..views.outfiles import check_outputs  # nothing written over (docs/contract.md)
    check_outputs([(o, p) for o, p in (("--csv", args.csv), ("--plot", args.plot)) if p],
                  inputs=logs, force=getattr(args, "force", False))
    pairings = getattr(args, "pairings", None)
    if pairings is not None:
        from ..views.pairings import load
        pairings = load(pairings)
    tables = roundreport.load_round(args.round, logs, pairings)
    roundreport.print_round(args.round, tables)
    if args.csv:
        roundreport.write_csv(args.round, tables, args.csv, force=getattr(args, "force", False))
        print(f"CSV written to {args.csv}")
    if args.plot:
        roundreport.write_plot(args.round, tables, args.plot,
                               force=getattr(args, "force", False))
        print(f"plot written to {args.plot}")
    return 0

