"""A rogue in the hall, against the real Mosquitto on the configuration
broker-config writes (docs/network.md, "Threat model"):

- a phone with no password opens 1 100 idle TCP sockets on the hall's
  listener: the clocks already connected keep working, and the laptop's own
  tools (on their own listener, which the hall cannot reach) still connect:
  ``hallclock referee START`` reaches the clock;
- anyone with a password (each role's, another clock's) connects with a
  clock's client id: the clock stays connected and keeps getting its frames;
- retained messages: refused (the publisher is cut off), nothing stored,
  nothing replayed to a clock that connects, also after a broker restart;
- an oversized message on all/down is never delivered.

"Nothing arrived" is shown by markers, as in test_mqtt_security: after the
attempt, an allowed publisher sends a marker the watcher subscribes to; the
broker keeps one client's messages in order, and retained messages come
before anything else after a subscription, so once the marker is in,
anything the attempt delivered would be too.
"""
import os
import resource
import socket
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, HALLCLOCK, Hall, wait_for  # noqa: E402

from hallclock.net.mqtt import BrokerClient  # noqa: E402
from hallclock_fw import mqtt, protocol, seal  # noqa: E402
from hallclock import hostframes
from hallclock_fw.netlink import topic  # noqa: E402

FLOOD = 1100  # idle sockets: more than a stock 1024-file process can hold
LAPTOP_FILES = 1024  # the soft open-file limit a laptop's shell gives the broker
ALL = topic(HALL, "all", "down")
HOSTS = ("logger", "referee", "viewer")


def down(c):
    return topic(HALL, c, "down")


def up(c):
    return topic(HALL, c, "up")


