"""Frames only their sender can make, and each sender only its rights, against
the real Mosquitto with the configuration broker-config writes (docs/network.md
"Frames and rights").  The adversary holds a password -- a clock's (it is on
every board and crosses the air in the MQTT login), the logger's, the
referee's, the hall unit's -- but not the frame keys, which never leave the
boards and the laptop.  Every forged or replayed frame is refused and counted,
and what the clocks log is what they would log over a cable.
"""
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, Hall, clock_records, game, reference, wait_for  # noqa: E402

from hallclock.net.mqtt import BrokerClient, BrokerLogger  # noqa: E402
from hallclock.hall.relay import Relay  # noqa: E402
from hallclock_fw import protocol  # noqa: E402
from hallclock import hostframes
from hallclock_fw.events import EV_BOOT, EV_END, EV_GONG, GONG_START  # noqa: E402
from hallclock_fw.netlink import topic  # noqa: E402

from hallclock_fw import netlink  # noqa: E402

# the sealed frames, where the clock's link has them (on a tree without them
# these tests send only the unsealed attacks, and fail)
seal = getattr(netlink, "seal", None)


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    h = Hall(tmp_path_factory.mktemp("frames"), clocks=("hall", "t1", "t2"))
    yield h
    h.close()


def client(hall, name, subscribe=()):
    return BrokerClient(hall.address, hall.creds[name], subscribe).start()


def send(net, topic_name, payloads):
    for p in payloads:
        net.client.publish(topic_name, p).wait_for_publish(timeout=60)


def up(c):
    return topic(HALL, c, "up")


def down(c):
    return topic(HALL, c, "down")


ALL = topic(HALL, "all", "down")


def refused(logger):
    return logger.refused() if hasattr(logger, "refused") else 0


