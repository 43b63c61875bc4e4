"""``hallclock rehearse`` (contract 1.3, docs/hall.md "Rehearse the day"): a
small day through the real programs agrees with its plan, and the same checks
fail, naming the check, on a tampered log or a view made to disagree."""
import json
import shutil
import types

import pytest

from conftest import run_cli
from sessiononce import once_dir
from hallclock.hall import rehearsal

SMALL = ["--tables", "3", "--rounds", "1", "--speed", "150", "--set", "round_min=4",
         "--set", "round_warn_min=1"]

PAIRINGS = "table,A,B\n1,Jana Nováková,Petr Dvořák\n2,Eva Svobodová,Karel Černý\n"


def played_once(tmp_path_factory, name, *args, files=None):
    """A rehearsed day played once a test run (tests/sessiononce.py), with
    ``files`` ({name: text}) written beside it first ({folder} in ``args``
    stands for that folder): the day's folder and what the command said."""
    def make(folder):
        for fname, text in (files or {}).items():
            (folder / fname).write_text(text, encoding="utf-8")
        res = run_cli("rehearse", *[a.format(folder=folder) for a in args],
                      "--out", str(folder / "day"), timeout=240)
        (folder / "said.json").write_text(json.dumps(
            {"returncode": res.returncode, "stdout": res.stdout, "stderr": res.stderr}),
            encoding="utf-8")
    done = once_dir(tmp_path_factory, name, make)
    said = json.loads((done / "said.json").read_text(encoding="utf-8"))
    return done / "day", types.SimpleNamespace(**said)


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """The small Scrabble day with the default faults and the pairings."""
    return played_once(tmp_path_factory, "rehearse-day", *SMALL, "--pairings",
                       "{folder}/pairings.csv", files={"pairings.csv": PAIRINGS})


def test_a_small_day_with_the_default_faults_agrees_with_its_plan(day):
    """table-1 rebooted mid-move (restored) and unplugged for a minute, the
    logger killed and restarted, table-3 plugged in after START."""
    out, res = day
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    # one verdict line a table and a round, and the summary
    assert sum(ln.startswith("round 1 table-") and ln.endswith(": agreed") for ln in lines) == 3
    assert any(ln.startswith("round 1 table-1") and "1 reboot" in ln for ln in lines)
    assert any(ln.startswith("round 1: 3 tables") and "every check held" in ln for ln in lines)
    assert lines[-1].startswith("3 tables × 1 round: 1 reboot restored, 1 clock unplugged, "
                                "1 logger restart, 1 late clock, 0 records lost"), lines[-1]
    assert "every view agreed at " in lines[-1]
    for name in ("plan.json", "round1.jsonl", "round1.report.txt", "round1.csv"):
        assert (out / name).stat().st_size > 0, name
    report = (out / "round1.report.txt").read_text(encoding="utf-8")
    assert all(f"table-{i}" in report for i in (1, 2, 3))
    # the players' names (--pairings) in the verdicts and the round's report
    assert any(ln.startswith("round 1 table-1 (Jana Nováková vs Petr Dvořák): ")
               for ln in lines), lines
    assert "Nováková" in report and "Černý" in report
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    assert {f["kind"] for f in plan["rounds"][0]["faults"]} == {"reboot", "unplug", "logger",
                                                                "late"}
    # the round's START reached each clock once: none after a reboot's restore gave the
    # round back, none from the restarted logger (a refusal, round_started, is noise)
    from hallclock.link.logfile import read_records
    assert not [r for r in read_records(str(out / "round1.jsonl"))
                if r["event"] == "refused" and r.get("what") == "round"]


def _copy(day, tmp_path):
    out, res = day
    assert res.returncode == 0, res.stdout + res.stderr
    for name in ("plan.json", "round1.jsonl", "round1.referee.jsonl"):
        shutil.copy(out / name, tmp_path / name)
    plan = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))
    return plan, str(tmp_path / "round1.jsonl")


def _check(plan, tmp_path, log):
    said = []
    d = rehearsal.Day(plan, str(tmp_path), say=said.append)
    d.check_round(plan["rounds"][0], log)
    return d, said


