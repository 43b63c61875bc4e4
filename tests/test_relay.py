"""Hall signals end to end: the Scrabble round gongs and play-out, the
duplicate countdown (through ``hallclock simulate``), and a hall of a hall
unit and 8 table clocks on virtual devices, every table started by the
relayed signal (``hallclock hall-simulate``)."""
import os

import pytest

from conftest import read_log, run_cli
from faultproxy import wait_for

from hallclock.hall import relay as hall_mod
from hallclock.vboard import device as virtual
from hallclock.vboard.vdev.runner import RUNNING, Runner
from hallclock import hostframes
from hallclock_fw.events import BTN_GONG, BTN_PAUSE, BTN_START
from hallclock_fw.settings import parse

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "host", "hallclock", "samples")

ROUND = """\
0       press START
1000    press B     # move 1 (A)
30000   press A     # move 2 (B): the ten-minute gong falls in it
61000   press B     # move 3 (A)
100000  press A     # move 4 (B): the end gong falls in it
125000  press B     # move 5: one more move each
130000  press A     # move 6
135000  press B     # move 7: last move each
140000  press A     # move 8
145000  press B     # B ends move 8: over
146000  press GONG
150000  end
"""


def events(records, name, clock=None):
    return [r for r in records if r["event"] == name and (clock is None or r["clock"] == clock)]


def test_round_gongs_and_playout_end_to_end(tmp_path, script):
    out = tmp_path / "round.jsonl"
    res = run_cli("simulate", "--script", script(ROUND), "--out", str(out),
                  "--set", "round_min=2", "--set", "round_warn_min=1")
    assert res.returncode == 0, res.stderr
    recs = read_log(out)
    gongs = [(r["t_ms"], r["kind"], r["move"]) for r in events(recs, "gong")]
    assert gongs == [(0, "start", None), (60000, "ten_minutes", 2), (120000, "end", 4),
                     (146000, "manual", 9)]
    steps = [(r["t_ms"], r["step"], r["move"]) for r in events(recs, "playout")]
    assert steps == [(120000, "finish_round", 4), (125000, "one_more_move", 5),
                     (135000, "last_move", 7), (145000, "over", 8)]
    # the move clock goes on through the play-out
    assert [r["move"] for r in events(recs, "turn")] == list(range(1, 10))


def test_default_round_is_forty_minutes(tmp_path, script):
    out = tmp_path / "round40.jsonl"
    text = "0 press START\n1000 press B\n2500000 end\n"
    res = run_cli("simulate", "--script", script(text), "--out", str(out))
    assert res.returncode == 0, res.stderr
    gongs = [(r["t_ms"], r["kind"]) for r in events(read_log(out), "gong")]
    assert gongs == [(0, "start"), (30 * 60000, "ten_minutes"), (40 * 60000, "end")]


def test_duplicate_sample_end_to_end(tmp_path):
    out = tmp_path / "dup.jsonl"
    res = run_cli("simulate", "--mode", "duplicate", "--script",
                  os.path.join(SAMPLES, "duplicate_game.txt"), "--out", str(out))
    assert res.returncode == 0, res.stderr
    recs = read_log(out)
    assert recs[0]["mode"] == "duplicate"
    assert recs[0]["settings"] == {"move_s": 180, "announce_s": [120, 60, 30]}
    starts = [(r["t_ms"], r["move"]) for r in events(recs, "dup_start")]
    assert starts == [(20000, 1), (215000, 2), (480000, 3)]
    ends = [(r["t_ms"], r["move"]) for r in events(recs, "dup_end")]
    # move 2 was stopped for 60 s: it ends 60 s later than 3 minutes
    assert ends == [(200000, 1), (455000, 2), (660000, 3)]
    anns = [(r["move"], r["left_s"]) for r in events(recs, "announce")]
    assert anns == [(m, s) for m in (1, 2, 3) for s in (120, 60, 30)]
    assert [(r["player"], r["move"]) for r in events(recs, "pause")] == [(None, 2)]
    res_ = events(recs, "resume")
    assert [(r["player"], r["move"], r["limit_ms"]) for r in res_] == [(None, 2, 130000)]


