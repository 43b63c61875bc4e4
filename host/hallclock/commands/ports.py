"""``hallclock ports``: the serial ports of this computer, likely ESP32 boards
marked by the USB IDs of the USB-serial chips such boards carry; and
:func:`resolve_port` for ``--port auto``."""
from ..errors import BadInput

GROUP = "prepare"  # the director's task (hallclock.cliopts.GROUPS)

# (vid, pid or None for any) -> chip
USB_CHIPS = {
    (0x10C4, 0xEA60): "CP210x",
    (0x10C4, 0xEA70): "CP2105",
    (0x10C4, 0xEA71): "CP2108",
    (0x1A86, 0x7523): "CH340",
    (0x1A86, 0x7522): "CH340",
    (0x1A86, 0x5523): "CH341",
    (0x1A86, 0x55D3): "CH343",
    (0x1A86, 0x55D4): "CH9102",
    (0x0403, 0x6001): "FTDI FT232R",
    (0x0403, 0x6010): "FTDI FT2232",
    (0x0403, 0x6011): "FTDI FT4232",
    (0x0403, 0x6014): "FTDI FT232H",
    (0x0403, 0x6015): "FTDI FT231X",
    (0x303A, None): "Espressif native USB",
}


def chip_of(vid, pid):
    """The USB-serial chip name for a VID/PID, or None."""
    if vid is None:
        return None
    return USB_CHIPS.get((vid, pid)) or USB_CHIPS.get((vid, None))


def list_ports():
    """[(device, chip or None, description, 'VID:PID' or '')] sorted by device."""
    from serial.tools import list_ports as lp

    out = []
    for info in lp.comports():
        vid = getattr(info, "vid", None)
        pid = getattr(info, "pid", None)
        ids = f"{vid:04X}:{pid:04X}" if vid is not None and pid is not None else ""
        desc = getattr(info, "description", "") or ""
        if desc == "n/a":
            desc = ""
        out.append((info.device, chip_of(vid, pid), desc, ids))
    out.sort(key=lambda p: p[0])
    return out


def likely_boards(ports=None):
    return [p for p in (list_ports() if ports is None else ports) if p[1] is not None]


def resolve_port(spec):
    """``--port`` value -> a port path.  ``auto`` picks the only likely ESP32
    board; with none or several it raises BadInput naming the choices."""
    if spec != "auto":
        return spec
    ports = list_ports()
    boards = likely_boards(ports)
    if len(boards) == 1:
        return boards[0][0]
    if not boards:
        others = ", ".join(p[0] for p in ports) or "none"
        raise BadInput("--port auto: no ESP32 board found (no CP210x, CH340/CH9102, FTDI or "
                       f"Espressif USB port; serial ports here: {others}). Plug the clock in, "
                       "or give --port PATH ('hallclock ports' lists them)")
    choices = ", ".join(f"{d} ({chip})" for d, chip, _desc, _ids in boards)
    raise BadInput(f"--port auto: {len(boards)} boards found: {choices}; "
                   "choose one with --port PATH")


def cmd_ports(args):
    from rich.table import Table
    from rich.text import Text

    from ..views.terminal import console as Console

    if args.versions or args.port:  # each board's clock name and versions (boardinfo)
        from ._boardinfo import versions_lines
        ports = args.port or [p[0] for p in likely_boards()]
        if not ports:
            print("No ESP32 board found to ask (give --port P)")
            return 0
        if not 0 < args.wait_s <= 60:  # nan fails this too
            from ..errors import BadInput
            raise BadInput(f"--wait-s {args.wait_s:g}: give a time above 0 and at most 60 s")
        for line in versions_lines(ports, args.wait_s):
            print(line)  # each field shown escaped (_boardinfo.versions_lines)
        return 0
    every = list_ports()
    ports = every if args.all else [p for p in every if p[1] is not None or p[3]]
    console = Console()
    if not ports:
        hidden = len(every) - len(ports)
        more = f" ({hidden} built-in serial port(s) not shown: --all lists them)" if hidden else ""
        console.print("No USB serial ports found. Is the clock plugged in, with a data "
                      f"cable?{more}", soft_wrap=True)
        return 0
    if not console.is_terminal:
        for device, chip, desc, ids in ports:
            mark = f"likely ESP32 ({chip})" if chip else "-"
            print(f"{device}\t{ids or '-'}\t{mark}\t{desc}")
        return 0
    table = Table(title="serial ports", title_justify="left")
    for col in ("port", "USB id", "board", "description"):
        table.add_column(col)
    for device, chip, desc, ids in ports:
        table.add_row(device, ids or "-",
                      Text(f"likely ESP32 ({chip})", style="bold green") if chip else "-",
                      desc)
    console.print(table)
    boards = likely_boards(ports)
    if len(boards) == 1:
        console.print(f"--port auto would use {boards[0][0]}")
    if boards:
        console.print("--versions: each board's clock name, firmware and MicroPython "
                      "version (restarts a running clock)")
    return 0


def register(sub):
    p = sub.add_parser("ports", help="list serial ports, marking likely ESP32 boards")
    p.add_argument("--all", action="store_true",
                   help="also list ports with no USB id (built-in serial ports)")
    p.add_argument("--versions", action="store_true",
                   help="ask each likely board its clock name, firmware and MicroPython "
                   "versions (through the REPL: a running clock stops and restarts)")
    p.add_argument("--port", action="append", default=[], metavar="P",
                   help="ask the board on this serial port (repeatable; implies --versions)")
    p.add_argument("--wait-s", type=float, default=3.0, metavar="S",
                   help="with --versions: how long each board's REPL may take to answer "
                   "(default 3)")
    p.set_defaults(func=cmd_ports)
