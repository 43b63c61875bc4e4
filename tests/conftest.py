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


def hold_pty(path, proc):
    """An fd on a virtual board's pty, kept by the test until the board is
    stopped: a pty's number is free again once nobody holds either end, so a
    board that ends (killed, or a cable pulled out on purpose) would hand its
    path to another worker's next pty, and a client opening the stale path
    (mpremote, hallclock log) would take that test's port.  Held, the dead
    board's path is gone (ENOENT) until the test lets go."""
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    assert proc.poll() is None, "the virtual board ended before its pty was held"
    return fd


@contextlib.contextmanager
def virtual_board(*options):
    """The virtual MicroPython board (the VM behind a pty answering mpremote),
    started with ``options`` (``--clock``: booted into a running clock);
    yields its port path and stops it afterwards."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"), env.get("PYTHONPATH", "")])
    p = subprocess.Popen([sys.executable, "-m", "hallclock.vboard.mpvm.board", *options],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    held = None
    try:
        path = p.stdout.readline().strip()
        assert path.startswith("/dev/"), p.stderr.read() if p.poll() is not None else path
        held = hold_pty(path, p)
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
        if held is not None:
            os.close(held)


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


# -- the order the workers take the tests in (docs/testing.md "Parallel workers")
# The longest tests first (from `make test`'s --durations), those that compute
# (MicroPython VMs, a 10 MB log) between those that wait (clocks at real time,
# a broker's last will), so the two cores stay busy: with `--maxschedchunk 2`
# the workers take the tests one or two at a time in this order, and the short
# ones fill in at the end, so the workers end together.  An entry is a file or
# the start of a test's name in it; a file's tests stay together where it has
# module fixtures.  The rest keep their order after these; a test longer than
# SLOW_S in a file not named here is listed at the end of the run.
SLOW_FIRST = (
    "test_micropython.py::test_same_log_on_cpython_and_micropython[backgammon-",
    "test_reboot_round.py", "test_console_api.py", "test_mqtt_lost.py",
    "test_micropython.py::test_steady_state", "test_readme_tour.py", "test_round.py",
    "test_micropython.py", "test_deploy.py", "test_mqtt_attacks.py", "test_fleet_deploy.py",
    "test_console.py", "test_firmware_build.py", "test_faults.py",
    "test_display_property.py", "test_mqtt_faults.py", "test_flash.py",
    "test_mqtt_security.py", "test_unixport.py", "test_timebase.py", "test_projector.py",
    "test_hardware.py", "test_bench_smoke.py", "test_referee_views.py",
    "test_roundreport.py", "test_cli_fuzz.py", "test_backgammon.py", "test_office_serial.py", "test_rehearse.py",
    "test_tls_clock.py::test_a_tls_reconnect_during",
)
SLOW_S = 10.0
_unnamed_slow = {}


def _rank(item):
    name = f"{item.path.name}::{item.name}"
    return next((i for i, entry in enumerate(SLOW_FIRST) if name.startswith(entry)),
                len(SLOW_FIRST))


def pytest_collection_modifyitems(config, items):
    items.sort(key=_rank)  # stable: the rest in their collection order


def pytest_runtest_logreport(report):
    name = os.path.basename(report.location[0])
    if report.duration > SLOW_S and not any(e.split("::")[0] == name for e in SLOW_FIRST):
        _unnamed_slow[report.nodeid] = report.duration


def pytest_terminal_summary(terminalreporter):
    for nodeid, secs in sorted(_unnamed_slow.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"slow ({secs:.0f} s) but not in conftest.SLOW_FIRST: "
                                    f"{nodeid}")


def pytest_sessionstart(session):
    """Under xdist the controller starts the pure-core tests' one VM run
    (tests/test_core_micropython.py) while the workers collect, so that no
    worker waits for it (tests/sessiononce.py); a worker that needs it first
    waits for this run, or makes it itself if this one failed."""
    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    wanted = [a.split("::")[0].rstrip("/") for a in config.args] or ["tests"]
    if not any(a.endswith(("tests", "test_core_micropython.py")) for a in wanted):
        return
    import threading
    from sessiononce import once_json
    from test_core_micropython import VM_RUN, run_core_in_vm
    threading.Thread(target=once_json, args=(config._tmp_path_factory, VM_RUN, run_core_in_vm),
                     daemon=True).start()