def test_duplicate_settings_end_to_end(tmp_path, script):
    out = tmp_path / "dup2.jsonl"
    text = "0 press START\n5000 press A\n100000 press START\n200000 end\n"
    res = run_cli("simulate", "--mode", "duplicate", "--script", script(text),
                  "--out", str(out), "--set", "move_s=90", "--set", "announce_s=45")
    assert res.returncode == 0, res.stderr
    recs = read_log(out)
    seq = [(r["event"], r["t_ms"]) for r in recs if r["event"] in
           ("dup_start", "announce", "dup_end")]
    assert seq == [("dup_start", 0), ("announce", 45000), ("dup_end", 90000),
                   ("dup_start", 100000), ("announce", 145000), ("dup_end", 190000)]


def test_bad_duplicate_setting_exits_2(tmp_path, script):
    res = run_cli("simulate", "--mode", "duplicate", "--script", script("0 end\n"),
                  "--out", str(tmp_path / "x.jsonl"), "--set", "announce_s=200")
    assert res.returncode == 2
    assert "announce_s" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def _run_device(text, pairs):
    from hallclock.scenario import parse_text
    actions = [a.as_tuple() for a in parse_text(text)]
    r = Runner("scrabble", parse("scrabble", pairs), actions, record=True)
    guard = 0
    while r.step() == RUNNING:
        guard += 1
        assert guard < 100000
    return r


def _blinks(output, t0, t1):
    return sum(1 for t, f in output.changes if t0 <= t < t1 and f)


def test_device_shows_the_playout_step_on_both_leds():
    r = _run_device(ROUND, ["round_min=2", "round_warn_min=1"])
    for led in r.leds:
        # the end gong itself marks (a): one long stroke, not cut short
        assert _blinks(led, 120000, 121000) == 1
        assert [c[0] for c in led.changes if 120000 <= c[0] < 125000] == [120000, 122500]
        assert _blinks(led, 125000, 127000) == 2  # (b) one more move
        assert _blinks(led, 135000, 137000) == 3  # (c) last move
        assert _blinks(led, 145000, 147000) == 1  # over
    assert _blinks(r.hall, 120000, 123000) == 1  # the hall output: the end gong only
    assert [c[0] for c in r.hall.changes if 120000 <= c[0] < 125000] == [120000, 122500]


def test_duplicate_device_displays_count_down(tmp_path):
    from hallclock.scenario import parse_text
    text = "1000 press START\n61000 press PAUSE\n70000 end\n"
    r = Runner("duplicate", parse("duplicate", []), [a.as_tuple() for a in
                                                     parse_text(text)], record=True)
    while r.step() == RUNNING:
        pass
    assert r.displays[0].text == r.displays[1].text == " 2:00"
    assert _blinks(r.hall, 61000, 61100) == 1  # the "2 minutes left" announcement


# -- the hall ---------------------------------------------------------------------
HALL = """\
# the referee: start signal, then a manual gong
500     press START
1500    press GONG
7000    end
"""
TABLE = """\
# every table: B starts A's first move well after the start signal
5000    press B
6000    press A
7500    end
"""


def _hall(tmp_path, script, hall_text, table_text, *extra, tables=8):
    out = tmp_path / "hall.jsonl"
    res = run_cli("hall-simulate", "--tables", str(tables),
                  "--script", script(hall_text, "hall.txt"),
                  "--table-script", script(table_text, "table.txt"),
                  "--speed", "10", "--out", str(out), *extra)
    assert res.returncode == 0, res.stderr
    return read_log(out), res.stdout


