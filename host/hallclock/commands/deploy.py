"""``hallclock deploy``: the firmware, and each board's own hallclock.cfg, on
every board at once (docs/hardware.md "Ten clocks").

Per board, in parallel (one thread and one mpremote at a time per board):
the running clock hands its console back (``maintenance``); the board's files
are read with their SHA-256 (``boardinfo``); only the files that differ are
copied, stale firmware files removed; every file is checked back by hash; the
firmware and MicroPython versions are read; the board is reset into the
clock.  One line per board: done, or the step that failed, why, and what to
do.  A board that fails leaves the others done, and running deploy again
copies only what is not there yet."""
import concurrent.futures
import hashlib
import os
import sys
import tempfile
import threading
from pathlib import Path

from ..errors import BadInput, HallclockError, shown

ADVICE = {
    "open": "check the port ('hallclock ports') and the USB cable, then run deploy again",
    "console": "is MicroPython on it? ('make flash PORT=...'), then run deploy again",
    "cfg": "write it with 'hallclock fleet-config', or name the clock in the ports file",
    "read": "check the USB cable, then run deploy again",
    "copy": "check the USB cable, then run deploy again (it copies only what is missing)",
    "check": "run deploy again (it copies only what differs); if it stays, the board's "
             "flash may be full or failing",
    "version": "run deploy again; if it stays, wipe the board (make erase, make flash)",
    "reset": "press the board's EN button (or unplug it and plug it in)",
}


GROUP = "prepare"  # the director's task (hallclock.cliopts.GROUPS)

def register(sub):
    p = sub.add_parser("deploy", help="put the firmware and each board's cfg on every board "
                       "at once, checked back")
    p.add_argument("--port", action="append", default=[], metavar="P",
                   help="a board's serial port (repeatable)")
    p.add_argument("--ports-file", metavar="F",
                   help="the boards' ports, one a line: 'PORT' or 'PORT CLOCK' (# comments)")
    p.add_argument("--cfg-dir", metavar="DIR",
                   help="DIR/<clock>.cfg becomes each board's hallclock.cfg (fleet-config "
                   "writes them); the clock is the ports file's name, else the board's own")
    p.add_argument("--wait-s", type=float, default=3.0, metavar="S",
                   help="how long a clock may take to hand its console back (default 3)")
    p.set_defaults(func=cmd_deploy)


def read_ports(ports, ports_file):
    """[(port, clock or None)] from --port and --ports-file, each port once."""
    out = [(p, None) for p in ports]
    if ports_file:
        try:
            with open(ports_file, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise BadInput(f"--ports-file {ports_file}: cannot read it ({exc.strerror})") \
                from None
        from hallclock_fw.names import name_error
        for n, raw in enumerate(text.splitlines(), 1):
            words = raw.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) > 2:
                raise BadInput(f"{ports_file}:{n}: give 'PORT' or 'PORT CLOCK', not {raw!r}")
            clock = words[1] if len(words) == 2 else None
            if clock is not None and name_error(clock):
                raise BadInput(f"{ports_file}:{n}: clock name {clock!r}: {name_error(clock)}")
            out.append((words[0], clock))
    if not out:
        raise BadInput("deploy: give the boards: --port P (repeatable) or --ports-file F")
    seen = set()
    for port, _clock in out:
        if port in seen:
            raise BadInput(f"deploy: port {port} is given twice")
        seen.add(port)
    named = [c for _p, c in out if c]
    if len(set(named)) != len(named):
        raise BadInput("deploy: a clock name is given to two ports")
    return out


def tls_ca_file(cfg_path):
    """The file a cfg's ``tls_ca_file`` line names (a TLS clock), or None."""
    for line in Path(cfg_path).read_text(encoding="utf-8").splitlines():
        key, eq, value = line.split("#", 1)[0].partition("=")
        if eq and key.strip() == "tls_ca_file" and value.strip():
            return value.strip()
    return None


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def stage_firmware(folder):
    """The build (.mpy, as 'make firmware') in ``folder``: {board path: local path}."""
    from ..vboard.mpvm.files import FIRMWARE, firmware_mpy
    files = {}
    for rel, data in firmware_mpy().items():
        local = Path(folder) / rel
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(data)
        files[rel] = local
    for entry in ("main.py", "boot.py"):
        src = FIRMWARE.parent / entry
        if src.exists():
            files[entry] = src
    return files


