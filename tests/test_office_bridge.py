"""Several halls, one office, on real Mosquitto brokers (docs/network.md
"Several halls"): the office's configuration (office-config) and a hall's
bridge to it (broker-config --office), each broker on free loopback ports.
What a hall's logger ships (hallclock/<hall>/office/log) arrives at the
office, also when the office's broker was down meanwhile, and the office's
acknowledgement comes back; a clock's own frames stay in the hall; a hall's
bridge login can neither write nor read another hall's topics; the office's
tools cannot publish (but the ``office`` login's acknowledgements).

"Nothing arrived" is shown as in test_mqtt_security: a marker sent after the
forbidden message on the same connection (the broker handles one client's
packets in order) reaches the watcher; anything sent before it would have."""
import json
import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from conftest import run_cli  # noqa: E402
from mqttrig import start_broker, wait_for  # noqa: E402

from hallclock.net import broker  # noqa: E402

HALLS = ("hall-a", "hall-b")


class Paho:
    """A plain MQTT 3.1.1 client (paho), its messages kept in order."""

    def __init__(self, address, user, password, subscribe=(), client_id=None, clean=True,
                 qos=0):
        import paho.mqtt.client as mqtt
        self.got = []
        self.lock = threading.Lock()
        self.ready = threading.Event()
        self.refused = None
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2,
                             client_id=client_id or f"{user}-{os.urandom(3).hex()}",
                             protocol=mqtt.MQTTv311, clean_session=clean)
        self.c.username_pw_set(user, password)
        self.subscribe = [(t, qos) for t in subscribe]
        self.c.on_connect = self._on_connect
        self.c.on_subscribe = lambda *a: self.ready.set()
        self.c.on_message = self._on_message
        self.c.connect(*address)
        self.c.loop_start()
        assert self.ready.wait(60), f"{user} did not connect"
        assert self.refused is None, f"{user} refused: {self.refused}"

    def _on_connect(self, client, _u, _flags, rc, _props):
        if rc.is_failure:
            self.refused = str(rc)
            self.ready.set()
        elif self.subscribe:
            client.subscribe(self.subscribe)
        else:
            self.ready.set()

    def _on_message(self, _c, _u, msg):
        with self.lock:
            self.got.append((msg.topic, msg.payload))

    def messages(self):
        with self.lock:
            return list(self.got)

    def publish(self, t, payload, qos=0):
        return self.c.publish(t, payload, qos=qos)

    def stop(self):
        self.c.disconnect()
        self.c.loop_stop()


def log_has(path, text):
    with open(path, "rb") as f:
        return text.encode() in f.read()


def make_office(folder):
    port, local = broker.free_port(), broker.free_port()
    res = run_cli("office-config", "--halls", ",".join(HALLS), "--out", str(folder),
                  "--broker-port", str(port), "--bind", "127.0.0.1", "--local-port", str(local))
    assert res.returncode == 0, res.stderr
    with open(folder / "credentials.json") as f:
        creds = json.load(f)
    return port, local, creds


def make_hall(folder, hall, office_port, office_dir):
    port, local = broker.free_port(), broker.free_port()
    res = run_cli("broker-config", "--hall", hall, "--clocks", "t1,t2", "--out", str(folder),
                  "--broker-port", str(port), "--bind", "127.0.0.1", "--local-port", str(local),
                  "--office", f"127.0.0.1:{office_port}",
                  "--office-credentials", str(office_dir / "halls" / f"{hall}.json"))
    assert res.returncode == 0, res.stderr
    assert "bridges" in res.stdout
    with open(folder / "credentials.json") as f:
        creds = json.load(f)
    creds["local"] = local
    return port, creds


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    """The office's broker and two halls' brokers bridged to it."""
    root = tmp_path_factory.mktemp("office")
    office_dir = root / "office"
    port, local, creds = make_office(office_dir)
    logs = {}
    logs["office"] = str(root / "office.log")
    office = start_broker(str(office_dir), open(logs["office"], "ab"))
    halls = {}
    for h in HALLS:
        hport, hcreds = make_hall(root / h, h, port, office_dir)
        logs[h] = str(root / f"{h}.log")
        halls[h] = (start_broker(str(root / h), open(logs[h], "ab")), hport, hcreds)
    for h in HALLS:  # each bridge logged in at the office, as its own hall's login
        wait_for(lambda: log_has(logs["office"], f"as {broker.bridge_user(h)}"), 60,
                 f"{h}'s bridge at the office")
    yield {"office": office, "port": port, "local": local, "creds": creds, "halls": halls,
           "logs": logs, "dir": office_dir}
    for b, _p, _c in halls.values():
        b.stop()
    office.stop()


