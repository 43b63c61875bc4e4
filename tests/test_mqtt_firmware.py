"""The clock's own MQTT client and network link (firmware/hallclock_fw/mqtt.py,
netlink.py), under CPython: on scripted sockets for the packet grammar,
timeouts and backoff (ticks are passed in, so no test waits on a clock), and
on real sockets for "never blocks".  Against the real broker they run in
test_mqtt_link.py, test_mqtt_faults.py and test_mqtt_security.py."""
import ast
import errno
import pathlib
import socket

import pytest

from hallclock_fw import mqtt, protocol, seal
from hallclock import hostframes
from hallclock_fw.hw import config
from hallclock_fw.netlink import _BACKOFF_MAX_MS, _BACKOFF_MIN_MS, NetLink
from hallclock.whytext import words

FIRMWARE = pathlib.Path(__file__).resolve().parent.parent / "firmware"
KEY = "00112233445566778899aabbccddeeff"
HALL_KEY = "ffeeddccbbaa99887766554433221100"


class FakeSock:
    """Gives ``incoming`` a few bytes per recv; takes at most ``room`` bytes per send."""

    def __init__(self, incoming=b"", chunk=3, room=1 << 20):
        self.incoming = bytearray(incoming)
        self.chunk = chunk
        self.room = room
        self.sent = bytearray()
        self.closed = False

    def send(self, data):
        if self.room <= 0:
            raise OSError(errno.EAGAIN, "full")
        n = min(len(data), self.room)
        self.sent += data[:n]
        return n

    def recv(self, n):
        if not self.incoming:
            raise OSError(errno.EAGAIN, "nothing")
        k = min(n, self.chunk)
        out = bytes(self.incoming[:k])
        del self.incoming[:k]
        return out

    def close(self):
        self.closed = True


CONNACK_OK = b"\x20\x02\x00\x00"
SUBACK_OK = b"\x90\x04\x00\x01\x00\x00"  # one code per topic: the link subscribes two


def publish(topic, payload, qos=0):
    body = bytes((len(topic) >> 8, len(topic) & 255)) + topic
    if qos:
        body += b"\x00\x07"
    return mqtt._packet(0x30 | (qos << 1), body + payload)


def test_only_the_wifi_module_imports_network():
    importers = []
    for p in FIRMWARE.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] == "network" for n in names):
                importers.append(p.relative_to(FIRMWARE).as_posix())
    assert importers == ["hallclock_fw/hw/wifi.py"]


def test_connect_subscribe_and_messages_in_fragments():
    got = []
    c = mqtt.Client("t1", "t1", "pw", 15, ("a/down", "all/down"),
                    lambda t, p: got.append((t, p)))
    frame = hostframes.ack("0000cafe", 12)
    s = FakeSock(CONNACK_OK + SUBACK_OK + publish(b"a/down", frame) +
                 publish(b"all/down", b"C 3 0*x", qos=1), chunk=3)
    c.start(s, 0)
    for now in range(40):
        c.poll(now)
    assert c.state == mqtt.UP
    assert got == [(b"a/down", frame), (b"all/down", b"C 3 0*x")]
    # CONNECT names the user and password; SUBSCRIBE asks QoS 0 for both
    assert s.sent.startswith(mqtt.connect_packet("t1", "t1", "pw", 15))
    assert mqtt.subscribe_packet(1, ("a/down", "all/down")) in s.sent
    assert s.sent.endswith(b"\x40\x02\x00\x07")  # the QoS 1 message acknowledged


@pytest.mark.parametrize("code, why", [(4, "bad user name or password"), (5, "not authorized")])
def test_refused_connection_says_why(code, why):
    c = mqtt.Client("t1", "t1", "pw", 15, ("x",))
    c.start(FakeSock(bytes((0x20, 2, 0, code))), 0)
    c.poll(1)
    c.poll(2)
    assert c.state == mqtt.DEAD and words(c.why) == "refused: " + why


def test_no_connack_gives_up_after_the_timeout():
    c = mqtt.Client("t1", "t1", "pw", 15, ("x",))
    s = FakeSock()
    c.start(s, 100)
    c.poll(100 + mqtt._CONNECT_MS)
    assert c.state == mqtt.CONNECTING
    c.poll(101 + mqtt._CONNECT_MS)
    assert c.state == mqtt.DEAD and s.closed


def test_keepalive_pings_then_notices_a_silent_broker():
    c = mqtt.Client("t1", None, None, 10, ())
    s = FakeSock(CONNACK_OK, chunk=4)
    c.start(s, 0)
    c.poll(0)
    assert c.state == mqtt.UP
    n = len(s.sent)
    c.poll(4999)
    assert len(s.sent) == n
    c.poll(5000)
    assert bytes(s.sent[n:]) == b"\xc0\x00"  # PINGREQ at half the keepalive
    c.poll(15000)
    assert c.state == mqtt.UP
    c.poll(15001)
    assert c.state == mqtt.DEAD and words(c.why) == "the broker went silent"


