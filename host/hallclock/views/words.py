"""The one vocabulary every view speaks: what the report, the round's report,
the CSV's text, the live view, the referee's console and the projector call
a gong, a play-out step, a count of things.  A log key (``ten_minutes``,
``finish_round``) is the record's, never a word on screen: it is looked up
here.

The words are those of the rule book as docs/rules.md gives it:

* ČAS 4.1, 6.1: the start signal, the signal when ``round_warn_min`` minutes
  of basic time are left (the "2-min gong" with ``round_warn_min=2``; the
  default, 10), the end of basic time;
* ČAS 16.3: the play-out -- (a) the round in progress is finished, (b) each
  plays one more normal move, (c) each plays a last move without drawing.
"""

DEFAULT_WARN_MIN = 10  # round_warn_min when a log does not say (the firmware's default)

PLAYOUT_SHORT = {"finish_round": "(a) finish the round",
                 "one_more_move": "(b) one more move each",
                 "last_move": "(c) last move each",
                 "over": "play-out over"}
PLAYOUT_LONG = {"finish_round": "play-out (a): the round in progress is finished",
                "one_more_move": "play-out (b): each plays one more normal move",
                "last_move": "play-out (c): each plays a last move without drawing",
                "over": "play-out over: the game is over"}
PLAYOUT_LETTER = {"finish_round": "(a)", "one_more_move": "(b)", "last_move": "(c)",
                  "over": "over"}


def plural(n, one, many=None):
    """'1 move', '2 moves', '1 table', '0 tables'."""
    return "%d %s" % (n, one if n == 1 else (many or one + "s"))


def warn_min_of(settings):
    """The minutes before the end of the warning gong, from a clock's settings
    (a dict as a ``boot``/``settings`` record gives them)."""
    if isinstance(settings, dict):
        v = settings.get("round_warn_min")
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return DEFAULT_WARN_MIN


def gong_name(kind, warn_min=None):
    """A gong by what it is in its settings: 'start gong', '2-min gong',
    'end gong', 'manual gong'."""
    if kind == "start":
        return "start gong"
    if kind == "ten_minutes":
        return "%d-min gong" % (DEFAULT_WARN_MIN if warn_min is None else warn_min)
    if kind == "end":
        return "end gong"
    if kind == "manual":
        return "manual gong"
    return "gong (%s)" % kind if kind else "gong"


def gong_meaning(kind, warn_min=None):
    """What the hall hears in a gong: '2 minutes left', 'end of basic time'."""
    if kind == "ten_minutes":
        n = DEFAULT_WARN_MIN if warn_min is None else warn_min
        return "%d minute%s of basic time left" % (n, "" if n == 1 else "s")
    if kind == "end":
        return "end of basic time"
    if kind == "start":
        return "the round starts"
    return "a signal to the hall"


def playout_step(step, long=False):
    """A play-out step in the rules' words (ČAS 16.3)."""
    if step is None:
        return ""
    return (PLAYOUT_LONG if long else PLAYOUT_SHORT).get(step, "play-out step %s" % step)


def playout_letter(step):
    return PLAYOUT_LETTER.get(step, "?")


def natural(name):
    """The sort key of a clock's name in every view: table-2 before table-10."""
    import re
    return [(0, int(p), "") if p.isdigit() else (1, 0, p.lower())
            for p in re.split(r"(\d+)", str(name)) if p != ""]


def by_name(items, name=lambda x: x):
    """``items`` in the natural order of their names (a stable sort)."""
    return sorted(items, key=lambda x: natural(name(x)))


def clock_time(epoch):
    """A time of day as every view writes it: 18:38:14 (local time)."""
    from datetime import datetime
    return datetime.fromtimestamp(epoch).strftime("%H:%M:%S") if epoch is not None else None


def reboot_words(name, lost_at, back_at, restored, sent=False):
    """A power loss in words, the same in every view (docs/hall.md "When a
    clock reboots"): 'table-10 lost power at 18:38:14, back at 18:38:16, game
    restored' / '... not restored: players carry on from move 1'."""
    lost = clock_time(lost_at)
    back = clock_time(back_at)
    text = name + " lost power" + (" at " + lost if lost else "")
    text += ", back at " + back if back else ", not back yet"
    if restored:
        return text + ", game restored"
    if sent and back:
        return text + ", restoring the game"
    return text + (", not restored: players carry on from move 1" if back else "")
