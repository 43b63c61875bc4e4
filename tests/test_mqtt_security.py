"""Security of the hall network, tried against the real Mosquitto with the
configuration broker-config writes: every forbidden action is attempted and
must be refused, with nothing reaching a log.

How "nothing arrived" is shown without waiting on a clock: after the
forbidden publish, the same client publishes an allowed marker on the same
connection (the broker handles one client's packets in order), then an allowed
client sends a second marker to the sniffers that would have received the
forbidden message; once the markers are in, anything sent before them would
be too.
"""
import os
import socket
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, Hall, clock_records, game, reference, wait_for  # noqa: E402

from hallclock.errors import BadInput  # noqa: E402
from hallclock.link.logfile import read_records  # noqa: E402
from hallclock.net.mqtt import BrokerClient  # noqa: E402
from hallclock_fw import mqtt, protocol  # noqa: E402
from hallclock import hostframes
from hallclock_fw.netlink import topic  # noqa: E402
from hallclock.whytext import words


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    h = Hall(tmp_path_factory.mktemp("sec"))
    yield h
    h.close()


def client(hall, name, subscribe=(), password=None):
    """``name``'s connection where it connects: a clock on the hall's
    listener, the host tools on the laptop's own."""
    creds = dict(hall.creds[name])
    if password is not None:
        creds["password"] = password
    where = hall.local if name in ("logger", "referee", "viewer") else hall.address
    return BrokerClient(where, creds, subscribe).start()


def up(c):
    return topic(HALL, c, "up")


def down(c):
    return topic(HALL, c, "down")


ALL = topic(HALL, "all", "down")
FORGED_HELLO = protocol.hello("0badf00d", "t2", "scrabble", "1")
FORGED_EVENT = protocol.event("0badf00d", 1, 0, 0, 0, 0, 0, 0, "scrabble:move_s=120")
FORGED_PRESS = hostframes.command(3)  # START, as the referee would send it


def firmware_connect(hall, user, password):
    """The clock's own MQTT client on a real socket: its state once settled."""
    c = mqtt.Client("probe-%s" % os.urandom(2).hex(), user, password, 15, (down("t1"),))
    s = socket.create_connection(hall.address)
    s.setblocking(False)
    now = 0
    c.start(s, now)
    deadline = time.monotonic() + 60
    while c.state == mqtt.CONNECTING and time.monotonic() < deadline:
        now += 1
        c.poll(now)
        time.sleep(0.005)
    state, why = c.state, words(c.why)
    c.close()
    return state, why


def test_anonymous_connect_is_refused(hall):
    state, why = firmware_connect(hall, None, None)
    assert state == mqtt.DEAD and why.startswith("refused")
    import paho.mqtt.client as paho
    got = []
    p = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="anon", protocol=paho.MQTTv311)
    p.on_connect = lambda c, u, f, rc, props: got.append(rc)
    p.connect(*hall.address)
    wait_for(lambda: p.loop(0.05) is not None and got, 60, "CONNACK")
    p.disconnect()
    assert got[0].is_failure


def test_wrong_password_is_refused(hall):
    state, why = firmware_connect(hall, "t1", "not-the-password")
    assert state == mqtt.DEAD and why.startswith("refused")
    with pytest.raises(BadInput, match="refused 'logger'"):
        client(hall, "logger", password="guess")
    # and the right one is taken (the refusal is about the password)
    state, _ = firmware_connect(hall, "t1", hall.creds["t1"]["password"])
    assert state == mqtt.UP


def _settle(sender, sender_topic, watchers):
    """Markers as described above; returns what each watcher got besides them."""
    mark = protocol.frame(b"W marker-%s" % os.urandom(3).hex().encode())
    sender.publish(sender_topic, mark)
    ups, downs = watchers
    wait_for(lambda: any(p == mark for _t, p in ups.seen()), 60, "the sender's marker")
    logger = client_cache["logger"]
    mark2 = protocol.frame(b"W marker2-%s" % os.urandom(3).hex().encode())
    logger.publish(down("t2"), mark2)
    logger.publish(ALL, mark2)
    wait_for(lambda: sum(p == mark2 for _t, p in downs.seen()) == 2, 60, "the markers")
    return ([m for m in ups.log if m[1] != mark],
            [m for m in downs.log if m[1] != mark2])


class Watch:
    def __init__(self, net):
        self.net = net
        self.log = []

    def seen(self):
        self.log.extend(self.net.messages())
        return self.log


