"""The clock's MQTT client (firmware/hallclock_fw/mqtt.py, compiled as on the
board) inside the MicroPython unix port, on real sockets, against two broker
implementations -- Mosquitto and amqtt (PyPI, pinned in the dev extra) -- and
against a hostile broker (this test, on a socket) for each malformed case
MQTT 3.1.1 names:

- a QoS 1 PUBLISH too long for the clock's 320-byte buffer is skipped and
  still acknowledged with its PUBACK [MQTT-4.3.2-2]; at QoS 2 with PUBREC,
  and its PUBREL with PUBCOMP [MQTT-4.3.3-2];
- a QoS 2 message resent (DUP) before its PUBREL is delivered once; after
  the PUBREL the same packet id is a new message;
- a topic longer than the buffer, a packet id 0, more unreleased QoS 2
  messages than the clock holds: the connection ends with a reason.

The clock subscribes at QoS 0 (docs/network.md "The clock's MQTT client"):
both real brokers then send it everything at QoS 0, whatever QoS it was
published with, and never what its buffer cannot hold as anything but a
skipped message.
"""
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, Hall, mp_opener, wait_for  # noqa: E402

from hallclock.net import broker as brokermod  # noqa: E402
from hallclock.vboard import unixport as mpunix  # noqa: E402
from hallclock_fw import mqtt  # noqa: E402

DOWN = "hallclock/%s/t1/down" % HALL
ALL = "hallclock/%s/all/down" % HALL

DRIVER = """
import binascii, select, socket, time
from hallclock_fw import mqtt
%(opener)s
done = []
def on_message(t, p):
    print("IN", t.decode(), binascii.hexlify(p).decode() if p else "-")
    if p == b"bye":
        done.append(1)
c = mqtt.Client("t1", %(user)r, %(password)r, 30, %(topics)r, on_message)
c.start(raw(0), time.ticks_ms())
up = False
end = time.ticks_add(time.ticks_ms(), 60000)
while not done and time.ticks_diff(end, time.ticks_ms()) > 0:
    st = c.poll(time.ticks_ms())
    if st == 2 and not up:
        up = True
        print("UP")
    if st == 3:
        print("DEAD", c.why & 31)
        break
    if c.sock is not None:
        p = select.poll()
        p.register(c.sock, select.POLLIN)
        p.poll(5)
print("BYE", c.skipped, c.state)
c.disconnect()
"""


def hexs(data):
    return data.hex() if data else "-"


class Driver:
    """The firmware's client in a MicroPython process; its lines in a queue."""

    def __init__(self, port, user=None, password=None, topics=(DOWN, ALL)):
        try:
            binary = mpunix.binary()
        except mpunix.UnixPortMissing as exc:  # make setup installs it; say so, do not skip
            pytest.fail(str(exc))
        env = dict(os.environ, MICROPYPATH=str(mpunix.device_tree()))
        code = DRIVER % {"opener": mp_opener(port), "user": user, "password": password,
                         "topics": tuple(topics)}
        self.proc = subprocess.Popen([binary, "-X", "heapsize=262144", "-c", code],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for text in self.proc.stdout:
            self.lines.append(text.rstrip("\n"))

    def wait_line(self, start, timeout=60):
        wait_for(lambda: any(x.startswith(start) for x in self.lines) or
                 self.proc.poll() is not None and not self.reader.is_alive(), timeout,
                 f"the client's {start!r}")
        for x in self.lines:
            if x.startswith(start):
                return x
        raise AssertionError(f"the client ended without {start!r}: {self.lines} "
                             f"{self.proc.stderr.read()}")

    def finish(self):
        self.proc.wait(timeout=60)
        self.reader.join(10)
        err = self.proc.stderr.read()
        assert self.proc.returncode == 0 and "Traceback" not in err, err
        return self.lines

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def delivered(self):
        return [x.split(" ", 2)[1:] for x in self.lines if x.startswith("IN ")]


# -- the two real brokers -------------------------------------------------------


class Amqtt:
    """amqtt's broker (`amqtt -c`) on a free localhost port, anonymous."""

    def __init__(self, folder):
        exe = os.path.join(os.path.dirname(sys.executable), "amqtt")
        if not os.path.exists(exe):
            pytest.fail("amqtt is not installed beside this Python: make setup installs it "
                        "(pyproject.toml, the dev extra)")
        self.port = brokermod.free_port()
        conf = os.path.join(str(folder), "amqtt.yaml")
        with open(conf, "w") as f:
            f.write("listeners:\n  default:\n    type: tcp\n    bind: 127.0.0.1:%d\n"
                    "plugins:\n  amqtt.plugins.authentication.AnonymousAuthPlugin:\n"
                    "    allow_anonymous: true\n" % self.port)
        self.log = open(os.path.join(str(folder), "amqtt.log"), "wb")
        self.proc = subprocess.Popen([exe, "-c", conf], stdout=self.log, stderr=self.log)

        def listening():
            assert self.proc.poll() is None, "amqtt exited: see amqtt.log"
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return True
            except OSError:
                return False
        wait_for(listening, 60, "amqtt listening")

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def paho_publisher(port, user=None, password=None):
    import paho.mqtt.client as paho
    c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="sender")
    if user is not None:
        c.username_pw_set(user, password)
    c.connect("127.0.0.1", port)
    c.loop_start()
    return c


