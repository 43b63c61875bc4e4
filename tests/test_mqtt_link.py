"""The hall network end to end, on the real Mosquitto: broker-config writes a
hall, the broker runs it, clocks run the firmware's own network link (its MQTT
client and the serial link's ring and resends), ``hallclock log --broker``
logs them.  A clock's log over the network equals its log over a serial
line, record for record (every field but ``host_time``).
"""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, HALLCLOCK, Hall, clock_records, game, reference  # noqa: E402

from hallclock.net import broker  # noqa: E402


@pytest.fixture
def hall(tmp_path):
    h = Hall(tmp_path)
    yield h
    h.close()


def test_broker_config_writes_the_hall(tmp_path):
    """The contract's files: mosquitto.conf (listener, persistence, no
    anonymous access, password and ACL files), credentials.json for every
    clock and logger/referee/viewer, each clock's hallclock.cfg."""
    out = tmp_path / "hall"
    r = subprocess.run(HALLCLOCK + ["broker-config", "--hall", "h1", "--clocks", "t1,t2",
                                    "--out", str(out), "--broker-port", "18830"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    conf = (out / "mosquitto.conf").read_text()
    assert "listener 18830" in conf and "allow_anonymous false" in conf
    assert "persistence true" in conf
    assert f"password_file {out / 'passwords'}" in conf and f"acl_file {out / 'acl'}" in conf
    creds = json.loads((out / "credentials.json").read_text())
    assert sorted(creds) == ["logger", "referee", "t1", "t2", "viewer"]
    assert len({c["password"] for c in creds.values()}) == 5
    assert oct(os.stat(out / "credentials.json").st_mode & 0o777) == "0o600"
    cfg = (out / "clocks" / "t2.cfg").read_text()
    assert "clock = t2" in cfg and "hall = h1" in cfg and ":18830" in cfg
    assert creds["t2"]["password"] in cfg and creds["t1"]["password"] not in cfg
    # the clock's cfg is one the board reads (hw/config.py), network keys included
    from hallclock_fw.hw import config
    parsed = config.parse(cfg, "x")
    assert parsed.error is None and parsed.clock == "t2" and parsed.net["hall"] == "h1"
    assert parsed.net["password"] == creds["t2"]["password"]
    # a second run never overwrites the passwords the clocks carry
    r = subprocess.run(HALLCLOCK + ["broker-config", "--hall", "h1", "--clocks", "t1",
                                    "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and "already holds" in r.stderr


@pytest.mark.parametrize("args, says", [
    (["--clocks", "t1,all"], "reserved"),
    (["--clocks", "t1,viewer"], "reserved"),
    (["--clocks", "t1,t1"], "twice"),
    (["--clocks", "bad name"], "letters"),
    (["--clocks", "t1", "--broker-port", "0"], "1-65535"),
])
def test_broker_config_refuses_bad_input(tmp_path, args, says):
    r = subprocess.run(HALLCLOCK + ["broker-config", "--hall", "h", "--out",
                                    str(tmp_path / "x")] + args, capture_output=True, text=True)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr


def test_commands_end_to_end_give_the_serial_log(hall, tmp_path, script):
    """log --broker and device --broker, as a user types them: the log equals
    the pty log of the same script and session."""
    text = game(moves=12)
    path = script(text)
    log = tmp_path / "net.jsonl"
    lg = hall.start_logger(log, clocks=["t1"])
    dev = subprocess.run(HALLCLOCK + ["device", "--broker", f"127.0.0.1:{hall.port}",
                                      "--hall", HALL, "--clock", "t1", "--credentials",
                                      hall.cred_file, "--script", path, "--session",
                                      "0000cafe"], capture_output=True, text=True, timeout=60)
    assert dev.returncode == 0, dev.stderr
    hall.wait_logger(lg)
    assert clock_records(log, "t1") == reference(tmp_path, "t1", text)


def test_three_clocks_and_a_hot_standby_logger(hall, tmp_path):
    """Every clock of the hall into one log; a second logger on another
    laptop writes the identical log."""
    texts = {c: game(moves=8 + 3 * i) for i, c in enumerate(hall.clocks)}
    main, standby = tmp_path / "main.jsonl", tmp_path / "standby.jsonl"
    loggers = [hall.start_logger(main), hall.start_logger(standby)]
    for i, c in enumerate(hall.clocks):
        hall.device(c, texts[c], sid="0000ca%02x" % i)
    for p in loggers:
        hall.wait_logger(p)
    for i, c in enumerate(hall.clocks):
        want = reference(tmp_path, c, texts[c], sid="0000ca%02x" % i)
        assert clock_records(main, c) == want
        assert clock_records(standby, c) == want
    # and audit, which a referee runs on the two laptops' logs, says they agree
    res = subprocess.run(HALLCLOCK + ["audit", str(main), str(standby)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"the logs agree: {len(hall.clocks)} clocks" in res.stdout


def test_device_without_broker_is_told_why(tmp_path, script):
    port = broker.free_port()
    creds = tmp_path / "c.json"
    creds.write_text(json.dumps({"t1": {"user": "t1", "password": "x", "key": "ab" * 16,
                                        "hall_key": "cd" * 16}}))
    r = subprocess.run(HALLCLOCK + ["device", "--broker", f"127.0.0.1:{port}", "--hall", "h",
                                    "--clock", "t1", "--credentials", str(creds), "--script",
                                    script("0 end\n"), "--silence-s", "0.5"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "no host contact" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, says", [
    (["--broker", "nohost"], "HOST:PORT"),
    (["--broker", "127.0.0.1:1883"], "--hall"),
    (["--hall", "h"], "goes with --broker"),
    ([], "--port PORT"),
])
def test_log_broker_options_checked(tmp_path, args, says):
    r = subprocess.run(HALLCLOCK + ["log", "--out", str(tmp_path / "x.jsonl")] + args,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and says in r.stderr, r.stderr


def test_logger_refused_by_the_broker_exits_2(hall, tmp_path):
    bad = tmp_path / "bad.json"
    creds = dict(hall.creds)
    creds["logger"] = {"user": "logger", "password": "wrong"}
    bad.write_text(json.dumps(creds))
    r = subprocess.run(HALLCLOCK + ["log", "--broker", f"127.0.0.1:{hall.local_port}",
                                    "--hall", HALL,
                                    "--credentials", str(bad), "--out", str(tmp_path / "l.jsonl")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "refused 'logger'" in r.stderr
    assert not (tmp_path / "l.jsonl").exists()


def test_stats_line_counts_records(hall, tmp_path):
    """The logger's closing line says what came in, as on the serial line."""
    log = tmp_path / "l.jsonl"
    lg = hall.start_logger(log, clocks=["t2"])
    hall.device("t2", game(moves=2))
    err = hall.wait_logger(lg)
    n = len(log.read_text().splitlines())
    assert n > 5 and f"{n} records written" in err


def test_broker_command_runs_mosquitto_as_its_own_user(tmp_path):
    """``hallclock broker --dir`` runs the real Mosquitto in the foreground on
    a broker-config folder; started as root it drops to the ``mosquitto``
    user, which must read the password and ACL files broker-config wrote (so a
    clock can log in) -- in a folder that user can enter."""
    import socket
    import tempfile

    from hallclock.net.mqtt import BrokerClient
    from mqttrig import wait_for
    base = tempfile.mkdtemp(prefix="hallclock-brokertest-")  # in /tmp, not pytest's 0700 tree
    try:
        os.chmod(base, 0o711)
        folder = os.path.join(base, "hall")
        port = broker.free_port()
        creds = broker.write_config(folder, "h", ["t1"], port=port, bind="127.0.0.1")
        p = subprocess.Popen(HALLCLOCK + ["broker", "--dir", folder], stderr=subprocess.PIPE,
                             text=True)
        try:
            def listening():
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    return True
                except OSError:
                    assert p.poll() is None, p.stderr.read()
                    return False
            wait_for(listening, 60, "mosquitto listening")
            net = BrokerClient(("127.0.0.1", port), creds["t1"]).start()  # the passwords read
            net.stop()
            if os.geteuid() == 0:
                import pwd
                with open(f"/proc/{p.pid}/status") as f:
                    uid = [ln.split()[1] for ln in f if ln.startswith("Uid:")][0]
                assert int(uid) == pwd.getpwnam("mosquitto").pw_uid
        finally:
            p.terminate()
            p.wait(10)
        assert os.path.exists(os.path.join(folder, "data", "mosquitto.db"))  # persistence
    finally:
        import shutil
        shutil.rmtree(base, ignore_errors=True)


def test_broker_command_names_a_folder_mosquitto_cannot_enter(tmp_path):
    folder = tmp_path / "hall"
    broker.write_config(str(folder), "h", ["t1"], port=broker.free_port(), bind="127.0.0.1")
    r = subprocess.run(HALLCLOCK + ["broker", "--dir", str(folder)], capture_output=True,
                       text=True, timeout=30)
    if os.geteuid() == 0:  # pytest's folders are 0700: the mosquitto user cannot enter
        assert r.returncode == 2 and "cannot enter" in r.stderr
    r = subprocess.run(HALLCLOCK + ["broker", "--dir", str(tmp_path / "nothing")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "no mosquitto.conf" in r.stderr


def test_every_hop_sends_a_frame_at_once(hall):
    """Nagle's algorithm held each small frame until the last one's TCP ack
    (the peer delays that ack up to 40 ms): the clock's socket, the broker's
    sockets and the host's paho socket all send at once (TCP_NODELAY), so an
    event reaches the log in milliseconds (docs/benchmarks.md, the hall
    network at scale)."""
    import socket as so

    from hallclock.net.mqtt import BrokerClient
    from hallclock.vboard.vdev import netpump
    conf = open(os.path.join(hall.conf_dir, "mosquitto.conf")).read()
    assert "set_tcp_nodelay true" in conf.splitlines()
    net = BrokerClient(hall.local, hall.creds["logger"], []).start()
    try:
        assert net.client.socket().getsockopt(so.IPPROTO_TCP, so.TCP_NODELAY)
    finally:
        net.stop()
    s = netpump.opener(*hall.address)(0)
    try:
        assert s.getsockopt(so.IPPROTO_TCP, so.TCP_NODELAY)
    finally:
        s.close()


def test_a_pass_sends_its_messages_together_at_its_end():
    """What the logger sends in one pass (acks after the fsync, challenges,
    requests) leaves in ONE send when the pass ends, in order, each a whole
    QoS 0 PUBLISH; nothing waits for a later pass, and with no connection the
    batch is dropped as paho drops a QoS 0 publish (docs/benchmarks.md)."""
    import socket
    import paho.mqtt.client as pm
    from hallclock.net.mqtt import BrokerClient, _client_class
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    sock = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    try:
        sends, short = [], []

        class Counted:  # the socket, its sends counted
            def send(self, data):
                sends.append(bytes(data))
                if short:  # a full socket: it takes this much only
                    return sock.send(bytes(data[:short.pop()]))
                return sock.send(data)

            def fileno(self):
                return sock.fileno()
        c = _client_class()(pm.CallbackAPIVersion.VERSION2)
        c._sock = Counted()
        net = BrokerClient.__new__(BrokerClient)
        net.client, net.batch, net.heads = c, None, {}
        t1, t2 = "hallclock/h/t1/down", "hallclock/h/t2/down"
        with net.batched():
            net.publish(t1, b"A 1\n")
            with net.batched():  # a batch inside a batch: the outer one sends
                net.publish(t2, b"x" * 200)  # a remaining length of two bytes
            net.publish(t1, b"A 2\n")
            assert sends == []  # nothing before the pass ends
        want = (b"\x30" + bytes([2 + len(t1) + 4]) + b"\x00" + bytes([len(t1)]) + t1.encode()
                + b"A 1\n"
                + b"\x30" + bytes([(221 & 127) | 128, 221 >> 7]) + b"\x00" + bytes([len(t2)])
                + t2.encode() + b"x" * 200
                + b"\x30" + bytes([2 + len(t1) + 4]) + b"\x00" + bytes([len(t1)]) + t1.encode()
                + b"A 2\n")
        assert sends == [want]
        peer.settimeout(5)
        got = b""
        while len(got) < len(want):
            got += peer.recv(4096)
        assert got == want  # out at once, whole
        short.append(10)
        with net.batched():
            net.publish(t2, b"y" * 200)
        assert len(sends) == 3 and sends[2] == sends[1][10:]  # the rest: paho's writer
        got = b""
        while len(got) < len(sends[1]):
            got += peer.recv(4096)
        assert got == sends[1]
        c._sock = None
        with net.batched():
            net.publish(t1, b"A 3\n")  # no connection: dropped, no error
        assert len(sends) == 3
    finally:
        for s in (sock, peer, server):
            s.close()
