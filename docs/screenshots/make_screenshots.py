"""The screenshots of docs/screenshots/ (``make screenshots``): the referee's
console and the projector page in headless Chromium (Debian's
/usr/bin/chromium driven by playwright; never ``playwright install``), for a
round of twelve virtual tables run as the README runs its round of eight
(``virtual-clocks``, ``configure --set round_min=10 --set round_warn_min=2``,
``round start --round 3``), each table with its own script, caught in the
play-out: the log up to the moment the first table enters play-out step (b),
shown as the pages showed it then.

    .venv/bin/python docs/screenshots/make_screenshots.py [OUT_DIR]
"""
import json
import os
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.dirname(sys.executable)
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
TABLES = 12


def table_script(k):
    """Table k's game (times in ms of the clock's own time, as
    samples/round_table.txt): moves of different lengths, a challenge on
    some tables, an overtime on others, so the cards differ."""
    lines = ["390000 press A", "400000 press B"]
    t = 400000
    player = "A"
    for n in range(1, 40):
        used = 20000 + ((k * 7 + n * 13) % 9) * 10000
        if n == 4 and k % 3 == 0:
            used = 150000  # over the 2-minute limit (ČAS 10.2.6)
        if n == 3 and k % 4 == 1:
            lines.append(f"{t + 5000} press PAUSE")  # a challenge (9.1)
            lines.append(f"{t + 25000} press B")  # the opponent's press: A's time again (10.1)
            t += 20000
        t += used
        lines.append(f"{t} press {player}")
        player = "B" if player == "A" else "A"
        if t > 1100000:
            break
    lines.append(f"{t + 60000} end")
    return "\n".join(lines) + "\n"


def hallclock(*args, cwd):
    res = subprocess.run([os.path.join(BIN, "hallclock"), *args], cwd=cwd, capture_output=True,
                         text=True, timeout=240)
    if res.returncode != 0:
        raise SystemExit(f"hallclock {' '.join(args)}: {res.stderr or res.stdout}")
    return res.stdout