def test_a_publish_too_long_for_the_clock_is_skipped_and_the_rest_taken():
    got = []
    c = mqtt.Client("t1", None, None, 10, (), lambda t, p: got.append(p))
    c.start(FakeSock(CONNACK_OK + publish(b"t", b"x" * 600) + publish(b"t", b"after"),
                     chunk=256), 0)
    for now in range(8):
        c.poll(now)
    assert c.state == mqtt.UP and c.skipped == 1 and got == [b"after"]


def test_another_packet_too_long_for_the_clock_ends_the_connection():
    c = mqtt.Client("t1", None, None, 10, ())
    c.start(FakeSock(CONNACK_OK + mqtt._packet(0x90, b"\x00\x01" + b"\x00" * 600), chunk=256), 0)
    for now in range(5):
        c.poll(now)
    assert c.state == mqtt.DEAD and "too long" in words(c.why)


def test_publish_refused_when_down_or_the_queue_is_full():
    c = mqtt.Client("t1", None, None, 10, ())
    assert not c.publish(b"t", b"frame")  # not connected: dropped, the link resends
    s = FakeSock(CONNACK_OK, room=0)
    c.start(s, 0)
    c.poll(0)
    s.room = 0
    c.state = mqtt.UP
    sent = 0
    while c.publish(b"hallclock/h/t1/up", b"E" * 60):
        sent += 1
    assert 20 <= sent <= mqtt._TX_MAX // 60 and c.dropped == 2