def run_logger(logger, cond, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "the logger did not get there"
        logger.poll(0.02)


def test_forged_and_replayed_clock_frames_with_its_own_password_reach_no_log(hall, tmp_path):
    """t1 plays a short game under the logger; then, with t1's own password, a
    rogue publishes on t1's topic a forged hello (a false power loss on a tree
    without sealed frames), a forged ``end`` for the real session with the
    next sequence number, and every message t1 really sent, replayed."""
    out = tmp_path / "t1.jsonl"
    logger = BrokerLogger(hall.address, HALL, hall.cred_file, str(out), clocks=["t1"])
    heard = []
    take = logger.net.messages
    logger.net.messages = lambda *a: [heard.append(m) or m for m in take(*a)]
    logger.open()
    try:
        d = hall.device("t1", game(moves=4))
        run_logger(logger, lambda: logger.all_ended() and not d.is_alive())
        stored = logger.writer.count
        last_seq = max(r["seq"] for r in clock_records(out, "t1") if "seq" in r)
        forged = [protocol.hello("0badf00d", "t1", "scrabble", "1"),
                  protocol.event("0badf00d", 1, 0, EV_BOOT, 0, 0, 0, 0, "scrabble:"),
                  protocol.event("0000cafe", last_seq + 1, 99999, EV_END, 0, 0, 0, 0)]
        replayed = [p for _t, p in heard]
        assert len(replayed) > 10
        before = refused(logger)
        rogue = client(hall, "t1")
        send(rogue, up("t1"), forged + replayed)
        rogue.stop()
        want = before + len(forged) + len(replayed)
        run_logger(logger, lambda: refused(logger) >= want or logger.writer.count > stored, 20)
        logger.writer.flush()
        assert logger.writer.count == stored  # not one record more
        assert refused(logger) == want  # each forged and replayed message counted
    finally:
        logger.close()
    assert clock_records(out, "t1") == reference(tmp_path, "t1", game(moves=4))


def _held_device(hall, clock, text):
    """A clock whose loop waits after its first pass until released; returns
    (device thread, release event, passes counter)."""
    released = threading.Event()
    passes = [0]

    def after_pass():
        passes[0] += 1
        if passes[0] == 1:
            released.wait(30)
    return hall.device(clock, text, after_pass=after_pass), released, passes


def test_forged_host_frames_with_the_logger_and_referee_passwords_change_nothing(hall, tmp_path):
    """Before t1's game starts and with no logger running, a rogue with the
    logger's password sends t1 a forged ack (the clock would drop events nobody
    stored), START, settings (K) and a restore (S); one with the referee's
    password a forged START and GONG on all/down.  The game is then logged as
    over a cable."""
    text = game(moves=6, start=4000)
    d, released, passes = _held_device(hall, "t1", text)
    wait_for(lambda: passes[0] >= 1, 30, "t1's first pass")
    rogue = client(hall, "logger")
    send(rogue, down("t1"), [hostframes.ack("0000cafe", 60), hostframes.command(3),
                             hostframes.configure("scrabble", "move_s=30"),
                             hostframes.restore("scrabble", "move_s=30", 1, 2, 3)])
    if seal is not None:  # sealed, but with a key that is not t1's
        wrong = seal.Mac(b"\x01" * 16)
        send(rogue, down("t1"), [seal.seal(wrong, b"D", hostframes.ack("0000cafe", 60),
                                           d.line.sid, 2 ** 45)])
    rogue.stop()
    referee = client(hall, "referee")
    send(referee, ALL, [hostframes.command(3), hostframes.command(4)])
    referee.stop()
    n = passes[0]
    released.set()
    wait_for(lambda: passes[0] >= n + 50, 30, "t1 reading its socket")
    if seal is not None:
        assert d.line.refused == 7
    log = tmp_path / "t1.jsonl"
    hall.wait_logger(hall.start_logger(log, clocks=["t1"]))
    assert clock_records(log, "t1") == reference(tmp_path, "t1", text)


def test_maintenance_from_the_network_never_stops_a_clock(hall, tmp_path):
    """``M`` hands the console back only on the serial line: on all/down (the
    referee's and logger's passwords) and on t1's own down -- even sealed with
    the right keys, as the laptop could -- the clock keeps running."""
    text = game(moves=6, start=2000)
    d, released, passes = _held_device(hall, "t1", text)
    wait_for(lambda: passes[0] >= 1, 30, "t1's first pass")
    m = hostframes.maintenance()
    referee = client(hall, "referee")
    send(referee, ALL, [m])
    if seal is not None:
        from hallclock.net.seal import host_ms, seal_all
        send(referee, ALL, [seal_all(hall.creds["referee"], m)])
    referee.stop()
    logger = client(hall, "logger")
    send(logger, ALL, [m])
    send(logger, down("t1"), [m])
    if seal is not None:
        key = seal.Mac(seal.key_bytes(hall.creds["t1"]["key"]))
        send(logger, down("t1"), [seal.seal(key, b"D", m, d.line.sid, host_ms())])
    logger.stop()
    n = passes[0]
    released.set()
    wait_for(lambda: passes[0] >= n + 50 or not d.is_alive(), 30, "t1 reading its socket")
    assert not d.runner.app.link.maintenance
    if seal is not None:
        assert d.line.refused == 5
    log = tmp_path / "t1.jsonl"
    hall.wait_logger(hall.start_logger(log, clocks=["t1"]))
    assert clock_records(log, "t1") == reference(tmp_path, "t1", text)


def test_a_forged_start_on_the_hall_units_topic_is_not_relayed(hall, tmp_path):
    """With the hall unit's password, a rogue publishes a hall-unit session
    whose START gong the relay would send to every table: nothing is stored
    and nothing is relayed (the relay acts only on the hall unit's sealed
    frames)."""
    logger = BrokerLogger(hall.address, HALL, hall.cred_file, str(tmp_path / "h.jsonl"),
                          clocks=["hall", "t1"])
    relay = Relay(logger)
    to_table = []
    logger.ports[1].write = to_table.append
    relay.tables[0].send = to_table.append
    logger.open()
    try:
        rogue = client(hall, "hall")
        forged = [protocol.hello("0badf00d", "hall", "scrabble", "1"),
                  protocol.event("0badf00d", 1, 0, EV_BOOT, 0, 0, 0, 0, "scrabble:"),
                  protocol.event("0badf00d", 2, 100, EV_GONG, GONG_START, 0, 0, 0)]
        send(rogue, up("hall"), forged)
        rogue.stop()
        run_logger(logger, lambda: refused(logger) >= 3 or relay.relayed or
                   logger.writer.count, 20)
        for _ in range(10):
            logger.poll(0.01)
            relay.service()
        assert relay.relayed == 0 and to_table == [] and logger.writer.count == 0
        assert refused(logger) == 3
    finally:
        logger.close()


def test_a_viewer_with_the_laptops_credentials_shows_no_forged_frame(hall, tmp_path):
    """The console and the projector on the laptop read as ``viewer`` with the
    laptop's credentials.json, which holds the clocks' keys: a session forged
    with t2's password never reaches their records."""
    view = BrokerLogger(hall.address, HALL, hall.cred_file, None, clocks=["t2"], user="viewer")
    view.open()
    try:
        rogue = client(hall, "t2")
        send(rogue, up("t2"), [protocol.hello("0badf00d", "t2", "scrabble", "1"),
                               protocol.event("0badf00d", 1, 0, EV_BOOT, 0, 0, 0, 0, "scrabble:")])
        rogue.stop()
        run_logger(view, lambda: refused(view) >= 2 or view.writer.records, 20)
        view.writer.flush()
        assert view.writer.records == [] and refused(view) == 2
    finally:
        view.close()


def test_a_huge_message_on_a_clocks_topic_never_costs_the_clock_its_game(hall, tmp_path):
    """Any byte from the broker: 200 KB published on t1's down (far beyond any
    frame) is dropped by the broker itself (message_size_limit); t1 keeps its
    connection and its game.  A broker that delivered it anyway is
    tests/test_mqtt_robust.py's (the client skips it as it arrives)."""
    text = game(moves=4, start=2000)
    d, released, passes = _held_device(hall, "t1", text)
    wait_for(lambda: passes[0] >= 1, 30, "t1's first pass")
    rogue = client(hall, "logger")
    send(rogue, down("t1"), [b"x" * 200_000])
    rogue.stop()
    n = passes[0]
    released.set()
    wait_for(lambda: passes[0] >= n + 50 or d.line.connects > 1, 30, "t1's passes after 200 KB")
    assert d.line.connects == 1 and getattr(d.line.client, "skipped", 0) == 0
    log = tmp_path / "t1.jsonl"
    hall.wait_logger(hall.start_logger(log, clocks=["t1"]))
    assert clock_records(log, "t1") == reference(tmp_path, "t1", text)


def test_a_replayed_referee_signal_is_taken_once(hall, tmp_path):
    """The referee's genuine GONG, captured on all/down with a clock's password
    (every clock reads it) and published again twice with the logger's: the
    clock gongs once."""
    from hallclock.net.mqtt import send_signal
    text = game(moves=4, start=3000)
    d, released, passes = _held_device(hall, "t1", text)
    wait_for(lambda: passes[0] >= 1, 30, "t1's first pass")
    spy = client(hall, "t2", [ALL])
    send_signal(hall.address, HALL, hall.cred_file, 4)  # GONG, as `hallclock referee GONG`
    got = []
    wait_for(lambda: got.extend(spy.messages()) or got, 60, "the referee's GONG")
    spy.stop()
    rogue = client(hall, "logger")
    send(rogue, ALL, [got[0][1], got[0][1]])
    rogue.stop()
    n = passes[0]
    released.set()
    wait_for(lambda: passes[0] >= n + 50, 30, "t1 reading its socket")
    log = tmp_path / "t1.jsonl"
    hall.wait_logger(hall.start_logger(log, clocks=["t1"]))
    gongs = [r for r in clock_records(log, "t1") if r.get("event") == "gong"
             and r.get("kind") == "manual"]
    assert len(gongs) == 1
