"""The live view of `hallclock log`: a captured terminal (rich Console writing to
a StringIO as if it were a terminal) shows each clock, whose time runs, the
time left, warnings and overtime highlighted, the link state; without a
terminal it prints plain lines.  End to end with a virtual device on a pty."""
import io
import os
import re

from rich.console import Console

from hallclock import cli
from hallclock.views.liveview import LiveView, link_state
from hallclock.link.logger import Logger
from hallclock.scenario import parse_text
from hallclock.link.transport import pty_pair
from hallclock.vboard.device import DeviceThread, make_runner
from hallclock_fw.settings import parse


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def terminal(width=160):
    return Console(file=io.StringIO(), force_terminal=True, width=width, color_system="truecolor",
                   record=True)


def rec(seq, t_ms, event, clock="table-3", **fields):
    r = {"clock": clock, "seq": seq, "t_ms": t_ms, "event": event}
    r.update(fields)
    r["session"] = "00000001"
    return r


def make_logger(tmp_path, n=1):
    """A real Logger on pty ports (nothing at the other end yet)."""
    fds, paths = [], []
    for _ in range(n):
        master, slave, path = pty_pair()
        fds += [master, slave]
        paths.append(path)
    logger = Logger(paths, str(tmp_path / "live.jsonl"))
    logger.open()
    return logger, fds


def close_all(logger, fds):
    logger.close()
    for fd in fds:
        os.close(fd)


def segments_with(console, renderable, text):
    """The styled pieces of the rendered view that contain ``text``."""
    return [s for s in console.render(renderable) if text in s.text]


def feed(view, records, port=0):
    for r in records:
        view.logger.links[port].on_record(r)


BOOT = rec(1, 0, "boot", mode="scrabble",
           settings={"move_s": 120, "warn_s": [30, 20, 10], "round_min": 40, "round_warn_min": 10})
BG_BOOT = rec(1, 0, "boot", clock="bg-7", mode="backgammon",
              settings={"bank_s": 600, "delay": "bronstein", "delay_s": 15})
DUP_BOOT = rec(1, 0, "boot", clock="hall", mode="duplicate",
               settings={"move_s": 180, "announce_s": [120, 60, 30]})


def row_of(text, name):
    """The cells of the last row of clock ``name`` (cells are two spaces apart)."""
    rows = [line for line in text.splitlines() if line.startswith(name + " ")]
    assert rows, text
    return re.split(r"\s{2,}", rows[-1].strip())


def shown(console, view):
    console.print(view.render())
    return console.export_text()


def test_shows_both_displays_whose_time_runs_and_the_move(tmp_path):
    logger, fds = make_logger(tmp_path)
    clock = FakeClock()
    console = terminal()
    view = LiveView(logger, console=console, clock=clock)
    assert view.plain is False  # a terminal: the live table
    try:
        feed(view, [BOOT, rec(2, 0, "gong", kind="start", move=None),
                    rec(3, 2000, "turn", player="A", move=1, limit_ms=120000)])
        clock.t += 30.0  # 30 s of host time since the turn arrived
        cells = row_of(shown(console, view), "table-3")
        # clock, port, link, mode, A's display, B's display, runs, move, state, events, last
        assert cells[2:8] == ["connected", "scrabble", "1:30", "2:00", "A", "1"], cells
        assert cells[-1] == "turn A move 1 limit 2:00"
        # a press and B's turn: B runs with a fresh limit, A's display shows the full limit
        feed(view, [rec(4, 47000, "press", player="A", move=1, used_ms=45000),
                    rec(5, 47000, "turn", player="B", move=2, limit_ms=120000)])
        cells = row_of(shown(console, view), "table-3")
        assert cells[4:8] == ["2:00", "2:00", "B", "2"], cells
    finally:
        close_all(logger, fds)


