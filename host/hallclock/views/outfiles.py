"""Files a command writes (CSV, plot, the demo's files): every output is
checked before any is written, and none replaces an existing file unless
the user said ``--force`` (docs/host.md, "Nothing written over").

Never, not even with ``--force``:
- an output that is one of the command's own inputs (``report log.jsonl
  --csv log.jsonl``), or two outputs on one path;
- an output onto a hallclock log: logs are appended to, never overwritten.

A file is written whole or not at all: into a temporary file beside it,
fsync'd, then put in place (``link`` without ``--force``, so a file that
appeared meanwhile is not replaced either; ``replace`` with it).
"""
import errno
import os
import tempfile

from ..errors import BadInput
from ..link.logfile import looks_like_log

NO_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK)


def _same(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(outputs, inputs=(), force=False):
    """``outputs``: [(option, path)], e.g. [("--csv", "x.csv")]; ``inputs``:
    paths the command reads.  Raises BadInput naming the file and why."""
    seen = []
    for option, path in outputs:
        path = os.fspath(path)
        if not path:
            raise BadInput(f"{option}: give a file name")
        for src in inputs:
            if _same(path, src):
                raise BadInput(f"{option} {path}: that is the input {src} itself; "
                               "choose another file name")
        for other_option, other in seen:
            if _same(path, other):
                raise BadInput(f"{option} {path}: {other_option} writes that file too; "
                               "give each output its own name")
        if os.path.isdir(path):
            raise BadInput(f"{option} {path}: is a folder; give a file name")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise BadInput(f"{option} {path}: the folder {folder} does not exist")
        if not os.access(folder, os.W_OK):
            raise BadInput(f"{option} {path}: cannot write into the folder {folder} "
                           "(permission denied)")
        if os.path.lexists(path):
            if looks_like_log(path):
                raise BadInput(f"{option} {path}: that file is a hallclock log, and a log "
                               "is never overwritten; choose another file name")
            if not force:
                raise BadInput(f"{option} {path}: the file exists; give --force to replace "
                               "it, or choose another file name")
        seen.append((option, path))


def write_file(path, write, force=False, binary=False, what="file"):
    """Write ``path`` whole: ``write(f)`` fills a temporary file beside it,
    which then takes the name (without ``force``: only if the name is still
    free).  OSError becomes BadInput naming the file."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".hallclock-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {
                "encoding": "utf-8", "newline": ""})) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if force:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise BadInput(f"{path}: the file appeared while the {what} was being "
                               "written; give --force to replace it") from None
            except OSError as exc:
                if exc.errno not in NO_LINKS:
                    raise
                # a filesystem without hard links (FAT on a USB stick)
                if os.path.lexists(path):
                    raise BadInput(f"{path}: the file exists; give --force to replace it")
                os.replace(tmp, path)
                tmp = None
            if tmp is not None:
                os.unlink(tmp)
        tmp = None
    except OSError as exc:
        raise BadInput(f"{path}: cannot write the {what} ({exc.strerror})") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
