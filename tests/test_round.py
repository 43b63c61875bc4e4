"""Running a round from the laptop (``hallclock round start``): every clock gets
the round's start with its number (``N <round> 0``: the START signal, ČAS 4.1),
every record of that game carries ``round``, and a clock that joins late (it
rebooted, or was plugged in after the start) is told how long ago the round
started, so its ten-minute and end gongs (6.1) fall at the hall's times.  The
console's START round and GONG reach the clocks through the referee log."""
import json
import os
import time

import pytest

from conftest import read_log, run_cli

from hallclock.hall import relay as hall_mod
from hallclock.vboard import device as virtual
from hallclock.hall import round as roundctl
from hallclock.link.hostlink import Session, tag_round
from hallclock.link.logfile import LogWriter, host_time
from hallclock.link.logger import Logger
from hallclock.views.roundreport import referee_log_of
from hallclock.scenario import parse_text
from hallclock.link.transport import pty_pair
from hallclock.vboard.device import make_runner
from hallclock import hostframes
from hallclock_fw.events import BTN_GONG
from hallclock_fw.settings import parse


class _Port:
    def __init__(self, path):
        self.path = path
        self.sent = []
        self.state = "connected"

    def write(self, data):
        self.sent.append(data)


class _Link:
    on_record = None
    current = None  # the session that spoke last (hostlink.Session)


class _FakeLogger:
    def __init__(self, n):
        self.ports = [_Port(f"/dev/fake{i}") for i in range(n)]
        self.links = [_Link() for _ in range(n)]


def test_start_late_join_and_retries_on_a_fake_hall(tmp_path):
    now = [1000.0]
    lg = _FakeLogger(3)
    log = str(tmp_path / "round2.jsonl")
    rc = roundctl.RoundControl(lg, 2, log_path=log, clock=lambda: now[0])
    for i in range(3):
        lg.links[i].current = Session("s%d" % i, "t%d" % (i + 1), "scrabble")
    lg.links[0].on_record({"clock": "t1", "session": "s0", "event": "boot", "t_ms": 0})
    rc.service()
    assert all(p.sent == [] for p in lg.ports)  # nothing before the start
    rc.start()
    assert [p.sent for p in lg.ports] == [[hostframes.round_number(2, 0)]] * 3
    for link in lg.links[1:]:
        link.current = None  # t2 and t3 go quiet (off) for now
    assert rc.start() is False  # one start per round
    lg.links[0].on_record({"clock": "t1", "session": "s0", "event": "round", "round": 2,
                           "elapsed_ms": 0, "t_ms": 40})
    now[0] += roundctl.RETRY_S + 0.01
    rc.service()
    assert len(lg.ports[0].sent) == 1  # t1 took it: never asked again
    # t2 and t3 of the start did not answer: asked again, at most TRIES times in all
    assert [len(p.sent) for p in lg.ports[1:]] == [2, 2]
    for _ in range(8):
        now[0] += roundctl.RETRY_S + 0.01
        rc.service()
    assert [len(p.sent) for p in lg.ports[1:]] == [roundctl.TRIES] * 2
    # t2 reboots 754 s into the round: its new session is told how long ago it started
    now[0] = 1754.0
    lg.links[1].current = Session("b2", "t2", "scrabble")  # its hello
    rc.service()
    assert lg.ports[1].sent[-1] == hostframes.round_number(2, 754000)
    now[0] += roundctl.RETRY_S + 0.5
    rc.service()  # no round event yet: asked again, with the time as it is now
    assert lg.ports[1].sent[-1] == hostframes.round_number(2, 755500)
    lg.links[1].on_record({"clock": "t2", "session": "b2", "event": "round", "round": 2,
                           "elapsed_ms": 755500, "t_ms": 1600})
    n = len(lg.ports[1].sent)
    now[0] += 10
    rc.service()
    assert len(lg.ports[1].sent) == n
    # t3 started its round with its own START button: it refuses the number; not asked again
    lg.links[2].current = Session("c", "t3", "scrabble")
    rc.service()
    lg.links[2].on_record({"clock": "t3", "session": "c", "event": "refused", "what": "round",
                           "reason": "round_started", "player": None, "t_ms": 10})
    n = len(lg.ports[2].sent)
    for _ in range(8):
        now[0] += roundctl.RETRY_S + 0.01
        rc.service()
    assert len(lg.ports[2].sent) == n
    assert rc.missing() == ["t3"]
    # the console's link status: which clock is on which port, and its state
    lg.ports[1].state = "lost"
    now[0] += roundctl.LINKS_EVERY_S + 0.1
    rc.service()
    with open(log[:-6] + ".links.json") as f:
        status = json.load(f)
    assert status["clocks"]["t2"] == {"port": "/dev/fake1", "state": "lost"}
    assert status["clocks"]["t1"]["state"] == "connected" and status["round"] == 2


