"""Backgammon helpers for the referee (İSTAVDER rules, docs/rules.md §3):

    hallclock backgammon-time --match 7 --score 3-5   # rule 2.4: the banks, and the settings line
    hallclock lateness --match 7 --late-min 27        # rule 2.2: penalty points, forfeit

The bank comes from ``hallclock_fw.settings.bank_ms`` and every value is
checked by ``hallclock_fw.settings``, exactly as ``simulate --mode backgammon``
and the device check them.  Lateness lives here, not in the firmware: the
device never needs it.
"""
from hallclock_fw import settings as settings_mod

from ..errors import BadInput

MODE = "backgammon"
LATE_FIRST_MIN = 15  # rule 2.2: 1 penalty point at 15 minutes late ...
LATE_STEP_MIN = 5  # ... and 1 more for every further full 5 minutes


def penalty_points(late_min):
    """Rule 2.2: penalty points for a player ``late_min`` whole minutes late."""
    if late_min < LATE_FIRST_MIN:
        return 0
    return 1 + (late_min - LATE_FIRST_MIN) // LATE_STEP_MIN


def forfeited(points, match):
    """Rule 2.2: the match is lost when the penalty points exceed half the
    match length."""
    return 2 * points > match


def forfeit_minute(match):
    """The first whole minute of lateness at which the match is lost."""
    points = match // 2 + 1  # the fewest points that exceed match / 2
    return LATE_FIRST_MIN + (points - 1) * LATE_STEP_MIN


def fmt_s(seconds):
    """1:05:00 / 10:00 / 0:15."""
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _settings(pairs):
    try:
        return settings_mod.parse(MODE, pairs)
    except settings_mod.SettingsError as exc:
        raise BadInput(f"bad setting: {exc}") from None


def _set_pairs(args):
    """The ``key=value`` settings the options give (defaults left out)."""
    pairs = [f"match={args.match}", f"score={args.score}"]
    defaults = settings_mod.defaults(MODE)
    for key in ("per_point_s", "delay_s", "delay"):
        value = getattr(args, key)
        if value is not None and value != defaults[key]:
            pairs.append(f"{key}={value}")
    return pairs


def cmd_backgammon_time(args):
    pairs = _set_pairs(args)
    values = _settings(pairs)
    bank_s = settings_mod.bank_ms(values) // 1000
    a, b = values["score"]
    match = values["match"]
    trailing = min(a, b)
    needs = match - trailing
    pts = f"{needs} point{'s' if needs != 1 else ''}"
    if a == b:
        print(f"Match to {match}, score A {a} - B {b}: level, each player needs {pts}.")
    else:
        print(f"Match to {match}, score A {a} - B {b}: the trailing player "
              f"({'A' if a < b else 'B'}) needs {pts}.")
    from ..views.modes import view_for
    per_move = view_for(MODE).delay_words[values["delay"]]
    print(f"Bank: {needs} x {fmt_s(values['per_point_s'])} = {fmt_s(bank_s)} "
          f"({bank_s} s) per player, plus a {values['delay_s']} s {per_move} per move.")
    print(f"  A: {fmt_s(bank_s)}")
    print(f"  B: {fmt_s(bank_s)}")
    print("Settings: --mode backgammon " + " ".join(f"--set {p}" for p in pairs))
    return 0


def cmd_lateness(args):
    values = _settings([f"match={args.match}"])
    match = values["match"]
    if args.late_min is None:
        print(f"Lateness (rule 2.2), match to {match}: lost with more than "
              f"{match / 2:g} penalty points.")
        print("  late (min)  penalty points")
        last = forfeit_minute(match)
        for minute in range(LATE_FIRST_MIN, last + 1, LATE_STEP_MIN):
            points = penalty_points(minute)
            verdict = "  match lost" if forfeited(points, match) else ""
            print(f"  {minute:>10}  {points}{verdict}")
        return 0
    if args.late_min < 0:
        raise BadInput(f"--late-min must be 0 or more, not {args.late_min}")
    points = penalty_points(args.late_min)
    lost = forfeited(points, match)
    print(f"{args.late_min} min late: {points} penalty point{'s' if points != 1 else ''} "
          f"(1 at {LATE_FIRST_MIN} min, +1 per further full {LATE_STEP_MIN} min).")
    if lost:
        print(f"Match to {match}: {points} is more than {match / 2:g}: the late player "
              "loses the match.")
    else:
        print(f"Match to {match}: not forfeited (lost with more than {match / 2:g} points, "
              f"from {forfeit_minute(match)} min late).")
    return 0


def _delay_words():
    from ..views.modes import view_for
    return view_for(MODE).delay_words


def register(sub):
    p = sub.add_parser(
        "backgammon-time", group="prepare",
        help="the backgammon clock's bank from the match score (İSTAVDER 2.4)",
        description="Each player's bank for the rest of a match played with a clock "
                    "(İSTAVDER 2.4: the points the trailing player still needs x 2.5 "
                    "minutes, plus a delay per move), and the settings line for "
                    "'hallclock simulate/device --mode backgammon'.")
    p.add_argument("--match", type=int, required=True, metavar="N", help="match length in points")
    p.add_argument("--score", required=True, metavar="A-B", help="the score, e.g. 3-5")
    p.add_argument("--per-point-s", dest="per_point_s", type=int, default=None, metavar="S",
                   help="seconds per point the trailing player needs (default 150)")
    p.add_argument("--delay-s", dest="delay_s", type=int, default=None, metavar="S",
                   help="delay per move in seconds (default 15)")
    p.add_argument("--delay", default=None, metavar="KIND",
                   help="the delay kind (default simple): " + ", ".join(
                       f"{k} ({_delay_words()[k]})" for k in settings_mod.DELAY_KINDS))
    p.set_defaults(func=cmd_backgammon_time)

    p = sub.add_parser(
        "lateness", group="run", help="penalty points for a late backgammon player (İSTAVDER 2.2)",
        description="Penalty points for lateness (İSTAVDER 2.2: 1 at 15 minutes, "
                    "1 more per further full 5 minutes) and whether the match is lost "
                    "(more penalty points than half the match length). Without "
                    "--late-min: the table for the match.")
    p.add_argument("--match", type=int, required=True, metavar="N", help="match length in points")
    p.add_argument("--late-min", dest="late_min", type=int, default=None, metavar="M",
                   help="whole minutes the player was late")
    p.set_defaults(func=cmd_lateness)
