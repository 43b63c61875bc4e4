"""The newcomer's path, whole: every command of the README's code blocks that
starts with ``hallclock`` runs, in order, as written, in a fresh folder (the
clone's ``host/`` beside it, as in a fresh clone's top folder), with the
virtual environment's ``hallclock`` first on PATH (what ``. .venv/bin/activate``
does).  The tour is read from README.md, so lines added later are tested too.

A line's comment may end in a tag saying what the line needs; the test stands
in for it (the convention is written in the README, under the tour):

- ``[board]``: a board on a serial port.  The port (``auto``, ``/dev/pts/7``)
  becomes one end of a virtual serial line (tests/faultproxy.py, no faults);
  on the other end runs a virtual clock (for ``log``, which then also gets
  ``--exit-on-end`` so it ends with the session) or a logger (for ``device``).
- ``[server]``: it serves until stopped.  It gets a free ``--http-port``; the test
  waits until the page answers, then stops it.

Any other tag fails the test: teach it here, and write it in the README.
"""
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import ROOT
from faultproxy import FaultProxy

BIN = os.path.dirname(sys.executable)
KNOWN_TAGS = ("board", "server")
TIMEOUT_S = 240


def tour_lines(path=os.path.join(ROOT, "README.md")):
    """[(line number, argv, tag or None)] of every ``hallclock`` line in the
    README's fenced code blocks."""
    out = []
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            text = line.strip()
            if not fenced or not text.startswith("hallclock "):
                continue
            command, _hash, comment = text.partition("  #")
            m = re.search(r"\[([a-z -]+)\]\s*$", comment)
            out.append((n, shlex.split(command), m.group(1) if m else None))
    return out


def env():
    e = dict(os.environ)
    e["PATH"] = BIN + os.pathsep + e.get("PATH", "")
    e["COLUMNS"] = "120"
    return e


def check_ok(res, n, argv):
    where = f"README.md:{n}: {' '.join(argv)}"
    assert res.returncode == 0, f"{where}\n{res.stderr}"
    assert "Traceback" not in res.stderr, where


def swap_port(argv, port):
    argv = list(argv)
    i = argv.index("--port")
    argv[i + 1] = port
    return argv


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def run_board(n, argv, work):
    proxy = FaultProxy(str(work), device_by_path=True)
    proxy.start()
    script = os.path.join(ROOT, "host", "hallclock", "samples", "game.txt")
    try:
        if argv[1] == "log":
            log = subprocess.Popen(swap_port(argv, proxy.path) + ["--exit-on-end", "--plain"],
                                   cwd=work, env=env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
            try:
                wait_for(lambda: proxy.attached or log.poll() is not None, "the logger's port")
                other = subprocess.run(["hallclock", "device", "--script", script, "--port",
                                        proxy.device_path], cwd=work, env=env(),
                                       capture_output=True, text=True, timeout=TIMEOUT_S)
                out, err = log.communicate(timeout=TIMEOUT_S)
            finally:
                if log.poll() is None:
                    log.kill()
                    log.wait()
            res = subprocess.CompletedProcess(argv, log.returncode, out, err)
        elif argv[1] == "device":
            counter = os.path.join(str(work), f"tour-{n}-counterpart.jsonl")
            log = subprocess.Popen(["hallclock", "log", "--port", proxy.path, "--out", counter,
                                    "--exit-on-end", "--plain"], cwd=work, env=env(),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                wait_for(lambda: proxy.attached or log.poll() is not None, "the logger's port")
                res = subprocess.run(swap_port(argv, proxy.device_path), cwd=work, env=env(),
                                     capture_output=True, text=True, timeout=TIMEOUT_S)
                _o, lerr = log.communicate(timeout=TIMEOUT_S)
            finally:
                if log.poll() is None:
                    log.kill()
                    log.wait()
            other = subprocess.CompletedProcess(["log"], log.returncode, "", lerr)
        else:
            raise AssertionError(f"README.md:{n}: [board] on '{argv[1]}': the test does not "
                                 "know what to put on the other end of its line")
    finally:
        proxy.close()
    check_ok(other, n, other.args)
    return res


def run_server(n, argv, work):
    port = free_port()
    proc = subprocess.Popen(argv + ["--http-port", str(port)], cwd=work, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def answers():
        if proc.poll() is not None:
            return True
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False
    try:
        wait_for(answers, f"README.md:{n} to serve its page")
        assert proc.poll() is None, proc.communicate()[1]
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    return subprocess.CompletedProcess(argv, 0, out, err)


def test_the_tour_is_read_from_the_readme():
    lines = tour_lines()
    assert len(lines) >= 10
    assert any(a[1] == "report" for _n, a, _t in lines)
    for n, _argv, tag in lines:
        assert tag is None or tag in KNOWN_TAGS, f"README.md:{n}: unknown tag [{tag}]"


def test_every_file_the_tour_names_ships_with_the_package():
    """A path the tour names as an input is in the package's samples."""
    import hallclock
    samples = os.path.join(os.path.dirname(hallclock.__file__), "samples")
    for n, argv, _tag in tour_lines():
        for value in argv:
            if value.startswith("host/hallclock/samples/"):
                assert os.path.isfile(os.path.join(samples, os.path.basename(value))), \
                    f"README.md:{n}: {value} is not bundled"


def test_make_demo_sets_up_everything_the_tour_uses():
    """`make demo` reaches the MicroPython VM's install too (the tour's
    --interpreter micropython line needs it): a dry run with the VM's lock
    file newer than its stamp lists the npm install."""
    res = subprocess.run(["make", "-n", "-W", "tools/mpvm/package-lock.json", "demo"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "npm ci --prefix tools/mpvm" in res.stdout
    assert "hallclock demo" in res.stdout


def test_make_demo_installs_the_broker_the_tours_wifi_hall_needs():
    """The tour's Wi-Fi block starts Mosquitto: `make demo` installs it as
    `make test` does (a dry run with the broker's path missing lists the
    apt-get install)."""
    res = subprocess.run(["make", "-n", "MOSQUITTO=/nonexistent/mosquitto", "demo"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "apt-get install" in res.stdout and "mosquitto" in res.stdout
    assert "hallclock demo" in res.stdout


def test_readme_says_how_to_run_hallclock_from_the_venv():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert ". .venv/bin/activate" in text and ".venv/bin/hallclock" in text


def test_every_tour_command_runs_as_written(tmp_path):
    work = tmp_path / "clone"
    work.mkdir()
    os.symlink(os.path.join(ROOT, "host"), work / "host")  # the sample paths of a fresh clone
    for n, argv, tag in tour_lines():
        if tag == "board":
            res = run_board(n, argv, work)
        elif tag == "server":
            res = run_server(n, argv, work)
        elif tag is None:
            res = subprocess.run(argv, cwd=work, env=env(), capture_output=True, text=True,
                                 timeout=TIMEOUT_S)
        else:
            pytest.fail(f"README.md:{n}: unknown tag [{tag}]")
        check_ok(res, n, argv)
    # what the tour promised is there
    for name in ("game.jsonl", "g2.jsonl", "g3.jsonl", "game.csv", "game.png", "tables.jsonl",
                 "hall.jsonl", "dup.jsonl", "dup.png", "match.jsonl"):
        assert (work / name).is_file(), name
