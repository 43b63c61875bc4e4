"""``hallclock report``: the moves of every game in a log; CSV and plot."""
import sys

GROUP = "report"  # the director's task (hallclock.cliopts.GROUPS)


def register(sub):
    p = sub.add_parser("report", help="print the moves of every game in a log")
    p.add_argument("log", metavar="LOG", help="a hallclock log (JSON Lines)")
    p.add_argument("more_logs", nargs="*", metavar="LOG", help="more logs (with --round)")
    p.add_argument("--round", type=int, metavar="N", help="the round's report: round N across "
                   "every table of the logs (commands/round.py)")
    p.add_argument("--csv", metavar="FILE", help="also write the moves as a CSV table")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw each player's move times against the limit, pauses and gongs")
    p.add_argument("--claims", action="store_true",
                   help="also list every overtime and flag fall with its time of day "
                   "(the evidence for a claim, ČAS 10.2.6)")
    from ..cliopts import pairings_option
    pairings_option(p, "shown wherever a table is (docs/hall.md)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --csv/--plot file (never the log itself)")
    p.set_defaults(func=cmd_report)


def cmd_report(args):
    from ..views import report
    if args.round is not None or args.more_logs:
        from .round import cmd_report_round
        return cmd_report_round(args)
    from ..errors import one_line
    from ..views.outfiles import check_outputs
    # every output is checked before anything is read or written
    outputs = [(opt, path) for opt, path in (("--csv", args.csv), ("--plot", args.plot))
               if path is not None]
    if args.plot is not None:
        report.check_plot_name(args.plot)
    check_outputs(outputs, inputs=[args.log], force=args.force)
    pairings = None
    if args.pairings is not None:
        from ..views.pairings import load
        pairings = load(args.pairings)  # a bad file is refused before any output
    games, skipped = report.load_log(args.log)
    if pairings is not None:
        from ..views.pairings import apply
        apply(games, pairings)
    if skipped:
        print(f"hallclock: {one_line(report.skipped_text(args.log, skipped))}", file=sys.stderr)
    if args.plot is not None:
        report.check_plot(games, args.plot)  # before the CSV is written
    report.print_report(games)
    if args.claims:
        report.print_claims(games)
    if args.csv:
        report.write_csv(games, args.csv, force=args.force)
        print(f"CSV written to {args.csv}")
    if args.plot:
        report.write_plot(games, args.plot, force=args.force)
        print(f"plot written to {args.plot}")
    return 0
