"""The hall display in a real headless browser (Debian's chromium, driven by
playwright): the page shows the duplicate countdown and the announcements,
the round of a Scrabble hall (its time left to the end gong, the gongs as
time of day), both backgammon banks, and its digits follow the records
appended to the log during the test.  The server's answer (``face``) is
tested without a browser too.

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
from hallclock.hall import relay
from hallclock.link.logfile import read_records
from hallclock.views.model import Clocks, epoch_of
from hallclock.hall.display import LogTail, face, make_server, time_of_day, url_of
from hallclock_fw.settings import parse
from sessiononce import once_dir

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
WAIT_MS = 60000  # a loaded machine; costs time only on failure


def now_iso():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Log:
    """A log written record by record, as the logger does."""

    def __init__(self, path, clock="referee"):
        self.path = path
        self.clock = clock
        self.seq = 0

    def add(self, t_ms, event, clock=None, **fields):
        self.seq += 1
        rec = {"clock": clock or self.clock, "seq": self.seq, "t_ms": t_ms, "event": event}
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
    log.add(125000, "announce", move=1, left_s=60)
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

    # a pause stops the digits where they are (first the page must have the
    # pause: digits read before it are the running count's, a second on)
    log.add(210000, "pause", player=None, move=2)
    page.wait_for_function("document.getElementById('face').classList.contains('paused')",
                           timeout=WAIT_MS)
    assert "stopped" in page.inner_text("#subtitle")
    # stopped: the server sends no seconds ahead, so the page has nothing to count
    import urllib.request
    state = json.loads(urllib.request.urlopen(url_of(srv) + "state").read())
    assert state["running"] is False and len(state["ahead"]) == 1
    stopped = state["ahead"][0]["digits"]
    assert re.match(r"^2:[45]\d$", stopped), stopped
    assert wait_digits(page, "^" + re.escape(stopped) + "$") == stopped


def test_scrabble_round_time_and_gongs(server, page, tmp_path):
    srv, path = server
    script = tmp_path / "round.txt"
    script.write_text("0 press START\n1000 press B\n61000 press A\n"
                      "200000 press B\n330000 press A\n400000 end\n")
    # a finished game made end to end: a 5-minute round, its ten-minute gong 2 minutes before the end
    assert cli.main(["simulate", "--script", str(script), "--out", path,
                     "--set", "round_min=5", "--set", "round_warn_min=2",
                     "--clock", "table-7"]) == 0
    clocks = Clocks()
    for r in read_records(path):
        clocks.feed(r, epoch_of(r["host_time"]))
    c = clocks.get("table-7")  # the one anchoring of its device time to the host's clock
    at = {k: time_of_day(c.time_of_day(t)) for t, k, _m, _e in c.gongs}
    page.goto(url_of(srv))
    page.wait_for_function("document.getElementById('gongs').textContent.includes('end gong')",
                           timeout=WAIT_MS)
    gongs = page.inner_text("#gongs")
    # gongs as time of day (the laptop's clock), with the move in progress, named
    # by their settings as the report names them
    assert f"start gong at {at['start']}" in gongs
    assert f"2-min gong at {at['ten_minutes']} (move 2)" in gongs
    assert f"end gong at {at['end']} (move 3)" in gongs
    assert "play-out" in page.inner_text("#playout")
    assert "round time left" in page.inner_text("#title")
    assert page.inner_text("#digits") == "0:00"
    assert "session ended" in page.inner_text("#subtitle")


@pytest.fixture(scope="module")
def hall_log(tmp_path_factory):
    """A whole Scrabble hall (the hall unit and three table clocks) run end to
    end: a 5-minute round, its warning gong 1 minute before the end."""
    hall = [(0, "press", "START"), (400000, "end", None)]
    table = [(1000, "press", "B"), (61000, "press", "A"), (200000, "press", "B"),
             (330000, "press", "A"), (400000, "end", None)]

    def make(folder):  # once per run, read by every worker (tests/sessiononce.py)
        relay.simulate_hall(hall, [table] * 3, "scrabble",
                            parse("scrabble", ["round_min=5", "round_warn_min=1"]),
                            str(folder / "hall.jsonl"), speed=40)
    return str(once_dir(tmp_path_factory, "projector-hall", make) / "hall.jsonl")


def test_a_hall_shows_the_round_never_the_table_that_spoke_last(hall_log):
    path = hall_log
    records = read_records(path)
    assert {r["clock"] for r in records} == {"hall", "table-1", "table-2", "table-3"}
    clocks = Clocks()
    seen = set()
    start_t = None
    for rec in records:
        at = epoch_of(rec["host_time"])
        clocks.feed(rec, at)
        if rec["clock"] == "hall" and rec["event"] == "gong" and rec["kind"] == "start":
            start_t = rec["t_ms"]
        f = face(clocks, None, at)
        # whichever clock spoke last, the page shows the round
        assert f["title"] == "round time left" and f["view"] == "round", f
        assert not f["subtitle"].startswith("move")
        seen.add(f["clock"])
        if rec["clock"] == "hall" and start_t is not None and rec["t_ms"] <= start_t + 300000:
            # the round's basic time left, from its first start gong, as the hall unit counts
            assert f["left_ms"] == 300000 - (rec["t_ms"] - start_t)
    assert seen == {"hall"}  # the hall unit gave the round's start
    final = face(clocks, None, epoch_of(records[-1]["host_time"]))
    assert [g["text"] for g in final["gongs"]] == ["end gong", "1-min gong",
                                                  "start gong"]  # named by the settings
    assert all(g["move"] is None for g in final["gongs"])  # moves are each table's own
    # every table counts it; the hall unit is not a table
    assert final["playout"] == "play-out: 3 tables (a) finish the round"
    assert [t["clock"] for t in final["tables"]] == ["table-1", "table-2", "table-3"]


def iso(epoch):
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def test_the_gongs_still_due_as_time_of_day():
    t0 = 1800000000.0
    clocks = Clocks()
    for clock, sid in (("hall", "a1"), ("table-1", "b1")):
        clocks.feed({"clock": clock, "seq": 1, "t_ms": 0, "event": "boot", "mode": "scrabble",
                     "settings": {"move_s": 120, "warn_s": [30], "round_min": 5,
                                  "round_warn_min": 1},
                     "session": sid, "host_time": iso(t0)}, t0)
    clocks.feed({"clock": "hall", "seq": 2, "t_ms": 500, "event": "gong", "kind": "start",
                 "move": None, "session": "a1", "host_time": iso(t0 + 0.5)}, t0 + 0.5)
    clocks.feed({"clock": "table-1", "seq": 2, "t_ms": 515, "event": "gong", "kind": "start",
                 "move": None, "session": "b1", "host_time": iso(t0 + 0.52)}, t0 + 0.52)
    f = face(clocks, None, t0 + 60.5)
    assert f["digits"] == "4:00" and f["running"]
    assert f["gongs"] == [{"kind": "start", "text": "start gong", "at": time_of_day(t0 + 0.5),
                           "move": None}]
    assert [(g["text"], g["at"]) for g in f["due"]] == [
        ("1-min gong", time_of_day(t0 + 240.5)),
        ("end gong", time_of_day(t0 + 300.5))]


def test_clock_picks_one_clock_and_a_wrong_name_is_named(hall_log, tmp_path, capsys):
    path = hall_log
    tail = LogTail(path, "table-2")
    f = tail.state()
    assert f["view"] == "clock" and f["clock"] == "table-2" and f["move"] == 4
    assert f["displays"] == ["P-  1", "0:50"]  # the clock's two displays, as it shows them
    # a name the log does not have: a clear message at once, naming its clocks
    assert cli.main(["hall-display", "--log", path, "--clock", "nosuch", "--http-port", "0"]) == 2
    err = capsys.readouterr().err
    assert "--clock nosuch" in err
    known = err.split("its clocks: ", 1)[1].split(" (", 1)[0]
    assert sorted(known.split(", ")) == ["hall", "table-1", "table-2", "table-3"]
    # a log with no clock yet: the page says what it waits for
    empty = tmp_path / "later.jsonl"
    srv = make_server(str(empty), "127.0.0.1", 0, "nosuch")
    try:
        assert "no clock" in srv.note and "nosuch" in srv.note
        assert "the log has no clock yet" not in LogTail(str(empty), "nosuch").state()["message"]
    finally:
        srv.server_close()
    empty.write_text("")
    msg = LogTail(str(empty), "nosuch").state()["message"]
    assert msg == "waiting for clock nosuch: the log has no clock yet"


def test_backgammon_shows_both_banks(server, page, tmp_path):
    srv, path = server
    log = Log(path, clock="bg-3")
    page.goto(url_of(srv))
    log.add(0, "boot", mode="backgammon", settings={"bank_s": 600, "delay": "bronstein",
                                                    "delay_s": 15})
    log.add(1000, "turn", player="A", move=1, bank_ms=600000)
    log.add(21000, "press", player="A", move=1, used_ms=20000, bank_ms=595000)
    log.add(21000, "turn", player="B", move=2, bank_ms=600000)
    log.add(33000, "pause", player="B", move=2)
    page.wait_for_function("document.getElementById('banks').textContent.includes('B 9:48')",
                           timeout=WAIT_MS)
    banks = page.inner_text("#banks")
    assert "A 9:55" in banks and "B 9:48" in banks
    assert "stopped" in page.inner_text("#subtitle")
    assert page.inner_text("#digits") == "9:48"  # B's display, stopped


def test_state_before_and_after_the_start_gong():
    """The server's face (no browser): before START the full round stands."""
    clocks = Clocks()
    clocks.feed({"clock": "t1", "seq": 1, "t_ms": 0, "event": "boot", "mode": "scrabble",
                 "settings": {"move_s": 120, "round_min": 40}, "session": "1"}, 100.0)
    f = face(clocks, None, 130.0)
    assert f["digits"] == "40:00" and f["running"] is False
    assert "start gong" in f["subtitle"]
    clocks.feed({"clock": "t1", "seq": 2, "t_ms": 1000, "event": "gong", "kind": "start",
                 "move": None, "session": "1"}, 101.0)
    f = face(clocks, None, 161.0)  # a minute after the gong, by the host's clock
    assert f["digits"] == "39:00" and f["running"] is True
    # the page's next seconds come with the answer, counted by the clock's code
    assert [a["digits"] for a in f["ahead"]] == ["39:00", "38:59", "38:58", "38:57", "38:56"]
    assert f["ahead"][1]["in_ms"] == 1000


