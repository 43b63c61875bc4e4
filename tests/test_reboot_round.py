"""A clock that reboots mid-round loses nothing (docs/hall.md "When a clock
reboots"): ``round start`` and ``hall`` send the game back by default
(``--restore``; ``--no-restore`` for a referee who wants to look first), so
the rebooted clock goes on at its move number with the hall's round (ČAS
4.1, 6.1)."""
import json
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import read_log, run_cli
from hallclock.hall import display, referee
from hallclock.views import figures
from hallclock.views.liveview import row_cells
from hallclock.views.model import Clocks, epoch_of
from hallclock.link.transport import pty_pair
from hallclock.scenario import parse_text
from hallclock.vboard import device as virtual
from hallclock.vboard.device import make_runner
from hallclock_fw.settings import parse

SPEED = 8.0  # the hall's time: real time x 8 (the holds below keep the host in step)
SETS = ["move_s=30", "warn_s=20,10", "round_min=2", "round_warn_min=1"]
# t1 reboots in the middle of A's third move (B, A, B pressed before it)
# (the clocks wait for the logger: a clock no host heard yet runs at real time)
T1 = ("20000 press B\n23000 press A\n26000 press B\n28000 reboot\n40000 press A\n"
      "50000 end\n")
T2 = "20000 press B\n23000 press A\n50000 end\n"


def _reboots(text):
    """The scenario times (device ms) of a script's reboots."""
    return [a.as_tuple()[0] for a in parse_text(text) if a.as_tuple()[1] == "reboot"]


def _logged(path):
    """The complete records the round's log holds so far (another process writes it)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    return [json.loads(ln) for ln in text.split("\n")[:-1] if ln.strip()]


def _ready(recs, hold):
    """Whether the host has done what the hall's time waits for at ``hold``:
    ("start",) the round's START reached both clocks; ("reboot", k) the host
    has heard t1's k-th reboot and, restoring, the clock took its game back."""
    if hold[0] == "start":
        return {r["clock"] for r in recs if r["event"] == "round"} == {"t1", "t2"}
    losses = [r for r in recs if r["clock"] == "t1" and r["event"] == "power_loss"]
    if len(losses) < hold[1]:
        return False
    loss = losses[hold[1] - 1]
    if "restore" not in loss:
        return True
    return any(r["clock"] == "t1" and r["session"] == loss["next_session"]
               and r["event"] == "resume" for r in recs)


def _round(tmp_path, *flags, t1=T1, sets=SETS):
    """The round on two virtual clocks under ``round start``.  The hall's time
    (real time x SPEED, shared by both clocks) stands still just after the boot
    until the round's START reached both clocks, and just after each of t1's
    reboots until the host has handled it: a loaded machine that is slow to
    start the host or to answer a reboot delays the game, never reorders it."""
    from hallclock.hall.rehearsal import Gate, GatedPace
    fds, threads = [], []
    out = tmp_path / "round1.jsonl"
    devs = []
    for clock, text, sid in (("t1", t1, "f1000001"), ("t2", T2, "f1000002")):
        master, slave, path = pty_pair()
        fds += [master, slave]
        runner = make_runner("scrabble", parse("scrabble", sets),
                             [a.as_tuple() for a in parse_text(text)], clock=clock, sid=sid)
        devs.append((runner, master, path))
    holds = [(1, ("start",))] + [(ms + 1, ("reboot", k + 1))
                                 for k, ms in enumerate(_reboots(t1))]
    gate = Gate(SPEED, [ms for ms, _why in holds])
    waits = [why for _ms, why in holds]
    exe = os.path.join(os.path.dirname(sys.executable), "hallclock")
    args = [exe, "round", "start", "--round", "1", "--out", str(out), "--exit-on-end", *flags]
    for d in devs:
        args += ["--port", d[2]]
    err_path = tmp_path / "round.stderr"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, text=True)
    try:
        for runner, master, _p in devs:
            th = virtual.DeviceThread(runner, master, GatedPace(gate))
            th.start()
            threads.append(th)
        end = time.monotonic() + 120
        while proc.poll() is None:
            if waits and _ready(_logged(out), waits[0]):
                gate.release()
                waits.pop(0)
            assert time.monotonic() < end, f"the round did not end; waiting for {waits[:1]}"
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for th in threads:
            th.halt = True
        for fd in fds:
            os.close(fd)
    stderr = err_path.read_text()
    assert proc.returncode == 0, stderr
    assert not waits, waits  # every hold was released by what it waited for
    return read_log(out)


WORDS = r"t1 lost power at \d\d:\d\d:\d\d, back at \d\d:\d\d:\d\d, "


