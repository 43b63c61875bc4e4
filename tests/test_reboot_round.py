"""A clock that reboots mid-round loses nothing (docs/hall.md "When a clock
reboots"): ``round start`` and ``hall`` send the game back by default
(``--restore``; ``--no-restore`` for a referee who wants to look first), so
the rebooted clock goes on at its move number with the hall's round (ČAS
4.1, 6.1)."""
import os
import subprocess
import sys

import pytest

from conftest import read_log, run_cli
from hallclock.link.transport import pty_pair
from hallclock.scenario import parse_text
from hallclock.vboard import device as virtual
from hallclock.vboard.device import make_runner
from hallclock_fw.settings import parse

SETS = ["move_s=30", "warn_s=20,10", "round_min=2", "round_warn_min=1"]
# t1 reboots in the middle of A's third move (B, A, B pressed before it)
T1 = "1000 press B\n4000 press A\n7000 press B\n9000 reboot\n20000 press A\n30000 end\n"
T2 = "1000 press B\n4000 press A\n30000 end\n"


def _round(tmp_path, *flags):
    fds, threads = [], []
    out = tmp_path / "round1.jsonl"
    devs = []
    for clock, text, sid in (("t1", T1, "f1000001"), ("t2", T2, "f1000002")):
        master, slave, path = pty_pair()
        fds += [master, slave]
        runner = make_runner("scrabble", parse("scrabble", SETS),
                             [a.as_tuple() for a in parse_text(text)], clock=clock, sid=sid)
        devs.append((runner, master, path))
    exe = os.path.join(os.path.dirname(sys.executable), "hallclock")
    args = [exe, "round", "start", "--round", "1", "--out", str(out), "--exit-on-end", *flags]
    for d in devs:
        args += ["--port", d[2]]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = virtual.mark()
        for runner, master, _p in devs:
            th = virtual.DeviceThread(runner, master, virtual.RealPace(t0, 4.0))
            th.start()
            threads.append(th)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for th in threads:
            th.halt = True
        for fd in fds:
            os.close(fd)
    assert proc.returncode == 0, stderr
    return read_log(out)


def test_round_start_restores_a_clock_rebooted_mid_move_by_default(tmp_path):
    recs = _round(tmp_path)
    t1 = [r for r in recs if r["clock"] == "t1"]
    loss = next(r for r in t1 if r["event"] == "power_loss")
    assert "restore" in loss  # the game was sent back without anybody asking
    new = [r for r in t1 if r["session"] == loss["next_session"]]
    resume = next(r for r in new if r["event"] == "resume")
    assert resume["player"] == "A" and resume["move"] == 3  # A's third move goes on
    old = next(r for r in t1 if r["event"] == "round" and r["session"] == loss["session"])
    rnd = next(r for r in new if r["event"] == "round")
    # the hall's round: it ran on through the outage (4.1: the host adds the
    # outage as its wall clock measured it; these clocks run at 4x), its gongs
    # at the hall's times (6.1)
    last = [r for r in t1 if r["session"] == loss["session"]][-2]
    assert rnd["round"] == 1
    assert rnd["elapsed_ms"] > last["t_ms"] - (old["t_ms"] - old["elapsed_ms"])
    moves = [r["move"] for r in new if r["event"] == "press"]
    assert moves and moves[0] == 3  # not move 1 again


def test_no_restore_leaves_the_rebooted_clock_fresh(tmp_path):
    recs = _round(tmp_path, "--no-restore")
    t1 = [r for r in recs if r["clock"] == "t1"]
    loss = next(r for r in t1 if r["event"] == "power_loss")
    assert "restore" not in loss
    new = [r for r in t1 if r["session"] == loss["next_session"]]
    assert "resume" not in [r["event"] for r in new]


@pytest.mark.parametrize("cmd", [["round", "start", "--round", "1", "--out", "x.jsonl"],
                                 ["hall", "--hall-unit-port", "a", "--port", "b", "--out", "x"]])
def test_restore_is_the_referees_default(cmd):
    from hallclock import cli
    p = cli.build_parser()
    assert p.parse_args(cmd).restore is True
    assert p.parse_args(cmd + ["--no-restore"]).restore is False
    assert p.parse_args(["log", "--port", "p", "--out", "x"]).restore is False