def test_poll_never_blocks_on_a_peer_that_does_not_read():
    """A real socket whose peer never reads: the send buffer fills, every
    poll still returns (the socket is non-blocking), publishes are refused."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    s.connect(srv.getsockname())
    s.setblocking(False)
    peer, _ = srv.accept()
    c = mqtt.Client("t1", None, None, 10, ())
    c.start(s, 0)
    c.state = mqtt.UP
    refused = 0
    for now in range(100000):
        if not c.publish(b"hallclock/h/t1/up", b"E" * 150):
            refused += 1
        c.poll(now % 4000)
        if refused > 50:
            break
    assert refused > 50 and c.out_n > 0  # the kernel stopped taking bytes; we went on
    for x in (s, peer, srv):
        x.close()


class Opener:
    def __init__(self):
        self.calls = []
        self.fail = True
        self.socks = []

    def __call__(self, now):
        self.calls.append(now)
        if self.fail:
            raise OSError(errno.ECONNREFUSED, "refused")
        s = FakeSock(CONNACK_OK + SUBACK_OK)
        self.socks.append(s)
        return s


def test_netlink_backs_off_then_connects_and_says_hello():
    op = Opener()
    t = [0]
    link = NetLink("h", "t1", "t1", "pw", op, lambda: t[0], key=KEY, hall_key=HALL_KEY,
                   sid="0a0b0c0d")
    gaps = []
    for now in range(0, 60000, 10):
        t[0] = now
        link.any()
    gaps = [b - a for a, b in zip(op.calls, op.calls[1:])]
    assert gaps[0] >= _BACKOFF_MIN_MS and gaps == sorted(gaps)
    assert max(gaps) <= _BACKOFF_MAX_MS + 10 and gaps[-1] >= _BACKOFF_MAX_MS
    op.fail = False
    for now in range(60000, 70000, 10):
        t[0] = now
        link.any()
    assert link.connected() and link.connects == 1
    # the DeviceLink is told to say hello and resend at once
    buf = bytearray(64)
    n = link.readinto(buf)
    assert bytes(buf[:n]) == protocol.who()
    # one frame, one message, on the clock's own topic, sealed (link session, counter 1)
    link.write(protocol.hello("0000cafe", "t1", "scrabble", "1"))
    link.service(70010)
    mac = seal.Mac(seal.key_bytes(KEY))
    assert publish(b"hallclock/h/t1/up", seal.seal(mac, b"U", protocol.hello(
        "0000cafe", "t1", "scrabble", "1"), "0a0b0c0d:0", 1)) in op.socks[-1].sent  # echo 0: none yet


def test_cfg_with_the_hall_network():
    text = ("clock = t1\nwifi_ssid = HALL\nwifi_password = pw\nbroker = 10.0.0.2:1883\n"
            "hall = open\nuser = t1\npassword = secret\nkey = %s\nhall_key = %s\n" % (KEY, HALL_KEY))
    cfg = config.parse(text, "x")
    assert cfg.error is None and cfg.net["broker"] == "10.0.0.2:1883"
    assert config.parse("clock = t1\n", "x").net is None
    bad = config.parse(text.replace("hall = open\n", ""), "x")
    assert "needs hall" in bad.error and bad.net is None
    assert "HOST:PORT" in config.parse(text.replace("10.0.0.2:1883", "nohost"), "x").error
    assert "needs key" in config.parse(text.replace("key = " + KEY + "\n", ""), "x").error
    assert "hex digits" in config.parse(text.replace(KEY, "not-a-key"), "x").error


class FakeWLAN:
    """network.WLAN as the ESP32 port has it: connect() returns at once."""

    def __init__(self, _iface):
        self.up = False
        self.connects = []

    def active(self, on=None):
        return True

    def isconnected(self):
        return self.up

    def connect(self, ssid, password):
        self.connects.append((ssid, password))

    def disconnect(self):
        pass


@pytest.fixture
def wifi_module(monkeypatch):
    import sys
    import types
    net = types.ModuleType("network")
    net.STA_IF = 0
    net.WLAN = FakeWLAN
    monkeypatch.setitem(sys.modules, "network", net)
    monkeypatch.delitem(sys.modules, "hallclock_fw.hw.wifi", raising=False)
    import hallclock_fw.hw.wifi as wifi
    return wifi


def test_wifi_link_joins_connects_and_drops_with_the_wifi(wifi_module):
    """hw/wifi.py on a fake network.WLAN and a local server that answers like
    a broker: no socket before the Wi-Fi is joined, the join asked again every
    10 s, a socket once joined, the link dropped when the Wi-Fi goes."""
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    conns = []

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            conns.append(c)
            c.sendall(CONNACK_OK + SUBACK_OK + publish(b"x", hostframes.ack("0000cafe", 1)))
    threading.Thread(target=serve, daemon=True).start()
    t = [0]
    link = wifi_module.link({"wifi_ssid": "HALL", "wifi_password": "pw",
                             "broker": "127.0.0.1:%d" % srv.getsockname()[1], "hall": "h",
                             "user": "t1", "password": "secret", "key": KEY,
                             "hall_key": HALL_KEY}, "t1", lambda: t[0])
    wlan = link.wlan
    for now in range(0, 20000, 50):
        t[0] = now
        link.any()
    assert wlan.connects == [("HALL", "pw")] * 2 and link.client.sock is None
    wlan.up = True
    deadline = t[0] + 20000
    while not link.connected() and t[0] < deadline:
        t[0] += 10
        link.any()
        link.wait(5)
    assert link.connected()
    assert link.wait(1000) or link.inbox  # the broker's frames wake the loop's sleep
    wlan.up = False
    t[0] += 10
    link.any()
    assert not link.connected() and link.client.sock is None and words(link.why) == "link dropped"
    srv.close()
    for c in conns:
        c.close()


def test_no_recv_when_the_socket_has_nothing():
    """With ``readable`` given (the board's ipoll), an idle pass does not call
    recv at all: no EAGAIN exception is raised (and allocated) every pass."""
    c = mqtt.Client("t1", None, None, 10, ())
    s = FakeSock(CONNACK_OK, chunk=4)
    calls = []
    c.readable = lambda sock: calls.append(sock) or bool(sock.incoming)
    c.start(s, 0)
    c.poll(0)
    assert c.state == mqtt.UP
    recv = s.recv
    s.recv = lambda n: (_ for _ in ()).throw(AssertionError("recv on an idle socket"))
    for now in range(1, 100):
        c.poll(now)
    assert len(calls) == 100
    s.recv = recv


def test_every_reason_the_link_can_end_has_words_for_the_host():
    """The clock keeps only a number for why its link ended (no string on its
    heap); the host turns each one the firmware can give into words."""
    import re
    from hallclock import whytext
    codes = {}
    for module in ("mqtt.py", "netlink.py"):
        src = (FIRMWARE / "hallclock_fw" / module).read_text()
        codes.update((name, int(v)) for name, v in re.findall(r"^(_W_\w+) = const\((\d+)\)", src,
                                                               re.M))
    assert len(codes) == 19 and len(set(codes.values())) == len(codes)  # one code a reason
    assert set(codes.values()) == set(whytext.WORDS)
    for name, code in codes.items():  # each with its own words, never the fallback
        assert not whytext.words(code).startswith("link failure"), name
    assert whytext.words(whytext.REFUSED | 4 << 5) == "refused: bad user name or password"
    assert whytext.words(whytext.REFUSED | 9 << 5) == "refused: 9"
    assert whytext.words(3 | 104 << 5) == "send failed (104)"
    assert whytext.words(None) is None and whytext.words(31) == "link failure 31"


def test_shedding_the_links_builders_keeps_the_link_working_and_is_a_no_op_on_cpython():
    """netlink.shed drops the code that only built the clock's one link
    (the CONNECT packet's builder, the keys' parser): on MicroPython only --
    the host, which builds many links, keeps it (this process)."""
    from hallclock_fw import netlink
    netlink.shed()
    assert hasattr(mqtt, "connect_packet") and hasattr(netlink, "_link_sid")
    assert hasattr(seal, "key_bytes") and hasattr(netlink, "topic")