def _views(tmp_path, recs):
    """What the live view's row, the console's card, the projector and the
    round's report say of t1 (the console's card and the live view share the
    ClockModel's words: hallclock.hall.referee._row puts them on the card)."""
    clocks = Clocks()
    for r in recs:
        clocks.feed(r, epoch_of(r.get("host_time")))
    c = clocks.get("t1")
    said = c.reboot_text()
    row = row_cells(c, c.face(None))
    now = epoch_of(recs[-1]["host_time"])
    projector = display.face(clocks, None, now)
    card = next(t for t in referee.grid(referee.RoundTail(str(tmp_path / "round1.jsonl")),
                                        now)["tables"] if t["clock"] == "t1")
    assert card["reboot"] == said  # the console's card
    # at 80 columns (a referee's terminal): the reboots counted on a line under the table
    old_columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        res = run_cli("report", "--round", "1", str(tmp_path / "round1.jsonl"))
    finally:
        if old_columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old_columns
    assert res.returncode == 0, res.stderr
    return said, row["state"][0][0], projector["reboots"], res.stdout


def _cells(report, table):
    """The cells of ``table``'s row in the round's table (reboots, finished last)."""
    row = next(ln for ln in report.splitlines() if ln.strip("│ ").startswith(table + " "))
    got = re.search(r"(yes|no|session ended)\W*$", row)
    assert got is not None, report
    # at 80 columns the count is a line under the table (at 160 a column)
    count = re.search(r"reboots: .*\b%s (\d+)" % table, report)
    return [count.group(1) if count else "0", got.group(1)]


def _in_order(recs):
    """ČAS 4.1: one anchoring: no move of t1's new session before one of its old."""
    games = [g for g in figures.games_from_records(recs) if g.clock == "t1"]
    old, new = games
    assert old.power_loss and old.next_game is new
    last_old = max(t for m in old.moves for t in (m.start_at, m.end_at) if t is not None)
    times = [new.time_of_day(0)]  # its boot, and every move's start and end
    times += [t for m in new.moves for t in (m.start_at, m.end_at) if t is not None]
    assert min(times) >= last_old, (last_old, times)
    return old


def test_round_start_restores_a_clock_rebooted_mid_move_by_default(tmp_path):
    recs = _round(tmp_path)
    t1 = [r for r in recs if r["clock"] == "t1"]
    loss = next(r for r in t1 if r["event"] == "power_loss")
    assert "restore" in loss  # the game was sent back without anybody asking
    new = [r for r in t1 if r["session"] == loss["next_session"]]
    resume = next(r for r in new if r["event"] == "resume")
    assert resume["player"] == "A" and resume["move"] == 3  # A's third move goes on
    old = next(r for r in t1 if r["event"] == "round" and r["session"] == loss["session"])
    rnd = next(r for r in new if r["event"] == "round")
    # the hall's round: it ran on through the outage (4.1: the host adds the
    # outage as its wall clock measured it; these clocks run at SPEED), its gongs
    # at the hall's times (6.1)
    last = [r for r in t1 if r["session"] == loss["session"]][-2]
    assert rnd["round"] == 1
    assert rnd["elapsed_ms"] > last["t_ms"] - (old["t_ms"] - old["elapsed_ms"])
    assert loss["t_ms"] >= 26000  # its last record: B's press
    moves = [r["move"] for r in new if r["event"] == "press"]
    assert moves and moves[0] == 3  # not move 1 again
    # every view names it, in words, with the time of day of one anchoring
    said, row, projector, report = _views(tmp_path, recs)
    assert re.fullmatch(WORDS + "game restored", said), said
    assert said.endswith(row) and row.startswith("lost power at")
    assert projector == [said]
    assert said in report.replace("\n  ", " "), [ln for ln in report.splitlines() if "lost" in ln]
    assert _cells(report, "t1")[-2:] == ["1", "yes"]  # counted; the game went on to its end
    assert _cells(report, "t2")[-2:] == ["0", "yes"]
    _in_order(recs)


def test_no_restore_leaves_the_rebooted_clock_fresh(tmp_path):
    recs = _round(tmp_path, "--no-restore")
    t1 = [r for r in recs if r["clock"] == "t1"]
    loss = next(r for r in t1 if r["event"] == "power_loss")
    assert "restore" not in loss
    new = [r for r in t1 if r["session"] == loss["next_session"]]
    assert "resume" not in [r["event"] for r in new]
    said, row, projector, report = _views(tmp_path, recs)
    assert re.fullmatch(WORDS + "not restored: players carry on from move 1", said), said
    assert projector == [said] and said.endswith(row)
    assert _cells(report, "t1")[-2:] == ["1", "no"]  # not "finished yes"
    _in_order(recs)


