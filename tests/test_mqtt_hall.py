"""The hall on the network: the referee's START reaches every clock through
``all/down`` with no logger running (ČAS 4.1: every game of the round starts
on the one signal), and ``hall-simulate --transport mqtt`` runs a hall unit
and its tables through our own Mosquitto into one log, relayed as on the
serial hall.
"""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, HALLCLOCK, Hall, wait_for  # noqa: E402

from hallclock.net import mqtt as mqtthost
from hallclock import scenario
from hallclock.vboard import device as virtual  # noqa: E402
from hallclock.link.logfile import read_records  # noqa: E402
from hallclock_fw.settings import parse  # noqa: E402


@pytest.fixture
def hall(tmp_path):
    h = Hall(tmp_path)
    yield h
    h.close()


def test_referee_start_reaches_every_clock_without_a_logger(hall, tmp_path):
    """Three clocks waiting for the round, no logger: the referee's START on
    all/down starts each of them; a logger started afterwards collects their
    logs, each with the one start gong and B's first move waiting."""
    # the table waits; START comes from the referee, within 8 s (at 20x) of
    # t0 however loaded the machine: the clocks connect and a CLI starts first
    text = "160000 end\n"
    devices = []
    t0 = virtual.mark()
    for i, c in enumerate(hall.clocks):
        runner = virtual.make_runner("scrabble", parse("scrabble", []),
                                     scenario.parse_text(text, "<t>"), clock=c,
                                     sid="0000ab%02x" % i)
        net = mqtthost.device_link(hall.address, HALL, c, hall.creds[c])
        d = virtual.DeviceThread(runner, net, virtual.RealPace(t0, 20.0), silence_s=20)
        d.start()
        devices.append(d)
        hall.devices.append(d)
    wait_for(lambda: all(d.line.connected() for d in devices), 60, "clocks on the broker")
    r = subprocess.run(HALLCLOCK + ["referee", "START", "--broker", f"127.0.0.1:{hall.local_port}",
                                    "--hall", HALL, "--credentials", hall.cred_file],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    # the clocks number the start gong themselves, with no host anywhere
    # (seq 1 the boot, 2 its first pass's health report, 3 the gong)
    wait_for(lambda: all(d.runner.last_seq() >= 3 for d in devices), 30, "start gongs")
    log = tmp_path / "late.jsonl"
    lg = hall.start_logger(log)
    hall.wait_logger(lg, timeout=90)
    records = read_records(str(log))
    for c in hall.clocks:
        mine = [r for r in records if r["clock"] == c and r["event"] != "health"]
        assert [r["event"] for r in mine][:2] == ["boot", "gong"]
        assert [r.get("kind") for r in mine if r["event"] == "gong"][0] == "start"
        assert mine[-1]["event"] == "end"


def test_referee_with_a_wrong_password_is_refused(hall, tmp_path):
    import json
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({"referee": {"user": "referee", "password": "nope"}}))
    r = subprocess.run(HALLCLOCK + ["referee", "GONG", "--broker", f"127.0.0.1:{hall.local_port}",
                                    "--hall", HALL, "--credentials", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "refused 'referee'" in r.stderr


def test_hall_simulate_on_our_own_mosquitto(tmp_path, script):
    """Two commands of the README's tour: a virtual hall on MQTT."""
    hall_script = script("1000 press START\n30000 end\n", "hall.txt")
    out = tmp_path / "hall.jsonl"
    r = subprocess.run(HALLCLOCK + ["hall-simulate", "--tables", "3", "--script", hall_script,
                                    "--speed", "20", "--out", str(out), "--transport", "mqtt"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "relayed 1 signal(s) to 3 table(s)" in r.stdout
    records = read_records(str(out))
    for c in ("hall", "table-1", "table-2", "table-3"):
        events = [x["event"] for x in records if x["clock"] == c]
        assert events[0] == "boot" and "gong" in events and events[-1] == "end", (c, events)


def test_hall_simulate_on_a_given_broker(tmp_path, script):
    """--broker: the hall's own broker and credentials (clocks hall, table-N)."""
    h = Hall(tmp_path, clocks=("hall", "table-1", "table-2"))
    try:
        out = tmp_path / "given.jsonl"
        r = subprocess.run(HALLCLOCK + [
            "hall-simulate", "--tables", "2", "--script", script("500 press START\n20000 end\n"),
            "--speed", "20", "--out", str(out), "--transport", "mqtt",
            "--broker", f"127.0.0.1:{h.port}", "--hall", HALL, "--credentials", h.cred_file],
            capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "relayed 1 signal(s) to 2 table(s)" in r.stdout
        clocks = {x["clock"] for x in read_records(str(out))}
        assert clocks == {"hall", "table-1", "table-2"}
        r = subprocess.run(HALLCLOCK + [
            "hall-simulate", "--tables", "3", "--script", script("0 end\n", "e.txt"),
            "--out", str(tmp_path / "x.jsonl"), "--transport", "mqtt",
            "--broker", f"127.0.0.1:{h.port}", "--hall", HALL, "--credentials", h.cred_file],
            capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "no entry for table-3" in r.stderr
    finally:
        h.close()


def test_logger_relays_a_hall_unit_on_the_network(tmp_path):
    """log --broker --hall-unit: the hall unit's START reaches the tables as
    with hallclock hall on cables (docs/hall.md)."""
    h = Hall(tmp_path, clocks=("unit", "t1", "t2"))
    try:
        log = tmp_path / "hall.jsonl"
        lg = h.start_logger(log, extra=["--hall-unit", "unit"])
        t0 = virtual.mark()
        for i, (c, text) in enumerate((("unit", "500 press START\n20000 end\n"),
                                       ("t1", "20000 end\n"), ("t2", "20000 end\n"))):
            runner = virtual.make_runner("scrabble", parse("scrabble", []),
                                         scenario.parse_text(text, "<t>"), clock=c,
                                         sid="0000dd%02x" % i)
            net = mqtthost.device_link(h.address, HALL, c, h.creds[c])
            d = virtual.DeviceThread(runner, net, virtual.RealPace(t0, 10.0), silence_s=20)
            d.start()
            h.devices.append(d)
        h.wait_logger(lg, timeout=90)
        records = read_records(str(log))
        for c in ("unit", "t1", "t2"):
            kinds = [r.get("kind") for r in records if r["clock"] == c and r["event"] == "gong"]
            assert kinds[:1] == ["start"], (c, kinds)
    finally:
        h.close()


def test_our_own_mosquitto_takes_another_port_when_its_free_one_was_taken(monkeypatch):
    """The free port hall-simulate's broker was given is taken by another
    program before Mosquitto binds it (tests in parallel met it: 'mosquitto
    exited at once ... is port 44460 taken?'): it starts on another one."""
    import socket
    from hallclock.hall import netsim
    from hallclock.net import broker as broker_mod
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    real = broker_mod.free_port
    given = iter([taken.getsockname()[1]])
    monkeypatch.setattr(broker_mod, "free_port", lambda: next(given, None) or real())
    try:
        with netsim.OwnBroker(["table-1"]) as own:
            assert own.port != taken.getsockname()[1]
            socket.create_connection(own.address, timeout=5).close()
    finally:
        taken.close()


def test_a_free_port_for_our_listeners_is_below_the_ports_connections_take():
    """Outgoing connections (every clock's, the logger's) take their own port
    from the kernel's ephemeral range; a listener's port drawn there may be
    one of theirs a moment later, so free_port draws below it, and the port
    it gives can be bound."""
    import socket
    from hallclock.net import broker as broker_mod
    low = broker_mod._ephemeral_low()
    ports = {broker_mod.free_port() for _ in range(20)}
    assert all(1024 <= p < low for p in ports), (low, sorted(ports))
    assert len(ports) > 1  # drawn, not one fixed port every test would share
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports.pop()))
