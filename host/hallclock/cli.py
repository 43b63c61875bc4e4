"""The hallclock command line (docs/contract.md).  One exit path: every
error the user can act on is a HallclockError, printed as
``hallclock: message`` on stderr; bad input exits 2.  Every command lives
in ``commands/`` (one module a command family, each with ``register(sub)``
and the director's task it serves, ``GROUP``: ``hallclock.cliopts``)."""
import argparse
import importlib
import pkgutil
import sys

from . import __version__, commands
from .cliopts import group_listing
from .errors import BadInput, HallclockError, one_line


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, group=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.group = group  # the director's task (cliopts.GROUPS), or the module's GROUP

    def error(self, message):
        raise BadInput(f"{message} (see '{self.prog} --help')")


def build_parser():
    parser = _Parser(prog="hallclock", usage="hallclock [--version] COMMAND [OPTIONS]",
                     description="Tournament game clocks: prepare them, log the round, "
                     "watch it, report it;\nor try it all on virtual clocks.\n"
                     "'hallclock COMMAND --help' gives a command's options.",
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hallclock {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                prog="hallclock", metavar="COMMAND", help=argparse.SUPPRESS)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        before = set(sub.choices)
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
        for name in sub.choices:
            if name not in before and sub.choices[name].group is None:
                sub.choices[name].group = getattr(module, "GROUP", None)
    helps = {a.dest: a.help for a in sub._choices_actions}
    parser.epilog = group_listing([(n, p.group, helps.get(n)) for n, p in sub.choices.items()])
    return parser


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        from .link import locks  # a held log or port names the program that holds it
        locks.PROGRAM = " ".join(["hallclock", args.command]
                                 + ([args.round_command] if args.command == "round" else []))
        return args.func(args)
    except HallclockError as exc:
        print(f"hallclock: {one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("hallclock: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