def clock(net, hall, name="t1"):
    b, port, creds = net["halls"][hall]
    return Paho(("127.0.0.1", port), creds[name]["user"], creds[name]["password"])


def logger(net, hall, **kw):
    """The hall's logger's login, on the laptop's listener (what ships the log)."""
    b, port, creds = net["halls"][hall]
    return Paho(("127.0.0.1", creds["local"]), "logger", creds["logger"]["password"], **kw)


def office_tool(net, user="office", **kw):
    c = net["creds"][user]
    return Paho(("127.0.0.1", net["local"]), c["user"], c["password"],
                subscribe=kw.pop("subscribe", ["hallclock/+/office/log"]), **kw)


def test_office_config_writes_a_login_per_hall_and_read_only_tools(net):
    creds = net["creds"]
    assert set(creds) == {"office", "viewer", "bridge-hall-a", "bridge-hall-b"}
    acl = (net["dir"] / "acl").read_text()
    assert ("user bridge-hall-a\ntopic write hallclock/hall-a/office/log\n"
            "topic read hallclock/hall-a/office/ack\n\n") in acl
    assert ("user office\ntopic read hallclock/+/office/log\n"
            "topic write hallclock/+/office/ack\n\n") in acl
    assert "user viewer\ntopic read hallclock/+/office/log\n\n" in acl
    hall_a = json.loads((net["dir"] / "halls" / "hall-a.json").read_text())
    assert hall_a["user"] == "bridge-hall-a" and hall_a["hall"] == "hall-a"
    assert os.stat(net["dir"] / "halls" / "hall-a.json").st_mode & 0o077 == 0


def test_the_halls_shipped_log_arrives_at_the_office_and_its_ack_comes_back(net):
    """The logger's batches cross the bridge (out), the office's
    acknowledgements come back (in); a clock's own up stays in the hall
    (it is sent before the batch on the same hall broker: had it crossed,
    it would be at the office first)."""
    watch = office_tool(net)
    try:
        for h in HALLS:
            log = logger(net, h, subscribe=[f"hallclock/{h}/office/ack"])
            c = clock(net, h)
            c.publish(f"hallclock/{h}/t1/up", b"a clock's frame", qos=1)
            c.stop()
            log.publish(f"hallclock/{h}/office/log", f"batch of {h}".encode())
            wait_for(lambda: (f"hallclock/{h}/office/log", f"batch of {h}".encode())
                     in watch.messages(), 60, f"{h}'s batch at the office")
            assert not [t for t, _p in watch.messages() if t.endswith("/t1/up")]
            watch.publish(f"hallclock/{h}/office/ack", f"ack to {h}".encode(), qos=1)
            wait_for(lambda: (f"hallclock/{h}/office/ack", f"ack to {h}".encode())
                     in log.messages(), 60, f"the office's ack in {h}")
            assert log.messages() == [(f"hallclock/{h}/office/ack", f"ack to {h}".encode())]
            log.stop()
    finally:
        watch.stop()


