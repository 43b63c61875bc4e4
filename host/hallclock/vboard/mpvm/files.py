"""The files a MicroPython VM needs to run a clock: the firmware as the
``.mpy`` files mpy-cross builds (the same compiler and flags as ``make
firmware``), cached by the sources' digest, and the virtual-device package
(``hallclock.vboard.vdev``, MicroPython-compatible) at its own dotted place, so the
same ``import`` lines work inside the VM as on the host; beside it the host's
frame builders (``hallclock.hostframes``), whose C frame the runner sends."""
import hashlib
import os
import tempfile
from pathlib import Path

from ...errors import HallclockError
from .checks import build_mpy

FIRMWARE = Path(__import__("hallclock_fw").__file__).resolve().parent
VDEV = Path(__file__).resolve().parents[1] / "vdev"  # the package's folder on the host
VDEV_PACKAGE = "hallclock.vboard.vdev"  # ... and its dotted name, in the VM as here
HOSTFRAMES = VDEV.parents[1] / "hostframes.py"  # hallclock/hostframes.py, in the VM as here
HOSTFRAMES_PATH = "hallclock/hostframes.py"


def source_digest(root):
    """The digest of a folder's modules (or of one module)."""
    h = hashlib.sha256()
    for p in [root] if root.is_file() else sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def firmware_mpy():
    """{path in the VM: bytes} of the firmware built with mpy-cross (cached by
    the sources' digest, so repeated runs do not recompile)."""
    cache_root = Path(os.environ.get("HALLCLOCK_CACHE", Path(tempfile.gettempdir()) /
                                     "hallclock-mpy-cache"))
    out = cache_root / source_digest(FIRMWARE) / "hallclock_fw"
    if not (out / "__init__.mpy").exists():
        tmp = out.parent / f"tmp-{os.getpid()}"
        result = build_mpy(FIRMWARE, tmp / "hallclock_fw")
        if not result.ok:
            first = result.errors[0].strip().splitlines()[0] if result.errors else "?"
            raise HallclockError(f"the firmware does not compile with mpy-cross: {first} "
                                 "(fix it, or run 'make firmware' to see every error)")
        try:
            os.replace(tmp / "hallclock_fw", out)
        except OSError:
            pass  # another process built it first
    return {f"hallclock_fw/{p.relative_to(out)}": p.read_bytes()
            for p in sorted(out.rglob("*.mpy"))}


def vdev_folder():
    """The virtual-device package's path in the VM (``hallclock/vboard/vdev``)."""
    return VDEV_PACKAGE.replace(".", "/")


def package_inits():
    """{path: ""}: the (empty) ``__init__.py`` of each package above it."""
    parts = VDEV_PACKAGE.split(".")
    return {"/".join(parts[:i]) + "/__init__.py": "" for i in range(1, len(parts))}


def vdev_sources():
    files = package_inits()
    for p in sorted(VDEV.glob("*.py")):
        files[f"{vdev_folder()}/{p.name}"] = p.read_text()
    files[HOSTFRAMES_PATH] = HOSTFRAMES.read_text()
    return files


def device_files():
    files = firmware_mpy()
    files.update(vdev_sources())
    return files