def test_a_port_heard_only_after_the_start_is_told_then():
    now = [0.0]
    lg = _FakeLogger(1)
    rc = roundctl.RoundControl(lg, 5, clock=lambda: now[0])
    rc.start()
    assert lg.ports[0].sent == []  # no clock heard there: nothing left waiting in the line
    assert "no clock heard yet on /dev/fake0" in rc.log[-1]
    now[0] = 12.5
    lg.links[0].current = Session("a", "t1", "scrabble")
    rc.service()
    assert lg.ports[0].sent == [hostframes.round_number(5, 12500)]
    for _ in range(20):
        now[0] += roundctl.RETRY_S + 0.01
        rc.service()
    assert len(lg.ports[0].sent) == roundctl.TRIES
    assert rc.missing() == ["t1"]


def test_a_restarted_logger_does_not_send_start_to_a_clock_that_took_it():
    """A logger restarted on the round's log (the documented recovery) hears
    a clock's records of round 2, resent before its hello is seen as a
    session: START is not sent to it again (it would log a refusal,
    round_started); a clock of the log without the round is told."""
    now = [0.0]
    lg = _FakeLogger(2)
    rc = roundctl.RoundControl(lg, 2, clock=lambda: now[0])
    took = Session("a", "t1", "scrabble")
    took.round = 2  # read back from the log (LogWriter.rounds)
    lg.links[0].current = took
    lg.links[0].on_record({"clock": "t1", "session": "a", "event": "press", "player": "A",
                           "move": 4, "used_ms": 5000, "t_ms": 90000, "round": 2})
    lg.links[1].current = Session("b", "t2", "scrabble")
    lg.links[1].on_record({"clock": "t2", "session": "b", "event": "boot", "t_ms": 0})
    rc.start()
    assert lg.ports[0].sent == []
    assert lg.ports[1].sent == [hostframes.round_number(2, 0)]
    for _ in range(8):
        now[0] += roundctl.RETRY_S + 0.01
        rc.service()
    assert lg.ports[0].sent == [] and rc.missing() == ["t2"]


def test_a_restarted_logger_knows_from_the_log_when_the_round_started(tmp_path):
    """round start run again on round 4's log (its logger died 754 s into the
    round): START is sent to no clock (t1 took it: it would only log a
    refusal), and t2, rebooted meanwhile (a session without the round), is
    told the round started 754 s ago, not now."""
    t0 = 1800000000.0
    log = tmp_path / "round4.jsonl"
    rows = [{"clock": "t1", "seq": 1, "t_ms": 0, "event": "boot", "mode": "scrabble"},
            {"clock": "t1", "seq": 2, "t_ms": 900, "event": "round", "round": 4,
             "elapsed_ms": 0}]
    log.write_text("".join(json.dumps(dict(r, session="a", host_time=_iso(t0 + 1))) + "\n"
                           for r in rows), encoding="utf-8")
    now = [50.0]
    lg = _FakeLogger(2)
    rc = roundctl.RoundControl(lg, 4, log_path=str(log), clock=lambda: now[0],
                               wall=lambda: t0 + 755.0)
    lg.links[0].current = Session("a", "t1", "scrabble")
    lg.links[0].current.round = 4
    lg.links[1].current = Session("c", "t2", "scrabble")  # rebooted: no round yet
    assert rc.start() is False  # the round has started: the console's START is refused
    assert "round 4: started at" in rc.log[0] and "START is not sent again" in rc.log[0]
    rc.service()
    assert lg.ports[0].sent == []
    assert lg.ports[1].sent == [hostframes.round_number(4, 754000)]


