"""What a board holds, asked through mpremote (the board's REPL): the
firmware's files with their SHA-256, the firmware version
(``hallclock_fw.VERSION``), the MicroPython version, and the clock name its
hallclock.cfg gives (or the firmware's default, ``clock-`` and the last three
bytes of the chip id).  Used by ``deploy`` (to copy only what differs and to
check every file back) and by ``ports --versions``.

A running clock keeps its console (its keyboard interrupt is off), so the
clock is first asked to hand it back (``maintenance``); ``reset`` starts the
clock again afterwards.
"""
import json
import select
import subprocess
import sys
import time

from ..errors import HallclockError, shown

MPREMOTE_TIMEOUT_S = 120
# Run on the board (MicroPython): one line "@@{json}".
INFO_PY = r"""
import os, sys, hashlib, binascii, json
def _h(p):
    s = hashlib.sha256()
    f = open(p, 'rb')
    while True:
        b = f.read(512)
        if not b:
            break
        s.update(b)
    f.close()
    return binascii.hexlify(s.digest()).decode()
def _walk(d, files, dirs):
    try:
        entries = list(os.ilistdir(d))
    except OSError:
        return
    dirs.append(d)
    for e in entries:
        p = d + '/' + e[0]
        if e[1] & 0x4000:
            _walk(p, files, dirs)
        else:
            files[p] = _h(p)
files = {}
dirs = []
_walk('hallclock_fw', files, dirs)
for p in ('main.py', 'boot.py', 'hallclock.cfg'):
    try:
        files[p] = _h(p)
    except OSError:
        pass
fw = None
try:
    import hallclock_fw
    fw = hallclock_fw.VERSION
except Exception:
    pass
clock = None
try:
    for line in open('hallclock.cfg').read().split('\n'):
        k, _, v = line.split('#', 1)[0].partition('=')
        if k.strip() == 'clock':
            clock = v.strip()
        if k.strip() == 'tls_ca_file':  # a TLS clock's CA (deploy copies it)
            try:
                files[v.strip()] = _h(v.strip())
            except OSError:
                pass
except OSError:
    pass
if clock is None:
    try:
        import machine
        clock = 'clock-' + ''.join('%02x' % b for b in machine.unique_id()[-3:])
    except Exception:
        pass
v = sys.implementation.version
print('@@' + json.dumps({'files': files, 'dirs': dirs, 'firmware': fw, 'clock': clock,
      'micropython': '%d.%d.%d' % (v[0], v[1], v[2]),
      'machine': getattr(sys.implementation, '_machine', '')}))
"""


class BoardError(HallclockError):
    """A step on one board failed: ``step`` names it, the message says why."""

    def __init__(self, step, message):
        super().__init__(message)
        self.step = step


def mpremote(port, *args, step="mpremote"):
    """Run ``mpremote connect PORT ARGS…``; its stdout, or BoardError."""
    cmd = [sys.executable, "-m", "mpremote", "connect", port, *args]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=MPREMOTE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BoardError(step, f"mpremote got no answer within {MPREMOTE_TIMEOUT_S} s") \
            from None
    if res.returncode != 0:
        lines = [ln.strip() for ln in (res.stderr + res.stdout).splitlines() if ln.strip()]
        why = lines[-1] if lines else f"mpremote exited {res.returncode}"
        raise BoardError(step, why)
    return res.stdout.replace("\r\n", "\n")


HANDED_BACK = b"console handed back"
PROMPTS = (b">>> ", b"raw REPL; CTRL-B to exit")
RESEND_S = 0.5  # the frame again this often: noise on the line may eat one


def ask_console(path, wait_s=3.0):
    """Send the M frame until the REPL answers or ``wait_s`` passes; returns
    what was seen: "handed back", "repl" (no clock was running) or None."""
    from .. import hostframes

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
                port.write(b"\r\n" + hostframes.maintenance())
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


def hand_back(port, wait_s=3.0):
    """The clock's console back to the REPL; "handed back" or "repl", or BoardError."""
    ask = ask_console
    try:
        got = ask(port, wait_s)
    except HallclockError as exc:
        raise BoardError("open", str(exc)) from None
    except OSError as exc:
        raise BoardError("open", f"cannot open the port ({exc.strerror or exc})") from None
    if got is None:
        raise BoardError("console", f"no REPL answered within {wait_s:g} s (is MicroPython "
                         "on it? 'make flash' puts it there)")
    return got


def read(port):
    """The board's files, versions and clock name (the REPL must be free)."""
    out = mpremote(port, "exec", INFO_PY, step="read")
    for line in out.splitlines():
        if line.startswith("@@"):
            return json.loads(line[2:])
    raise BoardError("read", "the board did not answer the query (" +
                     (out.strip().splitlines() or ["no output"])[-1] + ")")


def query(port, wait_s=3.0):
    """Ask a board (running clock or REPL): its info; the board is reset
    afterwards when a clock was running, so the clock starts again."""
    got = hand_back(port, wait_s)
    info = read(port)
    if got == "handed back":
        mpremote(port, "reset", step="reset")
    return info


def versions_lines(ports, wait_s=3.0):
    """``ports --versions``: one line per board (asked in parallel):
    ``PORT  clock NAME  firmware V  MicroPython V``, or why it could not be asked."""
    import concurrent.futures

    def ask(port):
        try:
            info = query(port, wait_s)
        except BoardError as exc:
            return f"{shown(port)}\tnot asked: {exc.step}: {shown(exc)}"
        fw = shown(info.get("firmware") or "none (run 'hallclock deploy')")
        # what the board says is shown escaped, field by field (tabs part them)
        return (f"{shown(port)}\tclock {shown(info.get('clock') or '?')}\tfirmware {fw}\t"
                f"MicroPython {shown(info.get('micropython'))}")
    if not ports:
        return []
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(ports)) as pool:
        return list(pool.map(ask, ports))
