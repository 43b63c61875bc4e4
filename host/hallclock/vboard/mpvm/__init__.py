"""Run code inside a real MicroPython VM (the webassembly port, under node).

The VM is the npm package ``@micropython/micropython-webassembly-pyscript``
installed by ``make setup`` (``npm ci --prefix tools/mpvm``).  Each VM lives in
a node process started from ``runner.mjs`` beside this file; Python talks to it
over the process's stdin/stdout with length-prefixed frames (see runner.mjs).

Facts about this port that callers should know (MicroPython 1.27.0):

* The GC heap starts at ``heap_bytes`` and *grows* on demand (split heap);
  garbage is collected only at top level, i.e. between two requests to the VM
  (after an ``exec``, after a ``step`` batch).  A ``gc.collect()`` inside a
  request only schedules that collection.  Use :meth:`VMProcess.heap_live`
  (or ``RunResult.heap_live``) for a live-heap figure: it is ``gc.mem_alloc()``
  right after a top-level collection.  ``gc.mem_free()`` is meaningless here.
* ``micropython.heap_lock()`` works (allocation raises MemoryError); never call
  ``heap_unlock()`` more often than ``heap_lock()``: the lock depth underflows
  and the next allocation hangs the VM (then the request times out).
* ``time.ticks_*`` wrap at 2**30 as on the ESP32.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Optional, Union

__all__ = [
    "DEFAULT_HEAP_BYTES",
    "MPVMError",
    "MPVMSetupError",
    "MicroPythonError",
    "VMTimeout",
    "VMCrash",
    "RunResult",
    "find_node_modules",
    "find_node",
    "run_code",
    "VMProcess",
]

NPM_PACKAGE = "@micropython/micropython-webassembly-pyscript"
DEFAULT_HEAP_BYTES = 256 * 1024
DEFAULT_PYSTACK_WORDS = 4096
RUNNER = Path(__file__).with_name("runner.mjs")

FileMap = Mapping[str, Union[str, bytes]]


class MPVMError(RuntimeError):
    """Base class of every error of this module."""


class MPVMSetupError(MPVMError):
    """node or the MicroPython npm package is missing."""


class VMTimeout(MPVMError):
    """The VM did not answer in time (the node process has been killed)."""


class VMCrash(MPVMError):
    """The node process died or the wasm instance aborted."""


class MicroPythonError(MPVMError):
    """Python code inside the VM raised.

    ``exc_type`` is the exception's type name (e.g. ``"ValueError"``),
    ``traceback`` the MicroPython traceback text, ``stdout`` what the VM had
    printed during the failing request.
    """

    def __init__(self, exc_type: str, traceback: str, stdout: str = ""):
        self.exc_type = exc_type
        self.traceback = traceback
        self.stdout = stdout
        super().__init__(f"MicroPython raised {exc_type}:\n{traceback.rstrip()}")


class RunResult(NamedTuple):
    stdout: str          # everything the code printed
    heap_live: int       # gc.mem_alloc() after a top-level gc.collect() once the code finished
    elapsed_s: float     # wall time of the exec request alone


# ---------------------------------------------------------------- locating things

def _repo_root() -> Optional[Path]:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "tools" / "mpvm" / "package.json").is_file():
            return parent
    return None


def find_node_modules() -> Path:
    """The node_modules directory holding the MicroPython npm package.

    ``$HALLCLOCK_MPVM_MODULES`` overrides; otherwise ``tools/mpvm/node_modules``
    of the repository this package lives in (or the current directory's).
    """
    env = os.environ.get("HALLCLOCK_MPVM_MODULES")
    candidates = []
    if env:
        candidates.append(Path(env))
    else:
        root = _repo_root()
        if root is not None:
            candidates.append(root / "tools" / "mpvm" / "node_modules")
        candidates.append(Path.cwd() / "tools" / "mpvm" / "node_modules")
    for c in candidates:
        if (c / NPM_PACKAGE / "micropython.mjs").is_file():
            return c.resolve()
    where = ", ".join(str(c) for c in candidates)
    raise MPVMSetupError(
        f"MicroPython VM not installed: {NPM_PACKAGE} not found in {where}. "
        "Run `make setup` (it runs `npm ci --prefix tools/mpvm`), "
        "or point HALLCLOCK_MPVM_MODULES at a node_modules directory holding it."
    )


def find_node() -> str:
    """Path of the node executable (``$HALLCLOCK_NODE`` overrides)."""
    env = os.environ.get("HALLCLOCK_NODE")
    node = env or shutil.which("node")
    if not node:
        raise MPVMSetupError("node (Node.js >= 18) not found on PATH; install it (see `make setup`)")
    return node


# ---------------------------------------------------------------- the process

def _pack_files(files: FileMap, root: str) -> bytes:
    parts = []
    for name, data in files.items():
        if isinstance(data, str):
            data = data.encode("utf-8")
        p = name if name.startswith("/") else root.rstrip("/") + "/" + name
        pb = p.encode("utf-8")
        parts.append(struct.pack("<H", len(pb)) + pb + struct.pack("<I", len(data)) + bytes(data))
    return b"".join(parts)


class _Node:
    """One node process running runner.mjs, with the framing on its pipes."""

    def __init__(self, heap_bytes: int, pystack_words: int, timeout: float):
        modules = find_node_modules()
        cmd = [find_node(), str(RUNNER), "--modules", str(modules),
               "--heapsize", str(int(heap_bytes)), "--pystack", str(int(pystack_words))]
        self.timeout = timeout
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0)
        self._out_fd = self.proc.stdout.fileno()
        self._buf = bytearray()
        self._stderr = bytearray()
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()
        self.closed = False

    def _drain_stderr(self):
        try:
            for chunk in iter(lambda: self.proc.stderr.read(4096), b""):
                self._stderr += chunk
                del self._stderr[:-16384]
        except (OSError, ValueError):
            pass

    def request(self, op: str, payload: bytes = b"", timeout: Optional[float] = None,
                on_print: Optional[Callable[[bytes], None]] = None) -> tuple[str, bytes, bytes]:
        """Send one request; return (reply op 'O'/'E', payload, printed bytes)."""
        if self.closed:
            raise VMCrash("VM process already closed")
        frame = op.encode("latin-1") + struct.pack("<I", len(payload)) + payload
        try:
            self.proc.stdin.write(frame)
        except (BrokenPipeError, OSError) as e:
            raise self._crash(f"cannot write to VM process: {e}") from None
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        printed = bytearray()
        while True:
            kind, body = self._read_frame(deadline)
            if kind == "P":
                printed += body
                if on_print is not None:
                    on_print(body)
                continue
            return kind, body, bytes(printed)

    def _read_frame(self, deadline: float) -> tuple[str, bytes]:
        while True:
            if len(self._buf) >= 5:
                (n,) = struct.unpack_from("<I", self._buf, 1)
                if len(self._buf) >= 5 + n:
                    kind = chr(self._buf[0])
                    body = bytes(self._buf[5:5 + n])
                    del self._buf[:5 + n]
                    return kind, body
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise VMTimeout("MicroPython VM did not answer in time (killed it)")
            r, _, _ = select.select([self._out_fd], [], [], left)
            if not r:
                continue
            chunk = os.read(self._out_fd, 1 << 16)
            if not chunk:
                raise self._crash("VM process exited")
            self._buf += chunk

    def fileno(self) -> int:
        """The process's reply pipe: readable between two requests only when it died."""
        return self._out_fd

    def check_alive(self) -> None:
        """Between two requests: raise VMCrash if the process has exited (its
        reply pipe at end of file); stray bytes are kept for the next request."""
        if self.closed:
            raise VMCrash("VM process already closed")
        r, _, _ = select.select([self._out_fd], [], [], 0)
        if r:
            chunk = os.read(self._out_fd, 1 << 16)
            if not chunk:
                raise self._crash("VM process exited")
            self._buf += chunk

    def _crash(self, what: str) -> VMCrash:
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()
        self._stderr_thread.join(timeout=1)
        self.closed = True
        err = bytes(self._stderr).decode("utf-8", "replace").strip()
        return VMCrash(f"{what} (exit status {self.proc.returncode})" + (f":\n{err}" if err else ""))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.closed = True

    def close(self):
        if not self.closed:
            try:
                self.proc.stdin.write(b"Q\x00\x00\x00\x00")
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        # the pipes too when the process died or was killed (a board that
        # resets its VM many times must not run out of descriptors)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass


def _raise_error(body: bytes, printed: bytes):
    text = body.decode("utf-8", "replace")
    exc_type, _, tb = text.partition("\n")
    # drop the frame of runner.mjs's exec wrapper (_mpvm_exec's inner "run")
    tb = re.sub(r'  File "<stdin>", line \d+, in run\r?\n(?=  File "<string>")', "", tb)
    if exc_type == "VMCrash":
        raise VMCrash(tb)
    raise MicroPythonError(exc_type, tb, printed.decode("utf-8", "replace"))


# ---------------------------------------------------------------- public API

class VMProcess:
    """A long-running MicroPython VM with files loaded and a stepping object.

    ``obj_expr`` (evaluated in ``__main__`` after ``init_code``) names an object
    with ``feed(data: bytes)``, ``step() -> int`` and ``take_output() -> bytes``.
    Usage::

        vm = VMProcess(files, init_code, obj_expr="runner")
        vm.feed(b"...")                  # queued, delivered with the next step()
        status, out = vm.step(1000)      # up to 1000 step() calls inside the VM

    ``step(n)`` returns at the first step that produced output or returned a
    non-zero status (or after n steps).  Prints inside the VM are collected in
    ``printed`` (bytes) and passed to ``on_print`` if given.
    """

    def __init__(self, files: FileMap, init_code: str = "", obj_expr: Optional[str] = "runner",
                 heap_bytes: int = DEFAULT_HEAP_BYTES, timeout: float = 60.0,
                 root: str = "/", pystack_words: int = DEFAULT_PYSTACK_WORDS,
                 on_print: Optional[Callable[[bytes], None]] = None, fix_errno: bool = True):
        self.on_print = on_print
        self.printed = bytearray()
        self._pending = bytearray()
        self._node = _Node(heap_bytes, pystack_words, timeout)
        try:
            if files:
                self._call("F", _pack_files(files, root))
            if fix_errno:
                self.exec(ERRNO_FIX_CODE)
            self.exec(_syspath_code(root))
            if init_code:
                self.exec(init_code)
            if obj_expr:
                self._call("B", obj_expr.encode("utf-8"))
        except BaseException:
            self._node.kill()
            raise

    def _call(self, op: str, payload: bytes = b"", timeout: Optional[float] = None) -> bytes:
        kind, body, printed = self._node.request(op, payload, timeout, self.on_print)
        self.printed += printed
        if kind == "E":
            _raise_error(body, printed)
        return body

    def exec(self, code: str, timeout: Optional[float] = None) -> str:
        """Run code at top level in ``__main__``; return what it printed."""
        start = len(self.printed)
        self._call("X", code.encode("utf-8"), timeout)
        return self.printed[start:].decode("utf-8", "replace")

    def write_files(self, files: FileMap, root: str = "/") -> None:
        self._call("F", _pack_files(files, root))

    def feed(self, data: bytes) -> None:
        """Queue bytes for the device; they are passed to obj.feed() before the next step."""
        self._pending += data

    def step(self, n: int = 1000, timeout: Optional[float] = None) -> tuple[int, bytes]:
        """Call obj.step() up to n times; return (last status, output bytes)."""
        payload = struct.pack("<I", n) + bytes(self._pending)
        self._pending.clear()
        body = self._call("S", payload, timeout)
        return body[0], body[1:]

    def heap_live(self) -> int:
        """gc.mem_alloc() right after a top-level gc.collect() (bytes in live objects)."""
        return int(self._call("H"))

    def close(self) -> None:
        self._node.close()

    @property
    def alive(self) -> bool:
        return not self._node.closed and self._node.proc.poll() is None

    def __enter__(self) -> "VMProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self._node.kill()
        except Exception:
            pass


# The port's filesystem (emscripten's, behind VfsPosix) raises OSError with
# emscripten errno numbers (ENOENT is 44) while its errno module and every real
# board use MicroPython's (ENOENT is 2).  ERRNO_FIX_CODE remounts '/' through a
# small Python VFS that translates them, so `e.errno == errno.ENOENT` works and
# mpremote recognises "no such file".
ERRNO_FIX_CODE = """
def _mpvm_fix_errno():
    import vfs
    M = {44: 2, 20: 17, 54: 20, 31: 21, 55: 39, 28: 22, 2: 13, 63: 1, 29: 5, 8: 9,
         51: 28, 69: 30, 10: 16, 75: 18, 48: 12, 6: 11, 70: 29, 33: 24, 41: 23, 37: 36}
    class ErrnoVfs:
        def __init__(self, inner):
            self.inner = inner
        def _c(self, name, *args):
            try:
                return getattr(self.inner, name)(*args)
            except OSError as e:
                n = e.args[0] if e.args else None
                if n in M:
                    raise OSError(M[n])
                raise
        def mount(self, readonly, mkfs):
            pass
        def umount(self):
            pass
        def open(self, path, mode):
            return self._c('open', path, mode)
        def ilistdir(self, path):
            # VfsPosix gives (name, type, inode); real boards add the size.
            prefix = path if (path == '' or path.endswith('/')) else path + '/'
            out = []
            for e in self._c('ilistdir', path):
                if len(e) < 4:
                    size = 0
                    if e[1] == 0x8000:
                        try:
                            size = self.inner.stat(prefix + e[0])[6]
                        except OSError:
                            pass
                    e = (e[0], e[1], e[2], size)
                out.append(e)
            return iter(out)
        def stat(self, path):
            return self._c('stat', path)
        def statvfs(self, path):
            return self._c('statvfs', path)
        def mkdir(self, path):
            return self._c('mkdir', path)
        def rmdir(self, path):
            return self._c('rmdir', path)
        def remove(self, path):
            return self._c('remove', path)
        def rename(self, old, new):
            return self._c('rename', old, new)
        def chdir(self, path):
            return self._c('chdir', path)
        def getcwd(self):
            return self._c('getcwd')
    for obj, where in vfs.mount():
        if where == '/' and not isinstance(obj, ErrnoVfs):
            vfs.umount('/')
            vfs.mount(ErrnoVfs(obj), '/')
_mpvm_fix_errno()
del _mpvm_fix_errno
"""


def _syspath_code(root: str) -> str:
    root = root.rstrip("/") or "/"
    if root == "/":
        # '' (the current directory, which is '/') is already first on sys.path;
        # keeping it gives tracebacks file names like "pkg/mod.py", not "//pkg/mod.py".
        return "import os, sys\nos.chdir('/')\nif '' not in sys.path:\n    sys.path.insert(0, '')\n"
    return (
        "import sys\n"
        f"if {root!r} not in sys.path:\n"
        f"    sys.path.insert(0, {root!r})\n"
    )


def run_code(files: FileMap, code: str, heap_bytes: int = DEFAULT_HEAP_BYTES,
             timeout: float = 60.0, root: str = "/",
             pystack_words: int = DEFAULT_PYSTACK_WORDS) -> RunResult:
    """Run ``code`` in a fresh MicroPython VM with ``files`` written under ``root``.

    ``files`` maps paths (relative to ``root``, directories created as needed)
    to their text or bytes; ``root`` is put first on ``sys.path``.  Returns
    ``RunResult(stdout, heap_live, elapsed_s)``; raises MicroPythonError (with
    the MicroPython traceback) if the code raised, VMTimeout after ``timeout``.
    """
    vm = VMProcess(files, "", obj_expr=None, heap_bytes=heap_bytes, timeout=timeout,
                   root=root, pystack_words=pystack_words)
    try:
        t0 = time.monotonic()
        out = vm.exec(code)
        elapsed = time.monotonic() - t0
        live = vm.heap_live()
        return RunResult(out, live, elapsed)
    finally:
        vm.close()
