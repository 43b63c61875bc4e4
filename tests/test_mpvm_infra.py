"""Tests of the MicroPython VM infrastructure (hallclock.vboard.mpvm): the node bridge,
the stepping interface, the virtual mpremote board and the static checks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
try:
    import hallclock.vboard.mpvm  # noqa: F401
except ImportError:  # not installed: use the source tree
    sys.path.insert(0, str(REPO / "host"))

from hallclock.vboard.mpvm import (  # noqa: E402
    MicroPythonError,
    MPVMSetupError,
    VMProcess,
    VMTimeout,
    find_node_modules,
    run_code,
)
from hallclock.vboard.mpvm import checks  # noqa: E402


# ------------------------------------------------------------------ run_code

def test_run_code_returns_prints():
    res = run_code({}, "print('hello', 6 * 7)\nprint('second')")
    assert res.stdout == "hello 42\nsecond\n"
    assert res.heap_live > 0


def test_run_code_is_micropython():
    out = run_code({}, "import sys\nprint(sys.implementation.name, sys.platform)").stdout
    assert out.split() == ["micropython", "webassembly"]


def test_exception_surfaces_with_traceback():
    files = {"pkg/__init__.py": "", "pkg/boom.py": "def f(x):\n    return g(x)\n\ndef g(x):\n    raise ValueError('bad %d' % x)\n"}
    with pytest.raises(MicroPythonError) as ei:
        run_code(files, "print('before')\nimport pkg.boom\npkg.boom.f(3)\n")
    e = ei.value
    assert e.exc_type == "ValueError"
    assert "Traceback (most recent call last)" in e.traceback
    assert 'pkg/boom.py", line 5, in g' in e.traceback
    assert "ValueError: bad 3" in e.traceback
    assert e.stdout == "before\n"
    assert "ValueError: bad 3" in str(e)


def test_syntax_error_surfaces():
    with pytest.raises(MicroPythonError) as ei:
        run_code({"broken.py": "def f(:\n  pass\n"}, "import broken")
    assert ei.value.exc_type == "SyntaxError"
    assert "broken.py" in ei.value.traceback


def test_files_in_subdirectories_import():
    files = {
        "hallclock_fw/__init__.py": "",
        "hallclock_fw/core/__init__.py": "",
        "hallclock_fw/core/scrabble.py": "from hallclock_fw.core.util import twice\nVALUE = twice(21)\n",
        "hallclock_fw/core/util.py": "def twice(x):\n    return 2 * x\n",
        "data/blob.bin": bytes(range(256)),
    }
    code = textwrap.dedent("""
        from hallclock_fw.core import scrabble
        print(scrabble.VALUE)
        with open('data/blob.bin', 'rb') as f:
            b = f.read()
        print(len(b), b[0], b[255])
    """)
    assert run_code(files, code).stdout.split() == ["42", "256", "0", "255"]


def test_filesystem_errno_is_micropythons():
    code = textwrap.dedent("""
        import errno, os
        try:
            open('/no/such/file')
        except OSError as e:
            print(e.errno == errno.ENOENT)
        try:
            os.mkdir('/tmp')
        except OSError as e:
            print(e.errno == errno.EEXIST)
    """)
    assert run_code({}, code).stdout.split() == ["True", "True"]


def test_heap_lock_raises_memory_error():
    code = textwrap.dedent("""
        import micropython
        def f():
            micropython.heap_lock()
            try:
                x = [1, 2, 3]
                r = 'allocated'
            except MemoryError:
                r = 'MemoryError'
            micropython.heap_unlock()
            return r
        print(f())
    """)
    assert run_code({}, code).stdout.strip() == "MemoryError"


def test_uncaught_error_under_heap_lock_is_reported_not_hung():
    with VMProcess({}, "", obj_expr=None, timeout=120) as vm:  # a hang would be for ever
        with pytest.raises(MicroPythonError) as ei:
            vm.exec("import micropython\nmicropython.heap_lock()\nx = [1]\n")
        assert ei.value.exc_type == "MemoryError"
        assert vm.exec("print([1, 2])") == "[1, 2]\n"    # heap unlocked again


def test_runtime_facts():
    code = textwrap.dedent("""
        import time, binascii, micropython, array, struct, json, gc
        from micropython import const
        X = const(7)
        print(time.ticks_add(0, -1) + 1 == 2 ** 30)
        t = time.ticks_ms()
        print(time.ticks_diff(time.ticks_add(t, 5), t) == 5)
        print(binascii.crc32(b'hello') == 0x3610a686)
        print(struct.pack('<HI', 1, 2) == b'\\x01\\x00\\x02\\x00\\x00\\x00')
        print(json.loads(json.dumps({'a': [1, 2]})) == {'a': [1, 2]})
        print(array.array('H', [1, 2])[1] == 2, X == 7, gc.mem_alloc() > 0)
    """)
    assert run_code({}, code).stdout.split() == ["True"] * 8


def test_gc_frees_garbage_and_keeps_live_objects():
    with VMProcess({}, "keep = []", obj_expr=None) as vm:
        base = vm.heap_live()
        vm.exec("for i in range(20000):\n    l = [i] * 50\n    if i % 1000 == 0:\n        keep.append(l)\n")
        live = vm.heap_live()
        # 20 kept lists of 50 items survive; ~4 MB of garbage is gone
        assert 20 * 50 * 4 <= live - base < 100_000
        assert vm.exec("print(sum(k[0] for k in keep), len(keep))").split() == ["190000", "20"]


def test_timeout_kills_runaway_code():
    # the VM is killed and the caller gets VMTimeout (how fast: not a test);
    # the VM boots first under the default deadline, so that only the runaway
    # loop can exceed the short one (a boot on a loaded machine may take longer)
    with VMProcess({}, "", obj_expr=None) as vm:
        assert vm.exec("print(1)") == "1\n"
        with pytest.raises(VMTimeout):
            vm.exec("while True:\n    pass\n", timeout=2)
        assert not vm.alive


def test_find_node_modules_names_make_setup(tmp_path, monkeypatch):
    monkeypatch.setenv("HALLCLOCK_MPVM_MODULES", str(tmp_path))
    with pytest.raises(MPVMSetupError, match="make setup"):
        find_node_modules()
    monkeypatch.delenv("HALLCLOCK_MPVM_MODULES")
    assert (find_node_modules() / "@micropython" / "micropython-webassembly-pyscript").is_dir()


# ------------------------------------------------------------------ stepping

ECHO_DEVICE = textwrap.dedent("""
    class EchoDevice:
        # echoes each fed chunk upper-cased after 3 steps; finishes at step 50,
        # then reports 'waiting for acks' (2) until it has been fed b'ACK'.
        def __init__(self):
            self.t = 0
            self.inbox = b''
            self.due = None
            self.out = bytearray()
            self.acked = False
        def feed(self, data):
            if data == b'ACK':
                self.acked = True
            else:
                self.inbox += data
                self.due = self.t + 3
        def step(self):
            self.t += 1
            if self.due is not None and self.t >= self.due:
                self.out += self.inbox.upper()
                self.inbox = b''
                self.due = None
            if self.t < 50:
                return 0
            return 1 if self.acked else 2
        def take_output(self):
            o = bytes(self.out)
            self.out = bytearray()
            return o
    runner = EchoDevice()
