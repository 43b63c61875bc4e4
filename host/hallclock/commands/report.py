"""``hallclock report``: the moves of every game in a log; CSV and plot."""


def register(sub):
    p = sub.add_parser("report", help="print the moves of every game in a log")
    p.add_argument("log")
    p.add_argument("more_logs", nargs="*", metavar="LOG", help="more logs (with --round)")
    p.add_argument("--round", type=int, metavar="N", help="the round's report: round N across "
                   "every table of the logs (commands/round.py)")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw each player's move times against the limit, pauses and gongs")
    p.set_defaults(func=cmd_report)


def cmd_report(args):
    from .. import report
    if args.round is not None or args.more_logs:
        from .round import cmd_report_round
        return cmd_report_round(args)
    games = report.load_games(args.log)
    report.print_report(games)
    if args.csv:
        report.write_csv(games, args.csv)
        print(f"CSV written to {args.csv}")
    if args.plot:
        report.write_plot(games, args.plot)
        print(f"plot written to {args.plot}")
    return 0