def test_what_a_hall_ships_while_the_office_is_down_arrives_once_it_is_back(net):
    """The bridge's QoS 1 session keeps the shipped batches (QoS 0 from the
    logger, upgraded for the bridge) in the hall's broker while the office
    cannot be reached; the office's own persistent subscriber gets them."""
    sub = office_tool(net, client_id="office-durable", clean=False, qos=1)
    sub.stop()  # its session stays in the office broker (persistence)
    net["office"].stop()
    c = logger(net, "hall-a")
    sent = [f"frame {i}".encode() for i in range(50)]
    for p in sent:
        c.publish("hallclock/hall-a/office/log", p)
    # the broker takes one client's packets in order: the last one acknowledged
    # (QoS 1) means every one before it is in the hall's broker
    c.publish("hallclock/hall-a/office/log", b"seen", qos=1).wait_for_publish(60)
    c.stop()
    net["office"].start(timeout=60.0)
    sub = office_tool(net, client_id="office-durable", clean=False, qos=1)
    try:
        wait_for(lambda: any(p == b"seen" for _t, p in sub.messages()), 90,
                 "the batches queued in the hall, at the office")
        got = [p for t, p in sub.messages() if t == "hallclock/hall-a/office/log"]
        assert [p for p in got if p.startswith(b"frame")] == sent  # all, in order
    finally:
        sub.stop()


def _bridge_login(net, hall):
    c = net["creds"][broker.bridge_user(hall)]
    return c["user"], c["password"]


def test_a_halls_bridge_login_cannot_write_or_read_another_halls_topics(tmp_path):
    """On an office broker of its own: a test client logged in as a hall's
    bridge takes the bridge's client id (client id = user name there)."""
    office_dir = tmp_path / "office"
    port, local, creds = make_office(office_dir)
    b = start_broker(str(office_dir), open(tmp_path / "office.log", "ab"))
    try:
        watch = Paho(("127.0.0.1", local), "office", creds["office"]["password"],
                     subscribe=["hallclock/+/office/log"])
        a = Paho(("127.0.0.1", port), *_bridge_login({"creds": creds}, "hall-a"),
                 subscribe=["hallclock/#"])
        bb = Paho(("127.0.0.1", port), *_bridge_login({"creds": creds}, "hall-b"))
        a.publish("hallclock/hall-b/office/log", b"forged by hall-a", qos=1)
        a.publish("hallclock/hall-b/t1/up", b"forged up", qos=1)
        a.publish("hallclock/hall-b/t1/down", b"forged down", qos=1)
        a.publish("hallclock/hall-a/office/ack", b"own ack forged", qos=1)
        a.publish("hallclock/hall-a/office/log", b"a's own", qos=1)
        wait_for(lambda: (("hallclock/hall-a/office/log", b"a's own") in watch.messages()), 60,
                 "hall-a's own batch")
        bb.publish("hallclock/hall-b/office/log", b"b's own", qos=1)
        wait_for(lambda: (("hallclock/hall-b/office/log", b"b's own") in watch.messages()), 60,
                 "hall-b's own batch")
        assert [p for _t, p in watch.messages()] == [b"a's own", b"b's own"]
        # the office's acknowledgements: hall-a's bridge reads its own hall's
        # only (and its own forged one never reached it: it may not write acks)
        watch.publish("hallclock/hall-b/office/ack", b"to b", qos=1)
        watch.publish("hallclock/hall-a/office/ack", b"to a", qos=1)
        wait_for(lambda: a.messages(), 60, "hall-a's ack")
        assert a.messages() == [("hallclock/hall-a/office/ack", b"to a")]
        for c in (watch, a, bb):
            c.stop()
    finally:
        b.stop()