def _check_log(plan, tmp_path, log):
    """The log check alone (no report, no views): each table's records
    against the plan played into the clock's code."""
    from hallclock.link.logfile import read_records
    d = rehearsal.Day(plan, str(tmp_path), say=lambda s: None)
    records = read_records(log)
    for t in plan["rounds"][0]["tables"]:
        d.check_table(plan["rounds"][0], t, [r for r in records if r.get("clock") == t["clock"]],
                      {})
    return d


def test_the_copy_agrees_again(day, tmp_path):
    plan, log = _copy(day, tmp_path)
    d, said = _check(plan, tmp_path, log)
    assert d.failures == [], d.failures
    assert d.checkpoints >= 4 and d.figures["compared"] > 20


def _a_late_press_off_by_a_second_fails(plan, tmp_path, log, field):
    """The last press past move 1 changed by a second in ``field`` (a quick
    replay after it): the log check fails naming that clock and field."""
    lines = open(log, encoding="utf-8").read().splitlines()
    for i in range(len(lines) - 1, 0, -1):
        r = json.loads(lines[i])
        if r["event"] == "press" and r.get("move", 0) >= 2:
            r[field] += 1000
            lines[i] = json.dumps(r)
            clock = r["clock"]
            break
    open(log, "w", encoding="utf-8").write("\n".join(lines) + "\n")
    d = _check_log(plan, tmp_path, log)
    assert d.failures
    where, check, text = d.failures[0]
    assert where == f"round 1 {clock}" and check == "log" and field in text


def test_a_tampered_press_fails_the_log_check(day, tmp_path):
    """One press's used time changed by a second (ČAS 10.2.6 hangs on it)."""
    plan, log = _copy(day, tmp_path)
    _a_late_press_off_by_a_second_fails(plan, tmp_path, log, "used_ms")


def test_a_record_lost_from_the_log_is_counted(day, tmp_path):
    plan, log = _copy(day, tmp_path)
    lines = open(log, encoding="utf-8").read().splitlines()
    gone = max(i for i, ln in enumerate(lines) if json.loads(ln)["event"] == "warn")
    del lines[gone]
    open(log, "w", encoding="utf-8").write("\n".join(lines) + "\n")
    d = _check_log(plan, tmp_path, log)
    assert d.figures["lost"] == 1
    assert any(c == "log" for _w, c, _t in d.failures)


def test_a_view_that_disagrees_fails_naming_it(day, tmp_path, monkeypatch):
    """The live view made to show one second more on A's display."""
    from hallclock.hall import display  # noqa: F401 (its own row_cells, bound before the patch)
    from hallclock.views import liveview
    real = liveview.row_cells

    def wrong(c, face):
        cells = real(c, face)
        if cells["A"] and cells["A"][-1].isdigit():
            cells["A"] = cells["A"][:-1] + str((int(cells["A"][-1]) + 1) % 10)
        return cells
    monkeypatch.setattr(liveview, "row_cells", wrong)
    plan, log = _copy(day, tmp_path)
    d, _said = _check(plan, tmp_path, log)
    assert any(c == "live view" and w.startswith("round 1 checkpoint") for w, c, _t in d.failures)


def test_the_command_exits_non_zero_naming_the_check(tmp_path, monkeypatch, capsys):
    """The projector made to lose a table: the day is played, and the exit
    (1) names the check that failed."""
    from hallclock import cli
    from hallclock.hall import display
    real = display.face

    def losing(*args, **kwargs):
        out = real(*args, **kwargs)
        out["tables"] = [t for t in out.get("tables", []) if t["clock"] != "table-1"]
        return out
    monkeypatch.setattr(display, "face", losing)
    code = cli.main(["rehearse", "--tables", "2", "--speed", "200", "--set", "round_min=2",
                     "--set", "round_warn_min=1", "--set", "move_s=60", "--faults", "none",
                     "--out", str(tmp_path / "day")])
    got = capsys.readouterr()
    assert code == 1
    assert "hallclock: rehearse: " in got.err and " checks failed; the first: " in got.err
    assert "projector: FAILED: table-1 is not among its tables" in got.out
    assert "every view agreed" not in got.out


