"""One writer a log, one program a port.  Every command that writes a log
takes ``<log>.lock`` beside it (an ``fcntl.flock``, released by the kernel
on any exit, even a kill -9; the file itself is removed on a clean exit)
before it reads or repairs the log; every serial port is opened with an
exclusive flock (pyserial's ``exclusive=True``).  A second program is
refused with one line naming the first (:class:`InUse`, exit 2) and the
first goes on untouched.  A lock file whose lock nobody holds was left by a
program that was killed: it is cleared with one line on stderr."""
import atexit
import errno
import fcntl
import json
import os
import sys
import time

from ..errors import BadInput, one_line

LOCK_SUFFIX = ".lock"
PROGRAM = None  # "hallclock round", set by the CLI for the messages; else from argv


class InUse(BadInput):
    """A log or a port another program holds: exit 2, the first goes on."""


def program_name():
    return PROGRAM or _program_from_argv(sys.argv)


def _program_from_argv(argv):
    """"hallclock log" from a command line (python -m hallclock log ..., a
    hallclock script, or any other program: its name)."""
    argv = [a for a in argv if a]
    for i, arg in enumerate(argv):
        if os.path.basename(arg) == "hallclock" or arg.endswith("hallclock/__main__.py"):
            words = [w for w in argv[i + 1:] if not w.startswith("-")][:2]
            if words and words[0] != "round":
                words = words[:1]
            return " ".join(["hallclock"] + words)
    if not argv:
        return "a program"
    name = os.path.basename(argv[0])
    if name.startswith("python") and len(argv) > 1:
        rest = argv[1:]
        if rest[0] == "-m" and len(rest) > 1:
            return rest[1]
        return os.path.basename(rest[0])
    return name


def _since(t):
    """18:02 today, or the date and time of an older lock."""
    try:
        stamp = time.localtime(float(t))
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"
    if time.strftime("%Y-%m-%d", stamp) == time.strftime("%Y-%m-%d"):
        return time.strftime("%H:%M", stamp)
    return time.strftime("%Y-%m-%d %H:%M", stamp)


def _who(info):
    """"hallclock round (pid 4321) since 18:02" from a holder's record."""
    program = one_line(info.get("program") or "another program")
    pid = info.get("pid")
    text = program + (f" (pid {pid})" if isinstance(pid, int) else "")
    if info.get("since") is not None:
        text += f" since {_since(info['since'])}"
    return text


def _read_info(fd):
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 4096)
    except OSError:
        return None
    if not raw.strip():
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


# -- logs -----------------------------------------------------------------------
_held = {}  # lock path -> LogLock held by this process (released at exit)


class LogLock:
    """The exclusive lock on one log (``<log>.lock``), taken at once or
    :class:`InUse`.  ``say``: where the one line about a cleared stale lock
    goes (stderr)."""

    def __init__(self, path, say=None):
        self.log = os.fspath(path)
        self.path = self.log + LOCK_SUFFIX
        self.fd = None
        self.stale = None  # the holder's record of a stale lock that was cleared
        say = say or (lambda text: print(text, file=sys.stderr, flush=True))
        name = os.path.basename(self.log)
        while self.fd is None:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:
                raise BadInput(f"{self.log}: the folder {os.path.dirname(os.path.abspath(self.log))}"
                               " does not exist") from None
            except OSError as exc:
                raise BadInput(f"{self.log}: cannot make its lock file {self.path} "
                               f"({exc.strerror}); check the folder is writable") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                info = _read_info(fd) or {}
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise BadInput(f"{self.log}: cannot lock it ({exc.strerror})") from None
                raise InUse(f"{name} is being written by {_who(info)}; give another --out "
                            "(one logger a log), or stop that one first") from None
            # a holder that was ending removed the file between our open and
            # our lock: ours is an orphan, take the lock on the new file
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except OSError:
                same = False
            if not same:
                os.close(fd)
                continue
            self.fd = fd
        self.stale = _read_info(self.fd)
        if self.stale is not None:
            say(f"hallclock: {name}: cleared a stale lock left by {_who(self.stale)}, which "
                "ended without releasing it (killed or crashed)")
        info = {"pid": os.getpid(), "program": program_name(), "since": round(time.time(), 3)}
        try:
            os.ftruncate(self.fd, 0)
            os.lseek(self.fd, 0, os.SEEK_SET)
            os.write(self.fd, (json.dumps(info) + "\n").encode())
        except OSError:
            pass  # the lock holds without its note; a second program is told less
        _held[self.path] = self

    def release(self):
        """Remove the lock file, then let go (a program that opened the file
        meanwhile sees it gone and takes a new one).  Twice is harmless."""
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None
        if _held.get(self.path) is self:
            del _held[self.path]


@atexit.register
def _release_all():
    for lock in list(_held.values()):
        lock.release()


# -- serial ports ---------------------------------------------------------------
def port_holder(path):
    """Who holds the flock on a serial port (Linux: /proc/locks), as
    {"pid", "program", "since"}; {} when that cannot be known."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in lines:
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == where:
            try:
                pid = int(parts[4])
            except ValueError:
                continue
            return _process(pid)
    return {}


def _process(pid):
    info = {"pid": pid}
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
        info["program"] = _program_from_argv(argv)
        with open(f"/proc/{pid}/stat") as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as f:
            boot = next(int(ln.split()[1]) for ln in f if ln.startswith("btime "))
        info["since"] = boot + start / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        pass
    return info


def port_in_use(path):
    """The InUse error for a port another program holds."""
    holder = port_holder(path)
    who = _who(holder) if holder else "another program"
    return InUse(f"serial port {path} is in use by {who}; one program a port: stop that "
                 "one first, or give another port")
