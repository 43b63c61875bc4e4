"""The clock's MQTT client against every packet a broker or an attacker can
send (MQTT 3.1.1 section 3 is what a server may send a client): malformed
packets end the connection with a reason and the link reconnects; nothing
raises out of ``poll``; a message too long for the clock is skipped; QoS 1
gets PUBACK, QoS 2 gets PUBREC (never PUBACK) and its PUBREL gets PUBCOMP;
the byte stream may be split anywhere.  Scripted sockets under CPython; the
same client with arbitrary bytes on a real socket inside the MicroPython unix
port is tests/test_mqtt_fuzz_unixport.py."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_mqtt_firmware import CONNACK_OK, FakeSock, Opener, publish  # noqa: E402

from hallclock_fw import mqtt  # noqa: E402
from hallclock_fw.netlink import NetLink  # noqa: E402
from hallclock.whytext import words

TOPICS = ("a/down", "all/down")
SUBACK = b"\x90\x04\x00\x01\x00\x00"
KEY = "00112233445566778899aabbccddeeff"


def run(incoming, chunk=7, topics=TOPICS, polls=200):
    got = []
    c = mqtt.Client("t1", "t1", "pw", 15, topics, lambda t, p: got.append((t, p)))
    s = FakeSock(incoming, chunk=chunk)
    c.start(s, 0)
    for now in range(polls):
        c.poll(now)
        if c.state == mqtt.DEAD:
            break
    return c, s, got


@pytest.mark.parametrize("stream, why", [
    (CONNACK_OK + SUBACK + b"\x30\x00", "malformed PUBLISH"),  # zero-length PUBLISH
    (CONNACK_OK + SUBACK + b"\x30\x01\x00", "malformed PUBLISH"),  # half a topic length
    (CONNACK_OK + SUBACK + b"\x30\x04\x00\x09ab", "malformed PUBLISH"),  # topic past the end
    (CONNACK_OK + SUBACK + b"\x32\x03\x00\x01t", "malformed PUBLISH"),  # QoS 1, no packet id
    (CONNACK_OK + SUBACK + b"\x32\x05\x00\x01t\x00\x00", "malformed PUBLISH"),  # packet id 0
    (CONNACK_OK + SUBACK + b"\x36\x03\x00\x01t", "malformed PUBLISH"),  # QoS 3
    (b"\x30\x03\x00\x01t", "malformed PUBLISH"),  # a message before CONNACK
    (b"\x21\x02\x00\x00", "malformed CONNACK"),  # flags in the fixed header
    (b"\x20\x03\x00\x00\x00", "malformed CONNACK"),  # length 3
    (b"\x20\x01\x00", "malformed CONNACK"),  # length 1
    (b"\x20\x00", "malformed CONNACK"),  # length 0
    (b"\x20\x02\x01\x00", "malformed CONNACK"),  # a session we did not ask for
    (CONNACK_OK + CONNACK_OK, "malformed CONNACK"),  # a second CONNACK
    (b"\x90\x04\x00\x01\x00\x00", "malformed SUBACK"),  # SUBACK before CONNACK
    (CONNACK_OK + b"\x90\x03\x00\x01\x00", "malformed SUBACK"),  # one code for two topics
    (CONNACK_OK + b"\x90\x04\x00\x02\x00\x00", "malformed SUBACK"),  # not our packet id
    (CONNACK_OK + SUBACK + SUBACK, "malformed SUBACK"),  # a second SUBACK
    (CONNACK_OK + b"\x90\x04\x00\x01\x00\x80", "subscription refused"),
    (CONNACK_OK + SUBACK + b"\xd0\x01\x00", "malformed PINGRESP"),
    (CONNACK_OK + SUBACK + b"\x60\x02\x00\x05", "malformed PUBREL"),  # PUBREL flags are 0010
    (CONNACK_OK + SUBACK + b"\x10\x00", "does not send us (type 1)"),  # CONNECT
    (CONNACK_OK + SUBACK + b"\x40\x02\x00\x01", "does not send us (type 4)"),  # PUBACK
    (CONNACK_OK + SUBACK + b"\xc0\x00", "does not send us (type 12)"),  # PINGREQ
    (CONNACK_OK + SUBACK + b"\xf0\x00", "does not send us (type 15)"),  # reserved
    (CONNACK_OK + SUBACK + b"\x00\x00", "does not send us (type 0)"),  # reserved
    (CONNACK_OK + SUBACK + b"\x30\xff\xff\xff\xff\x01", "bad packet length"),  # 5 length bytes
    (CONNACK_OK + SUBACK + b"\x82\x05\x00\x01\x00\x01t", "does not send us (type 8)"),
])
def test_a_packet_that_breaks_mqtt_ends_the_connection(stream, why):
    for chunk in (1, 3, 256):
        c, s, got = run(stream, chunk=chunk)
        assert c.state == mqtt.DEAD and why in words(c.why) and s.closed, (chunk, words(c.why))
        assert got == []


def test_qos_1_is_acknowledged_with_puback():
    c, s, got = run(CONNACK_OK + SUBACK + publish(b"a/down", b"one", qos=1))
    assert c.state == mqtt.UP and got == [(b"a/down", b"one")]
    assert s.sent.endswith(b"\x40\x02\x00\x07")


def test_qos_2_gets_pubrec_never_puback_and_pubrel_gets_pubcomp():
    qos2 = mqtt._packet(0x34, b"\x00\x06a/down\x00\x09two")
    c, s, got = run(CONNACK_OK + SUBACK + qos2 + b"\x62\x02\x00\x09")
    assert c.state == mqtt.UP and got == [(b"a/down", b"two")]
    after = bytes(s.sent[s.sent.index(mqtt.subscribe_packet(1, TOPICS)):])
    assert b"\x50\x02\x00\x09" in after and b"\x40\x02" not in after
    assert after.endswith(b"\x70\x02\x00\x09")


def test_a_zero_length_message_is_delivered_as_empty():
    c, _s, got = run(CONNACK_OK + SUBACK + publish(b"a/down", b""))
    assert c.state == mqtt.UP and got == [(b"a/down", b"")]


def test_a_publish_just_fitting_the_buffer_is_taken_one_byte_more_is_skipped():
    head = 2 + 2 + len(b"a/down")  # fixed header (2 length bytes) + topic length + topic
    fits = b"x" * (mqtt._RX_MAX - head - 1)  # remaining length < 128 * 128: 2 bytes
    assert len(publish(b"a/down", fits)) == mqtt._RX_MAX
    c, _s, got = run(CONNACK_OK + SUBACK + publish(b"a/down", fits) +
                     publish(b"a/down", fits + b"y") + publish(b"a/down", b"next"), chunk=100)
    assert c.state == mqtt.UP and c.skipped == 1
    assert got == [(b"a/down", fits), (b"a/down", b"next")]


def test_a_huge_publish_is_skipped_as_it_arrives():
    big = publish(b"a/down", b"z" * 1_000_000)
    c, _s, got = run(CONNACK_OK + SUBACK + big + publish(b"a/down", b"ok"), chunk=256,
                     polls=2000)
    assert c.state == mqtt.UP and c.skipped == 1 and got == [(b"a/down", b"ok")]


def test_a_session_split_at_every_byte_gives_the_same_messages():
    stream = (CONNACK_OK + SUBACK + publish(b"a/down", b"A 1 2*x") + b"\xd0\x00" +
              publish(b"all/down", b"C 3 0*y", qos=1) + publish(b"a/down", b"z" * 300))
    want = [(b"a/down", b"A 1 2*x"), (b"all/down", b"C 3 0*y"), (b"a/down", b"z" * 300)]
    for k in range(1, len(stream)):
        s = Split(stream, k)
        got = []
        c = mqtt.Client("t1", "t1", "pw", 15, TOPICS, lambda t, p: got.append((t, p)))
        c.start(s, 0)
        for now in range(10):
            c.poll(now)
        assert c.state == mqtt.UP and got == want, k
    c, _s, got = run(stream, chunk=1, polls=2000)
    assert c.state == mqtt.UP and got == want


class Split(FakeSock):
    """Two reads: the stream's first ``k`` bytes, then the rest."""

    def __init__(self, stream, k):
        FakeSock.__init__(self, b"")
        self.parts = [stream[:k], stream[k:]]

    def recv(self, n):
        import errno
        if not self.parts:
            raise OSError(errno.EAGAIN, "nothing")
        part = self.parts[0]
        out, rest = part[:n], part[n:]
        if rest:
            self.parts[0] = rest
        else:
            self.parts.pop(0)
        return out


def test_the_link_reconnects_after_a_malformed_packet():
    """Each connection gets a zero-length PUBLISH: each is dropped, and the
    link opens the next (with its backoff) instead of raising."""
    op = Opener()
    op.fail = False
    streams = []

    def opener(now):
        s = FakeSock(CONNACK_OK + SUBACK + b"\x30\x00")
        streams.append(s)
        return s
    t = [0]
    link = NetLink("h", "t1", "t1", "pw", opener, lambda: t[0], key=KEY, hall_key=KEY)
    for now in range(0, 20000, 10):
        t[0] = now
        link.any()
    assert len(streams) >= 4 and all(s.closed for s in streams[:-1])
    assert words(link.why) == "a malformed PUBLISH" and link.failures >= 3