SMALL = [(0, b"q0"), (1, b"q1"), (2, b"q2"), (1, b"x" * 400), (2, b"y" * 400), (2, b"q2b")]


def _through(port_clock, port_sender, clock_login, sender_login):
    """Each message of SMALL at its QoS, then "bye": the client takes every one
    that fits once, in order, skips the two too long for it, stays connected."""
    drv = Driver(port_clock, *clock_login)
    sender = None
    try:
        drv.wait_line("UP")
        sender = paho_publisher(port_sender, *sender_login)
        for qos, payload in SMALL + [(1, b"bye")]:
            sender.publish(DOWN, payload, qos=qos).wait_for_publish(30)
        lines = drv.finish()
    finally:
        drv.kill()
        if sender is not None:
            sender.loop_stop()
            sender.disconnect()
    assert drv.delivered() == [[DOWN, hexs(p)] for _q, p in SMALL if len(p) < 300] + \
        [[DOWN, b"bye".hex()]]
    assert lines[-1] == "BYE 2 2", lines  # two skipped, still UP: never dropped


def test_the_client_against_mosquitto(tmp_path):
    hall = Hall(tmp_path, clocks=("t1",))
    try:
        _through(hall.port, hall.local_port, (hall.creds["t1"]["user"], hall.creds["t1"]["password"]),
                 (hall.creds["logger"]["user"], hall.creds["logger"]["password"]))
    finally:
        hall.close()


def test_the_client_against_amqtt(tmp_path):
    b = Amqtt(tmp_path)
    try:
        _through(b.port, b.port, (None, None), (None, None))
    finally:
        b.close()


# -- the hostile broker ----------------------------------------------------------


CONNACK = b"\x20\x02\x00\x00"
SUBACK = b"\x90\x04\x00\x01\x00\x00"


def publish(topic, payload, qos=0, pid=7, dup=False):
    body = bytes((len(topic) >> 8, len(topic) & 255)) + topic
    if qos:
        body += bytes((pid >> 8, pid & 255))
    return mqtt._packet(0x30 | (8 if dup else 0) | (qos << 1), body + payload)


