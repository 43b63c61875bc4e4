"""``hallclock rehearse``: a tournament day on virtual clocks through the real
host, every record and view checked against the day's plan (contract 1.3;
docs/hall.md "Rehearse the day")."""
import os

from ..errors import BadInput

GROUP = "try"  # the director's task (hallclock.cliopts.GROUPS)


def register(sub):
    p = sub.add_parser(
        "rehearse", help="a tournament day on virtual clocks through the real host: every "
        "record and view checked against the day's plan (a laptop's and a referee's trial)",
        description="Plays --rounds rounds on --tables virtual table clocks (the real "
        "firmware) through the real programs (configure, round start, the console's "
        "actions, report), with the faults of a hall, and checks the log, the report and "
        "CSV and every view (live view, console, projector) against the plan: the clock's "
        "own code gives the expected digits. Each round's log, report and CSV go to --out; "
        "one verdict line a table and a round; exit 0 only if every check held.")
    from .simulate import hall_options
    hall_options(p)
    p.set_defaults(tables=12, speed=60.0)
    p.add_argument("--rounds", type=int, default=1, metavar="R",
                   help="how many rounds (default 1)")
    p.add_argument("--transport", choices=("serial", "mqtt"), default=None,
                   help="serial: a pty per clock (default); mqtt: the hall's Wi-Fi path, every "
                   "clock and host program through a Mosquitto the rehearsal starts")
    p.add_argument("--faults", default=None, metavar="LIST|none",
                   help="the faults to play, comma-separated (default: reboot,unplug,logger,late; "
                   "on mqtt reboot,unplug,logger,broker,late,viewer; 'none' for a day without "
                   "faults)")
    p.add_argument("--plan", metavar="FILE",
                   help="play this plan (a DIR/plan.json of an earlier rehearsal) instead of "
                   "making one")
    p.add_argument("--seed", type=int, default=1, metavar="N",
                   help="the plan's random seed (default 1): the same seed, the same day")
    p.add_argument("--pairings", metavar="FILE.csv",
                   help="the players' names (the pairing program's CSV) for the reports")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the folder for plan.json and each round's log, report and CSV")
    p.set_defaults(func=cmd_rehearse)


def cmd_rehearse(args):
    from hallclock_fw.settings import MODES

    from ..hall import rehearsal
    from ..vboard import device as virtual
    from .simulate import check_speed
    if args.mode not in MODES:
        raise BadInput(f"unknown mode {args.mode!r} (modes: {', '.join(MODES)})")
    check_speed(args.speed)
    if not 1 <= args.tables <= 64:
        raise BadInput(f"--tables {args.tables}: give 1 to 64 clocks")
    if not 1 <= args.rounds <= 20:
        raise BadInput(f"--rounds {args.rounds}: give 1 to 20 rounds")
    transport = args.transport or "serial"
    if args.plan:
        plan = rehearsal.load_plan(args.plan)
        planned = plan.get("transport", "serial")
        if args.transport not in (None, planned):
            raise BadInput(f"--plan {args.plan} was made for --transport {planned}: give that "
                           "(or make a new plan without --plan)")
        transport = planned
    faults = rehearsal.parse_faults(args.faults, transport)
    if transport == "mqtt":
        from ..net.broker import mosquitto_binary
        mosquitto_binary()  # no Mosquitto: said in one line before the day
    if args.pairings:
        from ..views.pairings import load
        load(args.pairings)  # a bad file is refused before the day
    if not args.plan:
        values = virtual.check_settings(args.mode, args.set)
        plan = rehearsal.make_plan(args.tables, args.rounds, args.mode, values, args.speed,
                                   faults, seed=args.seed, transport=transport)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"--out {args.out}: cannot make the folder ({exc.strerror})") from None
    plan_path = os.path.join(args.out, "plan.json")
    if not args.plan or os.path.abspath(args.plan) != os.path.abspath(plan_path):
        rehearsal.save_plan(plan, plan_path)
    day = rehearsal.Day(plan, args.out, pairings=args.pairings,
                        say=lambda s: print(s, flush=True), transport=transport)
    day.run()
    for note in day.notes:
        print("note: " + note, flush=True)
    print(day.summary(), flush=True)
    if day.failures:
        where, check, text = day.failures[0]
        raise rehearsal.RehearsalError(
            f"rehearse: {len(day.failures)} checks failed; the first: {where}: {check}: {text}")
    return 0

