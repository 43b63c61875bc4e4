"""One time base, simulated or real (docs/hall.md "Simulated time"): a round
of virtual clocks run 40 times faster than the host's clock, read at several
checkpoints of its log by every view -- the projector (display.face), the
console's grid and detail (referee.grid/detail) and the report
(figures/report) -- which must give the same time of day for the same event,
the session's simulated one; gongs due must not move as the host's time
passes; each screen says it is a simulation."""
from datetime import datetime

import pytest

from hallclock.hall import display, referee, relay
from hallclock.link.logfile import read_records
from hallclock.views import figures, report
from hallclock.views.model import Clocks, epoch_of, typical_pace

from hallclock_fw.settings import parse
from sessiononce import once_dir

SPEED = 40
TABLES = 2


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory):
    """A 5-minute Scrabble round (1-min warning gong) of the hall unit and two
    tables, each with a pause, at --speed 40."""
    hall = [(0, "press", "START"), (400000, "end", None)]
    table = [(1000, "press", "B"), (61000, "press", "A"), (100000, "press", "PAUSE"),
             (130000, "press", "B"), (200000, "press", "A"), (330000, "press", "B"),
             (400000, "end", None)]

    def make(folder):  # once per run, read by every worker (tests/sessiononce.py)
        relay.simulate_hall(hall, [table] * TABLES, "scrabble",
                            parse("scrabble", ["round_min=5", "round_warn_min=1"]),
                            str(folder / "hall.jsonl"), speed=SPEED)
    return str(once_dir(tmp_path_factory, "timebase-hall", make) / "hall.jsonl")


def _s(text):
    """'14:02:05' -> seconds of the day."""
    d = datetime.strptime(text, "%H:%M:%S")
    return d.hour * 3600 + d.minute * 60 + d.second


def _near(a, b):
    """Two times of day within a second (each view cuts to the second)."""
    assert a and b, (a, b)
    assert abs(_s(a) - _s(b)) <= 1, (a, b)


class _Prefix:
    """A console's record source: the records of the log up to a checkpoint."""

    def __init__(self, records):
        self.records = records

    def read(self):
        recs, self.records = self.records, []
        return recs, False

    def exists(self):
        return True


def _views(path, records, now):
    clocks = Clocks()
    for rec in records:
        clocks.feed(rec, epoch_of(rec["host_time"]))
    proj = display.face(clocks, None, now, path)
    later = display.face(clocks, None, now + 7.0, path)  # the host's time passes
    tail = referee.RoundTail(path, wall=lambda: now, source=_Prefix(list(records)))
    grid = referee.grid(tail, now)
    games = {(g.clock, g.session): g for g in figures.games_from_records(records)}
    return proj, later, tail, grid, games


def test_every_view_gives_the_simulated_time_of_day(sim_log):
    records = read_records(sim_log)
    assert {r["clock"] for r in records} == {"hall", "table-1", "table-2"}
    start = next(i for i, r in enumerate(records) if r["clock"] == "hall"
                 and r.get("event") == "gong" and r.get("kind") == "start")
    # checkpoints: through the round (once the host has seen its clocks run
    # long enough to tell their pace), and its end
    checks = [records[start + (len(records) - start) * k // 10] for k in (4, 6, 8)]
    checks.append(records[-1])
    compared = {"gongs": 0, "due": 0, "pauses": 0, "moves": 0, "heard": 0}
    for last in checks:
        prefix = records[:records.index(last) + 1]
        now = epoch_of(last["host_time"])
        proj, later, tail, grid, games = _views(sim_log, prefix, now)
        hall = next(g for (c, _s_), g in games.items() if c == "hall")
        pace = typical_pace(g.pace for g in games.values())
        assert pace is not None and pace > SPEED / 3  # the report sees the speed
        # the projector and console say so
        assert f"simulation at {pace:.0f}×" in proj["simulation"]
        assert "simulation at" in grid["simulation"]
        # gongs given: the projector's and the report's, in the same order
        given = sorted(proj["gongs"], key=lambda g: _s(g["at"]))
        rep = [report.time_of_day(g.at) for g in hall.gong_list]
        assert len(given) == len(rep)
        for g, r in zip(given, sorted(rep, key=_s)):
            _near(g["at"], r)
            compared["gongs"] += 1
        # gongs due: at the start gong's simulated time + the round's basic time
        # (warning gong 1 min before), and fixed while the host's time passes
        start_at = hall.gong_list[0].at
        want = {"ten_minutes": report.time_of_day(start_at + 240),
                "end": report.time_of_day(start_at + 300)}
        assert proj["due"] == later["due"], (proj["due"], later["due"])
        for d in proj["due"]:
            _near(d["at"], want[d["kind"]])
            compared["due"] += 1
        # the console: each table's card (last heard) and detail (moves,
        # pauses) against the report's game of that table
        for row in grid["tables"]:
            game = next(g for (c, _s_), g in games.items() if c == row["clock"])
            last_t = max(r["t_ms"] for r in prefix if r["clock"] == row["clock"]
                         and isinstance(r.get("t_ms"), int))
            _near(row["last_heard"], report.time_of_day(game.time_of_day(last_t)))
            compared["heard"] += 1
            det = referee.detail(tail, row["clock"])
            for p, gp in zip(det["pauses"], game.pause_list):
                _near(p["at"], report.time_of_day(gp.at))
                compared["pauses"] += 1
            for m, gm in zip(det["moves"], game.moves):
                if gm.start_at is not None:
                    _near(m["start"], report.time_of_day(gm.start_at))
                    compared["moves"] += 1
    assert all(compared.values()), compared  # every kind of time was compared
    # the round's end gong fell when the projector had said it was due
    final = display.face(_clocks(records), None, epoch_of(records[-1]["host_time"]), sim_log)
    end = [g for g in final["gongs"] if g["kind"] == "end"]
    assert end
    _near(end[0]["at"], report.time_of_day(hall.gong_list[0].at + 300))


def _clocks(records):
    clocks = Clocks()
    for rec in records:
        clocks.feed(rec, epoch_of(rec["host_time"]))
    return clocks


def test_a_late_clock_is_told_the_round_s_age_in_the_clocks_time():
    """Round start's N frame to a late clock (hall/round.py): at --speed 20 the
    round started 20 times as long ago in the clocks' time as in the host's."""
    from types import SimpleNamespace
    from hallclock.hall.round import RoundControl
    host = [0.0]
    control = RoundControl(SimpleNamespace(ports=[], links=[]), 3, clock=lambda: host[0])
    for s in (0.0, 0.5, 1.0, 2.0):  # a table whose clock runs 20x the host's
        host[0] = s
        control._record(0, {"clock": "table-1", "session": "a1", "t_ms": int(s * 20000)})
    control.started_at = 1.0
    assert control.elapsed_ms() == 20000  # 1 s of the host's: 20 s of the clocks'
    real = RoundControl(SimpleNamespace(ports=[], links=[]), 3, clock=lambda: host[0])
    for s in (0.0, 1.0, 2.0):
        host[0] = s
        real._record(0, {"clock": "table-1", "session": "b1", "t_ms": int(s * 1000)})
    real.started_at = 1.0
    assert real.elapsed_ms() == 1000  # a real clock: the host's own time