def test_bad_input_is_refused_in_one_line(tmp_path):
    res = run_cli("rehearse", "--faults", "meteor", "--out", str(tmp_path / "x"))
    assert res.returncode == 2 and "--faults" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("rehearse", "--plan", str(tmp_path / "nope.json"), "--out", str(tmp_path))
    assert res.returncode == 2 and "--plan" in res.stderr
    res = run_cli("rehearse", "--mode", "duplicate", "--out", str(tmp_path / "y"))
    assert res.returncode == 2 and "--mode duplicate" in res.stderr
    assert "scrabble and backgammon" in res.stderr and "Traceback" not in res.stderr


def test_a_pause_tagged_otherwise_fails_the_console_detail_and_the_csv(day, tmp_path):
    """The referee log says another reason than the referee gave: the
    console's detail and the report's CSV both disagree with the plan."""
    plan, log = _copy(day, tmp_path)
    ref = tmp_path / "round1.referee.jsonl"
    lines = ref.read_text(encoding="utf-8").splitlines()
    for i, ln in enumerate(lines):
        r = json.loads(ln)
        if r.get("event") == "pause_reason" and r.get("table") != "table-1":
            r["reason"] = "break" if r["reason"] != "break" else "dispute"
            lines[i] = json.dumps(r)
            table = r["table"]
            break
    ref.write_text("\n".join(lines) + "\n", encoding="utf-8")
    d, _said = _check(plan, tmp_path, log)
    checks = {(w, c) for w, c, _t in d.failures}
    assert (f"round 1 {table}", "report CSV") in checks
    assert any(c == "console detail" and w.startswith("round 1 checkpoint") for w, c in checks)


def test_a_projector_round_time_that_disagrees_fails(day, tmp_path, monkeypatch):
    """The projector's round time (its largest type) a second off."""
    from hallclock.hall import display
    real = display.face

    def off(*args, **kwargs):
        out = real(*args, **kwargs)
        if out.get("view") == "round" and out.get("digits", "").replace(":", "").isdigit():
            out["digits"] = out["digits"][:-1] + str((int(out["digits"][-1]) + 1) % 10)
        return out
    monkeypatch.setattr(display, "face", off)
    plan, log = _copy(day, tmp_path)
    d, _said = _check(plan, tmp_path, log)
    assert any(c == "projector" and "round time left" in t for _w, c, t in d.failures)


def test_the_day_s_plan_reads_back_and_a_bad_one_is_refused_naming_the_table(day, tmp_path):
    out, _res = day
    plan = rehearsal.load_plan(str(out / "plan.json"))
    assert plan == json.loads((out / "plan.json").read_text(encoding="utf-8"))
    # the same seed and flags make the same plan (a day can be played again)
    again = rehearsal.make_plan(3, 1, "scrabble", rehearsal.settings_mod.parse_text(
        "scrabble", plan["settings"]), plan["speed"], plan["faults"], seed=plan["seed"])
    assert json.loads(json.dumps(again)) == plan
    plan["rounds"][0]["tables"][1]["actions"][2][2] = "C"  # no such button
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(plan), encoding="utf-8")
    res = run_cli("rehearse", "--plan", str(bad), "--out", str(tmp_path / "d"))
    assert res.returncode == 2 and "table-2" in res.stderr and "Traceback" not in res.stderr


def test_a_console_server_that_shows_another_card_fails(day, tmp_path):
    """The console's server (a stand-in answering its grid) with one card's
    time left changed: the check names the console."""
    from hallclock.hall import referee
    plan, log = _copy(day, tmp_path)

    class Stub:
        def get(self, path):
            grid = referee.grid(referee.RoundTail(log), 0.0)
            grid["tables"][0]["left"] = "9:59"
            return grid
    d = rehearsal.Day(plan, str(tmp_path), say=lambda s: None)
    d.check_console("round 1", Stub(), log, max_s=0.2)
    assert d.failures and d.failures[0][:2] == ("round 1", "console")
    assert "9:59" in d.failures[0][2]


