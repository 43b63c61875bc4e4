"""The hallclock command line (docs/contract.md).  One exit path: every
error the user can act on is a HallclockError, printed as
``hallclock: message`` on stderr; bad input exits 2.  Every command lives
in ``commands/`` (one module a command family, each with ``register(sub)``)."""
import argparse
import importlib
import pkgutil
import sys

from . import __version__, commands
from .errors import BadInput, HallclockError, one_line


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise BadInput(f"{message} (see '{self.prog} --help')")


def build_parser():
    parser = _Parser(prog="hallclock", description="Tournament game clocks: virtual "
                     "devices, the serial logger, and reports.")
    parser.add_argument("--version", action="version", version=f"hallclock {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"{commands.__name__}.{info.name}").register(sub)
    return parser


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except HallclockError as exc:
        print(f"hallclock: {one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("hallclock: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
