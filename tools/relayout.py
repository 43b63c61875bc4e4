#!/usr/bin/env python3
"""Move the host package's modules into packages by concern, and rewrite
every reference to them.

    python3 tools/relayout.py          # move and rewrite (idempotent)
    python3 tools/relayout.py --check  # list what would change, change nothing

TABLE maps an OLD dotted module (or package, or a folder of page files) to
its NEW dotted place.  For each row whose file (``host/hallclock/old.py``) or
folder (``host/hallclock/old/``) still exists at the old place, the script
``git mv``s it; then it rewrites, in every tracked text file (host/, tests/,
bench/, docs/, tools/, mk/, Makefile, README.md, pyproject.toml ...):

- dotted names: ``hallclock.old`` and ``hallclock.old.x`` (imports, strings
  run inside the VMs, mock targets, prose);
- ``from hallclock import old, other`` (split by new package; a module whose
  name changes keeps its local name with ``as``);
- relative imports inside host/hallclock (``from .old import x``,
  ``from . import old``, ``from ..old import x``), recomputed from each
  file's new place;
- path forms ``hallclock/old.py``, ``hallclock/old/...``, and the
  package-data globs of pyproject.toml.

A second run changes nothing; a run after other branches are merged moves
the files they left at old places and fixes the references they added.  To
extend it, add rows to TABLE (a package in PACKAGES gets an ``__init__.py``
with its docstring if it has none).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = os.path.join(ROOT, "host")
SELF = os.path.relpath(os.path.abspath(__file__), ROOT)

# OLD dotted name -> NEW dotted name
TABLE = [
    # the link and the log
    ("hallclock.transport", "hallclock.link.transport"),
    ("hallclock.hostlink", "hallclock.link.hostlink"),
    ("hallclock.logger", "hallclock.link.logger"),
    ("hallclock.logfile", "hallclock.link.logfile"),
    # the virtual board and the VMs
    ("hallclock.virtual", "hallclock.vboard.device"),
    ("hallclock.vdev", "hallclock.vboard.vdev"),
    ("hallclock.mpdevice", "hallclock.vboard.wasm"),
    ("hallclock.mpunix", "hallclock.vboard.unixport"),
    ("hallclock.mpvm", "hallclock.vboard.mpvm"),
    # the views and reports
    ("hallclock.model", "hallclock.views.model"),
    ("hallclock.modes", "hallclock.views.modes"),
    ("hallclock.liveview", "hallclock.views.liveview"),
    ("hallclock.report", "hallclock.views.report"),
    ("hallclock.roundreport", "hallclock.views.roundreport"),
    ("hallclock.outfiles", "hallclock.views.outfiles"),
    # the network
    ("hallclock.broker", "hallclock.net.broker"),
    ("hallclock.mqtthost", "hallclock.net.mqtt"),
    ("hallclock.tlsca", "hallclock.net.tls"),
    # the hall and the round
    ("hallclock.relay", "hallclock.hall.relay"),
    ("hallclock.roundctl", "hallclock.hall.round"),
    ("hallclock.central", "hallclock.hall.configure"),
    ("hallclock.refconsole", "hallclock.hall.referee"),
    ("hallclock.projector", "hallclock.hall.display"),
    ("hallclock.webserve", "hallclock.hall.webserver"),
    ("hallclock.web", "hallclock.hall.web"),  # the pages' files (a folder)
    ("hallclock.mqtthall", "hallclock.hall.netsim"),
    # modules the other work of the same round added at the top
    ("hallclock.health", "hallclock.link.health"),  # the health event's fields (hostlink)
    ("hallclock.heapmodel", "hallclock.vboard.heapmodel"),  # the board's heap, in the VMs
    ("hallclock.figures", "hallclock.views.figures"),  # every figure of a game, once
    ("hallclock.words", "hallclock.views.words"),  # the rules' vocabulary on screen
    ("hallclock.netseal", "hallclock.net.seal"),  # the host's end of the sealed frames
    ("hallclock.boardinfo", "hallclock.commands._boardinfo"),  # mpremote's board query
]

PACKAGES = {
    "hallclock.link": (
        "The link and the log: the serial ports (transport), the host's end of the\n"
        "frame protocol for one stream (hostlink: check, store once, acknowledge\n"
        "what is stored, ask for what is missing, restore), the logger that polls\n"
        "every port into one log (logger), and the JSON Lines log file itself\n"
        "(logfile: appended and fsync'd, read back, tailed as it grows).  Below\n"
        "everything but errors and catalog: it knows frames and records, no view."),
    "hallclock.vboard": (
        "The virtual board and the VMs: the firmware's own App on fake hardware\n"
        "(vdev, MicroPython-compatible: the scenario Runner, the fakes, the one\n"
        "pump and its lines), run on the host (device: the pty line, the device\n"
        "thread, simulate), inside the webassembly VM (wasm, on mpvm) or as its\n"
        "own unix-port process (unixport).  It uses the link (a simulation logs\n"
        "through the real logger); nothing here knows a view or the hall."),
    "hallclock.views": (
        "The views and reports: the host's model of a clock (its records replayed\n"
        "into the firmware's own core, also what a restore sends back), the mode\n"
        "registry on the host side (modes), the live view of the logger, the\n"
        "report of one log and the round's report, and their output files.\n"
        "They read logs (the link) and the virtual board's fakes; never a port."),
    "hallclock.net": (
        "The hall network: the Mosquitto broker's configuration and credentials\n"
        "(broker), the host's MQTT side (mqtt: the paho client, the logger and\n"
        "the viewers over it, a virtual clock's link to the broker, the unix-port\n"
        "clock on the network) and the hall's TLS certificates (tls)."),
    "hallclock.hall": (
        "The hall and the round: the relay of the referee's signals to every\n"
        "table (relay), running a round (round), configuring clocks over their\n"
        "ports or the broker (configure), the web pages (webserver, referee:\n"
        "the referee's console, display: the hall display) and the virtual hall\n"
        "on the network (netsim).  The top of the house below the commands."),
}

TEXT_EXT = (".py", ".md", ".toml", ".mk", ".txt", ".cfg", ".ini", ".sh", ".yml", ".yaml",
            ".html", ".js", ".mjs", ".css")
TEXT_NAMES = ("Makefile", "run")


def sh(*args):
    return subprocess.run(args, cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout


def mapped(name):
    """A dotted name under its new place (prefix rows), or itself."""
    for old, new in TABLE:
        if name == old or name.startswith(old + "."):
            return new + name[len(old):]
    return name


def path_of(dotted):
    return os.path.join(HOST, *dotted.split("."))


# -- moving ---------------------------------------------------------------------
def ensure_package(dotted, dry):
    init = os.path.join(path_of(dotted), "__init__.py")
    if os.path.exists(init):
        return False
    if not dry:
        os.makedirs(os.path.dirname(init), exist_ok=True)
        with open(init, "w") as f:
            f.write('"""' + PACKAGES.get(dotted, dotted) + '"""\n')
        sh("git", "add", os.path.relpath(init, ROOT))
    return True


def move(dry):
    moved = []
    for old, new in TABLE:
        src = path_of(old)
        for suffix in (".py", ""):
            s = src + suffix
            if suffix == "" and not os.path.isdir(s):
                continue
            if suffix and not os.path.isfile(s):
                continue
            dst = path_of(new) + suffix
            parent = new.rsplit(".", 1)[0]
            if parent != "hallclock":
                ensure_package(parent, dry)
            if suffix == "" and os.path.isdir(dst):
                # a folder already moved, with files another branch added at
                # the old place since: move those one by one
                for rel in sh("git", "ls-files", os.path.relpath(s, ROOT)).splitlines():
                    there = os.path.join(dst, os.path.relpath(os.path.join(ROOT, rel), s))
                    if os.path.exists(there):
                        raise SystemExit(f"relayout: both {rel} and {there} exist: "
                                         "merge them by hand")
                    moved.append((rel, os.path.relpath(there, ROOT)))
                    if not dry:
                        os.makedirs(os.path.dirname(there), exist_ok=True)
                        sh("git", "mv", rel, os.path.relpath(there, ROOT))
                continue
            moved.append((os.path.relpath(s, ROOT), os.path.relpath(dst, ROOT)))
            if dry:
                continue
            if os.path.exists(dst):
                raise SystemExit(f"relayout: both {s} and {dst} exist: merge them by hand")
            sh("git", "mv", os.path.relpath(s, ROOT), os.path.relpath(dst, ROOT))
    for pkg in PACKAGES:
        ensure_package(pkg, dry)
    return moved


# -- rewriting ------------------------------------------------------------------
def _dotted(text):
    for old, new in TABLE:
        text = re.sub(r"(?<![\w.])" + re.escape(old) + r"(?![\w])", new, text)
    return text


def _paths(text):
    for old, new in TABLE:
        o = old.replace(".", "/")
        n = new.replace(".", "/")
        text = re.sub(r"(?<![\w/])" + re.escape(o) + r"(?=\.py\b|/|(?![\w.]))", n, text)
        text = re.sub(r"(?<![\w/])host/" + re.escape(o) + r"(?=\.py\b|/|(?![\w.]))",
                      "host/" + n, text)
    return text


IMPORT = re.compile(r"^(?P<indent>[ \t]*)from (?P<dots>\.*)(?P<mod>[\w.]*) import "
                    r"(?P<names>\([^)]*\)|[^\n#]*?)(?P<tail>[ \t]*(#[^\n]*)?)$", re.M)


def _names(text):
    text = text.strip()
    if text.startswith("("):
        text = text[1:-1]
    out = []
    for part in text.replace("\n", " ").split(","):
        part = part.strip()
        if not part:
            continue
        bits = part.split()
        out.append((bits[0], bits[2] if len(bits) == 3 and bits[1] == "as" else None))
    return out


def _relative(pkg, target):
    """``from X import`` text for absolute ``target`` seen from package ``pkg``."""
    p, t = pkg.split("."), target.split(".")
    common = 0
    while common < min(len(p), len(t)) and p[common] == t[common]:
        common += 1
    if common == 0:
        return target
    dots = "." * (len(p) - common + 1)
    return dots + ".".join(t[common:])


def _is_module(dotted):
    base = path_of(mapped(dotted))
    return os.path.isfile(base + ".py") or os.path.isdir(base) or \
        any(dotted == old for old, _ in TABLE)


def _rewrite_imports(text, here_pkg, there_pkg):
    """Imports of ``from`` form: ``here_pkg`` resolves relative ones (the file's
    package now), ``there_pkg`` is where the file ends up (None: absolute file
    outside the package, relative imports left alone)."""
    def repl(m):
        dots, mod, names = m.group("dots"), m.group("mod"), m.group("names")
        if dots:
            if here_pkg is None:
                return m.group(0)
            base = here_pkg.split(".")
            base = base[:len(base) - (len(dots) - 1)]
            absolute = ".".join(base + ([mod] if mod else []))
        else:
            absolute = mod
        if absolute != "hallclock" and not absolute.startswith("hallclock."):
            return m.group(0)
        ind, tail = m.group("indent"), m.group("tail")

        def spell(target):
            return _relative(there_pkg, target) if dots else target

        if absolute == "hallclock" or (mapped(absolute) == absolute and absolute in PACKAGE_SET):
            # from <package> import a, b: each a module (moved?) or a name
            groups = {}
            order = []
            for name, alias in _names(names):
                full = absolute + "." + name
                if _is_module(full):
                    new = mapped(full)
                    parent, leaf = new.rsplit(".", 1)
                    local = alias or name
                    item = leaf if local == leaf else f"{leaf} as {local}"
                else:
                    parent, item = absolute, name if alias is None else f"{name} as {alias}"
                if parent not in groups:
                    groups[parent] = []
                    order.append(parent)
                groups[parent].append(item)
            if len(order) == 1 and order[0] == absolute and not dots:
                return m.group(0)
            lines = []
            for i, parent in enumerate(order):
                lines.append(f"{ind}from {spell(parent)} import {', '.join(groups[parent])}"
                             + (tail if i == len(order) - 1 else ""))
            return "\n".join(lines)
        target = mapped(absolute)
        if not dots and target == absolute:
            return m.group(0)
        new = f"{ind}from {spell(target)} import {names}{tail}"
        return new
    return IMPORT.sub(repl, text)


PACKAGE_SET = set()


def module_of(rel):
    """host/hallclock/a/b.py -> (dotted module, its package), or (None, None)."""
    if not rel.startswith("host/hallclock/") or not rel.endswith(".py"):
        return None, None
    parts = rel[len("host/"):-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def tracked():
    files = sh("git", "ls-files").splitlines()
    for rel in files:
        if rel == SELF or not os.path.isfile(os.path.join(ROOT, rel)):
            continue
        name = os.path.basename(rel)
        if name.endswith(TEXT_EXT) or name in TEXT_NAMES:
            yield rel


def rewrite(dry, moved):
    """Rewrite every tracked text file; ``moved``: (old path, new path) of
    this run's moves (already done), so a file's package before the move is
    known for its relative imports."""
    before = {new: old for old, new in moved}
    for pkg in [new.rsplit(".", 1)[0] for _o, new in TABLE] + [o for o, _n in TABLE]:
        PACKAGE_SET.add(pkg)
    PACKAGE_SET.update(PACKAGES)
    changed = []
    for rel in tracked():
        with open(os.path.join(ROOT, rel), encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        new = text
        if rel.endswith(".py"):
            here_rel = rel
            for new_dir_or_file, old in before.items():
                if rel == new_dir_or_file or rel.startswith(new_dir_or_file + "/"):
                    here_rel = old + rel[len(new_dir_or_file):]
            _m, here_pkg = module_of(here_rel)
            _m2, there_pkg = module_of(rel)
            new = _rewrite_imports(new, here_pkg, there_pkg)
        new = _dotted(new)
        new = _paths(new)
        if rel == "pyproject.toml":
            new = _package_data(new)
        if new != text:
            changed.append(rel)
            if not dry:
                with open(os.path.join(ROOT, rel), "w", encoding="utf-8",
                          errors="surrogateescape") as f:
                    f.write(new)
    return changed


def _package_data(text):
    def fix(m):
        line = m.group(0)
        for old, new in TABLE:
            o = old[len("hallclock."):].replace(".", "/")
            n = new[len("hallclock."):].replace(".", "/")
            line = line.replace(f'"{o}/', f'"{n}/')
        return line
    return re.sub(r"^hallclock = \[.*\]$", fix, text, flags=re.M)


def main(argv):
    dry = "--check" in argv
    moved = move(dry)
    changed = rewrite(dry, [] if dry else moved)
    for old, new in moved:
        print(f"{'would move' if dry else 'moved'} {old} -> {new}")
    for rel in changed:
        print(f"{'would rewrite' if dry else 'rewrote'} {rel}")
    if not moved and not changed:
        print("relayout: nothing to do")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