def test_warnings_and_overtime_are_highlighted(tmp_path):
    logger, fds = make_logger(tmp_path)
    clock = FakeClock()
    console = terminal()
    view = LiveView(logger, console=console, clock=clock)
    try:
        feed(view, [BOOT, rec(2, 1000, "turn", player="A", move=1, limit_ms=120000),
                    rec(3, 91000, "warn", player="A", move=1, left_s=30)])
        clock.t += 5.0
        warned = segments_with(console, view.render(), "0:25")
        assert warned and warned[0].style.color.name == "yellow"
        assert segments_with(console, view.render(), "30s")
        feed(view, [rec(4, 101000, "warn", player="A", move=1, left_s=20),
                    rec(5, 111000, "warn", player="A", move=1, left_s=10)])
        assert "30s 20s 10s" in row_of(shown(console, view), "table-3")[8]
        feed(view, [rec(6, 121000, "expired", player="A", move=1)])
        clock.t += 4.0  # 4 s into the overtime (10.2.6: the clock counts it up)
        over = segments_with(console, view.render(), "-0:04")
        assert over and over[0].style.bgcolor.name == "red" and over[0].style.bold
        assert segments_with(console, view.render(), "OVERTIME")
        assert row_of(shown(console, view), "table-3")[8].startswith("OVERTIME")
        clock.t += 3.0
        assert segments_with(console, view.render(), "-0:07")
    finally:
        close_all(logger, fds)


def test_bronstein_bank_is_the_clocks(tmp_path):
    """Bronstein: the bank runs from the press; 20 s into 10:00 the clock shows 9:40."""
    logger, fds = make_logger(tmp_path)
    clock = FakeClock()
    console = terminal()
    view = LiveView(logger, console=console, clock=clock)
    try:
        feed(view, [BG_BOOT, rec(2, 1000, "turn", clock="bg-7", player="A", move=1,
                                 bank_ms=600000)])
        clock.t += 20.0
        cells = row_of(shown(console, view), "bg-7")
        assert cells[4:8] == ["9:40", "10:00", "A", "1"], cells
    finally:
        close_all(logger, fds)


def test_a_frozen_flag_does_not_count(tmp_path):
    logger, fds = make_logger(tmp_path)
    clock = FakeClock()
    console = terminal()
    view = LiveView(logger, console=console, clock=clock)
    try:
        feed(view, [BG_BOOT, rec(2, 0, "turn", clock="bg-7", player="A", move=1,
                                 bank_ms=600000),
                    rec(3, 600000, "expired", clock="bg-7", player="A", move=1)])
        seen = set()
        for _ in range(3):
            clock.t += 7.0
            text = shown(console, view)
            cells = row_of(text, "bg-7")
            seen.add(tuple(cells[4:6]))
            assert "FLAG" in cells[8] and "A's bank ran out" in cells[8]
            assert "OVERTIME" not in text
        assert seen == {("0:00", "10:00")}  # the flag stands: nothing counts
    finally:
        close_all(logger, fds)


def test_an_ended_session_stands_still(tmp_path):
    logger, fds = make_logger(tmp_path)
    clock = FakeClock()
    console = terminal()
    view = LiveView(logger, console=console, clock=clock)
    try:
        feed(view, [BOOT, rec(2, 1000, "turn", player="A", move=1, limit_ms=120000),
                    rec(3, 31000, "end")])
        rows = set()
        for _ in range(3):
            clock.t += 11.0
            cells = row_of(shown(console, view), "table-3")
            rows.add(tuple(cells[4:7]))
        assert rows == {("1:30", "2:00", "ended")}
        ended = segments_with(console, view.render(), "1:30")
        assert ended and ended[0].style.dim
    finally:
        close_all(logger, fds)


def test_link_states_and_ports_with_nothing_heard(tmp_path):
    logger, fds = make_logger(tmp_path, n=2)
    clock = FakeClock()
    console = terminal(width=200)
    view = LiveView(logger, console=console, clock=clock)
    try:
        # an open port that has heard nothing is not 'connected'
        assert link_state(logger.ports[0], logger.links[0], clock()) == "silent"
        feed(view, [BOOT], port=0)
        text = "".join(s.text for s in console.render(view.render()))
        assert "(no clock)" in text and logger.ports[1].path in text  # port 2: no clock yet
        cells = row_of(shown(console, view), "(no clock)")
        assert cells[1:3] == [logger.ports[1].path, "silent"], cells
        assert row_of(shown(console, view), "table-3")[2] == "connected"
        # the link asked the device to resend a missing event just now
        logger.links[0].sessions["00000001"] = type("S", (), {"asked": clock.t - 0.5})()
        resend = segments_with(console, view.render(), "resending")
        assert resend and resend[0].style.color.name == "yellow"
        logger.ports[0].state = "lost"
        lost = segments_with(console, view.render(), "lost")
        assert lost and lost[0].style.color.name == "red"
    finally:
        close_all(logger, fds)


