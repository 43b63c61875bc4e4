"""The referee console in a real headless browser (Debian's chromium, driven by
playwright, as tests/test_projector.py): a grid of eight tables fed by a log
that grows during the test, one table in overtime (marked red: checked in the
DOM and in the screenshot's pixels), one paused, one finished, one whose link
drops out; the actions need the printed token; a pause tagged from a table's
detail lands in the referee log.

The games are real: simulated end to end on the virtual clock, then their
records written to the round's log a few at a time, as the logger does.
Every wait is for something the page shows; how long it takes is not asserted."""
import io
import json
import os
import re
import threading
import urllib.error
import urllib.request
from datetime import datetime, timezone

import pytest

from hallclock.hall import referee as refconsole
from hallclock.vboard import device as virtual
from hallclock.link.logfile import read_records
from hallclock.hall.display import url_of
from hallclock.views.roundreport import referee_log_of
from hallclock.scenario import parse_text
from hallclock_fw.settings import parse

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
WAIT_MS = 15000
TOKEN = "s3cret-token"

# move 1 A, move 2 B runs out of its 2 minutes at 150 s (ČAS 5.1.4, 10.2.6) and is
# pressed at 200 s; A's move 3 is stopped at 250 s (a challenge) and B's press
# restarts A's time (9.1, 10.1)
GAME = """\
0       press START
1000    press B
30000   press A
200000  press B
250000  press PAUSE
280000  press B
330000  press A
400000  end
"""


def now_iso():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture(scope="module")
def game(tmp_path_factory):
    out = tmp_path_factory.mktemp("game") / "game.jsonl"
    virtual.simulate(parse_text(GAME), "scrabble", parse("scrabble", []), str(out),
                     clock="src")
    records = read_records(out)
    names = [r["event"] for r in records]
    assert "expired" in names and "pause" in names and names[-1] == "end"
    return records


