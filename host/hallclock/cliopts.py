"""The command line's shape (docs/contract.md, "The command line"): the
director's tasks that ``hallclock --help`` lists the commands under, and the
old spellings of renamed flags, which answer for one release with one line
naming the new one (exit 2, contract 1.2).

A command module says its task with one line, ``GROUP = "prepare"`` (every
command it registers), or ``sub.add_parser(name, ..., group="watch")`` for one
command of a module that holds several."""
import argparse
import textwrap

from .errors import BadInput

# (key, heading), in the order --help lists them: the director's day
GROUPS = (
    ("prepare", "prepare the clocks"),
    ("run", "run the round"),
    ("watch", "watch"),
    ("report", "report"),
    ("try", "try without hardware"),
)
UNGROUPED = "more commands"  # a command that declares no group (a test refuses it)


class _Renamed(argparse.Action):
    """An old spelling: typed, it stops the command with one line."""

    def __init__(self, option_strings, dest, new="", why="", **kwargs):
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs="?",
                         default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        self.new = new
        self.why = why

    def __call__(self, parser, namespace, values, option_string=None):
        why = f"; {self.why}" if self.why else ""
        command = parser.prog.split(" ", 1)[-1]  # 'hallclock console' -> 'console'
        raise BadInput(f"{command} {option_string} is now called {self.new}{why}")


def renamed(parser, old, new, why=""):
    """``old`` was this command's spelling of what is now ``new``."""
    parser.add_argument(old, action=_Renamed, new=new, why=why)


def renamed_flags(parser):
    """[(old, new)] of one command's parser."""
    return [(s, a.new) for a in parser._actions if isinstance(a, _Renamed)
            for s in a.option_strings]


def group_listing(commands):
    """The --help text of the commands, ``[(name, group key or None, help)]``,
    under the headings of GROUPS (then any command without a group), each
    group's commands in alphabetical order."""
    width = max((len(n) for n, _g, _h in commands), default=0) + 2
    known = [k for k, _h in GROUPS]
    out = []
    for key, heading in list(GROUPS) + [(None, UNGROUPED)]:
        mine = sorted((n, h) for n, g, h in commands
                      if (g == key if key is not None else g not in known))
        if not mine:
            continue
        out.append(f"{heading}:")
        for n, h in mine:
            out.extend(textwrap.wrap(h or "", 79, initial_indent=f"  {n.ljust(width)}",
                                     subsequent_indent=" " * (width + 2)) or [f"  {n}"])
        out.append("")
    return "\n".join(out).rstrip("\n")


def pairings_option(parser, shown):
    """``--pairings FILE`` (contract 1.3), one spelling and help for every
    command that shows the players' names; ``shown``: where this one shows them."""
    parser.add_argument("--pairings", metavar="FILE.csv",
                        help="players' names from the pairing program: CSV with the columns "
                        f"table, A, B (and round); {shown}")
