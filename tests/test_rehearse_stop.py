"""``hallclock rehearse`` stopped mid-day (docs/hall.md "Rehearse the day"):
Ctrl-C or SIGTERM stops every program it started (logger, console, view,
Mosquitto) and says so in one line, exit 130 as the CLI's other interrupted
commands; killed outright (SIGKILL), its programs die with it.  Found
through /proc: the rehearsal's children and their process groups."""
import os
import signal
import subprocess
import sys
import time

import pytest

SMALL = ["--tables", "2", "--rounds", "1", "--speed", "150", "--set", "round_min=4",
         "--set", "round_warn_min=1", "--faults", "none"]


def _procs():
    """pid -> (ppid, pgid, state, cmdline) of every process (zombies hold no
    port or file: left out)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] in "ZX":
            continue
        out[int(name)] = (int(fields[1]), int(fields[2]), fields[0], cmd)
    return out


def _until(what, max_s=120.0):
    until = time.monotonic() + max_s
    while time.monotonic() < until:
        got = what()
        if got:
            return got
        time.sleep(0.1)
    return what()


def _start(tmp_path, *extra):
    exe = os.path.join(os.path.dirname(sys.executable), "hallclock")
    return subprocess.Popen([exe, "rehearse", *SMALL, *extra, "--out", str(tmp_path / "day")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _children_up(rehearsal, wanted):
    """The groups of the rehearsal's children once each of ``wanted`` (words
    of a command line) runs among them, else None."""
    def look():
        if rehearsal.poll() is not None:
            return "ended"
        kids = [p for p in _procs().values() if p[0] == rehearsal.pid]
        if all(any(w in p[3] for p in kids) for w in wanted):
            return {p[1] for p in kids}
        return None
    groups = _until(look)
    if groups == "ended" or not groups:
        out, err = rehearsal.communicate(timeout=30)
        pytest.fail(f"the rehearsal's programs never all ran: {rehearsal.returncode} {err}")
    # each in a group of its own (a fault kills one), none in the rehearsal's or ours
    assert rehearsal.pid not in groups and os.getpgrp() not in groups, groups
    return groups


def _left(groups):
    return [(pid, p[3]) for pid, p in _procs().items() if p[1] in groups]


def _stopped_by(tmp_path, sig, wanted, *extra):
    rehearsal = _start(tmp_path, *extra)
    groups = set()
    try:
        groups = _children_up(rehearsal, wanted)
        rehearsal.send_signal(sig)
        out, err = rehearsal.communicate(timeout=60)
        left = _until(lambda: not _left(groups), max_s=30) or _left(groups)
        assert left is True, f"still running after {sig.name}: {left}"
        return rehearsal.returncode, err
    finally:
        if rehearsal.poll() is None:
            rehearsal.kill()
            rehearsal.wait()
        for group in groups - {os.getpgrp()}:  # a failed test leaves nothing either
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_rehearsal_stopped_stops_every_program_it_started(tmp_path, sig):
    code, err = _stopped_by(tmp_path, sig, ["round start", "console"])
    assert code == 130
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"hallclock: rehearse: interrupted ({sig.name}); every program it started is "
        "stopped"), err
    assert "Traceback" not in err


def test_a_rehearsal_killed_outright_takes_its_programs_with_it(tmp_path):
    code, _err = _stopped_by(tmp_path, signal.SIGKILL, ["round start", "console"])
    assert code == -signal.SIGKILL


def test_a_rehearsal_over_mqtt_stopped_leaves_no_mosquitto(tmp_path):
    code, err = _stopped_by(tmp_path, signal.SIGTERM, ["mosquitto", "round start", "console"],
                            "--transport", "mqtt")
    assert code == 130 and "interrupted (SIGTERM)" in err


def test_a_rehearsal_over_mqtt_killed_outright_leaves_no_mosquitto(tmp_path):
    code, _err = _stopped_by(tmp_path, signal.SIGKILL, ["mosquitto", "round start", "console"],
                             "--transport", "mqtt")
    assert code == -signal.SIGKILL