def test_hall_of_eight_tables_starts_on_the_relayed_signal(tmp_path, script):
    recs, stdout = _hall(tmp_path, script, HALL, TABLE)
    tables = ["table-%d" % i for i in range(1, 9)]
    assert sorted({r["clock"] for r in recs}) == sorted(["hall"] + tables)
    for clock in ["hall"] + tables:
        mine = [r for r in recs if r["clock"] == clock]
        assert [r["seq"] for r in mine] == list(range(1, len(mine) + 1))
        assert mine[0]["event"] == "boot" and mine[-1]["event"] == "end"
    hall_start = events(recs, "gong", "hall")[0]
    assert hall_start["kind"] == "start" and hall_start["t_ms"] == 500
    for clock in tables:
        mine = [r for r in recs if r["clock"] == clock]
        gongs = [(r["kind"]) for r in events(mine, "gong")]
        assert gongs == ["start", "manual"]  # nobody pressed START on a table
        start = events(mine, "gong")[0]
        # one shared time origin: no table starts before the referee's signal,
        # and the table's own round runs from the relayed start
        assert start["t_ms"] >= hall_start["t_ms"]
        names = [r["event"] for r in mine]
        assert names.index("gong") < names.index("turn")
    assert "start relayed to 8 table(s)" in stdout
    assert "did NOT start" not in stdout


def test_duplicate_hall_relays_start_and_pause(tmp_path, script):
    hall = "500 press START\n3000 press PAUSE\n4000 press PAUSE\n12000 end\n"
    recs, _ = _hall(tmp_path, script, hall, "12500 end\n", "--mode", "duplicate",
                    "--set", "move_s=6", "--set", "announce_s=3")
    def times(clock):
        return [events(recs, ev, clock)[0]["t_ms"]
                for ev in ("dup_start", "pause", "resume", "dup_end")]
    hall = times("hall")
    for i in range(1, 9):
        clock = "table-%d" % i
        names = [r["event"] for r in recs if r["clock"] == clock and r["event"] != "health"]
        assert names == ["boot", "dup_start", "pause", "resume", "announce", "dup_end", "end"]
        start, pause, resume, end = mine = times(clock)
        # one shared time origin: no relayed press before the referee's own
        assert all(m >= h for m, h in zip(mine[:3], hall[:3])), (mine, hall)
        # a paused table keeps its time (II.5): its 6 s less what ran before the
        # pause, from the resume on; so it ends after the hall by the relay's lags
        # (the start's and the resume's less the pause's), to the ms
        assert end - resume == 6000 - (pause - start)
        assert end - hall[3] == (start - hall[0]) - (pause - hall[1]) + (resume - hall[2])


class _FakePort:
    def __init__(self):
        self.sent = []

    def write(self, data):
        self.sent.append(data)


class _FakeLink:
    on_record = None


class _FakeLogger:
    def __init__(self, n):
        self.ports = [_FakePort() for _ in range(n + 1)]
        self.links = [_FakeLink() for _ in range(n + 1)]


def test_relay_resends_start_to_a_silent_table_only():
    now = [100.0]
    lg = _FakeLogger(3)
    relay = hall_mod.Relay(lg, clock=lambda: now[0])
    hall = lg.links[0].on_record
    hall({"event": "boot", "mode": "scrabble"})
    hall({"event": "gong", "kind": "start", "t_ms": 500})
    start = hostframes.command(BTN_START)
    assert [p.sent for p in lg.ports[1:]] == [[start]] * 3
    lg.links[1].on_record({"event": "gong", "kind": "start", "t_ms": 510})
    lg.links[2].on_record({"event": "gong", "kind": "start", "t_ms": 511})
    now[0] += hall_mod.RETRY_S + 0.01
    relay.service()
    assert [len(p.sent) for p in lg.ports[1:]] == [1, 1, 2]
    for _ in range(5):
        now[0] += hall_mod.RETRY_S + 0.01
        relay.service()
    assert len(lg.ports[3].sent) == hall_mod.TRIES  # then it gives up
    assert relay.spread(0)["tables"][2][1] is None


def test_relay_maps_hall_events_to_buttons():
    lg = _FakeLogger(1)
    hall_mod.Relay(lg)
    hall = lg.links[0].on_record
    hall({"event": "boot", "mode": "scrabble"})
    for rec in ({"event": "gong", "kind": "ten_minutes"}, {"event": "gong", "kind": "end"},
                {"event": "pause", "player": "A"}, {"event": "turn", "player": "A"}):
        hall(rec)
    assert lg.ports[1].sent == []  # each table gives its own ten-minute and end gongs
    hall({"event": "gong", "kind": "manual"})
    assert lg.ports[1].sent == [hostframes.command(BTN_GONG)]
    lg2 = _FakeLogger(1)
    hall_mod.Relay(lg2)
    for rec in ({"event": "boot", "mode": "duplicate"}, {"event": "dup_start", "move": 1},
                {"event": "pause", "player": None}, {"event": "announce", "left_s": 60}):
        lg2.links[0].on_record(rec)
    assert lg2.ports[1].sent == [hostframes.command(BTN_START), hostframes.command(BTN_PAUSE)]