def _sessions(recs, clock="t1"):
    """[(power_loss or None, records)] of ``clock``'s sessions, in order."""
    mine = [r for r in recs if r["clock"] == clock]
    out, start = [], 0
    for i, r in enumerate(mine):
        if r["event"] == "power_loss":
            out.append((r, mine[start:i]))
            start = i + 1
    out.append((None, mine[start:]))
    return out


def test_a_clock_rebooted_mid_pause_comes_back_paused(tmp_path):
    """A's move 3 stopped (a challenge), then the power went: the game comes
    back stopped at move 3, and B's press restarts A's time with a fresh limit
    (ČAS 9.1, 10.1), not move 1."""
    recs = _round(tmp_path, t1="20000 press B\n23000 press A\n26000 press B\n"
                  "27000 press PAUSE\n28000 reboot\n40000 press B\n45000 press A\n50000 end\n")
    (loss, old), (_none, new) = _sessions(recs)
    assert old[-1]["event"] == "pause" and "restore" in loss
    events = [(r["event"], r.get("player"), r.get("move")) for r in new if r["event"] != "health"]
    assert events[1:3] == [("resume", "A", 3), ("pause", "A", 3)]  # restored, still stopped
    resume = next(r for r in new[4:] if r["event"] == "resume")
    assert (resume["player"], resume["move"], resume["limit_ms"]) == ("A", 3, 30000)
    press = next(r for r in new if r["event"] == "press")
    assert (press["player"], press["move"]) == ("A", 3)
    said = _views(tmp_path, recs)[0]
    assert re.fullmatch(WORDS + "game restored", said), said
    _in_order(recs)


def test_two_reboots_in_a_row_are_both_restored_and_counted(tmp_path):
    recs = _round(tmp_path, t1="20000 press B\n23000 press A\n26000 press B\n28000 reboot\n"
                  "31000 reboot\n40000 press A\n50000 end\n")
    sessions = _sessions(recs)
    assert len(sessions) == 3 and all("restore" in loss for loss, _r in sessions[:2])
    last = sessions[-1][1]
    assert next(r for r in last if r["event"] == "resume")["move"] == 3
    press = next(r for r in last if r["event"] == "press")
    assert (press["player"], press["move"]) == ("A", 3)
    report = _views(tmp_path, recs)[3]
    assert _cells(report, "t1")[-2:] == ["2", "yes"]


def test_a_clock_rebooted_in_the_play_out_keeps_its_step(tmp_path):
    """The end gong fell in B's move 4 (ČAS 16.3 (a)), then the power went:
    the game comes back in play-out step (a) at move 4, the end gong is not
    given again, and B's press starts (b) with move 5."""
    # the end gong falls 120 s after the round's START reached t1 (the
    # hall's time stands still at 1 ms until it has, _round): inside B's
    # move 4, from 100 s to the reboot at 135 s (a 60 s limit keeps it running)
    recs = _round(tmp_path, t1="20000 press B\n23000 press A\n26000 press B\n100000 press A\n"
                  "135000 reboot\n145000 press B\n150000 press A\n160000 end\n",
                  sets=["move_s=60"] + SETS[1:])
    (loss, old), (_none, new) = _sessions(recs)
    assert ("end", 4) in [(r.get("kind"), r.get("move")) for r in old if r["event"] == "gong"]
    assert "restore" in loss
    steps = [(r["step"], r["move"]) for r in new if r["event"] == "playout"]
    assert steps[:2] == [("finish_round", 4), ("one_more_move", 5)]
    first_press = next(r for r in new if r["event"] == "press")
    assert first_press["move"] == 4  # not move 1 again
    assert not [r for r in new if r["event"] == "gong"]  # the hall's gongs were given once
    rnd = next(r for r in new if r["event"] == "round")
    assert rnd["elapsed_ms"] >= 120000  # the hall's round ran on: basic time is over
    said = _views(tmp_path, recs)[0]
    assert re.fullmatch(WORDS + "game restored", said), said


@pytest.mark.parametrize("cmd", [["round", "start", "--round", "1", "--out", "x.jsonl"],
                                 ["hall", "--hall-unit-port", "a", "--port", "b", "--out", "x"]])
def test_restore_is_the_referees_default(cmd):
    from hallclock import cli
    p = cli.build_parser()
    assert p.parse_args(cmd).restore is True
    assert p.parse_args(cmd + ["--no-restore"]).restore is False
    assert p.parse_args(["log", "--port", "p", "--out", "x"]).restore is False
