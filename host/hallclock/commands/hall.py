"""``hallclock hall`` and ``hallclock hall-simulate``: one hall unit and many
table clocks into one log, the referee's START and GONG relayed to every
table (docs/hall.md)."""
import os

from ..cliopts import renamed
from ..errors import BadInput, shown
from ..views.modes import hall_modes

MAX_REAL_S = 24 * 3600.0  # hall-simulate paces real time: a day at most


def register(sub):
    p = sub.add_parser(
        "hall", group="run", help="log a hall unit and many table clocks into one log, "
        "relaying the referee's START and GONG to every table")
    p.add_argument("--hall-unit-port", required=True, metavar="PORT",
                   help="serial port of the hall unit (the referee's clock)")
    p.add_argument("--port", required=True, action="append", metavar="PORT",
                   help="serial port of a table clock (repeat for every table)")
    renamed(p, "--hall-port", "--hall-unit-port", "--hall is always a hall's name")
    renamed(p, "--table-port", "--port (once per table)", "--port is always a serial port")
    p.add_argument("--out", required=True, metavar="LOG", help="the hall log (JSON Lines)")
    p.add_argument("--exit-on-end", action="store_true",
                   help="exit once every clock's session has ended")
    p.add_argument("--reset", action="store_true",
                   help="reset every board once when its port is opened (an EN pulse); "
                   "by default opening a port never resets a board (docs/hardware.md)")
    from .log import restore_option
    restore_option(p, default=True)
    from .log import ship_option
    ship_option(p, hall_options=True)
    p.set_defaults(func=cmd_hall)

    p = sub.add_parser(
        "hall-simulate", group="try", help="a whole hall on virtual devices: a hall unit "
        "and N table clocks, relayed and logged by the real host")
    from .simulate import hall_options
    hall_options(p, modes=hall_modes())
    p.add_argument("--script", required=True, metavar="FILE",
                   help="the hall unit's scenario (the referee)")
    p.add_argument("--table-script", action="append", default=[], metavar="FILE",
                   help="a table's scenario: once for all tables, or once per table "
                   "(default: tables only end with the hall)")
    p.add_argument("--out", required=True, metavar="LOG", help="the hall log to write (JSON Lines)")
    p.add_argument("--transport", choices=("serial", "mqtt"), default="serial",
                   help="serial: a pty per clock (default); mqtt: every clock on the hall "
                   "network through Mosquitto (its own, unless --broker is given)")
    from .log import broker_options
    broker_options(p, "with --transport mqtt: an existing broker (default: start our own)")
    p.set_defaults(func=cmd_hall_simulate)


def cmd_hall(args):
    from ..hall.relay import Relay, run_hall, summary
    from ..link.logger import Logger
    ports = [args.hall_unit_port] + args.port
    if len(set(ports)) != len(ports):
        raise BadInput("a port is given twice: the hall unit and every table need "
                       "their own port")
    from .log import attach_office, restorer, ship_to_office
    office = ship_to_office(args)
    logger = Logger(ports, args.out, reset=args.reset, restore=restorer(args))
    attach_office(logger, office)
    logger.open()
    relay = Relay(logger)  # before the loop: Ctrl-C, the usual stop, still reports
    try:
        run_hall(logger, exit_on_end=args.exit_on_end, relay=relay)
    except KeyboardInterrupt:
        pass
    print(shown(summary(relay), lines=True))
    return 0


def cmd_hall_simulate(args):
    from hallclock_fw.settings import MODES

    from .. import scenario
    from ..vboard import device as virtual
    from ..hall.relay import check_table_count, simulate_hall, summary
    if args.mode not in MODES:
        raise BadInput(f"unknown mode {args.mode!r} (modes: {', '.join(MODES)})")
    if args.mode not in hall_modes():
        raise BadInput(f"--mode {args.mode}: a {args.mode} clock takes no hall signals "
                       "(the referee's START and GONG are relayed only in "
                       f"{' and '.join(hall_modes())}); run each table with "
                       f"'hallclock simulate --mode {args.mode}' instead")
    from .simulate import check_speed
    n = check_table_count(args.tables)
    check_speed(args.speed)
    values = virtual.check_settings(args.mode, args.set)
    hall = scenario.load(args.script)
    if len(args.table_script) not in (0, 1, n):
        raise BadInput(f"--table-script given {len(args.table_script)} times: give it "
                       f"once (for every table) or {n} times (one per table)")
    scripts = [scenario.load(p) for p in args.table_script]
    if not scripts:
        end_t = hall[-1].t_ms
        scripts = [scenario.parse_text(f"{end_t} end", "<tables>")]
    tables = [scripts[i if len(scripts) > 1 else 0] for i in range(n)]
    if not any(a.action in ("press", "bounce", "hold") and a.arg in ("START", "GONG")
               or a.action.startswith("command") for a in hall):
        print(f"note: {args.script} never presses START or GONG: nothing will be relayed")
    real_s = max(a.t_ms for acts in [hall] + tables for a in acts) / 1000 / args.speed
    if real_s > MAX_REAL_S:
        raise BadInput(f"--speed {args.speed:g}: the scripts would take {real_s / 3600:.0f} h "
                       f"of real time (at most {MAX_REAL_S // 3600:.0f} h); give a higher --speed")
    if os.path.exists(args.out) and os.path.getsize(args.out) > 0:
        raise BadInput(f"{args.out} already exists: hall-simulate writes a new log; "
                       "remove it or choose another --out")
    if args.transport == "mqtt":
        count, relay = _simulate_on_broker(args, hall, tables, values)
    else:
        if args.broker is not None:
            raise BadInput("--broker goes with --transport mqtt")
        count, relay = simulate_hall(hall, tables, args.mode, values, args.out, speed=args.speed)
    print(f"{count} records from 1 hall unit and {n} table clocks written to {args.out}")
    print(summary(relay))
    return 0


def _simulate_on_broker(args, hall, tables, values):
    from ..hall.netsim import HALL, simulate_hall_mqtt
    from .log import broker_args
    if args.broker is None:
        if args.credentials is not None or args.hall is not None:
            raise BadInput("--hall and --credentials go with --broker HOST:PORT")
        return simulate_hall_mqtt(hall, tables, args.mode, values, args.out, speed=args.speed)
    address = broker_args(args)
    return simulate_hall_mqtt(hall, tables, args.mode, values, args.out, speed=args.speed,
                              address=address, hall=args.hall or HALL,
                              credentials=args.credentials)
