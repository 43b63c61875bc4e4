"""The live view of `hallclock log`: a captured terminal (rich Console writing to
a StringIO as if it were a terminal) shows each clock, whose time runs, the
time left, warnings and overtime highlighted, the link state; without a
terminal it prints plain lines.  End to end with a virtual device on a pty."""
import io
import os
import re

from rich.console import Console

from hallclock import cli
from hallclock.liveview import LiveView, link_state
from hallclock.logger import Logger
from hallclock.scenario import parse_text
from hallclock.transport import pty_pair
from hallclock.virtual import DeviceThread, make_runner
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


def test_shows_clock_whose_time_runs_and_time_left(tmp_path):
    logger, fds = make_logger(tmp_path)
    clock = FakeClock()
    console = terminal()
    view = LiveView(logger, console=console, clock=clock)
    assert view.plain is False  # a terminal: the live table
    try:
        feed(view, [BOOT, rec(2, 0, "gong", kind="start", move=None),
                    rec(3, 2000, "turn", player="A", move=1, limit_ms=120000)])
        clock.t += 30.0  # 30 s of host time since the turn arrived
        console.print(view.render())
        out = console.export_text()
        row = next(line for line in out.splitlines() if line.startswith("│ table-3"))
        assert "scrabble" in row and "connected" in row
        assert re.search(r"│\s+A\s+│\s+1:30\s+│\s+1\s+│", row), row  # A runs, 1:30 left, move 1
        assert "turn A move 1" in row
        # a press and B's turn: B runs with a fresh limit
        feed(view, [rec(4, 47000, "press", player="A", move=1, used_ms=45000),
                    rec(5, 47000, "turn", player="B", move=2, limit_ms=120000)])
        console.print(view.render())
        row = [line for line in console.export_text().splitlines()
               if line.startswith("│ table-3")][-1]
        assert re.search(r"│\s+B\s+│\s+2:00\s+│\s+2\s+│", row), row
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
                    rec(5, 111000, "warn", player="A", move=1, left_s=10),
                    rec(6, 121000, "expired", player="A", move=1)])
        clock.t += 4.0  # 4 s into the overtime
        over = segments_with(console, view.render(), "OVERTIME")
        assert over, "no OVERTIME cell"
        assert over[0].style.bgcolor.name == "red" and over[0].style.bold
        assert "-0:04" in over[0].text
        console.print(view.render())
        assert "30s 20s 10s expired" in console.export_text()
    finally:
        close_all(logger, fds)


def test_link_states_and_waiting_ports(tmp_path):
    logger, fds = make_logger(tmp_path, n=2)
    clock = FakeClock()
    console = terminal(width=200)
    view = LiveView(logger, console=console, clock=clock)
    try:
        feed(view, [BOOT], port=0)
        text = "".join(s.text for s in console.render(view.render()))
        assert "(waiting)" in text and logger.ports[1].path in text  # port 2: no clock yet
        assert link_state(logger.ports[0], logger.links[0], clock()) == "connected"
        # the link asked the device to resend a missing event just now
        logger.links[0].sessions["00000001"] = type("S", (), {"asked": clock.t - 0.5})()
        resend = segments_with(console, view.render(), "resending")
        assert resend and resend[0].style.color.name == "yellow"
        logger.ports[0].state = "lost"
        lost = segments_with(console, view.render(), "lost")
        assert lost and lost[0].style.color.name == "red"
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
    device = DeviceThread(runner, master, silence_s=10)
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
    row = [line for line in final.splitlines() if line.startswith("│ table-9")][-1]
    assert "ended" in row and "OVERTIME -0:11" in row and "30s 20s 10s expired" in row
    assert view.states["table-9"].events == len(log.read_text().splitlines())