BG = ["--mode", "backgammon", "--tables", "3", "--speed", "150", "--set", "match=3"]


@pytest.fixture(scope="module")
def bg_day(tmp_path_factory):
    """A backgammon day (slow-play clocks: a bank a player, 15 s delay), once a run."""
    return played_once(tmp_path_factory, "rehearse-bg-day", *BG)


def test_a_backgammon_day_with_the_default_faults_agrees_with_its_plan(bg_day):
    """The same faults on backgammon clocks: every bank, delay and pause the
    log, the report and the views show is the backgammon core's (İSTAVDER
    2.4, 4, 6.1); the clocks take the round's number, and no GONG is planned
    (a backgammon clock gives no hall gongs)."""
    out, res = bg_day
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert sum(ln.startswith("round 1 table-") and ln.endswith(": agreed") for ln in lines) == 3
    assert lines[-1].startswith("3 tables × 1 round: 1 reboot restored, 1 clock unplugged, "
                                "1 logger restart, 1 late clock, 0 records lost"), lines[-1]
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    assert plan["mode"] == "backgammon" and plan["rounds"][0]["gong_ms"] is None
    from hallclock.link.logfile import read_records
    recs = read_records(str(out / "round1.jsonl"))
    assert {r["mode"] for r in recs if r["event"] == "boot"} == {"backgammon"}
    assert sum(r["event"] == "resume" for r in recs) >= 1  # the reboot's game given back
    assert not any(r["event"] == "refused" for r in recs)  # START taken once a session


def test_a_backgammon_bank_off_by_a_second_fails_the_log_check(bg_day, tmp_path):
    out, res = bg_day
    assert res.returncode == 0, res.stdout + res.stderr
    for name in ("plan.json", "round1.jsonl"):
        shutil.copy(out / name, tmp_path / name)
    plan = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))
    log = str(tmp_path / "round1.jsonl")
    _a_late_press_off_by_a_second_fails(plan, tmp_path, log, "bank_ms")


# -- the hall network (--transport mqtt) -----------------------------------------------
@pytest.fixture(scope="module")
def mqtt_day(tmp_path_factory):
    """The same small day over the hall's Wi-Fi path (a Mosquitto the
    rehearsal starts from broker-config's folder), its default faults, played
    once a test run."""
    return played_once(tmp_path_factory, "rehearse-mqtt-day", "--transport", "mqtt", *SMALL)


def test_a_small_day_over_mqtt_agrees_with_its_plan(mqtt_day):
    """table-1 rebooted mid-move (restored) and off the Wi-Fi for a minute
    (its socket closed, its reconnects refused: it plays on and delivers its
    events when back), the broker stopped and started again mid-round
    (clocks, logger and view reconnect: nothing lost or doubled), the logger
    killed and restarted, table-3 on the network after START, a second
    laptop's view checked at the checkpoints."""
    out, res = mqtt_day
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert sum(ln.startswith("round 1 table-") and ln.endswith(": agreed") for ln in lines) == 3
    assert lines[-1].startswith("3 tables × 1 round over MQTT: 1 reboot restored, 1 clock "
                                "unplugged, 1 broker restart, 1 logger restart, 1 late "
                                "clock, 0 records lost, 0 doubled, 1 second laptop viewing ("
                                ), lines[-1]
    assert "0 missed), every view agreed at " in lines[-1]
    rows = int(lines[-1].split("second laptop viewing (")[1].split(" row")[0])
    assert rows >= 8  # its rows compared at the checkpoints
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    assert plan["transport"] == "mqtt"
    faults = plan["rounds"][0]["faults"]
    assert {f["kind"] for f in faults} == {"reboot", "unplug", "logger", "broker", "late",
                                           "viewer"}
    assert [f["clock"] for f in faults if f["kind"] == "unplug"] == ["table-1"]
    # table-1's link really went away: its socket closed under it (no clean DISCONNECT),
    # then it was back on the broker
    said = (out / "broker.log").read_text(encoding="utf-8").splitlines()
    cut = [i for i, ln in enumerate(said) if "Client table-1 closed its connection" in ln]
    assert cut, "table-1's connection was never cut"
    assert any(" as table-1 " in ln for ln in said[cut[0]:])
    # the broker really went down and came back: Mosquitto ran twice on its folder
    assert (out / "broker.log").read_text(encoding="utf-8").count(" running") == 2
    assert (out / "broker" / "credentials.json").exists()  # broker-config's own folder
    view = (out / "round1.view.txt").read_text(encoding="utf-8")
    assert all(f"table-{i} " in view for i in (1, 2, 3))
    for name in ("round1.jsonl", "round1.report.txt", "round1.csv"):
        assert (out / name).stat().st_size > 0, name