class RoundLog:
    """The round's log, written record by record (host_time = now), as the
    logger writes it; each table replays the real game up to a cut."""

    def __init__(self, path, game):
        self.path = path
        self.game = game
        self.done = {}

    def upto(self, table, t_ms):
        n = self.done.get(table, 0)
        sid = "%08x" % (0xb0000000 + int(table.split("-")[1]))
        lines = []
        for rec in self.game[n:]:
            if t_ms is not None and rec["t_ms"] > t_ms:
                break
            r = dict(rec, clock=table, session=sid, host_time=now_iso())
            lines.append(json.dumps(r))
            n += 1
        self.done[table] = n
        with open(self.path, "a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))


def write_links(log, lost):
    path = refconsole.links_file_of(log)
    status = {"written": now_iso(), "clocks": {c: {"state": "lost" if c in lost else "connected"}
                                              for c in ("table-%d" % i for i in range(1, 9))}}
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(status, f)
    os.replace(path + ".tmp", path)


@pytest.fixture
def server(tmp_path):
    log = tmp_path / "round3.jsonl"
    srv = refconsole.make_server(str(log), "127.0.0.1", 0, token=TOKEN)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield srv, str(log)
    srv.shutdown()
    srv.server_close()
    srv.referee.close()


@pytest.fixture
def page(tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: run 'make browser-setup' "
                    "(apt-get install chromium chromium-driver)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=ARGS, viewport={"width": 1280, "height": 800})
        try:
            yield ctx.new_page()
        finally:
            ctx.close()


def red_share(png):
    """The share of clearly red pixels in a PNG (the overtime colour)."""
    from PIL import Image
    img = Image.open(io.BytesIO(png)).convert("RGB")
    data = img.tobytes()
    n = len(data) // 3
    return sum(1 for i in range(0, 3 * n, 3)
               if data[i] > 170 and data[i + 1] < 90 and data[i + 2] < 90) / n


def wait_text(page, selector, text):
    page.wait_for_function(
        "([s, t]) => { const e = document.querySelector(s); return e && e.textContent.includes(t); }",
        arg=[selector, text], timeout=WAIT_MS)


# table -> cut (device ms): what each table's log holds when the page opens
CUTS = {"table-1": 40000, "table-2": 160000, "table-3": 260000, "table-4": None,
        "table-5": 40000, "table-6": 100000, "table-7": 300000, "table-8": 10000}


def test_grid_of_eight_tables_while_the_log_grows(server, page, game, tmp_path):
    srv, log = server
    rl = RoundLog(log, game)
    page.goto(url_of(srv))
    wait_text(page, "#note", "waiting for the log")
    for table, cut in CUTS.items():
        rl.upto(table, cut)
    write_links(log, lost=())
    page.wait_for_function("document.querySelectorAll('#grid .table').length === 8",
                           timeout=WAIT_MS)
    assert page.inner_text("#count") == "8 tables"
    # table-2: B's move 2 ran out at 150 s: overtime, marked red
    over = page.locator("#table-table-2")
    page.wait_for_function("document.getElementById('table-table-2').classList.contains('overtime')",
                           timeout=WAIT_MS)
    assert "OVERTIME" in over.inner_text()
    # the device's own display: 0:00 for the first second over, then -M:SS counting up
    wait_text(page, "#table-table-2 .left", "-0:0")
    assert red_share(over.locator(".left").screenshot()) > 0.3
    calm = page.locator("#table-table-1")
    assert "overtime" not in calm.get_attribute("class")
    assert red_share(calm.locator(".left").screenshot()) < 0.01
    # table-3 is paused (A's time stopped), table-4 finished
    assert "paused" in page.get_attribute("#table-table-3", "class")
    assert "paused (A)" in page.inner_text("#table-table-3")
    assert "finished" in page.get_attribute("#table-table-4", "class")
    # the whole page as a tablet sees it: eight cards, one red
    page.set_viewport_size({"width": 800, "height": 1100})
    shot = tmp_path / "grid.png"
    page.screenshot(path=str(shot), full_page=True)
    if os.environ.get("HALLCLOCK_KEEP_SHOT"):
        import shutil
        shutil.copy(shot, os.environ["HALLCLOCK_KEEP_SHOT"])
    assert red_share(shot.read_bytes()) > 0.002
    widths = page.evaluate("Array.from(document.querySelectorAll('#grid .table'))"
                           ".map(e => e.getBoundingClientRect().width)")
    assert len(widths) == 8 and min(widths) >= 200  # readable cards, several a row

    # the log grows: table-1's game goes on (move 2 starts), the overtime is pressed
    rl.upto("table-1", 200000)
    rl.upto("table-2", 240000)
    wait_text(page, "#table-table-1 .runs", "move 3")
    page.wait_for_function(
        "!document.getElementById('table-table-2').classList.contains('overtime')",
        timeout=WAIT_MS)

    # a clock drops out: its link is lost, with the time it was last heard
    write_links(log, lost=("table-8",))
    wait_text(page, "#table-table-8 .link", "link lost")
    assert "last heard" in page.inner_text("#table-table-8 .link")
    assert "lost" in page.get_attribute("#table-table-8", "class")


def test_actions_need_the_token_and_a_pause_is_tagged(server, page, game):
    srv, log = server
    rl = RoundLog(log, game)
    for table in ("table-1", "table-2"):
        rl.upto(table, 300000)
    page.goto(url_of(srv))
    page.wait_for_function("document.querySelectorAll('#grid .table').length === 2",
                           timeout=WAIT_MS)
    side = referee_log_of(log)
    page.click("#gong")  # no token
    wait_text(page, "#answer", "token")
    assert not os.path.exists(side) or not read_records(side)
    # the token field shows its whole hint (issue 33: it was cut)
    room = page.eval_on_selector("#token", """e => {
        const cs = getComputedStyle(e), c = document.createElement("canvas").getContext("2d");
        c.font = cs.font;
        return e.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)
               - c.measureText(e.placeholder).width; }""")
    assert room >= 0, room
    page.fill("#token", TOKEN)
    page.click("#gong")
    wait_text(page, "#answer", "GONG")
    acts = [r for r in read_records(side) if r["event"] == "referee_action"]
    assert [a["action"] for a in acts] == ["gong"]
    assert acts[0]["clock"] == "referee" and acts[0]["seq"] == 1

    # a table's detail: the moves as the report shows them, and the pause to tag
    page.click("#table-table-2")
    wait_text(page, "#moves", "2:50.0")  # B's move 2: 170 s, 50 s over its limit
    rows = page.locator("#moves tbody tr")
    assert rows.count() >= 3
    assert "expired" in page.locator("#moves tbody tr").nth(1).get_attribute("class")
    assert "9.1/10.1" in page.inner_text("#pauses")
    # every move's start and end as time of day; a move ends when the next starts
    cells = page.eval_on_selector_all(
        "#moves tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    heads = page.eval_on_selector_all("#moves thead th", "hs => hs.map(h => h.textContent)")
    start, end = heads.index("start"), heads.index("end")
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d", c[start]) for c in cells), cells
    for before, after in zip(cells, cells[1:]):
        if before[end]:
            assert before[end] == after[start], (before, after)
    # an untagged pause shows no reason chosen, and its tag button waits for one
    assert page.eval_on_selector("#pauses select.reason", "s => s.value") == ""
    assert page.is_disabled("#pauses button.tag")
    page.select_option("#pauses select.reason", "challenge")
    # the detail is drawn again every few polls: the referee's pick survives it
    # (a tablet's picker leaves nothing focused; the click came after a redraw)
    page.evaluate("""() => { document.activeElement.blur();
        document.querySelector('#pauses tbody tr').dataset.drawn = 'before'; }""")
    page.wait_for_function("!document.querySelector('#pauses tbody tr').dataset.drawn",
                           timeout=WAIT_MS)
    assert page.eval_on_selector("#pauses select.reason", "s => s.value") == "challenge"
    assert not page.is_disabled("#pauses button.tag")
    page.click("#pauses button.tag")
    wait_text(page, "#answer", "challenge")
    tags = [r for r in read_records(side) if r["event"] == "pause_reason"]
    assert len(tags) == 1
    pause = next(r for r in game if r["event"] == "pause")
    assert tags[0]["table"] == "table-2" and tags[0]["pause_seq"] == pause["seq"]
    assert tags[0]["reason"] == "challenge" and tags[0]["move"] == 3
    wait_text(page, "#pauses", "challenge")  # shown as tagged


def _post(srv, body, token):
    req = urllib.request.Request(url_of(srv) + "api/action", data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    if token is not None:
        req.add_header("X-Hallclock-Token", token)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def test_actions_refused_without_token_or_with_bad_values(server, game):
    srv, log = server
    RoundLog(log, game).upto("table-1", None)
    assert _post(srv, {"action": "gong"}, None)[0] == 403
    assert _post(srv, {"action": "gong"}, "wrong")[0] == 403
    code, ans = _post(srv, {"action": "tag", "clock": "table-1", "session": "b0000001",
                            "pause_seq": 2, "reason": "challenge"}, TOKEN)
    assert code == 404 and "no pause" in ans["error"]  # seq 2 is not a pause
    code, ans = _post(srv, {"action": "tag", "clock": "table-1", "session": "b0000001",
                            "pause_seq": 1, "reason": "coffee"}, TOKEN)
    assert code == 400 and "challenge" in ans["error"]
    assert _post(srv, {"action": "start", "round": 0}, TOKEN)[0] == 400
    assert _post(srv, {"action": "start", "round": 3}, TOKEN)[0] == 200
    assert not os.path.exists(log + ".x")
    side = read_records(referee_log_of(log))
    assert [(r["event"], r.get("action"), r.get("round")) for r in side] == [
        ("referee_action", "start", 3)]
    # the game log itself is never written by the console
    assert all(r["clock"] == "table-1" for r in read_records(log))


def test_console_bad_input(tmp_path, capsys):
    from hallclock import cli
    assert cli.main(["console", "--log", str(tmp_path / "nope" / "x.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["console", "--log", str(tmp_path / "x.jsonl"), "--http-port", "70000"]) == 2
    assert "0 to 65535" in capsys.readouterr().err


def test_console_on_the_broker(tmp_path):
    """``console --broker``: the grid from the hall network (as 'viewer'), and
    GONG and START round sent by the console itself on ``all/down`` (as
    'referee'): every clock gives the gong and takes the round."""
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from mqttrig import HALL, Hall, wait_for

    from hallclock.net import mqtt as mqtthost
    from hallclock.net.mqtt import BrokerLogger

    h = Hall(tmp_path, clocks=("t1", "t2"))
    srv = None
    try:
        viewer = BrokerLogger(h.address, HALL, h.cred_file, None, user="viewer")
        viewer.open()
        tail = refconsole.BrokerRoundTail(viewer, str(tmp_path / "referee.jsonl"))
        signals = refconsole.BrokerSignals(h.address, HALL, h.cred_file)
        srv = refconsole.make_server(None, "127.0.0.1", 0, token=TOKEN, tail=tail,
                                     signals=signals)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        t0 = virtual.mark()
        devices = []
        for clock in h.clocks:
            runner = virtual.make_runner("scrabble", parse("scrabble", []),
                                         parse_text("60000 end\n"), clock=clock,
                                         sid="0000cc0" + clock[1])
            net = mqtthost.device_link(h.address, HALL, clock, h.creds[clock])
            d = virtual.DeviceThread(runner, net, virtual.RealPace(t0, 2.0), silence_s=20)
            d.start()
            devices.append(d)
            h.devices.append(d)

        def grid():
            with urllib.request.urlopen(url_of(srv) + "api/grid") as r:
                return json.load(r)

        wait_for(lambda: len(grid()["tables"]) == 2, 60, "two tables on the grid")
        assert _post(srv, {"action": "gong"}, None)[0] == 403
        assert _post(srv, {"action": "start", "round": 7}, TOKEN)[0] == 200
        assert _post(srv, {"action": "gong"}, TOKEN)[0] == 200

        def heard(ev, **fields):
            grid()  # the server reads what the viewer heard
            return {r["clock"] for r in viewer.writer.records if r["event"] == ev
                    and all(r.get(k) == v for k, v in fields.items())}

        wait_for(lambda: heard("gong", kind="manual") == {"t1", "t2"}, 60, "the gong")
        assert heard("round", round=7, elapsed_ms=0) == {"t1", "t2"}
        wait_for(lambda: all(t["round"] == 7 for t in grid()["tables"]), 60, "round 7 shown")
        acts = read_records(str(tmp_path / "referee.jsonl"))
        assert [(a["action"], a.get("done")) for a in acts] == [("start", True), ("gong", True)]
    finally:
        if srv is not None:
            srv.shutdown()
            srv.server_close()
            srv.referee.close()
        h.close()