def test_the_office_tools_cannot_publish(tmp_path):
    office_dir = tmp_path / "office"
    port, local, creds = make_office(office_dir)
    b = start_broker(str(office_dir), open(tmp_path / "office.log", "ab"))
    try:
        viewer = Paho(("127.0.0.1", local), "viewer", creds["viewer"]["password"],
                      subscribe=["hallclock/+/office/log"])
        # what the bridge of hall-a would take back into the hall: its acks
        a = Paho(("127.0.0.1", port), *_bridge_login({"creds": creds}, "hall-a"),
                 subscribe=["hallclock/hall-a/#"])
        for user in ("office", "viewer"):
            tool = Paho(("127.0.0.1", local), user, creds[user]["password"])
            for t in ("hallclock/hall-a/t1/up", "hallclock/hall-a/t1/down",
                      "hallclock/hall-a/all/down", "hallclock/hall-a/office/log"):
                tool.publish(t, b"from the office", qos=1)
            if user == "viewer":  # only the office's own process acknowledges
                tool.publish("hallclock/hall-a/office/ack", b"from the viewer", qos=1)
            tool.stop()
        a.publish("hallclock/hall-a/office/log", b"marker", qos=1)
        wait_for(lambda: any(p == b"marker" for _t, p in viewer.messages()), 60, "the marker")
        assert [p for _t, p in viewer.messages()] == [b"marker"]
        assert a.messages() == []  # the viewer's ack never reached a hall
        a.stop()
        viewer.stop()
    finally:
        b.stop()


@pytest.mark.parametrize("argv, why", [
    (["--office", "127.0.0.1:1"], "--office needs --office-credentials"),
    (["--office-credentials", "x.json"], "go with --office"),
    (["--office", "127.0.0.1:1", "--office-credentials", "HALLB"], "not of --hall hall-a"),
    (["--office", "nowhere", "--office-credentials", "HALLA"], "HOST:PORT"),
    (["--office", "127.0.0.1:1", "--office-credentials", "HALLA", "--office-ca", "none.crt"],
     "--office-ca"),
])
def test_bad_office_options_are_one_line_and_nothing_is_written(tmp_path, argv, why):
    office_dir = tmp_path / "office"
    make_office(office_dir)
    argv = [str(office_dir / "halls" / "hall-b.json") if a == "HALLB" else
            str(office_dir / "halls" / "hall-a.json") if a == "HALLA" else a for a in argv]
    res = run_cli("broker-config", "--hall", "hall-a", "--clocks", "t1", "--out",
                  str(tmp_path / "hall"), *argv)
    assert res.returncode == 2 and why in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1
    assert not (tmp_path / "hall").exists()


def test_rotate_takes_no_office_options(tmp_path):
    res = run_cli("broker-config", "--rotate", "--out", str(tmp_path / "hall"),
                  "--office", "127.0.0.1:1883")
    assert res.returncode == 2 and "--rotate" in res.stderr and "--office" in res.stderr


def test_the_bridge_speaks_tls_to_the_office_with_its_ca(tmp_path):
    """office-config --tls-port: the halls' bridges on TLS (the office's CA
    given to broker-config as --office-ca); a frame crosses it."""
    office_dir = tmp_path / "office"
    port, tport, local = broker.free_port(), broker.free_port(), broker.free_port()
    res = run_cli("office-config", "--halls", "hall-a", "--out", str(office_dir),
                  "--broker-port", str(port), "--tls-port", str(tport), "--bind", "127.0.0.1",
                  "--local-port", str(local))
    assert res.returncode == 0, res.stderr
    assert "--office-ca" in res.stdout
    creds = json.loads((office_dir / "credentials.json").read_text())
    hall = tmp_path / "hall-a"
    hport, hlocal = broker.free_port(), broker.free_port()
    res = run_cli("broker-config", "--hall", "hall-a", "--clocks", "t1", "--out", str(hall),
                  "--broker-port", str(hport), "--bind", "127.0.0.1", "--local-port",
                  str(hlocal), "--office", f"127.0.0.1:{tport}", "--office-credentials",
                  str(office_dir / "halls" / "hall-a.json"),
                  "--office-ca", str(office_dir / "tls" / "ca.crt"))
    assert res.returncode == 0, res.stderr
    conf = (hall / "mosquitto.conf").read_text()
    assert "bridge_cafile" in conf and "bridge_insecure false" in conf
    assert os.stat(hall / "mosquitto.conf").st_mode & 0o077 == 0  # it holds a password
    olog = str(tmp_path / "office.log")
    office = start_broker(str(office_dir), open(olog, "ab"))
    hb = start_broker(str(hall), open(tmp_path / "hall.log", "ab"))
    try:
        wait_for(lambda: log_has(olog, "as bridge-hall-a"), 60, "the bridge at the office")
        watch = Paho(("127.0.0.1", local), "office", creds["office"]["password"],
                     subscribe=["hallclock/+/office/log"])
        hcreds = json.loads((hall / "credentials.json").read_text())
        c = Paho(("127.0.0.1", hlocal), "logger", hcreds["logger"]["password"])
        c.publish("hallclock/hall-a/office/log", b"over tls")
        wait_for(lambda: ("hallclock/hall-a/office/log", b"over tls") in watch.messages(), 60,
                 "the batch over the TLS bridge")
        c.stop()
        watch.stop()
    finally:
        hb.stop()
        office.stop()


