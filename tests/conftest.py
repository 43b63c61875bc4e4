import contextlib
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, settings as hsettings

# A loaded machine makes examples slow, not wrong: hypothesis's per-example
# deadline and its too_slow health check measure the machine, so no test has
# them (a test's own @settings keeps what it sets and inherits the rest).
hsettings.register_profile("hallclock", deadline=None,
                           suppress_health_check=[HealthCheck.too_slow])
hsettings.load_profile("hallclock")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST_FIELDS = ("host_time",)

# Every command a test runs writes into a pipe, so none may see a terminal's
# width: pytest-xdist's workers start with COLUMNS=80 and LINES=24 (and a
# shell may export COLUMNS), which would narrow the reports of one run only.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


def run_cli(*args, cwd=None, timeout=120):
    """Run the installed console command as a user would."""
    exe = os.path.join(os.path.dirname(sys.executable), "hallclock")
    return subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def read_log(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def strip_host(records):
    """The clock's part of the records, its own health reports kept with
    their machine figures (heaps, pass lengths, versions) masked
    (tests/healthlog.py health_masked): every interpreter and link makes
    them at the same passes, from hw/device.py's one_pass."""
    from healthlog import health_masked
    return [{k: v for k, v in r.items() if k not in HOST_FIELDS} for r in health_masked(records)]


@pytest.fixture
def script(tmp_path):
    def make(text, name="game.txt"):
        p = tmp_path / name
        p.write_text(text)
        return str(p)
    return make


@contextlib.contextmanager
def virtual_board(*options):
    """The virtual MicroPython board (the VM behind a pty answering mpremote),
    started with ``options`` (``--clock``: booted into a running clock);
    yields its port path and stops it afterwards."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"), env.get("PYTHONPATH", "")])
    p = subprocess.Popen([sys.executable, "-m", "hallclock.vboard.mpvm.board", *options],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        path = p.stdout.readline().strip()
        assert path.startswith("/dev/"), p.stderr.read() if p.poll() is not None else path
        yield path
        # the board serves until it is stopped: one that ended during the test
        # closed its pty under the client (EIO on the client's next ioctl)
        assert p.poll() is None, "the virtual board ended during the test: " + p.stderr.read()
    finally:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture
def board():
    """A virtual MicroPython board at its REPL."""
    with virtual_board() as path:
        yield path


@pytest.fixture
def utc(monkeypatch):
    """Times of day are the report machine's local time: UTC in the tests
    that ask for it (reports, claims, the referee's views)."""
    import time
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