""")


def test_stepping_round_trip():
    printed = []
    with VMProcess({}, ECHO_DEVICE + "print('ready')\n", obj_expr="runner", on_print=printed.append) as vm:
        assert b"".join(printed) == b"ready\n"
        assert vm.step(2) == (0, b"")
        vm.feed(b"hi \x00\xff")
        status, out = vm.step(100)
        assert (status, out) == (0, b"HI \x00\xff")
        assert vm.exec("print(runner.t)").strip() == "5"   # stopped at the step with output
        assert vm.step(10) == (0, b"")
        assert vm.step(1000) == (2, b"")                   # finished, waiting for acks
        vm.feed(b"ACK")
        assert vm.step(1000) == (1, b"")


def test_step_exception_surfaces():
    dev = "class D:\n    def feed(self, d): pass\n    def step(self): return 1 // 0\n    def take_output(self): return b''\nrunner = D()\n"
    with VMProcess({}, dev, obj_expr="runner") as vm:
        with pytest.raises(MicroPythonError) as ei:
            vm.step(5)
        assert ei.value.exc_type == "ZeroDivisionError"
        assert "in step" in ei.value.traceback


def test_step_runs_every_pass_asked_for():
    # speed is a `make bench` figure, not a test: only that every pass ran
    dev = "class D:\n    def __init__(self): self.t = 0\n    def feed(self, d): pass\n    def step(self):\n        self.t += 1\n        return 0\n    def take_output(self): return b''\nrunner = D()\n"
    with VMProcess({}, dev, obj_expr="runner") as vm:
        vm.step(100_000)
        assert vm.exec("print(runner.t)").strip() == "100000"


# ------------------------------------------------------------------ virtual board + mpremote

def mpremote(port, *args, check=True):
    p = subprocess.run([sys.executable, "-m", "mpremote", "connect", port, *args],
                       capture_output=True, text=True, timeout=60)
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


def test_mpremote_copies_lists_and_runs(board, tmp_path):
    src = tmp_path / "greet.py"
    src.write_text("import sys\nNAME = 'board'\nprint('hello from', sys.platform)\n")
    mpremote(board, "fs", "cp", str(src), ":greet.py")
    mpremote(board, "fs", "mkdir", ":lib")
    mpremote(board, "fs", "cp", str(src), ":lib/inner.py")
    ls = mpremote(board, "fs", "ls").stdout
    assert "greet.py" in ls and "lib/" in ls
    assert str(len(src.read_bytes())) in [w for line in ls.splitlines() if "greet.py" in line for w in line.split()]
    assert "inner.py" in mpremote(board, "fs", "ls", ":lib").stdout
    # files persist across mpremote sessions (each one soft-resets the board)
    out = mpremote(board, "exec", "import greet; print(greet.NAME)").stdout
    assert out.replace("\r\n", "\n") == "hello from webassembly\nboard\n"
    assert "hello from webassembly" in mpremote(board, "run", str(src)).stdout
    back = tmp_path / "back.py"
    mpremote(board, "fs", "cp", ":greet.py", str(back))
    assert back.read_bytes() == src.read_bytes()
    bad = mpremote(board, "exec", "raise KeyError('nope')", check=False)
    assert bad.returncode != 0 and "KeyError: nope" in bad.stdout + bad.stderr


def _children(pid):
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except FileNotFoundError:  # a thread that just ended
            pass
    return out


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except (FileNotFoundError, ProcessLookupError):  # it just ended
        return ""


def _vm_processes(board_pid):
    return [c for c in _children(board_pid) if "runner.mjs" in _cmdline(c)]


def test_the_board_outlives_its_vm_and_the_port_stays_valid(board, tmp_path):
    # a board whose firmware crashes resets at once; its USB serial port does
    # not go away: a client's next session finds a fresh REPL, not a dead port
    # (EIO) nor a board that swallowed the client's first bytes in its reset
    assert "webassembly" in mpremote(board, "exec", "import sys; print(sys.platform)").stdout
    boards = [c for c in _children(os.getpid()) if "hallclock.vboard.mpvm.board" in _cmdline(c)]
    assert len(boards) == 1
    vms = _vm_processes(boards[0])
    assert len(vms) == 1
    os.kill(vms[0], signal.SIGKILL)  # the VM process dies under the idle board
    # the board starts a new VM process by itself, before any client speaks
    deadline = time.monotonic() + 120  # a VM boot on a loaded machine; costs time only on failure
    while True:
        now = _vm_processes(boards[0])
        if now and now != vms:
            break
        assert time.monotonic() < deadline, "the board did not restart its VM"
        time.sleep(0.05)
    out = mpremote(board, "exec", "print(6 * 7)").stdout
    assert out.strip() == "42"
    src = tmp_path / "after.py"
    src.write_text("print('after the reset')\n")
    mpremote(board, "fs", "cp", str(src), ":after.py")     # the new VM's filesystem works
    assert "after the reset" in mpremote(board, "exec", "import after").stdout
    assert _vm_processes(boards[0]) == now                 # one VM, not a restart per session


# ------------------------------------------------------------------ static checks

def test_mpy_cross_build_mirrors_tree_and_reports_errors(tmp_path):
    src = tmp_path / "src"
    (src / "pkg" / "hw").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "hw" / "pins.py").write_text("from micropython import const\nLED = const(2)\n")
    ok = checks.build_mpy(src, tmp_path / "out")
    assert ok.ok, ok.errors
    mpy = tmp_path / "out" / "pkg" / "hw" / "pins.mpy"
    assert mpy.is_file() and (tmp_path / "out" / "pkg" / "__init__.mpy").is_file()
    assert mpy.read_bytes()[:1] == b"M"                      # .mpy header
    (src / "pkg" / "broken.py").write_text("x = 1\n\ndef f(:\n    pass\n")
    bad = checks.build_mpy(src, tmp_path / "out")
    assert not bad.ok
    assert len(bad.errors) == 1 and bad.errors[0].startswith(f"{src / 'pkg' / 'broken.py'}:3:")
    assert "SyntaxError" in bad.errors[0]
    assert not (tmp_path / "out" / "pkg" / "broken.mpy").exists()


GOOD_FW = """
from machine import Pin, PWM
import time