def _mqtt_copy(mqtt_day, tmp_path):
    out, res = mqtt_day
    assert res.returncode == 0, res.stdout + res.stderr
    for name in ("plan.json", "round1.jsonl", "round1.referee.jsonl", "round1.view.txt"):
        shutil.copy(out / name, tmp_path / name)
    plan = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))
    return plan, str(tmp_path / "round1.jsonl"), tmp_path / "round1.view.txt"


def _mqtt_check(plan, tmp_path, log):
    d = rehearsal.Day(plan, str(tmp_path), say=lambda s: None, transport="mqtt")
    d.check_round(plan["rounds"][0], log)
    return d


def test_the_mqtt_copy_agrees_again(mqtt_day, tmp_path):
    plan, log, _view = _mqtt_copy(mqtt_day, tmp_path)
    d = _mqtt_check(plan, tmp_path, log)
    assert d.failures == [], d.failures
    assert d.figures["viewer_rows"] >= 8 and d.figures["doubled"] == 0


def test_a_second_laptop_showing_another_time_fails(mqtt_day, tmp_path):
    """table-2's view says a second more left on every line with a time."""
    plan, log, view = _mqtt_copy(mqtt_day, tmp_path)
    lines = view.read_text(encoding="utf-8").splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("table-2 ") and ln.endswith(" left]"):
            left = ln.rsplit("[", 1)[1].split(" ")[0]
            lines[i] = ln.replace(f"[{left} left]", f"[{left}9 left]")
    view.write_text("\n".join(lines) + "\n", encoding="utf-8")
    d = _mqtt_check(plan, tmp_path, log)
    bad = [(w, c, t) for w, c, t in d.failures if c == "second laptop"]
    assert bad and bad[0][0].startswith("round 1 checkpoint") and "table-2" in bad[0][2]


def test_a_second_laptop_that_doubles_or_misses_a_record_fails(mqtt_day, tmp_path):
    plan, log, view = _mqtt_copy(mqtt_day, tmp_path)
    lines = view.read_text(encoding="utf-8").splitlines()
    presses = [i for i, ln in enumerate(lines) if ln.startswith("table-3 ") and " press " in ln]
    lines.insert(presses[0], lines[presses[0]])  # shown twice
    del lines[presses[-1] + 1]  # and the last press never shown
    view.write_text("\n".join(lines) + "\n", encoding="utf-8")
    d = _mqtt_check(plan, tmp_path, log)
    said = [t for _w, c, t in d.failures if c == "second laptop"]
    assert any("1 records shown twice (the first: table-3 #" in t for t in said), said
    assert any("1 records of the log never shown (the first: table-3 #" in t for t in said), said
    assert d.figures["viewer_missed"] == 1


def test_a_record_stored_twice_over_mqtt_is_counted_and_fails(mqtt_day, tmp_path):
    """The broker's restart must not double a record in the log."""
    plan, log, _view = _mqtt_copy(mqtt_day, tmp_path)
    lines = open(log, encoding="utf-8").read().splitlines()
    i = next(i for i, ln in enumerate(lines) if json.loads(ln)["event"] == "press")
    lines.insert(i, lines[i])
    open(log, "w", encoding="utf-8").write("\n".join(lines) + "\n")
    d = _mqtt_check(plan, tmp_path, log)
    assert d.figures["doubled"] == 1
    assert any(c == "log" and t.endswith(f"the log has record #{json.loads(lines[i])['seq']} "
                                         "twice") for _w, c, t in d.failures), d.failures