def test_broker_command_runs_the_offices_folder(tmp_path):
    """``hallclock broker --dir`` runs the office's folder as it runs a
    hall's (as the ``mosquitto`` user when started as root: a folder it can
    enter, as tests/test_mqtt_link.py does it)."""
    import shutil
    import socket
    import subprocess
    import tempfile
    base = tempfile.mkdtemp(prefix="hallclock-officetest-")
    try:
        os.chmod(base, 0o711)
        from pathlib import Path
        port, local, creds = make_office(Path(base) / "office")
        p = subprocess.Popen([sys.executable, "-m", "hallclock", "broker", "--dir",
                              os.path.join(base, "office")], stderr=subprocess.PIPE, text=True)
        try:
            def listening():
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    return True
                except OSError:
                    assert p.poll() is None, p.stderr.read()
                    return False
            wait_for(listening, 60, "mosquitto listening")
            # the passwords and ACL read: a bridge login writes, the office reads it
            watch = Paho(("127.0.0.1", local), "office", creds["office"]["password"],
                         subscribe=["hallclock/+/office/log"])
            a = Paho(("127.0.0.1", port), *_bridge_login({"creds": creds}, "hall-a"))
            a.publish("hallclock/hall-a/office/log", b"x", qos=1)
            wait_for(lambda: watch.messages() == [("hallclock/hall-a/office/log", b"x")], 60,
                     "the batch")
            a.stop()
            watch.stop()
        finally:
            p.terminate()
            p.wait(10)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_frames_queued_for_the_office_survive_a_clean_hall_broker_restart(net):
    """The office down, the hall's logger ships, the hall's broker is
    stopped and started again (a clean stop saves its persistence) before
    the office is back: the batches still reach the office (Mosquitto
    2.0.11's bridge with cleansession false on both sides)."""
    sub = office_tool(net, client_id="office-durable-2", clean=False, qos=1)
    sub.stop()
    net["office"].stop()
    hb = net["halls"]["hall-b"][0]
    c = logger(net, "hall-b")
    sent = [f"kept {i}".encode() for i in range(20)]
    for p in sent:
        c.publish("hallclock/hall-b/office/log", p)
    c.publish("hallclock/hall-b/office/log", b"seen-b", qos=1).wait_for_publish(60)
    c.stop()
    hb.restart()
    net["office"].start(timeout=60.0)
    sub = office_tool(net, client_id="office-durable-2", clean=False, qos=1)
    try:
        wait_for(lambda: any(p == b"seen-b" for _t, p in sub.messages()), 90,
                 "the frames kept across the hall broker's restart, at the office")
        got = [p for t, p in sub.messages() if t == "hallclock/hall-b/office/log"]
        assert [p for p in got if p.startswith(b"kept")] == sent
    finally:
        sub.stop()
