"""A crafted log or frame cannot drive the referee's terminal (docs/network.md,
threat model: "terminal escapes in names"): every terminal output (the
report, the round's report, the live view and its plain lines, log's lines,
any error naming a clock) shows a name's control characters escaped
(hallclock.errors.shown), and rich markup or emoji codes in a name print as
themselves (hallclock.views.terminal)."""
import io
import json
import os
import re
import signal
import subprocess
import sys
import time

from hallclock.errors import shown
from hallclock.views.liveview import LiveView
from hallclock.views.terminal import console as safe_console

HALLCLOCK = os.path.join(os.path.dirname(sys.executable), "hallclock")
EVIL = "t1\x1b]0;pwned\x07\x1b[2J[bold]x[/bold]:smile:"
EVIL_SHOWN = "t1\\x1b]0;pwned\\x07\\x1b[2J[bold]x[/bold]:smile:"
SGR = re.compile(r"\x1b\[[0-9;]*m")  # colours and bold: the views' own styles


def assert_harmless(text):
    """Nothing but colour: no OSC (window title), no erase, no cursor move,
    no bell, no other control character than the line's own."""
    rest = SGR.sub("", text)
    bad = sorted({c for c in rest if not c.isprintable() and c != "\n"})
    assert not bad, (bad, text)


def rec(seq, t_ms, event, clock=EVIL, **fields):
    r = {"clock": clock, "seq": seq, "t_ms": t_ms, "event": event, "session": "s\x1b[2J"}
    r.update(fields)
    return r


def crafted_log(tmp_path, clock=EVIL):
    records = [rec(1, 0, "boot", clock, mode="scrabble",
                   settings={"move_s": 120, "warn_s": [30, 20, 10]}, round=3),
               rec(2, 10, "round", clock, round=3),
               rec(3, 20, "gong", clock, kind="start\x1b[2J", round=3),
               rec(4, 1500, "turn", clock, player="A", move=1, limit_ms=120000, round=3),
               rec(5, 130000, "expired", clock, move=1, player="A", round=3),
               rec(6, 140000, "press", clock, player="A", move=1, used_ms=138500, round=3),
               rec(7, 141000, "end", clock, round=3)]
    p = tmp_path / "crafted.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(p)


