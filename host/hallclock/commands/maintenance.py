"""``hallclock maintenance``: ask the clock on a port to hand its console back
(the ``M`` frame, docs/protocol.md "Maintenance") so mpremote can use the
REPL: ``make deploy`` and ``make console`` run it first.  While the clock
runs, the keyboard interrupt is off, so mpremote's Ctrl-C alone cannot stop
it (docs/hardware.md "The console")."""
import select
import time

GROUP = "prepare"  # the director's task (hallclock.cliopts.GROUPS)
HANDED_BACK = b"console handed back"
PROMPTS = (b">>> ", b"raw REPL; CTRL-B to exit")
RESEND_S = 0.5  # the frame again this often: noise on the line may eat one


def register(sub):
    p = sub.add_parser("maintenance",
                       help="hand a clock's console back to the REPL (before mpremote)")
    p.add_argument("--port", required=True, help="the board's serial port (or 'auto')")
    p.add_argument("--wait-s", type=float, default=3.0, metavar="S",
                   help="how long to wait for the REPL (default 3)")
    p.set_defaults(func=cmd_maintenance)


def hand_back(path, wait_s=3.0):
    """Send the M frame until the REPL answers or ``wait_s`` passes; returns
    what was seen: "handed back", "repl" (no clock was running) or None."""
    from hallclock_fw import protocol

    from ..link.transport import Port
    port = Port(path)
    port.open()
    seen = bytearray()
    try:
        end = time.monotonic() + wait_s
        next_send = 0.0
        while True:
            now = time.monotonic()
            if now >= next_send:
                # a line end first: it ends whatever junk the line holds (a
                # half frame, mpremote's Ctrl-C), so the frame is a line of its
                # own; at a REPL its CR is an empty command and brings a prompt
                port.write(b"\r\n" + protocol.maintenance())
                port.drain()
                next_send = now + RESEND_S
            seen += port.read()
            if HANDED_BACK in seen:
                return "handed back"
            if any(p in seen for p in PROMPTS):
                return "repl"
            if now >= end:
                return None
            fd = port.fileno()
            if fd is not None:
                select.select([fd], [], [], min(0.05, max(0.0, end - now)))
            else:
                time.sleep(0.05)
    finally:
        port.close()


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
