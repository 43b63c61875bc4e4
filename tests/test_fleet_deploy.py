"""A club's clocks on USB: fleet-config writes one hallclock.cfg per clock,
deploy puts the firmware and each board's own cfg on several virtual boards
at once (checked back by hash; one board unplugged half-way fails alone, and
the next run copies only what is missing), and `ports --versions` names
each board's clock, firmware and MicroPython versions."""
import contextlib
import os
import subprocess
import sys

import pytest

from conftest import ROOT, hold_pty, run_cli, virtual_board
from hallclock_fw import VERSION
from hallclock_fw.hw import config


def test_fleet_config_writes_one_cfg_per_clock_as_the_clock_reads_it(tmp_path):
    out = tmp_path / "cfg"
    res = run_cli("fleet-config", "--clocks", "table-01,table-02,table-03", "--mode",
                  "scrabble", "--set", "move_s=90", "--set", "warn_s=20,10", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert sorted(os.listdir(out)) == ["table-01.cfg", "table-02.cfg", "table-03.cfg"]
    cfg = config.parse((out / "table-02.cfg").read_text(), "unnamed")
    assert cfg.error is None and cfg.clock == "table-02" and cfg.mode == "scrabble"
    assert cfg.settings["move_s"] == 90 and cfg.settings["warn_s"] == (20, 10)
    # nothing written over without --force
    res = run_cli("fleet-config", "--clocks", "table-01", "--mode", "duplicate", "--out", str(out))
    assert res.returncode == 2 and "--force" in res.stderr
    assert config.parse((out / "table-01.cfg").read_text(), "x").mode == "scrabble"


@pytest.mark.parametrize("args, said", [
    (["--clocks", "table 1", "--mode", "scrabble"], "clock name"),
    (["--clocks", "all", "--mode", "scrabble"], "reserved"),
    (["--clocks", "a,a", "--mode", "scrabble"], "twice"),
    (["--clocks", "a", "--mode", "chess"], "unknown mode"),
    (["--clocks", "a", "--mode", "scrabble", "--set", "move_s=10"], "warn_s"),
])
def test_fleet_config_bad_input_writes_nothing(tmp_path, args, said):
    out = tmp_path / "cfg"
    res = run_cli("fleet-config", *args, "--out", str(out))
    assert res.returncode == 2 and said in res.stderr, res.stderr
    assert res.stderr.startswith("hallclock: ") and "Traceback" not in res.stderr
    assert not out.exists() or not os.listdir(out)


def test_deploy_bad_input(tmp_path):
    res = run_cli("deploy")
    assert res.returncode == 2 and "--ports-file" in res.stderr
    ports = tmp_path / "ports"
    ports.write_text("/dev/null table-9\n")
    (tmp_path / "cfg").mkdir()
    res = run_cli("deploy", "--ports-file", str(ports), "--cfg-dir", str(tmp_path / "cfg"))
    assert res.returncode == 2 and "table-9.cfg" in res.stderr
    ports.write_text("/dev/null bad/name\n")
    res = run_cli("deploy", "--ports-file", str(ports))
    assert res.returncode == 2 and "ports:1" in res.stderr


@contextlib.contextmanager
def boards(n, *options):
    """``n`` virtual boards: yields [(path, process)]."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"), env.get("PYTHONPATH", "")])
    procs = []
    held = []  # each board's pty held until it is stopped (conftest.hold_pty)
    try:
        for i in range(n):
            opts = options[i] if i < len(options) else ()
            procs.append(subprocess.Popen([sys.executable, "-m", "hallclock.vboard.mpvm.board", *opts],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True, env=env))
        paths = [p.stdout.readline().strip() for p in procs]
        assert all(p.startswith("/dev/") for p in paths), paths
        held.extend(hold_pty(path, p) for path, p in zip(paths, procs))
        yield list(zip(paths, procs))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for fd in held:
            os.close(fd)


def mpremote(port, *args):
    # a board deployed and reset runs its clock again: it hands its console back first
    assert run_cli("maintenance", "--port", port).returncode == 0
    res = subprocess.run([sys.executable, "-m", "mpremote", "connect", port, *args],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout.replace("\r\n", "\n")


def deploy(ports_file, cfg_dir, kill=None):
    """Run deploy; ``kill``: (port, process) unplugged as soon as its copy began."""
    exe = os.path.join(os.path.dirname(sys.executable), "hallclock")
    p = subprocess.Popen([exe, "deploy", "--ports-file", str(ports_file), "--cfg-dir",
                          str(cfg_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    err = []
    for line in p.stderr:
        err.append(line)
        if kill is not None and line.startswith(kill[0] + ": copying"):
            kill[1].kill()  # the USB cable pulled out half-way
    out = p.stdout.read()
    assert p.wait(timeout=300) is not None
    return p.returncode, out, "".join(err)


def test_deploy_onto_three_boards_at_once_one_unplugged_half_way(tmp_path):
    cfg = tmp_path / "cfg"
    res = run_cli("fleet-config", "--clocks", "t-1,t-2,t-3,t-4", "--mode", "backgammon",
                  "--set", "match=5", "--out", str(cfg))
    assert res.returncode == 0, res.stderr
    with boards(3, ("--clock",)) as bs:
        (p1, _b1), (p2, b2), (p3, _b3) = bs
        ports = tmp_path / "ports"
        ports.write_text(f"# the club's boards\n{p1} t-1\n{p2} t-2\n{p3} t-3\n")
        rc, out, err = deploy(ports, cfg, kill=(p2, b2))
        lines = out.splitlines()
        assert rc == 1, out + err
        assert lines[0].startswith(f"t-1 ({p1}): done -- firmware {VERSION}, MicroPython 1.")
        assert lines[1].startswith(f"t-2 ({p2}): FAILED at ") and " -- " in lines[1]
        assert lines[2].startswith(f"t-3 ({p3}): done")
        assert "2 of 3 boards done" in lines[3]
        # each board has its own cfg, checked by the board's own hash
        for port, clock in ((p1, "t-1"), (p3, "t-3")):
            assert mpremote(port, "fs", "cat", ":hallclock.cfg") == (cfg / f"{clock}.cfg").read_text()
            assert "app.mpy" in mpremote(port, "fs", "ls", ":hallclock_fw")
        # the unplugged board comes back (a fresh board on another port): the
        # same deploy again does its work and only checks the others
        with boards(1) as [(p4, _b4)]:
            ports.write_text(f"{p1} t-1\n{p4} t-2\n{p3} t-3\n")
            rc, out, err = deploy(ports, cfg)
            lines = out.splitlines()
            assert rc == 0, out + err
            assert f"t-1 ({p1}): done" in lines[0] and "; 0 files copied" in lines[0]
            assert f"t-2 ({p4}): done" in lines[1] and "; 0 files copied" not in lines[1]
            assert "; 0 files copied" in lines[2]
            assert "3 of 3 boards done" in lines[3]
            assert mpremote(p4, "fs", "cat", ":hallclock.cfg") == (cfg / "t-2.cfg").read_text()
            # which board runs what
            res = run_cli("ports", "--port", p1, "--port", p4)
            assert res.returncode == 0, res.stderr
            got = res.stdout.splitlines()
            assert got[0].split("\t") == [p1, "clock t-1", f"firmware {VERSION}",
                                          got[0].split("\t")[3]]
            assert got[0].split("\t")[3].startswith("MicroPython 1.")
            assert got[1].startswith(f"{p4}\tclock t-2\tfirmware {VERSION}")


def test_a_changed_file_on_the_board_is_copied_again_and_a_stale_one_removed(tmp_path):
    with virtual_board() as port:
        ports = tmp_path / "ports"
        ports.write_text(f"{port} solo\n")
        cfg = tmp_path / "cfg"
        assert run_cli("fleet-config", "--clocks", "solo", "--mode", "scrabble",
                       "--out", str(cfg)).returncode == 0
        rc, out, err = deploy(ports, cfg)
        assert rc == 0, out + err
        junk = tmp_path / "junk.mpy"
        junk.write_bytes(b"not the firmware")
        mpremote(port, "fs", "cp", str(junk), ":hallclock_fw/app.mpy", "+",
                 "fs", "cp", str(junk), ":hallclock_fw/old.mpy")
        rc, out, err = deploy(ports, cfg)
        assert rc == 0, out + err
        assert "; 1 files copied" in out and "1 stale removed" in out
        assert "old.mpy" not in mpremote(port, "fs", "ls", ":hallclock_fw")


def test_a_rotated_hall_key_goes_onto_the_board_with_deploy(tmp_path):
    """``broker-config --rotate`` (each tournament day), then ``deploy
    --cfg-dir DIR/clocks``: the board's hallclock.cfg carries the new hall
    key (docs/network.md "Replays and floods")."""
    import json
    hall = tmp_path / "hall"
    res = run_cli("broker-config", "--hall", "open", "--clocks", "t1", "--out", str(hall),
                  "--bind", "127.0.0.1")
    assert res.returncode == 0, res.stderr
    old = json.loads((hall / "credentials.json").read_text())["referee"]["hall_key"]
    res = run_cli("broker-config", "--rotate", "--out", str(hall))
    assert res.returncode == 0, res.stderr
    new = json.loads((hall / "credentials.json").read_text())["referee"]["hall_key"]
    assert new != old
    with boards(1) as [(p1, _b1)]:
        ports = tmp_path / "ports"
        ports.write_text(f"{p1} t1\n")
        rc, out, err = deploy(ports, hall / "clocks")
        assert rc == 0, out + err
        on_board = mpremote(p1, "fs", "cat", ":hallclock.cfg")
        assert f"hall_key = {new}" in on_board and old not in on_board


def test_a_tls_clock_gets_the_halls_ca_with_deploy(tmp_path):
    """``broker-config --tls-port P --tls-clocks t1``: t1's cfg dials the TLS
    listener and names tls_ca_file, clocks/hallclock.ca is the hall's CA in
    DER; ``deploy`` puts both on t1's board (t2 stays plain, gets no CA);
    ``--rotate`` keeps the TLS lines (docs/network.md "TLS on the clock")."""
    import ssl
    hall = tmp_path / "hall"
    res = run_cli("broker-config", "--hall", "open", "--clocks", "t1,t2", "--out", str(hall),
                  "--bind", "127.0.0.1", "--broker-port", "18830", "--tls-port", "18831",
                  "--tls-clocks", "t1")
    assert res.returncode == 0, res.stderr
    assert "1 on TLS: t1" in res.stdout, res.stdout
    der = ssl.PEM_cert_to_DER_cert((hall / "tls" / "ca.crt").read_text())
    assert (hall / "clocks" / "hallclock.ca").read_bytes() == der
    t1 = (hall / "clocks" / "t1.cfg").read_text()
    t2 = (hall / "clocks" / "t2.cfg").read_text()
    assert "broker = 127.0.0.1:18831" in t1 and "tls_ca_file = hallclock.ca" in t1
    assert "broker = 127.0.0.1:18830" in t2 and "tls_ca_file" not in t2
    assert run_cli("broker-config", "--rotate", "--out", str(hall)).returncode == 0
    assert "tls_ca_file = hallclock.ca" in (hall / "clocks" / "t1.cfg").read_text()
    with boards(2) as [(p1, _b1), (p2, _b2)]:
        ports = tmp_path / "ports"
        ports.write_text(f"{p1} t1\n{p2} t2\n")
        rc, out, err = deploy(ports, hall / "clocks")
        assert rc == 0, out + err
        assert "tls_ca_file = hallclock.ca" in mpremote(p1, "fs", "cat", ":hallclock.cfg")
        listing = mpremote(p1, "fs", "ls", ":")
        assert "hallclock.ca" in listing and str(len(der)) in listing, listing
        assert "hallclock.ca" not in mpremote(p2, "fs", "ls", ":")


@pytest.mark.parametrize("args, said", [
    (["--tls-clocks", "t1"], "--tls-clocks needs --tls-port"),
    (["--tls-port", "18831", "--tls-clocks", "t9"], "--tls-clocks t9: not among --clocks"),
    (["--tls-port", "18831", "--tls-clocks", "t1", "--address", "10.0.0.9"],
     "the broker's certificate names --bind 127.0.0.1"),
])
def test_bad_tls_clocks_are_refused_and_nothing_is_written(tmp_path, args, said):
    hall = tmp_path / "hall"
    res = run_cli("broker-config", "--hall", "open", "--clocks", "t1,t2", "--out", str(hall),
                  "--bind", "127.0.0.1", *args)
    assert res.returncode == 2 and said in res.stderr, res.stderr
    assert not (hall / "credentials.json").exists()
