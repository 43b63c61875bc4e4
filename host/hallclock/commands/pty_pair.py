"""``hallclock pty-pair``: two linked pseudo serial ports, for the README's
``[board]`` lines without a board: whatever one program writes to the first
port the other reads from the second, and back (a null-modem cable in
software; the same ptys ``virtual-clocks`` gives its clocks).  It prints both
paths (and writes them to ``--ports-file``), then relays until Ctrl-C."""
import os
import select
import sys

from ..errors import BadInput

GROUP = "try"  # the director's task (hallclock.cliopts.GROUPS): try without hardware

CHUNK = 4096


def register(sub):
    p = sub.add_parser("pty-pair", help="two linked virtual serial ports (a null-modem "
                       "cable in software) for trying the [board] lines without a board")
    p.add_argument("--ports-file", metavar="FILE",
                   help="also write the two paths to FILE, one a line")
    p.set_defaults(func=cmd_pty_pair)


def make_pair():
    """((master fd, slave fd, path), (master fd, slave fd, path)), both raw."""
    from ..link.transport import pty_pair
    return pty_pair(), pty_pair()


def relay(a_master, b_master, stop=lambda: False, timeout_s=0.2):
    """Copy bytes between the two masters until ``stop()``; a side with no
    reader keeps its bytes in the kernel (a port that is not open yet)."""
    peer = {a_master: b_master, b_master: a_master}
    while not stop():
        ready, _, _ = select.select(list(peer), [], [], timeout_s)
        for fd in ready:
            try:
                data = os.read(fd, CHUNK)
            except OSError:  # the program on that side closed its port: wait for the next
                continue
            if data:
                os.write(peer[fd], data)


def cmd_pty_pair(args):
    (am, as_, a_path), (bm, bs, b_path) = make_pair()
    if args.ports_file:
        try:
            with open(args.ports_file, "x", encoding="utf-8") as f:
                f.write(f"{a_path}\n{b_path}\n")
        except FileExistsError:
            raise BadInput(f"--ports-file {args.ports_file} exists; give a new name") from None
        except OSError as exc:
            raise BadInput(f"--ports-file {args.ports_file}: {exc.strerror}") from None
    print(f"{a_path} <-> {b_path}: give one port to a clock (hallclock device --port "
          f"{a_path} ...), the other to the logger (hallclock log --port {b_path} ...). "
          "Ctrl-C ends the pair.", flush=True)
    try:
        relay(am, bm)
    except KeyboardInterrupt:
        pass
    finally:
        for fd in (am, as_, bm, bs):
            os.close(fd)
    print("pty-pair: closed", file=sys.stderr)
    return 0