def many_clocks(view, n):
    """``n`` clocks of every mode, mid-game."""
    for k in range(n):
        name = "table-%d" % (k + 1)
        kind = k % 3
        if kind == 0:
            feed(view, [dict(BOOT, clock=name), rec(2, 0, "gong", clock=name, kind="start",
                                                    move=None),
                        rec(3, 2000, "turn", clock=name, player="A", move=1, limit_ms=120000),
                        rec(4, 92000, "warn", clock=name, player="A", move=1, left_s=30)])
        elif kind == 1:
            feed(view, [dict(BG_BOOT, clock=name), rec(2, 1000, "turn", clock=name,
                                                       player="B", move=1, bank_ms=600000)])
        else:
            feed(view, [dict(DUP_BOOT, clock=name), rec(2, 1000, "dup_start", clock=name,
                                                        move=1, limit_ms=180000)])


def test_fits_80_by_24():
    """At 80x24 every row is whole: no line wider than the screen, no cell
    cut short, the table and its footer inside 24 lines with 12 clocks."""
    import tempfile
    from pathlib import Path
    logger, fds = make_logger(Path(tempfile.mkdtemp()), n=2)
    clock = FakeClock()
    console = Console(file=io.StringIO(), force_terminal=True, width=80, height=24,
                      color_system="truecolor", record=True)
    view = LiveView(logger, console=console, clock=clock)
    try:
        many_clocks(view, 12)
        clock.t += 3.0
        text = shown(console, view)
        lines = text.splitlines()
        assert len(lines) <= 24, text
        assert max(len(line) for line in lines) <= 80
        assert "…" not in text, text
        assert lines[1].split() == ["clock", "link", "A", "B", "runs", "move", "state"]
        assert row_of(text, "table-1")[1:6] == ["connected", "0:27", "2:00", "A", "1"]
        assert "30s round 38:25" in row_of(text, "table-1")[6]
        assert row_of(text, "table-2")[1:6] == ["connected", "10:00", "9:57", "B", "1"]
        assert row_of(text, "table-3")[1:6] == ["connected", "2:57", "2:57", "hall", "1"]
    finally:
        close_all(logger, fds)


def test_thirty_clocks_at_80_by_24_in_natural_order_and_the_rest_counted():
    """More clocks than the screen has rows: the rows in natural order
    (table-2 before table-10), and one line says how many are not shown,
    which, and where to see every table -- none dropped silently."""
    import random
    import tempfile
    from pathlib import Path
    logger, fds = make_logger(Path(tempfile.mkdtemp()), n=1)
    clock = FakeClock()
    console = Console(file=io.StringIO(), force_terminal=True, width=80, height=24,
                      color_system="truecolor", record=True)
    view = LiveView(logger, console=console, clock=clock)
    try:
        names = ["table-%d" % (k + 1) for k in range(30)]
        random.Random(7).shuffle(names)  # heard in any order
        for name in names:
            feed(view, [dict(BOOT, clock=name)])
        text = shown(console, view)
        lines = text.splitlines()
        assert len(lines) <= 24, text
        assert max(len(line) for line in lines) <= 80
        rows = [ln.split()[0] for ln in lines if ln.startswith("table-")]
        assert rows == ["table-%d" % (k + 1) for k in range(len(rows))]
        flat = " ".join(text.split())
        more = flat[flat.index("not shown") - 20:]
        assert f"{30 - len(rows)} more clocks not shown (table-{len(rows) + 1} to table-30)" \
            in more and "hallclock console --log" in more
    finally:
        close_all(logger, fds)


