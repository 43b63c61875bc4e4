"""``hallclock maintenance``: ask the clock on a port to hand its console back
(the ``M`` frame, docs/protocol.md "Maintenance") so mpremote can use the
REPL: ``make deploy`` and ``make console`` run it first.  While the clock
runs, the keyboard interrupt is off, so mpremote's Ctrl-C alone cannot stop
it (docs/hardware.md "The console")."""
from ._boardinfo import ask_console as hand_back  # noqa: F401 (make deploy, make console)

GROUP = "prepare"  # the director's task (hallclock.cliopts.GROUPS)


def register(sub):
    p = sub.add_parser("maintenance",
                       help="hand a clock's console back to the REPL (before mpremote)")
    p.add_argument("--port", required=True, help="the board's serial port (or 'auto')")
    p.add_argument("--wait-s", type=float, default=3.0, metavar="S",
                   help="how long to wait for the REPL (default 3)")
    p.set_defaults(func=cmd_maintenance)


def cmd_maintenance(args):
    from ..errors import BadInput
    from .ports import resolve_port
    if not args.wait_s > 0:
        raise BadInput(f"--wait-s {args.wait_s:g}: give a number of seconds above 0")
    path = resolve_port(args.port)
    got = hand_back(path, args.wait_s)
    if got == "handed back":
        print(f"hallclock maintenance: the clock on {path} handed its console back "
              "and has stopped; reset the board to start it again")
    elif got == "repl":
        print(f"hallclock maintenance: {path} is at the REPL (no clock was running)")
    else:
        print(f"hallclock maintenance: no answer from {path} in {args.wait_s:g} s: no hallclock "
              "firmware running there, or it is busy; trying mpremote anyway")
    return 0