def run(*args, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([HALLCLOCK, *args], capture_output=True, text=True, timeout=120,
                          env=e)


def test_the_one_helper():
    assert shown(EVIL) == EVIL_SHOWN
    assert shown("tab\tnew\nline\u202ebidi") == "tab\\tnew\\nline\\u202ebidi"
    assert shown("a\x1bb\nc\x07", lines=True) == "a\\x1bb\nc\\x07"
    assert shown("table-3 · ČAS 4.1") == "table-3 · ČAS 4.1"  # printable text unchanged


def test_report_of_a_crafted_log_prints_the_name_escaped(tmp_path):
    log = crafted_log(tmp_path)
    for env in ({}, {"FORCE_COLOR": "1", "COLUMNS": "160"}):  # a pipe, then as a terminal
        res = run("report", log, env=env)
        assert res.returncode == 0, res.stderr
        assert_harmless(res.stdout)
        assert_harmless(res.stderr)
        plain = SGR.sub("", res.stdout)
        assert "pwned" in plain and "\\x1b]0;pwned\\x07\\x1b[2J" in plain, plain
        # markup and emoji codes print as themselves (the table may wrap the name)
        assert "[bold]x[/bold]:smile:" in "".join(plain.split())


def test_round_report_of_a_crafted_log(tmp_path):
    log = crafted_log(tmp_path)
    res = run("report", "--round", "3", log, env={"FORCE_COLOR": "1", "COLUMNS": "160"})
    assert res.returncode == 0, res.stderr
    assert_harmless(res.stdout)
    plain = SGR.sub("", res.stdout)
    assert "t1\\x1b]0;pwned" in plain and "[bold]x[/bold]" in plain, plain


class FakeLink:
    def __init__(self):
        self.on_record = None


class FakePort:
    path = "/dev/ttyUSB0"
    state = "connected"
    ser = object()


class FakeLogger:
    def __init__(self):
        self.links = [FakeLink()]
        self.ports = [FakePort()]

        class W:
            path = "round3.jsonl"
        self.writer = W()


def feed(view, records):
    for r in records:
        view.logger.links[0].on_record(r)


def records_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_the_live_view_shows_the_name_escaped(tmp_path):
    records = records_of(crafted_log(tmp_path))
    out = io.StringIO()
    console = safe_console(file=out, force_terminal=True, width=160, color_system="truecolor")
    view = LiveView(FakeLogger(), console=console, clock=lambda: 1000.0)
    assert not view.plain
    feed(view, records[:4])
    console.print(view.render())
    text = out.getvalue()
    assert_harmless(text)
    assert "pwned" in SGR.sub("", text) and "[bold]x[/bold]" in SGR.sub("", text)


def test_the_live_views_plain_lines_show_the_name_escaped(tmp_path):
    records = records_of(crafted_log(tmp_path))
    out = io.StringIO()
    view = LiveView(FakeLogger(), plain=True, out=out, clock=lambda: 1000.0)
    feed(view, records)
    text = out.getvalue()
    assert_harmless(text)
    assert text.count("\n") >= len(records)  # one line a record: none forged by a name
    assert EVIL_SHOWN + " /dev/ttyUSB0 #1" in text, text


def test_a_frame_with_control_characters_is_no_frame():
    """On the wire (serial and broker alike) a frame is printable ASCII: a
    clock name with an escape never reaches a record (hallclock_fw.protocol)."""
    from hallclock_fw import protocol
    assert protocol.unframe(protocol.hello("0000cafe", "t1", "scrabble", "1")) is not None
    assert protocol.unframe(protocol.hello("0000cafe", "t\x1b[2J", "scrabble", "1")) is None
    assert protocol.unframe(protocol.hello("0000cafe", "t\x9b2J", "scrabble", "1")) is None


def test_log_prints_a_clocks_markup_name_as_itself(tmp_path):
    """``hallclock log --plain`` against a virtual clock whose name is rich
    markup (printable, so the wire carries it): printed as itself."""
    from hallclock import scenario
    from hallclock.hall.round import start_virtual_clocks
    from hallclock.vboard.device import check_settings
    game = tmp_path / "g.txt"
    game.write_text("0 press START\n500 press B\n900 press A\n1200 end\n")
    threads, fds, paths = start_virtual_clocks(
        "scrabble", check_settings("scrabble", []), [scenario.load(str(game))],
        prefix="t[bold]:smile:", speed=4.0)
    try:
        res = run("log", "--port", paths[0], "--out", str(tmp_path / "l.jsonl"), "--plain",
                  "--exit-on-end")
    finally:
        for t in threads:
            t.halt = True
        for t in threads:
            t.join(10)
        for fd in fds:
            os.close(fd)
    assert res.returncode == 0, res.stderr
    assert_harmless(res.stdout)
    assert_harmless(res.stderr)
    assert f"t[bold]:smile:1 {paths[0]} #1" in res.stdout, res.stdout


def test_log_resuming_a_crafted_log_prints_nothing_raw(tmp_path):
    """A crafted --out read back (its names in the resume index, its lock):
    the logger's lines stay harmless."""
    log = crafted_log(tmp_path)
    with open(log + ".lock", "w") as f:
        f.write(json.dumps({"pid": 1, "program": EVIL, "since": 0}))
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen([HALLCLOCK, "log", "--port", os.ttyname(slave), "--out", log,
                                 "--plain"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

        def taken():
            try:
                with open(log + ".lock") as f:
                    return json.load(f).get("pid") == proc.pid
            except (OSError, ValueError):
                return False
        end = time.monotonic() + 60
        while not taken() and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    res = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert res.returncode in (0, 130), res.stderr  # Ctrl-C: in its loop, or before it
    assert_harmless(res.stdout)
    assert_harmless(res.stderr)
    assert "\\x1b]0;pwned" in res.stderr, res.stderr  # the stale lock's holder, escaped


def test_an_error_naming_a_clock_is_escaped(tmp_path):
    res = run("log", "--broker", "127.0.0.1:1", "--hall", "h", "--credentials",
              str(tmp_path / "c.json"), "--clock", EVIL, "--out", str(tmp_path / "l.jsonl"))
    assert res.returncode == 2
    assert_harmless(res.stderr)
    assert res.stderr.count("\n") == 1 and "\\x1b" in res.stderr, res.stderr
