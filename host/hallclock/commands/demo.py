"""``hallclock demo``: the bundled sample game on a virtual clock, and its report."""
import os

from ..cliopts import renamed

GROUP = "try"  # the director's task (hallclock.cliopts.GROUPS)
SAMPLE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "samples", "scrabble_game.txt")


def register(sub):
    p = sub.add_parser("demo", help="simulate the bundled sample game and print its report")
    p.add_argument("--out", default="hallclock-demo", metavar="DIR",
                   help="the folder the demo's log, CSV and plot go to (default: ./hallclock-demo)")
    renamed(p, "--out-dir", "--out", "what a command writes is always --out")
    p.add_argument("--force", action="store_true",
                   help="replace a CSV or plot in the folder that an earlier demo did not make")
    p.set_defaults(func=cmd_demo)


DEMO_CLOCK = "demo-table-1"


def _earlier_demo(log):
    """True if ``log`` is the log an earlier demo wrote (so the demo may make
    its files afresh); BadInput if it is some other file."""
    from ..errors import BadInput
    from ..link.logfile import scan
    if not os.path.lexists(log):
        return False
    try:
        records, skipped = scan(log)
    except OSError as exc:
        raise BadInput(f"{log}: cannot read it ({exc.strerror})") from None
    if skipped or not records or any(r.get("clock") != DEMO_CLOCK for r in records):
        raise BadInput(f"{log}: the file is not an earlier demo's log, and the demo does not "
                       "overwrite it; give another --out")
    return True


def cmd_demo(args):
    from ..views.terminal import console as Console

    from hallclock_fw.settings import parse

    from ..views import report
    from .. import scenario
    from ..vboard import device as virtual
    from ..errors import BadInput
    from ..views.outfiles import check_outputs
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise BadInput(f"--out {args.out}: is a file, not a folder")
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"--out {args.out}: cannot make the folder ({exc.strerror})") \
            from None
    log = os.path.join(args.out, "demo-game.jsonl")
    csv_path = os.path.join(args.out, "demo-game.csv")
    plot_path = os.path.join(args.out, "demo-game.png")
    # an earlier demo's files are made afresh; anything else is not written over
    force = _earlier_demo(log) or args.force
    check_outputs([("--out", csv_path), ("--out", plot_path)], force=force)
    if os.path.lexists(log):
        os.remove(log)  # the earlier demo's own log (checked above)
    console = Console()
    actions = scenario.load(SAMPLE)
    print(f"Simulating the sample Scrabble game ({os.path.basename(SAMPLE)}) on a virtual clock…")
    with console.status("simulating the sample game on a virtual clock…"):
        n = virtual.simulate(actions, "scrabble", parse("scrabble", []), log, clock=DEMO_CLOCK)
    games = report.load_games(log)
    report.print_report(games, console)
    report.write_csv(games, csv_path, force=force)
    with console.status("drawing the plot…"):
        report.write_plot(games, plot_path, force=force)
    print(f"\n{n} log records in {log}\nCSV table in {csv_path}\nplot in {plot_path}")
    return 0