def test_hall_display_bad_input(tmp_path, capsys):
    assert cli.main(["hall-display", "--log", str(tmp_path / "nope" / "x.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["hall-display", "--log", str(tmp_path / "x.jsonl"), "--http-port", "70000"]) == 2
    assert "0 to 65535" in capsys.readouterr().err
    # a bad --host is named as such, not blamed on the port
    for host in ("bad", "192.0.2.1"):
        assert cli.main(["hall-display", "--log", str(tmp_path / "x.jsonl"), "--host", host,
                         "--http-port", "0"]) == 2
        err = capsys.readouterr().err
        assert f"--host {host}" in err and "--http-port" not in err, err
    # a port in use is
    srv = make_server(str(tmp_path / "x.jsonl"), "127.0.0.1", 0)
    try:
        taken = srv.server_address[1]
        assert cli.main(["hall-display", "--log", str(tmp_path / "x.jsonl"),
                         "--http-port", str(taken)]) == 2
        assert "already in use" in capsys.readouterr().err
    finally:
        srv.server_close()


def test_unknown_paths_are_not_served(server):
    import urllib.error
    import urllib.request
    srv, _ = server
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(url_of(srv) + "../../etc/passwd")
    assert err.value.code == 404
    body = urllib.request.urlopen(url_of(srv) + "state").read()
    assert re.search(rb'"waiting": true', body)


def test_the_page_shows_a_halls_round(hall_log, page):
    srv = make_server(hall_log, "127.0.0.1", 0, tables=True)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        page.goto(url_of(srv))
        page.wait_for_function(
            "document.getElementById('clock').textContent.includes('round · 3 tables')",
            timeout=WAIT_MS)  # the hall unit is not counted as a table
        assert page.inner_text("#title") == "round time left"
        assert page.inner_text("#digits") == "0:00"
        # with the tables listed only the newest gong is shown; the others stay in the page
        assert page.inner_text("#gongs").startswith("end gong at ")
        assert "1-min gong at " in page.text_content("#gongs")
        assert "(move" not in page.text_content("#gongs")  # no table's move on the hall's page
        tables = page.inner_text("#tables").splitlines()
        assert [t.split()[0] for t in tables] == ["table-1", "table-2", "table-3"]
        assert "play-out: 3 tables (a) finish the round" in page.inner_text("#playout")
    finally:
        srv.shutdown()
        srv.server_close()


def hall_of(path, n):
    """A log of a hall unit ('hall': the start gong, never a move) and ``n``
    tables heard in any order, each in its first move."""
    import random
    names = ["table-%d" % (k + 1) for k in range(n)]
    random.Random(3).shuffle(names)
    t0 = 1800000000.0
    boot = {"mode": "scrabble", "settings": {"move_s": 120, "warn_s": [30], "round_min": 40,
                                             "round_warn_min": 10}}
    with open(path, "w") as f:
        for i, name in enumerate(["hall"] + names):
            events = [(0, "boot", boot), (100, "gong", {"kind": "start", "move": None})]
            if name != "hall":
                events.append((1000, "turn", {"player": "A", "move": 1, "limit_ms": 120000}))
            for seq, (t, ev, extra) in enumerate(events, 1):
                f.write(json.dumps(dict(clock=name, seq=seq, t_ms=t, event=ev,
                                        session="%08x" % (i + 1),
                                        host_time=iso(t0 + i * 0.01 + t / 1000), **extra)) + "\n")
    return sorted(names, key=lambda s: int(s.split("-")[1]))


VIEWS = [(1024, 768), (1280, 800), (1920, 1080)]


INSIDE = """() => {
    const foot = document.querySelector('footer').getBoundingClientRect().top;
    return [...document.querySelectorAll('#tables li')].map(li => {
        const r = li.getBoundingClientRect();
        return [li.textContent, r.left >= 0 && r.top >= 0 && r.right <= innerWidth
                && r.bottom <= Math.min(innerHeight, foot + 1)
                && li.scrollWidth <= li.clientWidth + 1];
    }); }"""


def every_table_inside(srv, names, views, words=()):
    """Open the page at each of ``views`` and turn its pages until every
    table of ``names`` was seen standing whole inside the viewport; each
    line's text checked for ``words`` (a function of the clock's name)."""
    from playwright.sync_api import sync_playwright
    n = len(names)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            for width, height in views:
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(url_of(srv) + "?turn_ms=300")
                page.wait_for_function(
                    "document.querySelectorAll('#tables li').length > 0", timeout=WAIT_MS)
                assert page.inner_text("#clock").endswith("round · %d tables" % n)
                seen = set()
                for _ in range(40):  # every page, as they turn
                    for text, ok in page.evaluate(INSIDE):
                        assert ok, (width, height, text)
                        assert "|" not in text and " · A " in text
                        clock = text.split(" · ")[0]
                        for w in words:
                            assert w(clock) in text, (width, height, text)
                        seen.add(clock)
                    note = page.inner_text("#tablepage")
                    if seen == set(names):
                        break
                    assert note.startswith("tables "), (width, height, len(seen))
                    page.wait_for_timeout(150)
                assert seen == set(names), (width, height, sorted(set(names) - seen))
                digits = page.eval_on_selector(
                    "#digits", "e => parseFloat(getComputedStyle(e).fontSize)")
                rows = page.eval_on_selector(
                    "#tables", "e => parseFloat(getComputedStyle(e).fontSize)")
                assert digits > 5 * rows
                page.close()
        finally:
            browser.close()


def serving(srv):
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    return srv


@pytest.mark.parametrize("n", [8, 12, 30, 40])
def test_every_table_is_inside_the_screen(tmp_path, n):
    """--tables (issue 33): at 1024×768, 1280×800 and 1920×1080, 8 to 40
    tables each stand whole inside the viewport (on one screen, or on pages
    that turn by themselves, each saying which tables it shows); the round's
    time stays the largest type; the hall unit is never counted; a table's
    line is words, not pipes."""
    log = tmp_path / "hall.jsonl"
    names = hall_of(str(log), n)
    srv = serving(make_server(str(log), "127.0.0.1", 0, tables=True))
    try:
        every_table_inside(srv, names, VIEWS)
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_players_names_stand_by_their_times(tmp_path):
    """hall-display --pairings (contract 1.3, issue 33 item 2): each table's
    line names its players by their times ("A Nováková 2:00 · B Dvořák
    2:00"), shortened as every view shortens them (views.pairings.short), and
    40 tables with names of the longest kept length still stand whole inside
    a 1024×768 and a 1280×800 screen (pages that turn where they must)."""
    from hallclock.views import pairings
    log = tmp_path / "hall.jsonl"
    names = hall_of(str(log), 40)
    csv = tmp_path / "pairings.csv"
    csv.write_text("table,A,B\n" + "".join(
        f"{k},Jana Marie Nováková-Dvořáková,Bartoloměj Vysokomýtský{k:02d}\n"
        for k in range(1, 41)), encoding="utf-8")
    pairs = pairings.load(str(csv))
    srv = serving(make_server(str(log), "127.0.0.1", 0, tables=True, pairings=pairs))

    def shown(clock):
        return "A %s " % pairs.shown(clock)[0]

    try:
        a, b = pairs.shown("table-7")
        assert (a, b) == ("J. M. Nováková-Dv…", "B. Vysokomýtský07")  # one shortening
        every_table_inside(srv, names, VIEWS[:2], words=(
            shown, lambda clock: " · B %s " % pairs.shown(clock)[1]))
    finally:
        srv.shutdown()
        srv.server_close()


def test_tables_only_when_asked_and_a_round_over_early_says_so(tmp_path):
    """Without --tables the page is for the players at the back (no table
    list); a round whose tables all ended before the end gong shows that it
    is over, not the basic time left beside "every table has ended"."""
    log = tmp_path / "hall.jsonl"
    hall_of(str(log), 3)
    tail = LogTail(str(log))
    state = tail.state()
    assert state["show_tables"] is False and len(state["tables"]) == 3
    clocks = Clocks()
    recs = read_records(log)
    for r in recs:
        clocks.feed(r, epoch_of(r["host_time"]))
    last = max(epoch_of(r["host_time"]) for r in recs)
    session = {r["clock"]: r["session"] for r in recs}
    for name in ["hall", "table-1", "table-2", "table-3"]:
        clocks.feed({"clock": name, "seq": 3 if name == "hall" else 4, "t_ms": 60000,
                     "event": "end", "session": session[name], "host_time": iso(last + 60)},
                    last + 60)
    f = face(clocks, None, last + 61)
    assert f["subtitle"] == "every table has ended"
    assert f["title"] == "the round is over" and f["digits"] == "over"
    assert [a["digits"] for a in f["ahead"]] == ["over"] and f["due"] == []




def _round_of(rows, t0=1800000000.0):
    """Clocks fed from rows (clock, t_ms, event, fields), one session a clock."""
    clocks = Clocks()
    seqs = {}
    boot = {"mode": "scrabble", "settings": {"move_s": 120, "warn_s": [30], "round_min": 40,
                                             "round_warn_min": 10}}
    for clock, t, ev, extra in rows:
        if clock not in seqs:
            seqs[clock] = 1
            clocks.feed(dict(clock=clock, seq=1, t_ms=0, event="boot", session=clock,
                             host_time=iso(t0), **boot), t0)
        seqs[clock] += 1
        at = t0 + t / 1000
        clocks.feed(dict(clock=clock, seq=seqs[clock], t_ms=t, event=ev, session=clock,
                         host_time=iso(at), **extra), at)
    return clocks


def test_a_table_whose_game_has_not_begun_is_shown_and_the_hall_unit_never():
    """round start: every table took the round (the host's N) and gave its
    start gong; table-2's players have not pressed yet.  It is a table, not a
    hall unit (a round run from the laptop has none).  In a relay hall the
    hall unit (the first start gong, never a move, no round number) is left
    out, and a table that has not begun still shows."""
    t0 = 1800000000.0
    rows = []
    for name in ("table-1", "table-2", "table-3"):
        rows += [(name, 100, "round", {"round": 1, "elapsed_ms": 0}),
                 (name, 100, "gong", {"kind": "start", "move": None, "round": 1})]
    for name in ("table-1", "table-3"):
        rows.append((name, 2000, "turn", {"player": "A", "move": 1, "limit_ms": 120000}))
    f = face(_round_of(rows), None, t0 + 30)
    assert [t["clock"] for t in f["tables"]] == ["table-1", "table-2", "table-3"]
    assert f["subtitle"] == "3 tables"
    relayed = [("hall", 100, "gong", {"kind": "start", "move": None})]
    for name in ("table-1", "table-2", "table-3"):
        relayed.append((name, 105, "gong", {"kind": "start", "move": None}))
    relayed.append(("table-3", 2000, "turn", {"player": "A", "move": 1, "limit_ms": 120000}))
    f = face(_round_of(relayed), None, t0 + 30)
    assert [t["clock"] for t in f["tables"]] == ["table-1", "table-2", "table-3"]
    assert f["subtitle"] == "3 tables"
    # before any move, too: the hall unit is not counted
    f = face(_round_of(relayed[:4]), None, t0 + 30)
    assert [t["clock"] for t in f["tables"]] == ["table-1", "table-2", "table-3"]