client_cache = {}


@pytest.fixture(scope="module")
def watchers(hall):
    """A sniffer on every up (as logger) and one on t2's down and all/down (as t2)."""
    client_cache["logger"] = client(hall, "logger", [up("+")])
    ups = Watch(client_cache["logger"])
    downs = Watch(client(hall, "t2", [down("t2"), ALL]))
    yield ups, downs
    ups.net.stop()
    downs.net.stop()


def _clear(watchers):
    for w in watchers:
        w.seen()
        w.log.clear()


def test_clock_cannot_speak_for_another_clock(hall, watchers):
    _clear(watchers)
    rogue = client(hall, "t1")
    for frame in (FORGED_HELLO, FORGED_EVENT):
        rogue.publish(up("t2"), frame)
    ups, downs = _settle(rogue, up("t1"), watchers)
    rogue.stop()
    assert ups == [] and downs == []


def test_clock_cannot_write_any_down(hall, watchers):
    _clear(watchers)
    rogue = client(hall, "t1")
    for t in (down("t2"), ALL, down("t1")):
        rogue.publish(t, FORGED_PRESS)
        rogue.publish(t, hostframes.ack("0000cafe", 99))
    ups, downs = _settle(rogue, up("t1"), watchers)
    rogue.stop()
    assert ups == [] and downs == []


def test_clock_cannot_read_another_clocks_down(hall):
    spy = client(hall, "t1", [down("t2"), down("t1"), ALL])
    logger = client(hall, "logger")
    secret = hostframes.ack("0000cafe", 7)
    logger.publish(down("t2"), secret)
    mark = hostframes.ack("0000cafe", 8)
    logger.publish(down("t1"), mark)
    got = []
    wait_for(lambda: got.extend(spy.messages()) or any(p == mark for _t, p in got), 60,
             "t1's own down")
    spy.stop()
    logger.stop()
    assert [t for t, _p in got] == [down("t1")]


def test_viewer_and_referee_write_only_what_they_may(hall, watchers):
    _clear(watchers)
    viewer = client(hall, "viewer")
    for t in (down("t2"), ALL, up("t2"), up("t1")):
        viewer.publish(t, FORGED_PRESS)
    referee = client(hall, "referee")
    referee.publish(down("t2"), FORGED_PRESS)  # the referee writes all/down only
    referee.publish(up("t2"), FORGED_HELLO)
    ups, downs = _settle_viewer(viewer, referee, watchers)
    viewer.stop()
    referee.stop()
    assert ups == [] and downs == []


def _settle_viewer(viewer, referee, watchers):
    """The viewer may publish nowhere, so its marker is its own disconnect:
    after it, a referee marker on all/down (allowed) closes the window."""
    viewer.client.disconnect()
    ups, downs = watchers
    mark = hostframes.command(4)  # GONG on all/down: the referee's right
    referee.publish(ALL, mark)
    wait_for(lambda: any(p == mark for _t, p in downs.seen()), 60, "the referee's GONG")
    logger = client_cache["logger"]
    mark2 = protocol.frame(b"W marker3")
    logger.publish(down("t2"), mark2)
    wait_for(lambda: any(p == mark2 for _t, p in downs.seen()), 60, "the logger's marker")
    ups.seen()
    return ups.log, [m for m in downs.log if m[1] not in (mark, mark2)]


def test_nothing_forbidden_reaches_a_log(hall, tmp_path):
    """A logger runs while a rogue clock forges t2's hello and events on t2's
    topic and a hello for t2 on its own; t2's real game is logged as over a
    cable, and no forged record is in the log."""
    text = game(moves=6)
    log = tmp_path / "l.jsonl"
    lg = hall.start_logger(log, clocks=["t2"])
    rogue = client(hall, "t1")
    rogue.publish(up("t2"), FORGED_HELLO)
    rogue.publish(up("t2"), FORGED_EVENT)
    rogue.publish(up("t1"), FORGED_HELLO)  # its own topic, another clock's name
    rogue.publish(up("t1"), FORGED_EVENT)
    rogue.publish(down("t2"), FORGED_PRESS)
    rogue.stop()
    hall.device("t2", text)
    hall.wait_logger(lg)
    records = read_records(str(log))
    assert not [r for r in records if r.get("session") == "0badf00d"]
    assert clock_records(log, "t2") == reference(tmp_path, "t2", text)
