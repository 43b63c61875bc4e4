"""Central settings on virtual clocks, each on its own pty (``hallclock
configure``): an idle clock takes them, a clock in a game refuses them (ČAS
3.2: settings are checked before the game, never changed during it), a port
with no clock gives no answer, and bad values are refused before anything is
sent (exit 2).  The clock's answer stays in its ring until a logger stores it:
the log then holds the ``settings`` record."""
import os
import time

import pytest

from conftest import read_log, run_cli

from hallclock.hall import relay as hall_mod
from hallclock.vboard import device as virtual
from hallclock.scenario import parse_text
from hallclock.link.transport import pty_pair, read_fd
from hallclock.vboard.device import make_runner
from hallclock_fw.settings import parse

SPEED = 10.0


@pytest.fixture
def hall():
    """Virtual clocks on ptys: ``add(clock, script)`` starts one, ``empty()``
    makes a port with no clock behind it.  Every device is stopped after."""
    fds, threads = [], []
    t0 = virtual.mark()

    class Hall:
        def __init__(self):
            self.runners = []

        def add(self, clock, text, sid):
            master, slave, path = pty_pair()
            fds.extend([master, slave])
            runner = make_runner("scrabble", parse("scrabble", []),
                                 [a.as_tuple() for a in parse_text(text)], clock=clock, sid=sid)
            th = virtual.DeviceThread(runner, master, virtual.RealPace(t0, SPEED))
            th.start()
            threads.append(th)
            self.runners.append(runner)
            return path

        def wait_move(self, i, limit_s=60.0):
            """Wait until the i-th clock's core has a move running (no sleep: a condition)."""
            until = time.monotonic() + limit_s
            while time.monotonic() < until:
                app = self.runners[i].app
                if app is not None and getattr(app.core, "move", 0):
                    return
                time.sleep(0.01)
            raise AssertionError("the game never began")

        def empty(self):
            master, slave, path = pty_pair()
            fds.extend([master, slave])
            os.set_blocking(master, False)
            self.empty_master = master
            return path

    yield Hall()
    for th in threads:
        th.halt = True
    for th in threads:
        th.join(timeout=5)
    for fd in fds:
        os.close(fd)


def test_idle_taken_in_game_refused_absent_no_answer(hall, tmp_path):
    idle = hall.add("t1", "40000 end\n", "e0000001")
    busy = hall.add("t2", "0 press START\n200 press B\n40000 end\n", "e0000002")
    absent = hall.empty()
    hall.wait_move(1)  # t2's game has begun
    res = run_cli("configure", "--port", idle, "--port", busy, "--port", absent,
                  "--mode", "scrabble", "--set", "move_s=90", "--set", "round_min=30",
                  "--wait-s", "4")
    assert res.returncode == 1, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "configure: scrabble move_s=90;warn_s=30,20,10;round_min=30;round_warn_min=10"
    assert f"t1 ({idle}): taken" in lines
    assert f"t2 ({busy}): REFUSED: a game is running" in res.stdout
    assert f"no clock ({absent}): NO ANSWER: no clock answered here" in lines
    assert "1 clock took the settings, 2 did not" in res.stdout
    assert "configure again" in res.stderr and "Traceback" not in res.stderr

    # nothing was acknowledged: the logger stores the clock's answer afterwards
    out = tmp_path / "hall.jsonl"
    log = run_cli("log", "--port", idle, "--out", str(out), "--exit-on-end", "--plain",
                  timeout=60)
    assert log.returncode == 0, log.stderr
    recs = read_log(out)
    sets = [r for r in recs if r["event"] == "settings"]
    assert len(sets) == 1 and sets[0]["mode"] == "scrabble"
    assert sets[0]["settings"]["move_s"] == 90 and sets[0]["settings"]["round_min"] == 30
    assert [r["seq"] for r in recs] == list(range(1, len(recs) + 1))


def test_only_the_named_clocks(hall):
    a = hall.add("t1", "80000 end\n", "e0000011")
    b = hall.add("t2", "80000 end\n", "e0000012")
    res = run_cli("configure", "--port", a, "--port", b, "--clock", "t2", "--clock", "t9",
                  "--mode", "duplicate", "--set", "move_s=150", "--wait-s", "4")
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"t2 ({b}): taken" in res.stdout
    assert f"t1 ({a}): not asked" in res.stdout
    assert "t9: NO ANSWER: not heard on any port" in res.stdout


@pytest.mark.parametrize("args, words", [
    (["--mode", "scrabble", "--set", "move_s=abc"], "move_s"),
    (["--mode", "scrabble", "--set", "warn_s=130"], "warn_s"),
    (["--mode", "chess"], "unknown mode"),
    (["--mode", "backgammon", "--set", "score=9-0"], "score"),
])
def test_bad_values_refused_before_anything_is_sent(hall, args, words):
    path = hall.empty()
    res = run_cli("configure", "--port", path, *args)
    assert res.returncode == 2
    assert words in res.stderr and "nothing was sent" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and res.stdout == ""
    assert read_fd(hall.empty_master)[0] == b""  # not even a who-are-you went out


def test_configure_bad_ports_exit_2(tmp_path):
    res = run_cli("configure", "--port", str(tmp_path / "nope"), "--mode", "scrabble")
    assert res.returncode == 2 and "cannot open serial port" in res.stderr
    res = run_cli("configure", "--mode", "scrabble")
    assert res.returncode == 2 and "--port" in res.stderr


# -- the same over the hall network (our own Mosquitto, tests/mqttrig.py) ----------
def test_configure_over_the_broker(tmp_path):
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from mqttrig import HALL, Hall, wait_for

    from hallclock.net import mqtt as mqtthost

    h = Hall(tmp_path, clocks=("t1", "t2", "t3"))
    try:
        t0 = virtual.mark()
        devices = []
        for clock, text, sid in (("t1", "40000 end\n", "0000aa01"),
                                 ("t2", "0 press START\n200 press B\n40000 end\n", "0000aa02")):
            runner = make_runner("scrabble", parse("scrabble", []),
                                 [a.as_tuple() for a in parse_text(text)], clock=clock, sid=sid)
            net = mqtthost.device_link(h.address, HALL, clock, h.creds[clock])
            d = virtual.DeviceThread(runner, net, virtual.RealPace(t0, SPEED), silence_s=20)
            d.start()
            devices.append(d)
            h.devices.append(d)
        wait_for(lambda: all(d.line.connected() for d in devices), 60, "clocks on the broker")
        wait_for(lambda: devices[1].runner.app is not None
                 and devices[1].runner.app.core.move, 60, "t2's game")
        res = run_cli("configure", "--broker", f"127.0.0.1:{h.port}", "--hall", HALL,
                      "--credentials", h.cred_file, "--mode", "scrabble", "--set", "move_s=100",
                      "--wait-s", "4")
        assert res.returncode == 1, res.stdout + res.stderr
        assert f"t1 (hallclock/{HALL}/t1/up): taken" in res.stdout
        assert "t2 (" in res.stdout and "REFUSED: a game is running" in res.stdout
        assert f"t3 (hallclock/{HALL}/t3/up): NO ANSWER" in res.stdout  # in the hall, not on
    finally:
        h.close()