@pytest.mark.parametrize("args, words", [
    (["hall-simulate", "--tables", "0"], "--tables 0"),
    (["hall-simulate", "--tables", "3", "--table-script", "T", "--table-script", "T"],
     "--table-script given 2 times"),
    (["hall-simulate", "--speed", "0"], "--speed"),
    (["hall-simulate", "--mode", "chess"], "unknown mode"),
])
def test_hall_simulate_bad_input_exits_2(tmp_path, script, args, words):
    hall = script(HALL, "hall.txt")
    table = script(TABLE, "table.txt")
    args = [table if a == "T" else a for a in args]
    res = run_cli(*args, "--script", hall, "--out", str(tmp_path / "h.jsonl"))
    assert res.returncode == 2
    assert words in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "h.jsonl").exists()


def test_hall_bad_ports_exit_2(tmp_path):
    res = run_cli("hall", "--hall-unit-port", str(tmp_path / "nope"), "--port",
                  str(tmp_path / "nope2"), "--out", str(tmp_path / "h.jsonl"))
    assert res.returncode == 2 and "cannot open serial port" in res.stderr
    res = run_cli("hall", "--hall-unit-port", "/dev/null", "--port", "/dev/null",
                  "--out", str(tmp_path / "h.jsonl"))
    assert res.returncode == 2 and "given twice" in res.stderr


def _opened(pid):
    """The device paths a process has open (Linux /proc)."""
    seen = set()
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return seen
    for n in names:
        try:
            seen.add(os.readlink(os.path.join(folder, n)))
        except OSError:
            pass
    return seen


def test_hall_command_on_ports(tmp_path, script):
    """``hallclock hall`` as a user runs it, on ptys with virtual clocks behind."""
    import subprocess
    import sys
    import time

    from hallclock.scenario import parse_text
    from hallclock.link.transport import pty_pair
    from hallclock.vboard.device import make_runner

    specs = [("hall", "c0000001", "300 press START\n4000 end\n")]
    specs += [("t%d" % i, "d000000%d" % i, "4500 end\n") for i in range(1, 4)]
    fds, paths, threads = [], [], []
    out = tmp_path / "hall.jsonl"
    proc = None
    try:
        for clock, sid, text in specs:
            master, slave, path = pty_pair()
            fds += [master, slave]
            paths.append(path)
        exe = os.path.join(os.path.dirname(sys.executable), "hallclock")
        args = [exe, "hall", "--hall-unit-port", paths[0], "--out", str(out), "--exit-on-end"]
        for p in paths[1:]:
            args += ["--port", p]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        wait_for(lambda: proc.poll() is not None or _opened(proc.pid) >= set(paths),
                 "the host to open its four ports")
        assert proc.poll() is None, proc.communicate()[1]
        t0 = virtual.mark()
        for i, (clock, sid, text) in enumerate(specs):
            runner = make_runner("scrabble", parse("scrabble", []),
                                 [a.as_tuple() for a in parse_text(text)], clock=clock, sid=sid)
            th = virtual.DeviceThread(runner, fds[2 * i], virtual.RealPace(t0, 5.0))
            th.start()
            threads.append(th)
        stdout, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 0, stderr
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()  # never leave a logger behind that could open a reused pty
            proc.wait()
        for th in threads:
            th.halt = True
        for fd in fds:
            os.close(fd)
    recs = read_log(out)
    hall_t = events(recs, "gong", "hall")[0]["t_ms"]
    for clock in ("t1", "t2", "t3"):
        starts = events(recs, "gong", clock)
        assert [g["kind"] for g in starts] == ["start"]
        assert starts[0]["t_ms"] >= hall_t
    assert "relayed 1 signal(s) to 3 table(s)" in stdout