def on_press(p: Pin) -> None:
    pass


def setup() -> int:
    button = Pin(4, Pin.IN, Pin.PULL_UP)
    button.irq(trigger=Pin.IRQ_FALLING, handler=on_press)
    buzzer = PWM(Pin(5), freq=2000)
    buzzer.duty_u16(32768)
    t = time.ticks_ms()
    return time.ticks_diff(time.ticks_add(t, 10), t)
"""


def test_pyright_against_micropython_stubs(tmp_path):
    src = tmp_path / "fw"
    src.mkdir()
    (src / "good.py").write_text(GOOD_FW)
    good = checks.typecheck(src, tmp_path / "pyright")
    assert good.ok, good.output
    (src / "bad_irq.py").write_text("from machine import Pin\nPin(4).irq(triggr=Pin.IRQ_FALLING)\n")
    (src / "bad_pwm.py").write_text("from machine import Pin, PWM\nPWM(Pin(5)).dutyy(3)\n")
    (src / "cpython_only.py").write_text("import subprocess\n")
    bad = checks.typecheck(src, tmp_path / "pyright")
    assert not bad.ok
    text = "\n".join(bad.errors)
    assert "bad_irq.py:2:" in text and '"triggr"' in text
    assert "bad_pwm.py:2:" in text and '"dutyy"' in text
    assert "cpython_only.py:1:" in text and '"subprocess" could not be resolved' in text
    assert "good.py" not in text
