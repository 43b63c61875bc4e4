"""Any byte from the broker, inside real MicroPython: the firmware's NetLink and
MQTT client (compiled, as on the board) run in the MicroPython unix port on a
real localhost socket, and this test is the broker.  Each hypothesis example is
one connection: the client's CONNECT is read, arbitrary bytes go back (raw
noise, packets of any type and flags, lengths that lie, oversized and
zero-length PUBLISH, QoS 1/2/3, sealed frames forged or genuine, ``M`` on
either topic), then the connection closes.  The client must never raise (the
process would die with a traceback), must reconnect, and must then work: on
the next connection a correct CONNACK, SUBACK and a sealed frame reach its
inbox.  No ``M`` frame and no frame from ``all/down`` beyond the referee's
rights ever reaches the inbox (least authority, docs/network.md).

Bounded: a fixed number of examples, derandomized, one MicroPython process
for all of them.
"""
import os
import queue
import socket
import subprocess
import threading

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hallclock.vboard import unixport as mpunix
from hallclock_fw import mqtt, protocol, seal
from hallclock import hostframes
from mqttrig import mp_opener

KEY = "00112233445566778899aabbccddeeff"
HALL_KEY = "ffeeddccbbaa99887766554433221100"
SID = "0a0b0c0d"
DOWN = b"hallclock/h/t1/down"
ALL = b"hallclock/h/all/down"
MAC = seal.Mac(seal.key_bytes(KEY))
HALL_MAC = seal.Mac(seal.key_bytes(HALL_KEY))
EXAMPLES = 300

DRIVER = """
import select, socket, sys, time
from hallclock_fw.netlink import NetLink
%(opener)s
net = NetLink("h", "t1", "t1", "pw", opener, time.ticks_ms, key=%(key)r, hall_key=%(hall)r,
              sid=%(sid)r)
buf = bytearray(256)
while True:
    c = net.client
    if c.state == 0 or c.state == 3:
        net.retry_at = time.ticks_ms()  # the fuzz does not wait out the backoff
    net.any()
    n = net.readinto(buf)
    if n:
        got = bytes(buf[:n])
        print("IN", got)
        if b"R ffffffff 1*" in got:  # the test's sealed goodbye
            break
    if c.sock is not None:
        p = select.poll()
        p.register(c.sock, select.POLLIN)
        p.poll(2)
print("BYE", net.connects, net.failures, net.refused)
"""


def packet(first, body):
    return mqtt._packet(first, body)


def publish(topic, payload, qos=0, pid=b"\x00\x01"):
    body = bytes((len(topic) >> 8, len(topic) & 255)) + topic + (pid if qos else b"") + payload
    return packet(0x30 | (qos << 1), body)


CONNACK = b"\x20\x02\x00\x00"
SUBACK = b"\x90\x04\x00\x01\x00\x00"
FRAMES = [hostframes.ack("cafe0001", 3), hostframes.command(3), hostframes.command(4),
          hostframes.command(0), hostframes.maintenance(), hostframes.round_number(2, 0),
          hostframes.configure("scrabble", "move_s=60"), protocol.who()]

raw = st.binary(max_size=300)
any_packet = st.builds(packet, st.integers(0, 255), st.binary(max_size=200))
lying_length = st.builds(lambda first, length, body: bytes((first,)) + length + body,
                         st.integers(0, 255), st.binary(min_size=1, max_size=5),
                         st.binary(max_size=50))
sealed = st.builds(
    lambda frame, hall, ctr, forged, qos: publish(
        ALL if hall else DOWN,
        (seal.seal(HALL_MAC, b"A", frame, "all", ctr) if hall else
         seal.seal(MAC, b"D", frame, SID, ctr))[:-1] + (b"0" if forged else b"\n"), qos),
    st.sampled_from(FRAMES), st.booleans(), st.integers(0, 10 ** 13), st.booleans(),
    st.integers(0, 2))
publishes = st.builds(publish, st.sampled_from([DOWN, ALL, b"", b"x" * 40]),
                      st.binary(max_size=700), st.integers(0, 3),
                      st.sampled_from([b"\x00\x00", b"\x00\x07", b""]))
