"""Several laptops: the live view and the hall display run from the broker with
the ``viewer`` credentials (read-only: the broker lets a viewer publish
nothing), beside the logger, and see the logger's own records."""
import json
import os
import subprocess
import sys
import threading
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, HALLCLOCK, Hall, game, strip, wait_for  # noqa: E402

from hallclock.link.logfile import read_records  # noqa: E402
from hallclock.net.mqtt import BrokerLogger  # noqa: E402
from hallclock.hall.display import BrokerTail  # noqa: E402
from hallclock.hall.display import make_server  # noqa: E402


@pytest.fixture
def hall(tmp_path):
    h = Hall(tmp_path, clocks=("t1", "t2"))
    yield h
    h.close()


def viewer(hall, clocks=None):
    v = BrokerLogger(hall.local, HALL, hall.cred_file, None, clocks=clocks, user="viewer")
    v.open()
    return v


def test_viewer_sees_the_loggers_records(hall, tmp_path):
    log = tmp_path / "l.jsonl"
    lg = hall.start_logger(log)
    v = viewer(hall)
    done = threading.Thread(target=v.run, kwargs={"exit_on_end": True}, daemon=True)
    done.start()
    hall.device("t1", game(moves=6), sid="0000aa01")
    hall.device("t2", game(moves=9), sid="0000aa02")
    hall.wait_logger(lg)
    done.join(120)
    assert not done.is_alive()
    # each clock's records, in order (how two clocks interleave depends on when
    # each pass of either reader ran, and the logger takes a clock's session
    # only once it answered its challenge: docs/network.md "Replays and floods")
    for c in ("t1", "t2"):
        mine = [r for r in v.writer.records if r["clock"] == c]
        assert mine and strip(mine) == strip([r for r in read_records(str(log))
                                              if r["clock"] == c])


def test_a_viewer_started_mid_game_takes_up_from_there(hall, tmp_path):
    log = tmp_path / "l.jsonl"
    lg = hall.start_logger(log, clocks=["t1"])
    reached, go = threading.Event(), threading.Event()

    def hold():  # the clock's loop stops at its 30th event until the viewer is in
        if d.runner.last_seq() >= 30 and not go.is_set():
            reached.set()
            go.wait(120)
    d = hall.device("t1", game(moves=60), sid="0000aa01", start=False, after_pass=hold)
    d.start()
    assert reached.wait(120)
    v = viewer(hall, clocks=["t1"])
    go.set()
    t = threading.Thread(target=v.run, kwargs={"exit_on_end": True}, daemon=True)
    t.start()
    hall.wait_logger(lg)
    t.join(120)
    seen = strip(v.writer.records)
    logged = strip(read_records(str(log)))
    assert seen and seen[-1]["event"] == "end" and seen == logged[-len(seen):]
    assert len(seen) < len(logged)  # it did join late


def test_hall_display_from_the_broker(hall, tmp_path):
    lg = hall.start_logger(tmp_path / "l.jsonl", clocks=["t2"])
    source = BrokerTail(viewer(hall))
    server = make_server(None, port=0, source=source)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    url = "http://127.0.0.1:%d/state" % server.server_address[1]
    try:
        hall.device("t2", game(moves=6))
        hall.wait_logger(lg)

        def state():
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read())
        wait_for(lambda: state()["clocks"] == ["t2"] and source.records >= 10, 60,
                 "the display to show t2")
    finally:
        server.shutdown()
        server.server_close()
        source.viewer.close()


def test_view_command_runs_as_viewer(hall, tmp_path):
    log = tmp_path / "l.jsonl"
    lg = hall.start_logger(log)
    view = subprocess.Popen(HALLCLOCK + ["view", "--broker", f"127.0.0.1:{hall.local_port}",
                                         "--hall",
                                         HALL, "--credentials", hall.cred_file, "--plain",
                                         "--exit-on-end"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hall.loggers.append(view)  # stopped by the fixture if the test fails
    view.stdout.readline()
    hall.device("t1", game(moves=4))
    hall.device("t2", game(moves=2), sid="0000bb02")  # the view waits for every clock
    hall.wait_logger(lg)
    out, err = view.communicate(timeout=60)
    assert view.returncode == 0, err
    n = len(read_records(str(log)))
    assert "t1" in out and "records seen" in err
    assert int(err.split("hallclock view: ")[1].split()[0]) >= n