def make_round(work):
    scripts = []
    for k in range(1, TABLES + 1):
        path = os.path.join(work, f"table{k}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(table_script(k))
        scripts += ["--script", path]
    hallclock("virtual-clocks", "--tables", str(TABLES), *scripts, "--speed", "100",
              "--ports-file", "hall-ports.txt", "--detach", cwd=work)
    hallclock("configure", "--ports-file", "hall-ports.txt", "--mode", "scrabble",
              "--set", "round_min=10", "--set", "round_warn_min=2", cwd=work)
    hallclock("round", "start", "--round", "3", "--ports-file", "hall-ports.txt",
              "--out", "round3.jsonl", "--exit-on-end", cwd=work)
    return os.path.join(work, "round3.jsonl")


def snapshot(log, work, after_end_gong_s=40):
    """The round as it stands ``after_end_gong_s`` after the end gong, at real
    speed: the records' host times are re-told as if the clocks had run at
    1x (each clock's own time from its round start, which the host stamped),
    so the pages count the seconds as in a hall; the records after that
    moment are left out.  Returns (log path, that moment)."""
    from datetime import datetime, timezone

    from hallclock.views.model import epoch_of
    with open(log, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    base = datetime(2026, 5, 16, 9, 0, 0).timestamp()  # the round's start: 09:00:00 local
    start_t = {r["clock"]: r["t_ms"] for r in records if r.get("event") == "round"}
    end_t = min(r["t_ms"] - start_t[r["clock"]] for r in records
                if r.get("event") == "gong" and r.get("kind") == "end")
    at = base + end_t / 1000.0 + after_end_gong_s

    def retold(r):
        t = base + (r["t_ms"] - start_t[r["clock"]]) / 1000.0 + 0.004
        first = epoch_of(r["host_time"])  # records held before the round: as they came
        return dict(r, host_time=datetime.fromtimestamp(max(t, base - 60 if first else t),
                                                        timezone.utc).isoformat(
            timespec="milliseconds").replace("+00:00", "Z"))
    keep = [retold(r) for r in records]
    keep = [r for r in keep if epoch_of(r["host_time"]) <= at]
    keep.sort(key=lambda r: epoch_of(r["host_time"]))
    path = os.path.join(work, "snapshot", "round3.jsonl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in keep))
    return path, at


def serve(server):
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    return server


def main(out_dir=HERE):
    from playwright.sync_api import sync_playwright

    from hallclock.hall import display as projector, referee as refconsole
    from hallclock.hall.webserver import url_of
    work = tempfile.mkdtemp(prefix="hallclock-shots-")
    log = make_round(work)
    path, at = snapshot(log, work)
    wall = (lambda: at)
    proj = serve(projector.make_server(path, "127.0.0.1", 0, tables=True,
                                       source=projector.LogTail(path, wall=wall)))
    cons = serve(refconsole.make_server(path, "127.0.0.1", 0, token="shots",
                                        tail=refconsole.RoundTail(path, wall=wall)))
    try:
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                os.path.join(work, "profile"), executable_path=CHROMIUM, headless=True,
                args=ARGS, viewport={"width": 1280, "height": 860})
            page = ctx.new_page()
            page.goto(url_of(cons))
            page.wait_for_function("document.querySelectorAll('#grid .table').length === %d"
                                   % TABLES, timeout=20000)
            page.wait_for_timeout(600)
            page.screenshot(path=os.path.join(out_dir, "console.png"), full_page=True)
            page.goto(url_of(proj))
            page.wait_for_function("document.getElementById('tables').children.length === %d"
                                   % TABLES, timeout=20000)
            page.wait_for_timeout(600)
            page.screenshot(path=os.path.join(out_dir, "projector.png"), full_page=True)
            ctx.close()
    finally:
        for s in (proj, cons):
            s.shutdown()
            s.server_close()
        cons.referee.close()
    projector_sizes(out_dir, work)
    print(f"screenshots in {out_dir} (the round's log: {log})")


SIZES = [(1024, 768), (1280, 800), (1920, 1080)]


def projector_sizes(out_dir, work):
    """projector_<W>x<H>_<N>.png: ``hall-display --tables`` for 8, 12, 30 and 40
    tables at three projector sizes (tests/test_projector.py checks the same
    pages keep every table inside the screen)."""
    from playwright.sync_api import sync_playwright

    from hallclock.hall import display as projector
    from hallclock.hall.webserver import url_of
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from test_projector import hall_of
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        for n in (8, 12, 30, 40):
            log = os.path.join(work, f"hall{n}.jsonl")
            hall_of(log, n)
            srv = serve(projector.make_server(log, "127.0.0.1", 0, tables=True))
            try:
                for w, h in SIZES:
                    page = browser.new_page(viewport={"width": w, "height": h})
                    page.goto(url_of(srv))
                    page.wait_for_function("document.querySelectorAll('#tables li').length",
                                           timeout=20000)
                    page.wait_for_timeout(800)
                    page.screenshot(path=os.path.join(out_dir, f"projector_{w}x{h}_{n}.png"))
                    page.close()
            finally:
                srv.shutdown()
                srv.server_close()
        browser.close()


def office_page(out_dir, work):
    """office_1280x800.png: the office page (``office --http-port``) for three
    halls of twelve tables (tests/test_officepage.py checks the same page keeps
    every hall and table inside the screen)."""
    from playwright.sync_api import sync_playwright

    from hallclock.hall import officepage
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from test_officepage import hall_log
    folder = os.path.join(work, "office")
    os.makedirs(folder, exist_ok=True)
    for k, hall in enumerate(("hall-a", "hall-b", "hall-c")):
        hall_log(os.path.join(folder, f"{hall}.jsonl"), 12, round_=3)
    srv = serve(officepage.make_server(folder, "127.0.0.1", 0))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(officepage.url_of(srv))
            page.wait_for_selector("#halls .hall:nth-child(3) .tables li:nth-child(12)",
                                   timeout=20000)
            page.wait_for_timeout(800)
            page.screenshot(path=os.path.join(out_dir, "office_1280x800.png"))
            browser.close()
    finally:
        srv.shutdown()
        srv.server_close()


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(ROOT, "host"))
    if sys.argv[1:2] == ["--sizes"]:  # only the projector's sizes
        projector_sizes(*(sys.argv[2:3] or [HERE]), tempfile.mkdtemp(prefix="hallclock-shots-"))
    elif sys.argv[1:2] == ["--office"]:  # only the office page
        office_page(*(sys.argv[2:3] or [HERE]), tempfile.mkdtemp(prefix="hallclock-shots-"))
    else:
        main(*(sys.argv[1:2] or [HERE]))
        office_page(*(sys.argv[1:2] or [HERE]), tempfile.mkdtemp(prefix="hallclock-shots-"))
