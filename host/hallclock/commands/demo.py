"""``hallclock demo``: the bundled sample game on a virtual clock, and its report."""
import os

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "samples", "scrabble_game.txt")


def register(sub):
    p = sub.add_parser("demo", help="simulate the bundled sample game and print its report")
    p.add_argument("--out-dir", default="hallclock-demo",
                   help="where the demo's log and CSV go (default: ./hallclock-demo)")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args):
    from rich.console import Console

    from hallclock_fw.settings import parse

    from .. import report, scenario, virtual
    os.makedirs(args.out_dir, exist_ok=True)
    log = os.path.join(args.out_dir, "demo-game.jsonl")
    if os.path.exists(log):
        os.remove(log)  # the demo's own file, made afresh each run
    console = Console()
    actions = scenario.load(SAMPLE)
    print(f"Simulating the sample Scrabble game ({os.path.basename(SAMPLE)}) on a virtual clock…")
    with console.status("simulating the sample game on a virtual clock…"):
        n = virtual.simulate(actions, "scrabble", parse("scrabble", []), log, clock="demo-table-1")
    games = report.load_games(log)
    report.print_report(games, console)
    csv_path = os.path.join(args.out_dir, "demo-game.csv")
    plot_path = os.path.join(args.out_dir, "demo-game.png")
    report.write_csv(games, csv_path)
    with console.status("drawing the plot…"):
        report.write_plot(games, plot_path)
    print(f"\n{n} log records in {log}\nCSV table in {csv_path}\nplot in {plot_path}")
    return 0
