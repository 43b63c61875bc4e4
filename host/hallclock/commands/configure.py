"""``hallclock configure``: the same settings for every clock of the hall, from
the laptop (checked first by the firmware's own settings module)."""
import sys

from ..errors import BadInput, shown

GROUP = "prepare"  # the director's task (hallclock.cliopts.GROUPS)


def register(sub):
    p = sub.add_parser(
        "configure", help="send the same settings to every clock of the hall",
        description="Sends the mode and settings to the clocks (default: every clock heard). "
        "A clock takes them only while no game runs, shows them until a player presses "
        "(ČAS 3.2: both players check the limit) and logs a 'settings' event. Prints per "
        "clock taken / refused (with the reason) / no answer; exits 1 if any clock did not "
        "take them, 2 for bad values (nothing is sent then).")
    p.add_argument("--port", action="append", default=[], metavar="PORT",
                   help="serial port of a clock (repeat for every clock; 'auto' for the only board)")
    p.add_argument("--ports-file", metavar="FILE",
                   help="the clocks' ports, one a line (as many --port)")
    p.add_argument("--clock", action="append", default=[], metavar="NAME",
                   help="only this clock (repeatable; default: every clock heard)")
    from .simulate import mode_help
    p.add_argument("--mode", required=True, help=mode_help(default=None))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the mode (repeatable; the others take their defaults)")
    from .log import broker_options
    broker_options(p, "the hall network instead of serial ports (as the hall's 'logger' client)")
    p.add_argument("--wait-s", type=float, default=3.0, metavar="S",
                   help="how long to wait for each clock's hello and answer (default 3)")
    p.set_defaults(func=cmd_configure)


def settings_text(mode, pairs):
    """The canonical settings text, checked by the firmware's settings.py (BadInput)."""
    from hallclock_fw import settings as settings_mod
    if mode not in settings_mod.MODES:
        raise BadInput(f"unknown mode {mode!r} (modes: {', '.join(settings_mod.MODES)}); "
                       "nothing was sent")
    try:
        values = settings_mod.parse(mode, pairs)
    except ValueError as exc:
        raise BadInput(f"bad --set: {exc}; nothing was sent") from None
    return settings_mod.format_text(mode, values)


def cmd_configure(args):
    from ..hall.configure import REASON_TEXT, configure, configure_broker
    from .log import broker_args
    from .ports import resolve_port
    from .round import read_ports_file
    text = settings_text(args.mode, args.set)
    args.port = args.port + read_ports_file(args.ports_file)
    address = broker_args(args)
    if not 0.1 <= args.wait_s <= 60:
        raise BadInput(f"--wait-s {args.wait_s:g}: give 0.1 to 60 seconds")
    if address is not None:
        from ..net.broker import check_name
        for name in args.clock:
            check_name("clock name", name)
        print(f"configure: {args.mode} {text}", flush=True)
        results = configure_broker(address, args.hall, args.credentials, args.mode, text,
                                   clocks=set(args.clock) or None, wait_s=args.wait_s,
                                   tls=args.tls_ca)
        return _print(results, REASON_TEXT)
    if not args.port:
        raise BadInput("configure: give the clocks' ports (--port P, once per clock) or "
                       "--broker HOST:PORT --hall NAME --credentials FILE")
    ports = [resolve_port(p) for p in args.port]
    if len(set(ports)) != len(ports):
        raise BadInput("a port is given twice: every clock needs its own port")
    print(f"configure: {args.mode} {text}", flush=True)
    results = configure(ports, args.mode, text, clocks=set(args.clock) or None,
                        wait_s=args.wait_s)
    return _print(results, REASON_TEXT)


def _print(results, REASON_TEXT):  # noqa: N803
    bad = 0
    for clock, path, status, detail in results:
        where = f" ({path})" if path else ""
        if status == "taken":
            line = f"{clock}{where}: taken"
        elif status == "refused":
            line = f"{clock}{where}: REFUSED: {REASON_TEXT.get(detail, detail)}"
        elif status == "not asked":
            line = f"{clock}{where}: not asked (not named by --clock)"
        else:
            line = f"{clock or 'no clock'}{where}: NO ANSWER: {detail}"
        if status in ("refused", "no answer"):
            bad += 1
        print(shown(line), flush=True)  # clock names from the clocks
    taken = sum(1 for r in results if r[2] == "taken")
    from ..views.words import plural
    print(f"configure: {plural(taken, 'clock')} took the settings, {bad} did not", flush=True)
    if bad:
        print("hallclock: configure: some clocks did not take the settings (see above): end "
              "their games or check them, then run configure again for those (--clock NAME)",
              file=sys.stderr)
        return 1
    return 0