class Hostile:
    """This test as the broker: one connection, packets read one by one."""

    def __init__(self):
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(1)
        self.srv.settimeout(60)
        self.port = self.srv.getsockname()[1]
        self.conn = None

    def accept(self):
        self.conn, _ = self.srv.accept()
        self.conn.settimeout(60)
        self.conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        first, _ = self.read()
        assert first == 0x10  # CONNECT
        self.conn.sendall(CONNACK)
        first, body = self.read()
        assert first == 0x82 and body.endswith(b"\x00")  # SUBSCRIBE, QoS 0 asked
        self.conn.sendall(SUBACK)

    def read(self):
        """(first byte, body) of the client's next packet."""
        def byte():
            b = self.conn.recv(1)
            assert b, "the client closed the connection"
            return b[0]
        first = byte()
        n = shift = 0
        while True:
            b = byte()
            n |= (b & 127) << shift
            shift += 7
            if not b & 128:
                break
        body = b""
        while len(body) < n:
            more = self.conn.recv(n - len(body))
            assert more
            body += more
        return first, body

    def send(self, data, pieces=1):
        """``data`` in ``pieces`` writes (the client reads whatever arrives)."""
        step = max(1, -(-len(data) // pieces))
        for i in range(0, len(data), step):
            self.conn.sendall(data[i:i + step])
            if pieces > 1:
                time.sleep(0.002)

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.srv.close()


@pytest.fixture
def hostile():
    h = Hostile()
    drv = Driver(h.port)
    h.accept()
    drv.wait_line("UP")
    yield h, drv
    drv.kill()
    h.close()


@pytest.mark.parametrize("pieces", [1, 7, 400])
def test_an_oversized_qos1_publish_is_acknowledged_and_skipped(hostile, pieces):
    """[MQTT-4.3.2-2]: the PUBACK with its packet id, whole or in pieces (its
    packet id may come after the fixed header, in another read)."""
    h, drv = hostile
    h.send(publish(DOWN.encode(), b"z" * 600, qos=1, pid=0x1234), pieces)
    assert h.read() == (0x40, b"\x12\x34")
    h.send(publish(DOWN.encode(), b"after") + publish(DOWN.encode(), b"bye"))
    drv.finish()
    assert drv.delivered() == [[DOWN, b"after".hex()], [DOWN, b"bye".hex()]]
    assert drv.lines[-1] == "BYE 1 2"


def test_an_oversized_qos2_publish_gets_pubrec_and_its_pubrel_pubcomp(hostile):
    h, drv = hostile
    h.send(publish(DOWN.encode(), b"z" * 600, qos=2, pid=9), pieces=3)
    assert h.read() == (0x50, b"\x00\x09")  # PUBREC
    h.send(b"\x62\x02\x00\x09")  # PUBREL
    assert h.read() == (0x70, b"\x00\x09")  # PUBCOMP
    h.send(publish(DOWN.encode(), b"bye"))
    drv.finish()
    assert drv.delivered() == [[DOWN, b"bye".hex()]] and drv.lines[-1] == "BYE 1 2"


def test_a_resent_qos2_message_is_delivered_once(hostile):
    """MQTT 3.1.1 section 4.3.3 (method B): until its PUBREL a resend of the
    packet id (DUP set) is acknowledged again, not delivered again; after it
    the id may carry a new message."""
    h, drv = hostile
    h.send(publish(DOWN.encode(), b"C 3 0", qos=2, pid=5))
    assert h.read() == (0x50, b"\x00\x05")
    h.send(publish(DOWN.encode(), b"C 3 0", qos=2, pid=5, dup=True))
    assert h.read() == (0x50, b"\x00\x05")
    h.send(publish(DOWN.encode(), b"C 3 0", qos=2, pid=5, dup=True))
    assert h.read() == (0x50, b"\x00\x05")
    h.send(b"\x62\x02\x00\x05")
    assert h.read() == (0x70, b"\x00\x05")
    h.send(publish(DOWN.encode(), b"C 4 0", qos=2, pid=5))  # a new message, same id
    assert h.read() == (0x50, b"\x00\x05")
    h.send(publish(DOWN.encode(), b"bye"))
    drv.finish()
    assert drv.delivered() == [[DOWN, b"C 3 0".hex()], [DOWN, b"C 4 0".hex()],
                               [DOWN, b"bye".hex()]]


@pytest.mark.parametrize("data, why", [
    # a topic longer than the clock's buffer: none of its subscriptions
    (publish(b"t" * 400, b"z" * 10, qos=1), 7),
    # packet id 0 on an oversized QoS 1 message [MQTT-2.3.1-1]
    (publish(DOWN.encode(), b"z" * 600, qos=1, pid=0), 9),
    # QoS 3 on an oversized message
    (mqtt._packet(0x36, b"\x00\x01t\x00\x07" + b"z" * 600), 9),
    # more QoS 2 messages held unreleased than the clock keeps
    (b"".join(publish(DOWN.encode(), b"m", qos=2, pid=p) for p in range(1, 7)), 9),
])
def test_a_malformed_publish_ends_the_connection_with_its_reason(hostile, data, why):
    h, drv = hostile
    h.send(data)
    line = drv.wait_line("DEAD")
    assert line == "DEAD %d" % why
    drv.finish()