def test_a_fault_of_the_other_path_is_refused(tmp_path):
    """The broker and the second laptop are the hall network's; a clock
    unplugged is both paths' (its cable, or its Wi-Fi)."""
    res = run_cli("rehearse", "--faults", "broker", "--out", str(tmp_path / "y"))
    assert res.returncode == 2 and "'broker' is a fault of --transport mqtt" in res.stderr
    res = run_cli("rehearse", "--faults", "unplug,viewer", "--out", str(tmp_path / "z"))
    assert res.returncode == 2 and "'viewer' is a fault of --transport mqtt" in res.stderr
    assert rehearsal.parse_faults("unplug", "mqtt") == ["unplug"]
    assert "unplug" in rehearsal.parse_faults(None, "mqtt")


def test_a_backgammon_day_over_mqtt_shows_the_rebooted_banks_on_the_second_laptop(tmp_path):
    """A rebooted slow-play clock over the network: the second laptop, which
    reads only the clocks (never the logger's power_loss with the restore it
    sent), shows both banks as the clock does after its game is given back
    (İSTAVDER: each player's bank is theirs), at every checkpoint."""
    res = run_cli("rehearse", "--transport", "mqtt", *BG, "--out", str(tmp_path / "day"),
                  timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr
    last = res.stdout.splitlines()[-1]
    assert "1 reboot restored" in last and "0 missed" in last and "every view agreed" in last


def test_a_gong_taken_while_a_press_settles_comes_before_it_as_on_the_clock():
    """The referee's GONG reaches the clock 8 ms after a contact closed, before
    the buttons' debounce (hw/buttons.py, 12 ms) hands the press over: the
    clock logs the gong in the move before the press (a 12-table day at 60x
    met it), and the plan's truth must say the same."""
    from hallclock_fw.events import BTN_GONG
    values = rehearsal.settings_mod.parse("scrabble", [])
    acts = [(1000, "press", "B"), (5000, "press", "B"), (20000, "press", "A"),
            (40000, "press", "B"), (41000, "end", None)]
    truth = rehearsal.play_truth("scrabble", values, acts, [(20008, BTN_GONG)])
    evs = [(e["event"], e["t_ms"], e.get("move")) for e in truth.events
           if e["event"] in ("press", "gong") and e["t_ms"] >= 20000]
    gong = next(e for e in evs if e[0] == "gong")
    press = next(e for e in evs if e[0] == "press" and e[1] == 20000)
    assert evs.index(gong) < evs.index(press), evs
    assert gong[2] == press[2], evs  # the gong's move is the press's, not the next


def test_a_round_frame_refused_after_a_restore_is_in_the_truth():
    """The restore gives the round back (its own 'round' record), and the
    host's round frame sent besides is refused (round_started): both inputs
    are played, so the truth has the refusal the clock logged."""
    values = rehearsal.settings_mod.parse("scrabble", [])
    restore = {"mode": "scrabble", "settings": rehearsal.settings_mod.format_text(
        "scrabble", values), "values": [26, 1, 120000, 0, 1, 1872565, -1, 0]}
    recs = [{"event": "boot", "t_ms": 0}, {"event": "health", "t_ms": 0},
            {"event": "resume", "t_ms": 1}, {"event": "round", "t_ms": 1, "round": 1,
                                            "elapsed_ms": 1872565},
            {"event": "refused", "t_ms": 1, "what": "round", "reason": "round_started"}]
    inputs = rehearsal.host_inputs(recs, 1, restore)
    truth = rehearsal.play_truth("scrabble", values, [(52741, "press", "B"),
                                                      (60000, "end", None)], inputs)
    got = [(e["event"], e.get("what")) for e in truth.events if e["t_ms"] == 1]
    assert got == [("resume", None), ("round", None), ("refused", "round")], got


@pytest.mark.parametrize("before", [0, 5, 11, 12])
def test_a_press_whose_contact_closes_just_before_a_gong_is_logged_as_the_clock_does(
        tmp_path, before):
    """A contact that closes ``before`` ms ahead of the ten-minute gong (ČAS
    6.1) or of the mover's 30 s warning (16.8): the buttons hand the press over
    DEBOUNCE_MS later (hw/buttons.py), so a signal due in between comes first
    and the press keeps the moment its contact closed (a CI day met it at
    180 000 ms, the gong at 180 002).  The truth is played against the virtual
    clock's own log, record by record."""
    from hallclock.vboard.device import simulate
    from hallclock.link.logfile import read_records
    from hallclock.views.model import same
    values = rehearsal.settings_mod.parse("scrabble", ["round_min=4", "round_warn_min=1"])
    start = 2
    gong = start + 180000  # START keeps the moment its contact closed too
    acts = [(start, "press", "START"), (1000, "press", "B"), (60000, "press", "A"),
            (100000, "press", "B"), (150000, "press", "A"),
            (gong - before, "press", "B"),  # A's 30 s warning is due 90 s later:
            (gong - before + 90000 - before, "press", "A"), (300000, "end", None)]
    out = tmp_path / "log.jsonl"
    simulate(acts, "scrabble", values, str(out))
    got = [r for r in read_records(str(out))
           if r.get("event") not in ("health", "power_loss", "gap") and "t_ms" in r]
    assert any(r["event"] == "gong" and r["t_ms"] == gong for r in got), got
    warned = any(r["event"] == "warn" and r["t_ms"] == gong - before + 90000 for r in got)
    assert warned == (before < rehearsal.DEBOUNCE_MS), got  # taken in the warning's pass: none
    truth = rehearsal.play_truth("scrabble", values, acts, [])
    want = truth.events
    assert len(want) == len(got), (want, got)
    for e, r in zip(want, got):
        assert same(e, r), (e, r)


def test_a_press_still_settling_when_the_power_goes_is_not_in_the_truth(tmp_path):
    """A contact closed 5 ms before the power loss is never handed over (the
    debounce needs 12): the clock's first session logs no press, nor may the
    plan's truth, which is cut at the reboot."""
    from hallclock.vboard.device import simulate
    from hallclock.link.logfile import read_records
    values = rehearsal.settings_mod.parse("scrabble", [])
    presses = [(1000, "press", "B"), (39995, "press", "A")]
    out = tmp_path / "log.jsonl"
    simulate(presses + [(40000, "reboot", None), (50000, "end", None)], "scrabble", values,
             str(out))
    first = read_records(str(out))[0]["session"]
    logged = [r["event"] for r in read_records(str(out)) if r["session"] == first]
    truth = rehearsal.play_truth("scrabble", values, presses, [], until=40000)
    assert "press" not in logged, logged
    assert [e["event"] for e in truth.events if e["event"] in ("press", "turn")] == ["turn"]


def test_a_face_between_a_late_taken_press_and_its_pass_shows_the_press():
    """The views show a press from the moment its contact closed (the log's
    t_ms); the truth's face there does too when a gong made the press wait
    for the debounce (a README day: table-3 at 180 011 ms, press at 180 000)."""
    values = rehearsal.settings_mod.parse("scrabble", ["round_min=4", "round_warn_min=1"])
    acts = [(2, "press", "START"), (180000, "press", "B"), (200000, "end", None)]
    faces = [179999, 180000, 180005, 180011, 180012]
    truth = rehearsal.play_truth("scrabble", values, acts, [], faces=faces)
    assert [e["event"] for e in truth.events if 180000 <= e["t_ms"] < 180100] == \
        ["gong", "turn"]
    assert truth.faces[179999].move is None
    assert all(truth.faces[f].move == 1 for f in faces[1:]), [truth.faces[f].move for f in faces]
    assert truth.faces[180011].displays[0].strip() == "2:00"
