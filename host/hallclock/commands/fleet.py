"""``hallclock fleet-config``: one ``hallclock.cfg`` per clock of a USB hall
(docs/hardware.md "Ten clocks"), for ``hallclock deploy --cfg-dir``.  Names
follow the one name grammar (firmware names.py), settings are checked by the
firmware's settings.py, and the file is read back by the firmware's own
hw/config.py before it is written: what the clock will read at power-on."""
import os

from ..errors import BadInput


GROUP = "prepare"  # the director's task (hallclock.cliopts.GROUPS)

def register(sub):
    p = sub.add_parser("fleet-config",
                       help="write one hallclock.cfg per clock of a USB hall (for deploy)")
    p.add_argument("--clocks", required=True, metavar="NAME[,NAME...]",
                   help="the clocks' names, comma-separated (e.g. table-01,table-02)")
    p.add_argument("--mode", required=True, help="scrabble, duplicate or backgammon")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the mode (repeatable; docs/contract.md)")
    p.add_argument("--brightness", type=int, default=None, metavar="0-7",
                   help="the displays' brightness (default: the firmware's, 7)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the folder for DIR/<clock>.cfg (created if missing)")
    p.add_argument("--force", action="store_true", help="replace existing cfg files")
    p.set_defaults(func=cmd_fleet_config)


def cfg_text(clock, mode, values, brightness=None):
    from hallclock_fw import settings as settings_mod
    lines = [f"# hallclock.cfg for {clock} (hallclock fleet-config; docs/hardware.md)",
             f"clock = {clock}", f"mode = {mode}"]
    if brightness is not None:
        lines.append(f"brightness = {brightness}")
    for pair in settings_mod.format_text(mode, values).split(";"):
        if pair:
            key, value = pair.split("=", 1)
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def cmd_fleet_config(args):
    from hallclock_fw import settings as settings_mod
    from hallclock_fw.hw import config

    from ..net.broker import parse_clocks
    from ..views.outfiles import check_outputs, write_file
    clocks = parse_clocks(args.clocks)
    try:
        values = settings_mod.parse(args.mode, args.set)
    except ValueError as exc:
        raise BadInput(f"bad --mode/--set: {exc}; nothing was written") from None
    if args.brightness is not None and not 0 <= args.brightness <= 7:
        raise BadInput(f"--brightness {args.brightness}: give 0-7")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise BadInput(f"--out {args.out}: is a file; give a folder")
    texts = {}
    for clock in clocks:
        text = cfg_text(clock, args.mode, values, args.brightness)
        back = config.parse(text, "unnamed")  # as the clock reads it at power-on
        if back.error is not None or back.clock != clock or back.settings != values:
            raise BadInput(f"{clock}: the cfg would not read back ({back.error}); "
                           "nothing was written")
        texts[clock] = text
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"--out {args.out}: cannot create the folder ({exc.strerror})") from None
    paths = {c: os.path.join(args.out, f"{c}.cfg") for c in clocks}
    check_outputs([("--out", p) for p in paths.values()], force=args.force)
    for clock, path in paths.items():
        write_file(path, lambda f, t=texts[clock]: f.write(t), force=args.force,
                   what="cfg file")
    print(f"{len(clocks)} cfg files in {args.out} ({args.mode}"
          f"{', ' + ';'.join(args.set) if args.set else ''}). Next: hallclock deploy "
          f"--ports-file PORTS --cfg-dir {args.out} (PORTS: one 'PORT CLOCK' a line)")
    return 0