def test_a_clock_whose_game_is_being_given_back_is_not_told_the_round_meanwhile():
    """A rebooted clock the host is restoring (its snapshot holds the round) is
    not sent the late round frame too (it would log a refusal, round_started);
    once the restore is taken or given up, a session still without the round
    is told."""
    now = [0.0]
    lg = _FakeLogger(1)
    rc = roundctl.RoundControl(lg, 2, clock=lambda: now[0])
    rc.start()
    s = Session("b", "t1", "scrabble")
    s.restore = b"S ...\n"  # hostlink: sent again until the clock takes it
    lg.links[0].sessions = {"b": s}
    lg.links[0].current = s
    now[0] = 30.0
    rc.service()
    assert lg.ports[0].sent == []
    s.restore = None  # taken (its resume stored): the round follows it in the log
    rc.service()
    assert lg.ports[0].sent == []
    lg.links[0].on_record({"clock": "t1", "session": "b", "event": "round", "round": 2,
                           "elapsed_ms": 30000, "t_ms": 5})
    now[0] += roundctl.RETRY_S + 0.01
    rc.service()
    assert lg.ports[0].sent == []
    # a backgammon clock's game holds no round (only logged): told at once
    lg2 = _FakeLogger(1)
    rc2 = roundctl.RoundControl(lg2, 2, clock=lambda: now[0])
    rc2.start()
    bg = Session("d", "t9", "backgammon")
    bg.restore = b"S ...\n"
    lg2.links[0].sessions = {"d": bg}
    lg2.links[0].current = bg
    rc2.service()
    assert len(lg2.ports[0].sent) == 1
    # another reboot whose restore is given up (RESTORE_TRIES): a fresh game, told
    s2 = Session("c", "t1", "scrabble")
    s2.restore = b"S ...\n"
    lg.links[0].sessions["c"] = s2
    lg.links[0].current = s2
    rc.service()
    s2.restore = None
    rc.service()
    assert lg.ports[0].sent == []
    now[0] += roundctl.RETRY_S + 0.01
    rc.service()
    assert lg.ports[0].sent == [hostframes.round_number(2, int((now[0]) * 1000))]


def _iso(epoch):
    from datetime import datetime, timezone
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def test_the_operators_lines_name_the_players(tmp_path):
    """round start --pairings (contract 1.3): a table the command names (a
    late clock, one that never took the round) comes with its players in this
    round, shortened as every view shortens them (views.pairings.short)."""
    from hallclock.views import pairings
    csv = tmp_path / "p.csv"
    csv.write_text("round,table,A,B\n4,1,Jana Marie Nováková-Dvořáková,Petr Dvořák\n"
                   "3,2,Eva Malá,Karel Veselý\n", encoding="utf-8")
    now = [0.0]
    lg = _FakeLogger(2)
    rc = roundctl.RoundControl(lg, 4, clock=lambda: now[0], pairings=pairings.load(str(csv)))
    rc.start()
    now[0] = 30.0
    lg.links[0].current = Session("a", "t1", "scrabble")
    lg.links[1].current = Session("b", "t2", "scrabble")
    rc.service()
    assert "t1 (J. M. Nováková-Dv… vs Petr Dvořák): joined late, told round 4 started " \
           "30.0 s ago" in rc.log
    assert "t2: joined late, told round 4 started 30.0 s ago" in rc.log  # round 3's pair only
    assert rc.pairing_note() == (f"pairings: the players of 1 of 2 clocks heard in round 4; "
                                 f"no names for t2 (add their rows to {csv})")
    assert [rc.table(c) for c in rc.missing()] == [
        "t1 (J. M. Nováková-Dv… vs Petr Dvořák)", "t2"]
    assert roundctl.RoundControl(lg, 4).pairing_note() is None