@pytest.fixture
def hall(tmp_path):
    """A hall whose broker has a laptop's 1 024 files (the flood's target)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(LAPTOP_FILES, hard), hard))
    try:
        h = Hall(tmp_path, clocks=("t1", "t2"))  # mosquitto inherits the limit
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    yield h
    h.close()


class Clock:
    """A clock's MQTT session with the firmware's own client
    (``hallclock_fw.mqtt``, the board's code) on a real socket, polled by a
    thread: what arrives on its down and all/down, and every time the broker
    cut it off (its state left UP)."""

    def __init__(self, hall, name):
        import threading

        from hallclock.vboard.vdev.netpump import ticks_ms
        self.ticks = ticks_ms
        self.name = name
        self.cuts = 0
        self.got = []
        self.lock = threading.Lock()
        cred = hall.creds[name]
        self.client = mqtt.Client(name, cred["user"], cred["password"], 15,
                                  (down(name), ALL), on_message=self._message)
        sock = socket.create_connection(hall.address)
        sock.setblocking(False)
        self.client.start(sock, ticks_ms())
        self.halt = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        wait_for(lambda: self.client.state == mqtt.UP, 60, f"{name} up on the broker")
        self.was_up = True

    def _message(self, topic_name, payload):
        self.got.append((bytes(topic_name).decode(), bytes(payload)))

    def _run(self):
        was_up = False
        while not self.halt:
            with self.lock:
                state = self.client.poll(self.ticks())
            if state == mqtt.UP:
                was_up = True
            elif was_up:
                self.cuts += 1
                return
            time.sleep(0.005)  # the board's loop: a pass every few ms

    def publish(self, topic_name, payload):
        with self.lock:
            assert self.client.publish(topic_name.encode(), payload)

    def seen(self):
        return list(self.got)

    def stop(self):
        self.halt = True
        self.thread.join(5)
        with self.lock:
            self.client.disconnect()


def host(hall, name, subscribe=()):
    """A host tool on the laptop's own listener."""
    return BrokerClient(hall.local, hall.creds[name], subscribe).start()


def referee_cli(hall, button):
    t = time.monotonic()
    r = subprocess.run(HALLCLOCK + [
        "referee", button, "--broker", f"127.0.0.1:{hall.local_port}", "--hall", HALL,
        "--credentials", hall.cred_file], capture_output=True, text=True, timeout=60)
    return r, time.monotonic() - t


def flood(address, n):
    """``n`` TCP sockets that never send a byte (bounded: closed by the caller)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 512:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 512), hard))
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(address)
        except OSError:
            pass  # refused or timed out: the flood still holds the broker's queue
        socks.append(s)
    return socks


def _signal(hall, payload):
    """The frame of the referee's sealed message on all/down (None: not one)."""
    got = seal.open_sealed(seal.Mac(seal.key_bytes(hall.creds["referee"]["hall_key"])),
                           b"A", payload)
    return got and got[0]


def test_a_flood_of_idle_sockets_stops_neither_clocks_nor_the_laptop(hall):
    logger = host(hall, "logger", [up("+")])
    clock = Clock(hall, "t1")
    socks = flood(hall.address, FLOOD)
    try:
        # the laptop's tools connect afresh: the referee's START reaches the clock
        r, _took = referee_cli(hall, "START")
        assert r.returncode == 0, r.stderr
        start = hostframes.command(3)
        wait_for(lambda: any(_signal(hall, p) == start for t, p in clock.seen() if t == ALL), 60,
                 "START at the connected clock")
        # ... and the clock's own frames reach the logger
        hello = protocol.hello("0000cafe", "t1", "scrabble", "1")
        clock.publish(up("t1"), hello)
        got = []
        wait_for(lambda: got.extend(logger.messages()) or (up("t1"), hello) in got, 60,
                 "t1's frame at the logger")
        # (this process holds the flood's sockets, so paho's select() cannot
        # take a new one here: every fresh tool runs in a process of its own)
        r, _took = referee_cli(hall, "GONG")
        assert r.returncode == 0, r.stderr
        gong = hostframes.command(4)
        wait_for(lambda: any(_signal(hall, p) == gong for t, p in clock.seen() if t == ALL), 60,
                 "GONG at the connected clock")
        assert clock.cuts == 0
    finally:
        for s in socks:
            s.close()
        clock.stop()
        logger.stop()


@pytest.mark.parametrize("role", HOSTS + ("t2",))
def test_no_role_takes_a_clocks_client_id(hall, role):
    """``role``'s password, the clock's client id, on the hall's listener:
    the broker names the connection after its user, so the clock keeps its
    session and gets the referee's GONG."""
    clock = Clock(hall, "t1")
    try:
        rogue = BrokerClient(hall.address, hall.creds[role], [down("t1"), ALL],
                             client_id="t1").start()
        rogue.stop()
        gong = hostframes.command(4)
        referee = host(hall, "referee")
        referee.publish(ALL, gong)
        wait_for(lambda: any(p == gong for _t, p in clock.seen()), 60, "GONG at the clock")
        referee.stop()
        assert clock.cuts == 0, f"{role} took t1's client id"
    finally:
        clock.stop()


def _retained_publish(hall, name, where, topic_name, payload):
    """``name`` publishes a retained message: the broker must cut it off."""
    net = BrokerClient(where, hall.creds[name], [])
    cuts = []
    net.client.on_disconnect = lambda *a: cuts.append(a)
    net.start()
    net.client.publish(topic_name, payload, qos=0, retain=True)
    wait_for(lambda: cuts, 60, f"the broker to cut {name} off for a retained message")
    net.stop()


def _nothing_retained(hall, clock="t1"):
    """A fresh session of the clock subscribes; the logger's marker on its
    down closes the window: only the marker may have arrived."""
    c = Clock(hall, clock)
    try:
        logger = host(hall, "logger")
        mark = hostframes.ack("0000cafe", 1)
        logger.publish(down(clock), mark)
        wait_for(lambda: any(p == mark for _t, p in c.seen()), 60, "the logger's marker")
        logger.stop()
        return [m for m in c.got if m[1] != mark]
    finally:
        c.stop()


def _nothing_retained_up(hall):
    viewer = host(hall, "viewer", [up("+")])
    try:
        marker = BrokerClient(hall.address, hall.creds["t2"], []).start()
        mark = protocol.hello("0000beef", "t2", "scrabble", "1")
        marker.publish(up("t2"), mark)
        got = []
        wait_for(lambda: got.extend(viewer.messages()) or any(p == mark for _t, p in got),
                 10, "t2's marker")
        marker.stop()
        return [m for m in got if m[1] != mark]
    finally:
        viewer.stop()


def test_retained_messages_are_refused_and_never_replayed(hall):
    stop = protocol.frame(b"M")
    _retained_publish(hall, "referee", hall.local, ALL, stop)
    _retained_publish(hall, "referee", hall.address, ALL, hostframes.command(3))
    _retained_publish(hall, "logger", hall.local, down("t1"), hostframes.ack("0000cafe", 99))
    _retained_publish(hall, "t1", hall.address, up("t1"),
                      protocol.hello("0badf00d", "t1", "scrabble", "1"))
    assert _nothing_retained(hall) == []
    assert _nothing_retained_up(hall) == []
    hall.broker.restart()  # persistence: nothing comes back
    assert _nothing_retained(hall) == []
    assert _nothing_retained_up(hall) == []


def test_an_oversized_message_is_never_delivered(hall):
    """A 1 MB message on all/down (the referee's topic) reaches no clock."""
    clock = Clock(hall, "t1")
    try:
        referee = host(hall, "referee")
        referee.publish(ALL, b"G" * (1 << 20))
        gong = hostframes.command(4)
        referee.publish(ALL, gong)
        wait_for(lambda: any(p == gong for _t, p in clock.seen()), 60, "the GONG after it")
        referee.stop()
        assert [p for _t, p in clock.got if p != gong] == []
        assert clock.cuts == 0
    finally:
        clock.stop()


def test_viewer_json_holds_only_the_viewer(hall):
    """A viewer laptop gets viewer.json: it reads the hall, and holds no
    password that writes anything."""
    import json

    from hallclock.net.broker import load_credentials
    from hallclock.errors import BadInput
    path = os.path.join(hall.conf_dir, "viewer.json")
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == {"viewer": hall.creds["viewer"]}
    creds = load_credentials(path, "viewer")
    for other in ("logger", "referee", "t1"):
        with pytest.raises(BadInput, match="no entry"):
            load_credentials(path, other)
    viewer = BrokerClient(hall.address, creds["viewer"], [up("+")]).start()  # over the hall
    try:
        t1 = BrokerClient(hall.address, hall.creds["t1"], []).start()
        hello = protocol.hello("0000cafe", "t1", "scrabble", "1")
        t1.publish(up("t1"), hello)
        got = []
        wait_for(lambda: got.extend(viewer.messages()) or (up("t1"), hello) in got, 60,
                 "t1's frame at the viewer")
        t1.stop()
    finally:
        viewer.stop()


def _listeners(conf):
    out, cur = [], None
    for line in conf.splitlines():
        parts = line.split()
        if parts[:1] == ["listener"]:
            cur = {"port": int(parts[1]), "addr": parts[2] if len(parts) > 2 else None}
            out.append(cur)
        elif cur is not None and parts:
            cur[parts[0]] = " ".join(parts[1:])
    return out


def test_broker_config_binds_the_hall_to_the_address_given(tmp_path):
    """Plaintext on --bind only, the laptop's listener on 127.0.0.1, and
    every hall listener limited and named by user; --tls-port needs --bind."""
    out = tmp_path / "h"
    r = subprocess.run(HALLCLOCK + ["broker-config", "--hall", "h", "--clocks", "t1,t2",
                                    "--out", str(out), "--broker-port", "18830", "--bind",
                                    "192.168.50.10", "--tls-port", "18883"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    conf = (out / "mosquitto.conf").read_text()
    local, plain, tls = _listeners(conf)
    assert (local["port"], local["addr"]) == (18831, "127.0.0.1") and "127.0.0.1:18831" in r.stdout
    assert (plain["port"], plain["addr"]) == (18830, "192.168.50.10")
    assert (tls["port"], tls["addr"]) == (18883, "192.168.50.10") and "cafile" in tls
    for hall_door in (plain, tls):
        assert hall_door["use_username_as_clientid"] == "true"
        assert int(hall_door["max_connections"]) < LAPTOP_FILES // 4
    assert int(local["max_connections"]) > 0 and "use_username_as_clientid" not in local
    assert "retain_available false" in conf
    r = subprocess.run(HALLCLOCK + ["broker-config", "--hall", "h", "--clocks", "t1",
                                    "--out", str(tmp_path / "x"), "--tls-port", "18883"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--bind" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(HALLCLOCK + ["broker-config", "--hall", "h", "--clocks", "t1",
                                    "--out", str(tmp_path / "y")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "every interface" in r.stderr
    r = subprocess.run(HALLCLOCK + ["broker-config", "--hall", "h", "--clocks", "t1",
                                    "--out", str(tmp_path / "z"), "--local-port", "1883"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--local-port" in r.stderr


# -- A: a round recorded, replayed into a later logger ---------------------------
def _spy(hall, clock):
    """A spectator's laptop with viewer.json: every message of ``clock``'s up."""
    return BrokerClient(hall.address, hall.creds["viewer"], [up(clock)]).start()


def _recorded(spy, clock, at_least):
    got = []
    wait_for(lambda: got.extend(p for _t, p in spy.messages()) or len(got) >= at_least, 60,
             f"the spy's recording of {clock}")
    return got


def _replay(hall, clock, messages):
    """Published again with the clock's own password (it crosses the air)."""
    net = BrokerClient(hall.address, hall.creds[clock], []).start()
    try:
        for p in messages:
            # the live clock and the rogue share a client id (the user's): each
            # knocks the other off; paho reconnects and the message goes again
            for _ in range(200):
                try:
                    net.client.publish(up(clock), p).wait_for_publish(timeout=60)
                    break
                except RuntimeError:
                    time.sleep(0.05)
            else:
                raise AssertionError("the rogue could not publish")
    finally:
        net.stop()


def test_a_round_recorded_and_replayed_reaches_no_later_log(hall, tmp_path):
    """Attack A (docs/network.md "Replays and floods"): a spectator records
    t1's up messages in round 2 and, with t1's password, publishes them into
    round 3's fresh ``log --exit-on-end`` before t1's game: the replayed
    ``end`` ends nothing and round 3's log is t1's live game alone.  Then
    the logger is restarted on the same --out (the documented recovery) and
    both recordings are replayed while t1 plays again: still nothing but the
    live games, every event acknowledged (the clock ends with nothing owed)."""
    from mqttrig import clock_records, game, reference
    for sub in ("r3", "r4"):
        (tmp_path / sub).mkdir()
    spy = _spy(hall, "t1")
    try:
        g2, g3, g4 = game(moves=6), game(moves=8), game(moves=30, gap_ms=3000)
        out2, out3 = tmp_path / "round2.jsonl", tmp_path / "round3.jsonl"
        p = hall.start_logger(out2, clocks=["t1"])
        hall.device("t1", g2, sid="0000cafe").join(120)
        hall.wait_logger(p)
        round2 = _recorded(spy, "t1", 10)
        assert any(b"E 0000cafe" in m for m in round2)

        p = hall.start_logger(out3, clocks=["t1"])
        _replay(hall, "t1", round2)  # before the live game: its end must end nothing
        d3 = hall.device("t1", g3, sid="0000beef")
        err = hall.wait_logger(p)
        d3.join(120)
        ref3 = reference(tmp_path / "r3", "t1", g3, sid="0000beef")
        assert clock_records(out3, "t1") == ref3, err
        round3 = _recorded(spy, "t1", 10)

        p = hall.start_logger(out3, clocks=["t1"])  # restarted on the same --out
        d4 = hall.device("t1", g4, sid="0000f00d")
        _replay(hall, "t1", round2 + round3)  # while t1 plays
        err = hall.wait_logger(p, timeout=120)
        d4.join(120)
        ref4 = reference(tmp_path / "r4", "t1", g4, sid="0000f00d")
        assert clock_records(out3, "t1") == ref3 + ref4, err
        assert d4.error is None and d4.result  # every event acknowledged
    finally:
        spy.stop()


# -- C: a stolen clock's flood of sessions ---------------------------------------
def test_a_stolen_clocks_flood_of_sessions_costs_another_clock_nothing(hall, tmp_path):
    """Attack C (docs/network.md "Replays and floods"): with t2's cfg (its
    password and key), 60 000 messages of fresh sealed sessions (a hello and
    a boot each) in about 7 s while t1 plays a dense game in real time: t1's
    log is its game as over a cable (no gap, nothing lost, every event
    acknowledged), and t2 gets at most its budget of new sessions written."""
    from mqttrig import clock_records, dense_game, flood_beside_a_game, reference
    from hallclock.link.logfile import read_records
    from hallclock.net import seal as hostseal
    text = dense_game()
    got = flood_beside_a_game(hall, tmp_path, n=60000, seconds=7.0, text=text)
    assert got["offered"]["sent"] == 60000, got["offered"]  # the flood was offered
    (tmp_path / "ref").mkdir()
    assert clock_records(got["log"], "t1") == reference(tmp_path / "ref", "t1", text)
    assert got["device"].error is None and got["device"].result
    t2 = [r for r in read_records(got["log"]) if r.get("clock") == "t2"]
    assert 0 < len(t2) <= 2 * hostseal.SESSION_BURST + 2, len(t2)  # a boot each, power losses


# -- B: a rogue broker replays a referee signal to a rebooted clock ---------------
class Board:
    """A clock's network link (the firmware's NetLink) on its board's flash,
    as hw/wifi.link builds it: the referee's newest counter read at boot,
    each signal's counter kept with the cfg's power-cut-safe save."""

    def __init__(self, hall, flash, name="t1"):
        import threading

        from hallclock.vboard.vdev import netpump
        from hallclock_fw.hw import cfgsave
        from hallclock_fw.netlink import NetLink
        cred = hall.creds[name]
        self.net = NetLink(HALL, name, cred["user"], cred["password"],
                           netpump.opener(*hall.address), netpump.ticks_ms,
                           key=cred["key"], hall_key=cred["hall_key"],
                           all_ctr=cfgsave.load_counter(flash),
                           keep=lambda ctr: cfgsave.save_counter(flash, ctr))
        self.ticks = netpump.ticks_ms
        self.got = bytearray()
        self.halt = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        wait_for(self.net.connected, 60, f"{name} on the broker")

    def _run(self):
        buf = bytearray(512)
        while not self.halt:
            if self.net.any():
                n = self.net.readinto(buf)
                self.got.extend(buf[:n])
            time.sleep(0.005)

    def off(self):
        """The power goes: no goodbye, the flash keeps what was saved."""
        self.halt = True
        self.thread.join(5)
        self.net.client.close()


def test_a_rogue_broker_replaying_an_old_start_to_a_rebooted_clock_is_refused(hall):
    """Attack B (docs/network.md "Replays and floods"): a broker of the
    rogue's (here the hall's, with every password: the rogue's broker has
    them all) records the referee's START and PAUSE on all/down.  The clock
    took them and reboots; no logger runs, so no host frame tells it the
    time.  The recorded START and PAUSE replayed: refused (the counter of
    the newest signal taken was kept in flash); the referee's next GONG is
    taken."""
    from hallclock.net.seal import seal_all
    from hallclock.vboard.vdev.flash import FakeFlash
    flash = FakeFlash()
    rogue = BrokerClient(hall.address, hall.creds["t2"], [ALL]).start()  # reads all/down
    board = Board(hall, flash)
    referee = host(hall, "referee")
    try:
        start = seal_all(hall.creds["referee"], hostframes.command(3))
        pause = seal_all(hall.creds["referee"], hostframes.command(2))
        for m in (start, pause):
            referee.publish(ALL, m)
        wait_for(lambda: hostframes.command(2) in board.got, 60, "START and PAUSE at the clock")
        recorded = []
        wait_for(lambda: recorded.extend(p for _t, p in rogue.messages()) or len(recorded) >= 2,
                 60, "the rogue's recording")
        assert recorded == [start, pause]
        board.off()
        board = Board(hall, flash)  # the reboot: a new link session, the same flash
        for m in recorded:
            referee.publish(ALL, m)  # the rogue's replay
        gong = hostframes.command(4)
        referee.publish(ALL, seal_all(hall.creds["referee"], gong))
        wait_for(lambda: gong in board.got, 60, "the referee's next GONG")
        signals = [ln + b"\n" for ln in bytes(board.got).split(b"\n") if ln.startswith(b"C")]
        assert signals == [gong] and board.net.refused == 2
    finally:
        board.off()
        referee.stop()
        rogue.stop()


def _inline_logger_client(chunks):
    """The logger's BrokerClient (inline) on a socket that hands out
    ``chunks`` one recv at a time, then EAGAIN."""
    import paho.mqtt.client as pm

    from hallclock.net import mqtt as hostmqtt

    class Sock:
        def __init__(self):
            self.chunks = list(chunks)

        def recv(self, _n):
            if not self.chunks:
                raise BlockingIOError
            return self.chunks.pop(0)

        def fileno(self):
            return -1

        def close(self):
            pass

        def setblocking(self, _flag):
            pass
    net = hostmqtt.BrokerClient(("127.0.0.1", 1), {"user": "logger", "password": "x"},
                                [up("+")], inline=True)
    net.client._sock = Sock()
    net.client._state = pm._ConnectionState.MQTT_CS_CONNECTED
    return net


def _drain(net):
    """Everything the socket hands out, read; the client's files closed (the
    tests after these must not run out of select()'s 1 024 descriptors)."""
    from hallclock.link.transport import close_fds
    try:
        for _ in range(10000):
            if not net.client._sock.chunks and not net.client.buffered():
                break
            net.client.loop_read()
        return net.messages()
    finally:
        net.client._reset_sockets()
        close_fds(net.rfd, net.wfd)


def test_the_loggers_reader_takes_publish_packets_split_anywhere_in_order():
    """The inline logger's reader (every whole QoS 0 PUBLISH of its buffer in
    one loop, the rest paho's): packets split at every byte, a QoS 1 one among
    them, two topics; each message once, in the order sent."""
    from mqttflood import publish_packet
    msgs = [(up("t1" if i % 3 else "t2"), b"E 0000cafe %d*x\n" % i) for i in range(12)]
    packets = [publish_packet(t.encode(), p) for t, p in msgs]
    qos1 = b"\x32" + bytes([2 + len(up("t1")) + 2 + 3]) + mqtt._str(up("t1").encode()) \
        + b"\x00\x07" + b"q1\n"
    stream = b"".join(packets[:6]) + qos1 + b"".join(packets[6:])
    want = msgs[:6] + [(up("t1"), b"q1\n")] + msgs[6:]
    for cut in range(1, len(stream)):
        net = _inline_logger_client([stream[:cut], stream[cut:]])
        assert _drain(net) == want, cut
    net = _inline_logger_client([stream[i:i + 1] for i in range(len(stream))])
    assert _drain(net) == want


def test_a_message_arriving_alone_is_taken_by_the_loggers_own_reader(monkeypatch):
    """At a player's pace nearly every message is alone in its recv: the
    logger's reader takes it (paho's reader, three recv-sized steps and a
    message object a message, is never asked), and a closed connection is
    still said."""
    import paho.mqtt.client as pm
    from mqttflood import publish_packet
    msgs = [(up("t%d" % (i % 3)), b"E 0000cafe %d*x\n" % i) for i in range(5)]
    net = _inline_logger_client([publish_packet(t.encode(), p) for t, p in msgs])

    def not_paho(_self):
        raise AssertionError("paho's reader asked for a lone QoS 0 PUBLISH")
    monkeypatch.setattr(pm.Client, "_packet_read", not_paho)
    assert _drain(net) == msgs
    net = _inline_logger_client([b""])  # the broker closed the connection
    try:
        assert net.client._packet_read() == pm.MQTTErrorCode.MQTT_ERR_CONN_LOST
    finally:
        net.client._reset_sockets()
        from hallclock.link.transport import close_fds
        close_fds(net.rfd, net.wfd)


def test_a_lone_message_waits_a_moment_for_the_rest_of_its_step():
    """The logger's wait: a message that came alone waits GATHER_S (once)
    for what follows it -- a press is two events, two messages, and taken in
    one pass they share one fsync and one ack; messages that came together
    wait for nothing, and a client that does not gather (a viewer, the
    referee) takes what is there."""
    from mqttflood import publish_packet
    from hallclock.net import mqtt as hostmqtt
    msgs = [(up("t1"), b"E 0000cafe %d*x\n" % i) for i in range(4)]
    pk = [publish_packet(t.encode(), p) for t, p in msgs]
    nets = []
    try:
        net = _inline_logger_client([pk[0], pk[1], pk[2] + pk[3]])
        nets.append(net)
        net.gather_s = hostmqtt.GATHER_S
        assert net.wait(0.05) and net.messages() == msgs[:2]  # the lone one and its follower
        assert net.wait(0.05) and net.messages() == msgs[2:]  # two together: no wait
        assert net.client._sock.chunks == []
        net = _inline_logger_client([pk[0], pk[1]])
        nets.append(net)
        assert net.wait(0.05) and net.messages() == msgs[:1]  # no gathering: as it came
    finally:
        from hallclock.link.transport import close_fds
        for net in nets:
            net.client._reset_sockets()
            close_fds(net.rfd, net.wfd)


def test_a_logger_pass_takes_each_clocks_share_in_the_order_they_came():
    from hallclock.net import mqtt as hostmqtt
    net = _inline_logger_client([])
    for i in range(200):
        net._queue(up("t2"), b"flood %d" % i)
        if i % 50 == 0:
            net._queue(up("t1"), b"t1 %d" % i)
    first = net.messages(hostmqtt.PASS_SHARE)
    assert [p for t, p in first if t == up("t1")] == [b"t1 0", b"t1 50", b"t1 100", b"t1 150"]
    assert [p for t, p in first if t == up("t2")] == [b"flood %d" % i for i in range(64)]
    assert [p for _t, p in net.messages(hostmqtt.PASS_SHARE)] \
        == [b"flood %d" % i for i in range(64, 128)]
    for i in range(hostmqtt.TOPIC_QUEUE_MAX + 10):
        net._queue(up("t2"), b"x")
    assert net.overflow == 10 + 72
    net.client._sock.chunks = []
    _drain(net)
