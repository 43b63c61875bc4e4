"""A virtual MicroPython board behind a pseudo-terminal, for mpremote & co.

    python -m hallclock.mpvm.board [--heap BYTES]

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
  ``MPY: soft reboot`` and comes back in the same REPL mode.

Code runs synchronously: a program that never returns hangs the board
(Ctrl-C cannot interrupt it).  Prints use "\\n", not "\\r\\n".
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

from . import DEFAULT_HEAP_BYTES, DEFAULT_PYSTACK_WORDS, ERRNO_FIX_CODE, _Node, MPVMError

RAW_PASTE_WINDOW = 128
SOFT_REBOOT = b"MPY: soft reboot\r\n"
RAW_PROMPT = b"raw REPL; CTRL-B to exit\r\n>"


class VirtualBoard:
    """Owns a pty pair and a VM; ``serve_forever()`` relays between them."""

    def __init__(self, heap_bytes: int = DEFAULT_HEAP_BYTES, timeout: float = 600.0,
                 pystack_words: int = DEFAULT_PYSTACK_WORDS, trace=None):
        self.trace = trace          # text file: log of the pty traffic, or None
        self._node = _Node(heap_bytes, pystack_words, timeout)
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self.raw = False            # REPL mode we believe the VM is in
        self.raw_line_empty = True  # raw REPL line buffer is empty (start of a command)
        self.esc = b""              # held bytes of a possible raw-paste request
        self.paste: Optional[bytearray] = None
        self.fwd = bytearray()      # bytes waiting to go to the VM's REPL
        self._prepare_vm()
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
        self._write(out)
        if flags & 1:
            self._soft_reset()

    def _soft_reset(self) -> None:
        self._repl("Z")
        self._prepare_vm()
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
        self._write(out)
        self.raw_line_empty = True
        if flags & 1:
            self._soft_reset()

    def feed(self, data: bytes) -> None:
        if self.trace is not None:
            self.trace.write(f">> {data!r}\n")
            self.trace.flush()
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

    def serve_forever(self) -> None:
        while True:
            r, _, _ = select.select([self.master], [], [])
            if not r:
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:
                continue
            if data:
                self.feed(data)

    def close(self) -> None:
        self._node.close()
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hallclock.mpvm.board",
                                 description="Serve a virtual MicroPython board on a new pty; "
                                             "prints the pty path on the first line.")
    ap.add_argument("--heap", type=int, default=DEFAULT_HEAP_BYTES,
                    help="initial MicroPython GC heap in bytes (it grows on demand)")
    ap.add_argument("--trace", metavar="FILE",
                    help="log every byte read from / written to the pty to FILE")
    args = ap.parse_args(argv)
    trace = open(args.trace, "w", encoding="utf-8") if args.trace else None
    try:
        board = VirtualBoard(heap_bytes=args.heap, trace=trace)
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
