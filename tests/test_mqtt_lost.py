"""A clock's link lost on the hall network, seen by every host: each clock's
MQTT connection carries a last will (the ``L`` frame on its own ``up``
topic), which the real Mosquitto publishes when the connection dies without
a goodbye (the Wi-Fi drops, the board loses power).  The logger's and the
viewer's view of that clock, and the referee console's grid on the broker,
say "lost" from then until the clock speaks again; a clock that ends its
session and says goodbye is never marked lost."""
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, Hall, game, wait_for  # noqa: E402

from hallclock import scenario
from hallclock.vboard import device as virtual  # noqa: E402
from hallclock.net.mqtt import BrokerLogger  # noqa: E402
from hallclock_fw.settings import parse  # noqa: E402
from hallclock.hall.referee import BrokerRoundTail, grid  # noqa: E402


@pytest.fixture
def hall(tmp_path):
    h = Hall(tmp_path, clocks=("t1", "t2"))
    yield h
    h.close()


def viewer(hall):
    v = BrokerLogger(hall.local, HALL, hall.cred_file, None, user="viewer")
    v.open()
    return v


def state(v, clock):
    v.poll(0.02)
    for p in v.ports:
        if p.clock == clock:
            return p.state
    return None


KEEPALIVE_S = 2  # the clock's MQTT keepalive here (the board's is 15 s): the broker
# gives a silent connection up after 1.5 keepalives, the same way, in 3 s not 22


def clock_in_real_time(hall, clock, text, sid, via):
    """A virtual clock on the broker whose game runs at the real rate (as a
    board's), so the fault falls mid-game."""
    from hallclock.vboard.vdev import netpump
    from hallclock_fw.netlink import NetLink
    actions = scenario.parse_text(text, "<test>")
    runner = virtual.make_runner("scrabble", parse("scrabble", []), actions, clock=clock,
                                 sid=sid)
    creds = hall.creds[clock]
    net = NetLink(HALL, clock, creds["user"], creds["password"],
                  netpump.opener(via.address[0], via.address[1]), netpump.ticks_ms,
                  keepalive_s=KEEPALIVE_S, key=creds["key"], hall_key=creds["hall_key"])
    d = virtual.DeviceThread(runner, net, virtual.RealPace(virtual.mark(), 1.0), silence_s=20)
    hall.devices.append(d)
    d.start()
    return d


def test_a_dead_link_is_marked_lost_until_the_clock_speaks_again(hall, tmp_path):
    hall.start_logger(tmp_path / "l.jsonl", clocks=["t1"])
    v = viewer(hall)
    proxy = hall.proxy()
    clock_in_real_time(hall, "t1", "0 press START\n500 press B\n60000 end\n", "0000ab01", proxy)
    tail = BrokerRoundTail(v, str(tmp_path / "referee.jsonl"))

    def row():
        rows = {t["clock"]: t for t in grid(tail, time.time())["tables"]}
        return rows.get("t1")
    wait_for(lambda: (row() or {}).get("status") == "running", what="t1 playing on the grid")
    assert not row()["lost"]
    proxy.cut()  # the Wi-Fi is gone: no new connection gets through ...
    proxy.reset()  # ... and the TCP path dies under the clock
    # (no RST reaches the broker, as from a board that lost its Wi-Fi: it
    # gives the connection up when its keepalive runs out, then sends the will)
    wait_for(lambda: state(v, "t1") == "lost", what="the broker's last will of the clock")
    # the referee console on the broker shows it, with the time last heard
    assert row()["lost"] and row()["last_heard"]
    # the Wi-Fi is back: the clock reconnects (backoff) and says hello again
    proxy.mend()
    wait_for(lambda: state(v, "t1") == "connected", what="the clock back on the broker")
    assert not row()["lost"]


def test_a_clock_that_ends_and_says_goodbye_is_not_lost(hall, tmp_path):
    v = viewer(hall)
    lg = hall.start_logger(tmp_path / "l.jsonl", clocks=["t2"])
    d = hall.device("t2", game(moves=4), sid="0000ab02")
    d.join(180)
    assert not d.is_alive() and d.result, "the clock did not finish its session"
    hall.wait_logger(lg)
    end = time.monotonic() + 2.0  # a will would come at once: give it a moment to
    while time.monotonic() < end:  # arrive (none must), reading all the while
        assert state(v, "t2") == "connected"
