"""The hall display in a real headless browser (Debian's chromium, driven by
playwright): the page shows the duplicate countdown and the announcements,
and its digits follow the records appended to the log during the test.

Needs /usr/bin/chromium (``make browser-setup`` installs it) and the PyPI
package ``playwright`` (never ``playwright install``: the system chromium is
used).  Every wait is for something the page shows; how long it takes is not
asserted."""
import json
import os
import re
import threading
from datetime import datetime, timezone

import pytest

from hallclock import cli
from hallclock.projector import face, make_server, url_of
from hallclock.clockstate import Hall

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
WAIT_MS = 15000


def now_iso():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Log:
    """A log written record by record, as the logger does."""

    def __init__(self, path, clock="referee"):
        self.path = path
        self.clock = clock
        self.seq = 0

    def add(self, t_ms, event, **fields):
        self.seq += 1
        rec = {"clock": self.clock, "seq": self.seq, "t_ms": t_ms, "event": event}
        rec.update(fields)
        rec["session"] = "00000001"
        rec["host_time"] = now_iso()
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
            f.flush()


@pytest.fixture
def server(tmp_path):
    log = tmp_path / "hall.jsonl"
    srv = make_server(str(log), "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield srv, str(log)
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def page(tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: run 'make browser-setup' "
                    "(apt-get install chromium chromium-driver)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=ARGS)
        try:
            yield ctx.new_page()
        finally:
            ctx.close()


def wait_digits(page, pattern):
    """Wait until #digits matches the regex; return the text."""
    page.wait_for_function(
        "re => new RegExp(re).test(document.getElementById('digits').textContent)",
        arg=pattern, timeout=WAIT_MS)
    return page.inner_text("#digits")


def test_duplicate_countdown_follows_the_log(server, page):
    srv, path = server
    log = Log(path)
    page.goto(url_of(srv))
    # no log yet: the page says it waits, no digits
    page.wait_for_function("document.getElementById('subtitle').textContent.includes('waiting')",
                           timeout=WAIT_MS)
    assert page.inner_text("#digits") == "--:--"

    log.add(0, "boot", mode="duplicate", settings={"move_s": 180, "announce_s": [120, 60, 30]})
    # before the referee starts: the full time, standing
    wait_digits(page, r"^3:00$")
    assert "waiting for the referee" in page.inner_text("#subtitle")

    log.add(5000, "dup_start", move=1, limit_ms=180000)
    first = wait_digits(page, r"^(3:00|2:[45]\d)$")
    # it counts down by itself between records
    wait_digits(page, r"^2:[45]\d$")
    assert "move 1" in page.inner_text("#title")

    # the device says a minute has passed: an announcement at 2:00 left
    log.add(65000, "announce", move=1, left_s=120)
    shown = wait_digits(page, r"^(2:00|1:[45]\d)$")
    assert shown != first
    page.wait_for_function(
        "document.getElementById('announcements').textContent.includes('move 1: 2:00 left')",
        timeout=WAIT_MS)

    # last 30 seconds: the digits turn to the warning style
    log.add(155000, "announce", move=1, left_s=30)
    wait_digits(page, r"^(0:30|0:[12]\d)$")
    page.wait_for_function("document.getElementById('face').classList.contains('last')",
                           timeout=WAIT_MS)

    log.add(185000, "dup_end", move=1)
    wait_digits(page, r"^0:00$")
    assert "time is up" in page.inner_text("#subtitle")

    # the next move starts afresh, with its own number
    log.add(200000, "dup_start", move=2, limit_ms=180000)
    wait_digits(page, r"^(3:00|2:[45]\d)$")
    page.wait_for_function("document.getElementById('title').textContent.includes('move 2')",
                           timeout=WAIT_MS)

    # a pause stops the digits where they are
    log.add(210000, "pause", player=None, move=2)
    stopped = wait_digits(page, r"^2:[45]\d$")
    page.wait_for_function("document.getElementById('face').classList.contains('paused')",
                           timeout=WAIT_MS)
    assert "stopped" in page.inner_text("#subtitle")
    page.wait_for_timeout(1200)  # a second and more: a running countdown would move
    assert page.inner_text("#digits") == stopped


def test_scrabble_round_time_and_gongs(server, page, tmp_path):
    srv, path = server
    script = tmp_path / "round.txt"
    script.write_text("0 press START\n1000 press B\n61000 press A\n"
                      "200000 press B\n330000 press A\n400000 end\n")
    # a finished game made end to end: a 5-minute round, its ten-minute gong 2 minutes before the end
    assert cli.main(["simulate", "--script", str(script), "--out", path,
                     "--set", "round_min=5", "--set", "round_warn_min=2",
                     "--clock", "table-7"]) == 0
    page.goto(url_of(srv))
    page.wait_for_function("document.getElementById('gongs').textContent.includes('end of basic time')",
                           timeout=WAIT_MS)
    gongs = page.inner_text("#gongs")
    assert "start gong at 0:00" in gongs
    assert "2 minutes left at 3:00 (move 2)" in gongs  # round_warn_min=2, 5-minute round
    assert "end of basic time at 5:00 (move 3)" in gongs
    assert "play-out" in page.inner_text("#playout")
    assert "round time left" in page.inner_text("#title")
    assert page.inner_text("#digits") == "0:00"
    assert "table-7" in page.inner_text("#clock")
    assert "session ended" in page.inner_text("#subtitle")


def test_state_before_and_after_the_start_gong():
    """The server's face (no browser): before START the full round stands."""
    hall = Hall()
    hall.feed({"clock": "t1", "seq": 1, "t_ms": 0, "event": "boot", "mode": "scrabble",
               "settings": {"move_s": 120, "round_min": 40}, "session": "1"}, 100.0)
    f = face(hall, None, 130.0)
    assert f["digits"] == "40:00" and f["running"] is False
    assert "start gong" in f["subtitle"]
    hall.feed({"clock": "t1", "seq": 2, "t_ms": 1000, "event": "gong", "kind": "start",
               "move": None, "session": "1"}, 101.0)
    f = face(hall, None, 161.0)  # a minute after the gong, by the host's clock
    assert f["digits"] == "39:00" and f["running"] is True


def test_hall_display_bad_input(tmp_path, capsys):
    assert cli.main(["hall-display", "--log", str(tmp_path / "nope" / "x.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["hall-display", "--log", str(tmp_path / "x.jsonl"), "--port", "70000"]) == 2
    assert "0 to 65535" in capsys.readouterr().err


def test_unknown_paths_are_not_served(server):
    import urllib.error
    import urllib.request
    srv, _ = server
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(url_of(srv) + "../../etc/passwd")
    assert err.value.code == 404
    body = urllib.request.urlopen(url_of(srv) + "state").read()
    assert re.search(rb'"waiting": true', body)