def test_round_start_refuses_a_bad_pairings_file_before_any_clock(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("table,A,B\n1,Jana,Petr\n1,Eva,Karel\n", encoding="utf-8")
    res = run_cli("round", "start", "--round", "3", "--port", "/dev/null", "--out",
                  "x.jsonl", "--pairings", str(bad), cwd=str(tmp_path))
    assert res.returncode == 2 and not res.stdout
    assert res.stderr == f"hallclock: {bad} line 3: table 1 is paired already on line 2\n"
    assert not (tmp_path / "x.jsonl").exists()


def test_console_actions_reach_the_clocks(tmp_path):
    log = str(tmp_path / "round4.jsonl")
    side = LogWriter(referee_log_of(log))
    side.write({"clock": "referee", "seq": 1, "t_ms": 0, "event": "referee_action",
                "action": "gong", "session": "r1",
                "host_time": "2020-01-01T00:00:00.000Z"})  # an earlier run's: done then
    lg = _FakeLogger(2)
    for i, link in enumerate(lg.links):
        link.current = Session("s%d" % i, "t%d" % i, "scrabble")
    rc = roundctl.RoundControl(lg, 4, log_path=log)
    rc.service()
    assert all(p.sent == [] for p in lg.ports)
    side.write({"clock": "referee", "seq": 2, "t_ms": 5, "event": "referee_action",
                "action": "start", "round": 4, "session": "r1", "host_time": host_time()})
    side.write({"clock": "referee", "seq": 3, "t_ms": 6, "event": "referee_action",
                "action": "gong", "session": "r1", "host_time": host_time()})
    rc.service()
    assert [p.sent for p in lg.ports] == [[hostframes.round_number(4, 0),
                                           hostframes.command(BTN_GONG)]] * 2
    side.write({"clock": "referee", "seq": 4, "t_ms": 7, "event": "referee_action",
                "action": "start", "round": 9, "session": "r1", "host_time": host_time()})
    rc.service()
    assert len(lg.ports[0].sent) == 2 and "round 9" in rc.log[-1]
    side.close()


def test_tag_round_marks_one_game():
    s = Session("a", "t1", "scrabble")
    recs = [{"event": "boot"}, {"event": "round", "round": 3}, {"event": "turn"},
            {"event": "end"}, {"event": "turn"}]
    for r in recs:
        tag_round(s, r)
    assert [r.get("round") for r in recs] == [None, 3, 3, 3, None]


# -- end to end on virtual clocks -------------------------------------------------
SPEED = 20.0
SETS = ["round_min=2", "round_warn_min=1"]


def _device(clock, text, sid, fds):
    master, slave, path = pty_pair()
    fds += [master, slave]
    runner = make_runner("scrabble", parse("scrabble", SETS),
                         [a.as_tuple() for a in parse_text(text)], clock=clock, sid=sid)
    return runner, master, path


def test_round_on_virtual_clocks_with_a_reboot_and_a_late_clock(tmp_path):
    """Three clocks at 20x: t1 plays from the start, t2 reboots 40 s into the
    round, t3 is plugged in late.  The host's clock runs at the devices' rate,
    so the elapsed time it gives is in their time."""
    out = tmp_path / "round2.jsonl"
    fds, threads = [], []
    specs = [("t1", "1000 press B\n5000 press A\n150000 end\n", "f0000001"),
             ("t2", "40000 reboot\n150000 end\n", "f0000002"),
             ("t3", "110000 end\n", "f0000003")]
    devs = [_device(c, s, sid, fds) for c, s, sid in specs]
    logger = Logger([d[2] for d in devs], str(out))
    logger.open()
    t0 = virtual.mark()
    rc = roundctl.RoundControl(logger, 2, log_path=str(out),
                               clock=lambda: virtual.since(t0) / 1000.0 * SPEED)
    try:
        for runner, master, _path in devs[:2]:
            th = virtual.DeviceThread(runner, master, virtual.RealPace(t0, SPEED))
            th.start()
            threads.append(th)
        while len(rc.live()) < 2:  # t1 and t2 heard (t3 is not there yet)
            rc.wait_heard(logger, 0.1)
        rc.start()
        late = []

        def step():
            if not late and rc.elapsed_ms() > 30000:  # t3 plugged in 30 s into the round
                th = virtual.DeviceThread(devs[2][0], devs[2][1], virtual.RealPace(virtual.mark(), SPEED))
                th.start()
                threads.append(th)
                late.append(th)

        assert roundctl.run_round(logger, rc, exit_on_end=True, on_poll=step, max_s=60)
    finally:
        for th in threads:
            th.halt = True
        for fd in fds:
            os.close(fd)
    recs = read_log(out)
    sessions = {}
    for r in recs:
        sessions.setdefault((r["clock"], r["session"]), []).append(r)
    assert len(sessions) == 4  # t2 twice
    for (clock, sid), mine in sessions.items():
        rounds = [r for r in mine if r["event"] == "round"]
        assert len(rounds) == 1 and rounds[0]["round"] == 2, (clock, mine)
        i = mine.index(rounds[0])
        # from the round event on, every record of the game carries the round
        assert all(r.get("round") == 2 for r in mine[i:] if r["event"] != "power_loss")
        assert all("round" not in r for r in mine[:i])
        start_at = rounds[0]["t_ms"] - rounds[0]["elapsed_ms"]  # the round's START, its time
        gongs = {r["kind"]: r["t_ms"] for r in mine if r["event"] == "gong"}
        if rounds[0]["elapsed_ms"] == 0:
            assert gongs.get("start") == rounds[0]["t_ms"]
        else:
            assert "start" not in gongs  # a late clock gives no start gong
        if "end" in gongs or mine[-1]["event"] == "end":
            assert gongs["end"] == start_at + 120000  # the hall's end of basic time
    t1 = sessions[("t1", "f0000001")]
    assert next(r for r in t1 if r["event"] == "round")["elapsed_ms"] == 0
    t2_new = [k for k in sessions if k[0] == "t2" and k[1] != "f0000002"]
    assert len(t2_new) == 1
    late_t2 = next(r for r in sessions[t2_new[0]] if r["event"] == "round")
    late_t3 = next(r for r in sessions[("t3", "f0000003")] if r["event"] == "round")
    assert late_t2["elapsed_ms"] > 0 and late_t3["elapsed_ms"] >= 30000
    assert any(r["event"] == "power_loss" for r in recs)
    assert rc.missing() == []


def test_a_logger_restarted_after_a_table_ended_exits_at_the_round_s_end(tmp_path):
    """The logger dies mid-round after t1 has ended (its clock, every event
    stored, says nothing more) and is started again on the same log: with
    --exit-on-end it ends once t2 ends (t1's end is in the log), and it sends
    START to neither clock again (no refusal of the round in the log)."""
    out = tmp_path / "round3.jsonl"
    fds, threads = [], []
    specs = [("t1", "1000 press B\n3000 press A\n6000 end\n", "f0000011"),
             ("t2", "1000 press B\n5000 press A\n60000 press B\n90000 end\n", "f0000012")]
    devs = [_device(c, s, sid, fds) for c, s, sid in specs]
    t0 = virtual.mark()
    try:
        for runner, master, _path in devs:
            th = virtual.DeviceThread(runner, master, virtual.RealPace(t0, SPEED))
            th.start()
            threads.append(th)
        logger = Logger([d[2] for d in devs], str(out))
        logger.open()
        rc = roundctl.RoundControl(logger, 3, log_path=str(out))
        while len(rc.live()) < 2:
            rc.wait_heard(logger, 0.1)
        rc.start()
        # t1 ended and has every ack (its clock is quiet): the logger is killed
        assert not roundctl.run_round(logger, rc, stop=lambda: not threads[0].is_alive(),
                                      max_s=30)
        assert not threads[0].is_alive() and threads[1].is_alive()
        logger = Logger([d[2] for d in devs], str(out))  # the same --out
        logger.open()
        rc = roundctl.RoundControl(logger, 3, log_path=str(out))
        rc.wait_heard(logger)
        rc.start()  # round start without --wait: the referee's command given again
        assert roundctl.run_round(logger, rc, exit_on_end=True, max_s=30)
        assert not threads[1].is_alive()
    finally:
        for th in threads:
            th.halt = True
        for fd in fds:
            os.close(fd)
    recs = read_log(out)
    assert [r["event"] for r in recs if r["event"] in ("round", "refused")] == ["round"] * 2
    assert [r["clock"] for r in recs if r["event"] == "end"] == ["t1", "t2"]


def test_round_start_command_on_ports(tmp_path):
    """``hallclock round start`` as a user runs it: two clocks on ptys."""
    import subprocess
    import sys
    fds, threads = [], []
    out = tmp_path / "round1.jsonl"
    devs = [_device("t%d" % i, "2000 press B\n4000 press A\n8000 end\n", "f100000%d" % i, fds)
            for i in (1, 2)]
    exe = os.path.join(os.path.dirname(sys.executable), "hallclock")
    pairs = tmp_path / "pairings.csv"  # t1's players only (contract 1.3, names)
    pairs.write_text("table,A,B\nt1,Jana Marie Nováková-Dvořáková,Petr Dvořák\n",
                     encoding="utf-8")
    args = [exe, "round", "start", "--round", "1", "--out", str(out), "--exit-on-end",
            "--pairings", str(pairs)]
    for d in devs:
        args += ["--port", d[2]]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = virtual.mark()
        for runner, master, _p in devs:
            th = virtual.DeviceThread(runner, master, virtual.RealPace(t0, 2.0))
            th.start()
            threads.append(th)
        stdout, stderr = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for th in threads:
            th.halt = True
        for fd in fds:
            os.close(fd)
    assert proc.returncode == 0, stderr
    assert "round 1: START sent to 2 clocks" in stdout
    # the referee learns before the round which tables the pairings leave without names
    assert (f"pairings: the players of 1 of 2 clocks heard in round 1; no names for t2 "
            f"(add their rows to {pairs})") in stdout
    recs = read_log(out)
    for clock in ("t1", "t2"):
        mine = [r for r in recs if r["clock"] == clock]
        names = [r["event"] for r in mine]
        assert "round" in names and names[-1] == "end"
        assert all(r.get("round") == 1 for r in mine[names.index("round"):])


def test_virtual_clocks_never_replace_a_ports_file(tmp_path, script):
    ports = tmp_path / "ports.txt"
    ports.write_text("/dev/ttyUSB0\n")
    res = run_cli("virtual-clocks", "--tables", "2", "--script", script("100 end\n"),
                  "--ports-file", str(ports))
    assert res.returncode == 2 and "--force" in res.stderr
    assert ports.read_text() == "/dev/ttyUSB0\n"


@pytest.mark.parametrize("args, words", [
    (["--round", "0", "--port", "/dev/null", "--out", "x.jsonl"], "1 to 999"),
    (["--round", "3", "--out", "x.jsonl"], "--port"),
    (["--round", "3", "--port", "/dev/null"], "--out"),
])
def test_round_start_bad_input(tmp_path, args, words):
    res = run_cli("round", "start", *args, cwd=str(tmp_path))
    assert res.returncode == 2 and words in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def _tour_lines():
    """The README's virtual round: the code block after its introduction."""
    from conftest import ROOT
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    start = text.index("A virtual round of eight tables")
    block = text[text.index("```\n", start) + 4:]
    block = block[:block.index("```")]
    return [ln.strip() for ln in block.splitlines() if ln.strip()]


def test_readme_round_tour(tmp_path):
    """The README's round of eight virtual tables, command by command, as a
    newcomer types it (in a fresh folder beside the repository's samples)."""
    import shlex

    from conftest import ROOT
    os.symlink(os.path.join(ROOT, "host"), tmp_path / "host")
    lines = _tour_lines()
    assert [shlex.split(ln)[1] for ln in lines] == ["virtual-clocks", "configure", "round",
                                                   "report"]
    results = []
    for ln in lines:
        argv = shlex.split(ln)
        assert argv[0] == "hallclock"
        res = run_cli(*argv[1:], cwd=str(tmp_path), timeout=90)
        assert res.returncode == 0, (ln, res.stdout, res.stderr)
        results.append(res)
    configure, report = results[1].stdout, results[3].stdout
    assert configure.count(": taken") == 8 and "8 clocks took the settings" in configure
    assert "round 3: START sent to 8 clocks" in results[2].stdout
    assert "Round 3: 8 tables of scrabble" in report
    assert "Still playing at the end gong (ČAS 16.3): 8 games" in report
    assert "24 gongs given by the clocks" in results[2].stdout  # three each (ČAS 4.1, 6.1)
    recs = read_log(tmp_path / "round3.jsonl")
    assert len({r["clock"] for r in recs}) == 8
    for clock in {r["clock"] for r in recs}:
        mine = [r for r in recs if r["clock"] == clock and r["event"] != "health"]
        names = [r["event"] for r in mine]  # (its health reports are the clock's own)
        # the settings taken before the round, the round's records tagged
        assert names.index("settings") < names.index("round") and names[-1] == "end"
        assert all(r.get("round") == 3 for r in mine[names.index("round"):])
        assert mine[names.index("settings")]["settings"]["round_min"] == 10
    assert (tmp_path / "round3.csv").exists() and (tmp_path / "round3.png").exists()


def test_round_start_over_the_broker(tmp_path):
    """``round start --broker``: the round's N reaches each clock on its own
    topic and the round's log is tagged, as over serial ports."""
    import subprocess
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from mqttrig import HALL, HALLCLOCK, Hall, wait_for

    from hallclock.net import mqtt as mqtthost

    h = Hall(tmp_path, clocks=("t1", "t2"))
    out = tmp_path / "round6.jsonl"
    proc = None
    try:
        t0 = virtual.mark()
        devices = []
        for clock in h.clocks:
            runner = make_runner("scrabble", parse("scrabble", SETS),
                                 [a.as_tuple() for a in parse_text(
                                     "3000 press B\n5000 press A\n9000 end\n")],
                                 clock=clock, sid="0000bb0" + clock[1])
            net = mqtthost.device_link(h.address, HALL, clock, h.creds[clock])
            d = virtual.DeviceThread(runner, net, virtual.RealPace(t0, 2.0), silence_s=20)
            d.start()
            devices.append(d)
            h.devices.append(d)
        wait_for(lambda: all(d.line.connected() for d in devices), 60, "clocks on the broker")
        proc = subprocess.run(HALLCLOCK + ["round", "start", "--round", "6", "--broker",
                                           f"127.0.0.1:{h.port}", "--hall", HALL,
                                           "--credentials", h.cred_file, "--out", str(out),
                                           "--exit-on-end"],
                              capture_output=True, text=True, timeout=60)
    finally:
        h.close()
    assert proc.returncode == 0, proc.stderr
    assert "round 6: START sent to 2 clocks" in proc.stdout
    recs = read_log(out)
    for clock in h.clocks:
        mine = [r for r in recs if r["clock"] == clock]
        names = [r["event"] for r in mine]
        assert "round" in names and names[-1] == "end"
        assert mine[names.index("round")]["elapsed_ms"] == 0
        assert all(r.get("round") == 6 for r in mine[names.index("round"):])


def test_a_clock_that_drops_out_is_lost_on_the_console(tmp_path):
    """A clock's cable pulled mid-round (its pty closed): ``round start``
    marks its link lost in the status file, and the console's grid shows it
    lost with the time it was last heard; the other clock stays connected."""
    from hallclock.hall import referee as refconsole
    out = tmp_path / "round8.jsonl"
    fds, threads = [], []
    devs = [_device(c, "60000 end\n", sid, fds) for c, sid in (("t1", "f8000001"),
                                                               ("t2", "f8000002"))]
    logger = Logger([d[2] for d in devs], str(out))
    logger.open()
    rc = roundctl.RoundControl(logger, 8, log_path=str(out))
    t0 = virtual.mark()
    try:
        for runner, master, _p in devs:
            th = virtual.DeviceThread(runner, master, virtual.RealPace(t0, 5.0))
            th.start()
            threads.append(th)
        rc.wait_heard(logger, 5.0)
        rc.start()
        tail = refconsole.RoundTail(str(out))

        def rows():
            return {t["clock"]: t for t in refconsole.grid(tail, time.time())["tables"]}

        def until(cond):
            limit = time.monotonic() + 20
            while not cond():
                assert time.monotonic() < limit
                logger.poll(0.02)
                rc.service()

        until(lambda: {c: r["round"] for c, r in rows().items()} == {"t1": 8, "t2": 8})
        assert not any(r["lost"] for r in rows().values())
        threads[1].halt = True  # t2's cable is pulled: its line goes away
        threads[1].join(5)
        for fd in fds[2:4]:
            os.close(fd)
        until(lambda: rows()["t2"]["lost"])
        assert rows()["t2"]["last_heard"] and rows()["t2"]["status"] == "lost"
        assert not rows()["t1"]["lost"]
    finally:
        for th in threads:
            th.halt = True
        logger.close()
        for fd in fds[:2]:
            os.close(fd)


def test_round_start_wait_on_a_started_round_s_log_says_it_goes_on(tmp_path):
    """round start --wait started again on the log of a round that has begun
    (the laptop restarted mid-round): it says when the round started and does
    not wait for a START the console would refuse."""
    log = tmp_path / "round6.jsonl"
    rec = {"clock": "t1", "seq": 1, "t_ms": 900, "event": "round", "round": 6,
           "elapsed_ms": 0, "session": "a", "host_time": _iso(time.time() - 30)}
    log.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    fds = []
    master, slave, path = pty_pair()
    fds += [master, slave]
    try:
        res = run_cli("round", "start", "--round", "6", "--port", path, "--out", str(log),
                      "--wait", "--max-s", "0.5")
    finally:
        for fd in fds:
            os.close(fd)
    assert res.returncode == 0, res.stderr
    assert "round 6: started at " in res.stdout and "START is not sent again" in res.stdout
    assert "waiting for START round" not in res.stdout