class Board:
    """One board's deploy; ``run`` never raises, it sets ``ok`` and ``line``."""

    def __init__(self, port, clock, cfg_dir, firmware, wait_s, say):
        self.port = port
        self.clock = clock
        self.cfg_dir = cfg_dir
        self.firmware = dict(firmware)
        self.wait_s = wait_s
        self.say = say
        self.ok = False
        self.line = ""

    def run(self):
        try:
            self.line = self._deploy()
            self.ok = True
        except HallclockError as exc:
            step = getattr(exc, "step", "copy")
            who = f"{self.clock} ({self.port})" if self.clock else self.port
            self.line = (f"{who}: FAILED at {step}: {exc} -- {ADVICE.get(step, '')}")
        except Exception as exc:  # noqa: BLE001 (one board's trouble stays its own)
            who = f"{self.clock} ({self.port})" if self.clock else self.port
            self.line = f"{who}: FAILED: {type(exc).__name__}: {exc} -- {ADVICE['copy']}"

    def _deploy(self):
        from hallclock_fw import VERSION

        from . import _boardinfo as boardinfo
        from ._boardinfo import BoardError, mpremote
        boardinfo.hand_back(self.port, self.wait_s)
        info = boardinfo.read(self.port)
        if self.clock is None:
            self.clock = info.get("clock")
        wanted = dict(self.firmware)
        if self.cfg_dir:
            if not self.clock:
                raise BoardError("cfg", "the board has no clock name")
            cfg = Path(self.cfg_dir) / f"{self.clock}.cfg"
            if not cfg.is_file():
                raise BoardError("cfg", f"no {cfg} for clock {self.clock}")
            wanted["hallclock.cfg"] = cfg
            ca = tls_ca_file(cfg)
            if ca is not None:  # a TLS clock: the hall's CA it pins, beside its cfg
                from hallclock_fw.names import name_error
                if name_error(ca) is not None:  # as the clock: a file name, no path
                    raise BoardError("cfg", f"{cfg}: tls_ca_file {ca!r} is not a file name")
                if not (Path(self.cfg_dir) / ca).is_file():
                    raise BoardError("cfg", f"{cfg} names tls_ca_file {ca}, which is not in "
                                     f"{self.cfg_dir} (broker-config --tls-clocks writes it)")
                wanted[ca] = Path(self.cfg_dir) / ca
        local = {rel: sha256(Path(p).read_bytes()) for rel, p in wanted.items()}
        remote = info["files"]
        todo = sorted(rel for rel in wanted if remote.get(rel) != local[rel])
        stale = sorted(rel for rel in remote
                       if rel not in wanted and (rel.startswith("hallclock_fw/")
                                                 or rel == "boot.py"))
        dirs = set(info.get("dirs", []))
        need = sorted({str(Path(rel).parent) for rel in todo} - dirs - {"."},
                      key=lambda d: (d.count("/"), d))
        chain = []
        for d in need:
            for i in range(d.count("/") + 1):  # parents first
                part = "/".join(d.split("/")[:i + 1])
                if part not in dirs:
                    dirs.add(part)
                    chain += ["fs", "mkdir", ":" + part, "+"]
        for rel in todo:
            chain += ["fs", "cp", str(wanted[rel]), ":" + rel, "+"]
        for rel in stale:
            chain += ["fs", "rm", ":" + rel, "+"]
        if chain:
            self.say(f"{self.port}: copying {len(todo)} files ({len(wanted) - len(todo)} "
                     f"up to date), removing {len(stale)}")
            mpremote(self.port, *chain[:-1], step="copy")
        after = boardinfo.read(self.port)
        bad = sorted(rel for rel in wanted if after["files"].get(rel) != local[rel])
        if bad:
            raise BoardError("check", f"{len(bad)} file(s) differ on the board after the copy "
                             f"({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''})")
        if after.get("firmware") != VERSION:
            raise BoardError("version", f"the board's firmware says {after.get('firmware')!r},"
                             f" not {VERSION}")
        mpremote(self.port, "reset", step="reset")
        return (f"{self.clock or '?'} ({self.port}): done -- firmware {after['firmware']}, "
                f"MicroPython {after['micropython']}; {len(todo)} files copied, "
                f"{len(wanted) - len(todo)} up to date"
                + (f", {len(stale)} stale removed" if stale else ""))


def cmd_deploy(args):
    boards = read_ports(args.port, args.ports_file)
    if args.cfg_dir and not os.path.isdir(args.cfg_dir):
        raise BadInput(f"--cfg-dir {args.cfg_dir}: no such folder (write it with "
                       "'hallclock fleet-config --out DIR')")
    if args.cfg_dir:
        for _port, clock in boards:
            if clock and not os.path.isfile(os.path.join(args.cfg_dir, f"{clock}.cfg")):
                raise BadInput(f"--cfg-dir {args.cfg_dir}: no {clock}.cfg (fleet-config "
                               f"--clocks ... writes it); nothing was deployed")
    if not args.wait_s > 0 or args.wait_s > 60:
        raise BadInput(f"--wait-s {args.wait_s:g}: give a time above 0 and at most 60 s")
    lock = threading.Lock()

    def say(text):
        with lock:
            print(text, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="hallclock-deploy-") as tmp:
        firmware = stage_firmware(tmp)
        jobs = [Board(port, clock, args.cfg_dir, firmware, args.wait_s, say)
                for port, clock in boards]
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            list(pool.map(lambda b: b.run(), jobs))
    for b in jobs:
        print(shown(b.line))
    done = sum(b.ok for b in jobs)
    print(f"{done} of {len(jobs)} boards done" + (
        "" if done == len(jobs) else "; run the same deploy again for the others "
        "(the boards done are only checked)"))
    return 0 if done == len(jobs) else 1