fixed = st.sampled_from([b"\x30\x00", b"\x34\x00", b"\x62\x02\x00\x01", b"\xd0\x00", CONNACK,
                         SUBACK, b"\x20\x02\x01\x00", b"\xe0\x00", b"\x30\xff\xff\xff\xff\x7f"])
stream = st.builds(lambda start, parts: (CONNACK + SUBACK if start else b"") + b"".join(parts),
                   st.booleans(),
                   st.lists(st.one_of(raw, any_packet, lying_length, sealed, publishes, fixed),
                            max_size=6))


class Broker:
    """This test as the broker: one connection at a time from the driver."""

    def __init__(self):
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(4)
        self.srv.settimeout(20)
        self.port = self.srv.getsockname()[1]
        self.lines = queue.Queue()
        self.ctr = 1

    def accept(self):
        conn, _ = self.srv.accept()
        conn.settimeout(20)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    @staticmethod
    def read_packet(conn):
        head = conn.recv(1)
        assert head, "the client closed before sending a packet"
        n = shift = 0
        while True:
            b = conn.recv(1)[0]
            n |= (b & 127) << shift
            shift += 7
            if not b & 128:
                break
        body = b""
        while len(body) < n:
            more = conn.recv(n - len(body))
            assert more
            body += more
        return head[0], body

    def line(self, proc, want):
        while True:
            try:
                text = self.lines.get(timeout=60)
            except queue.Empty:
                err = proc.stderr.read() if proc.poll() is not None else "(still running)"
                raise AssertionError("the MicroPython client went quiet: " + err) from None
            if text.startswith("IN "):
                assert "M*" not in text, "a maintenance frame reached the clock: " + text
            if want in text:
                return text

    def probe(self, proc, marker=None):
        """A correct session: the client connects again and takes a sealed frame."""
        conn = self.accept()
        try:
            first, _ = self.read_packet(conn)
            assert first == 0x10
            conn.sendall(CONNACK)
            first, _ = self.read_packet(conn)
            assert first == 0x82
            self.ctr += 1
            if marker is None:
                marker = hostframes.resend("cafe%04x" % (self.ctr & 0xFFFF), self.ctr)
            conn.sendall(SUBACK + publish(DOWN, seal.seal(MAC, b"D", marker, SID,
                                                          10 ** 14 + self.ctr)))
            self.line(proc, repr(marker)[2:-3])
        finally:
            conn.close()


@pytest.fixture(scope="module")
def rig():
    try:
        binary = mpunix.binary()
    except mpunix.UnixPortMissing as exc:  # make setup installs it; say so, do not skip
        pytest.fail(str(exc))
    broker = Broker()
    env = dict(os.environ)
    env["MICROPYPATH"] = str(mpunix.device_tree())
    code = DRIVER % {"opener": mp_opener(broker.port, "opener"), "key": KEY, "hall": HALL_KEY, "sid": SID}
    proc = subprocess.Popen([binary, "-X", "heapsize=262144", "-c", code],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)

    def read():
        for text in proc.stdout:
            broker.lines.put(text)
    threading.Thread(target=read, daemon=True).start()
    broker.probe(proc)
    yield broker, proc
    broker.srv.close()
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=stream, cut=st.integers(0, 40))
def test_any_bytes_from_the_broker_inside_micropython(rig, data, cut):
    broker, proc = rig
    conn = broker.accept()
    try:
        broker.read_packet(conn)  # CONNECT
        try:  # in two writes, cut anywhere near the start (TCP may join them again)
            conn.sendall(data[:cut])
            conn.sendall(data[cut:])
        except OSError:
            pass  # the client dropped us mid-way: what it should do with garbage
    finally:
        conn.close()
    broker.probe(proc)
    assert proc.poll() is None, proc.stderr.read()


def test_the_driver_ends_cleanly(rig):
    """Runs after the fuzz: the MicroPython process is alive and says BYE when
    the broker goes away (no traceback at any point)."""
    broker, proc = rig
    broker.probe(proc, hostframes.resend("ffffffff", 1))
    out = broker.line(proc, "BYE")
    proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read()
    connects = int(out.split()[1])
    assert connects >= 2