def test_fits_160_columns_with_the_wide_columns():
    import tempfile
    from pathlib import Path
    logger, fds = make_logger(Path(tempfile.mkdtemp()), n=1)
    clock = FakeClock()
    console = Console(file=io.StringIO(), force_terminal=True, width=160, height=50,
                      color_system="truecolor", record=True)
    view = LiveView(logger, console=console, clock=clock)
    try:
        many_clocks(view, 6)
        clock.t += 3.0
        text = shown(console, view)
        lines = text.splitlines()
        assert max(len(line) for line in lines) <= 160
        assert "…" not in text, text
        assert lines[1].split() == ["clock", "port", "link", "mode", "A", "B", "runs", "move",
                                    "state", "events", "last", "event"]
        cells = row_of(text, "table-2")
        assert cells[2:8] == ["connected", "backgammon", "10:00", "9:57", "B", "1"], cells
        assert cells[-1] == "turn B move 1 bank 10:00"
    finally:
        close_all(logger, fds)


def test_plain_lines_when_not_a_terminal(tmp_path):
    logger, fds = make_logger(tmp_path)
    out = io.StringIO()
    view = LiveView(logger, console=Console(file=out), clock=FakeClock(), out=out)
    assert view.plain is True
    try:
        with view:
            feed(view, [BOOT, rec(2, 1000, "turn", player="A", move=1, limit_ms=120000),
                        rec(3, 121000, "expired", player="A", move=1)])
            logger.ports[0].state = "lost"
            view.poll()
        lines = out.getvalue().splitlines()
        assert lines[0].startswith(f"table-3 {logger.ports[0].path} #1 t=0:00.0 boot scrabble")
        assert "turn A move 1 limit 2:00" in lines[1] and "[2:00 left]" in lines[1]
        assert lines[2].endswith("expired A move 1  OVERTIME")
        assert lines[3] == f"link {logger.ports[0].path}: lost"
        assert "\x1b[" not in out.getvalue()  # no terminal codes in a file
    finally:
        close_all(logger, fds)


SCRIPT = """0 press START
2000 press B
49000 press A
# B's move 2 runs over its 2:00 at 169000; the session ends in the overtime
180000 end
"""


def run_device(tmp_path, body):
    """A virtual device on a pty while ``body(port_path)`` runs the host side."""
    actions = parse_text(SCRIPT, "live.txt")
    runner = make_runner("scrabble", parse("scrabble", []), actions, clock="table-9")
    master, slave, path = pty_pair()
    device = DeviceThread(runner, master, silence_s=60)  # a loaded host may pause; halted after the body
    device.start()
    try:
        return body(path)
    finally:
        device.halt = True
        device.join(timeout=10)
        os.close(master)
        os.close(slave)


def test_hallclock_log_prints_plain_lines_off_a_terminal(tmp_path, capsys):
    log = tmp_path / "game.jsonl"
    code = run_device(tmp_path, lambda path: cli.main(
        ["log", "--port", path, "--out", str(log), "--exit-on-end"]))
    assert code == 0
    out = capsys.readouterr().out
    assert "table-9" in out and "turn A move 1" in out
    assert re.search(r"expired B move 2  OVERTIME", out)
    assert out.rstrip().endswith("end")
    assert len(out.strip().splitlines()) == len(log.read_text().splitlines())


def test_live_view_end_to_end_on_a_terminal(tmp_path):
    console = terminal()
    log = tmp_path / "game.jsonl"

    def host(path):
        logger = Logger([path], str(log))
        logger.open()
        with LiveView(logger, console=console) as view:
            assert logger.run(exit_on_end=True, on_poll=view.poll, max_s=60)
        return view

    view = run_device(tmp_path, host)
    final = console.export_text()
    cells = row_of(final, "table-9")
    # the session ended 11 s into B's overtime: the displays stand as they were
    assert cells[4:8] == ["2:00", "-0:11", "ended", "2"], cells
    assert view.states["table-9"].records == len(log.read_text().splitlines())
    assert view.states["table-9"].model.mismatches == []
