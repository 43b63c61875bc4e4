"""A mode is a core, a face and a catalogue row (docs/design.md, "Adding a
mode"): one registry on each side, from which settings, help texts, reports
and views take their mode lists and facts.  The toy hourglass mode of
tests/toymode.py is added from outside the package and runs end to end:
simulate (the real firmware app around its core, the pty, the real logger),
the log, the report (its core replayed by the host's model)."""
import contextlib
import csv
import io
import json
import os

import pytest

import toymode
from hallclock import cli
from hallclock.views import report
from hallclock.views import modes as host_modes
from hallclock_fw import modes, settings


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # --help
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_the_registries_name_the_same_modes():
    assert settings.MODES == tuple(r[0] for r in settings.ROWS)
    assert set(modes.CORES) == set(settings.MODES) == set(host_modes.VIEWS)
    for mode in settings.MODES:
        assert settings.SPEC[mode] == dict((r[0], r[1]) for r in settings.ROWS)[mode]
        core = modes.make_core(mode, settings.defaults(mode) if mode != "backgammon"
                               else settings.parse(mode, []), lambda *a: None)
        assert core.fresh() and not core.running()
        assert host_modes.view_for(mode).name == mode


def test_hall_modes_come_from_the_faces():
    assert host_modes.hall_modes() == tuple(
        m for m in settings.MODES if host_modes.VIEWS[m].hall_signals)
    assert "backgammon" not in host_modes.hall_modes()  # İSTAVDER: no hall signals


@pytest.fixture
def hourglass():
    with toymode.installed():
        yield
    assert toymode.NAME not in settings.MODES and toymode.NAME not in modes.CORES


GAME = """\
0       press START      # the hourglass has no START: nothing
1000    press B          # B's first press turns the glass for A (move 1)
21000   press A          # A took 20 s; B's move 2
90000   press A          # not A's time: nothing
100000  press B          # B's sand ran out at 51 000; B took 79 s; A's move 3
110000  end
"""


def test_a_toy_mode_runs_end_to_end(hourglass, tmp_path):
    script = tmp_path / "game.txt"
    script.write_text(GAME)
    log = tmp_path / "game.jsonl"
    # the help texts take the mode list from the registry
    code, out, _err = run(["simulate", "--help"])
    assert code == 0 and toymode.NAME in out
    code, _out, err = run(["simulate", "--mode", toymode.NAME, "--set", "move_s=30",
                           "--script", str(script), "--out", str(log)])
    assert code == 0, err
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    got = [(r["t_ms"], r["event"], r.get("player"), r.get("move"), r.get("used_ms"))
           for r in recs]
    assert got == [
        (0, "boot", None, None, None),
        (0, "health", None, None, None),  # the first pass's report: any mode has it
        (1000, "turn", "A", 1, None),
        (21000, "press", "A", 1, 20000),
        (21000, "turn", "B", 2, None),
        (51000, "expired", "B", 2, None),
        (100000, "press", "B", 2, 79000),
        (100000, "turn", "A", 3, None),
        (110000, "end", None, None, None),
    ]
    assert recs[0]["mode"] == toymode.NAME and recs[0]["settings"] == {"move_s": 30}
    assert recs[2]["limit_ms"] == 30000

    # the report replays the toy's own core (no mismatch) and lists its moves
    games, skipped = report.load_log(str(log))
    assert not skipped
    (game,) = games
    assert game.modelled is None and game.mismatches == []
    assert [(m.move, m.player, m.used_ms, m.expired) for m in game.moves] == [
        (1, "A", 20000, False), (2, "B", 79000, True), (3, "A", None, False)]
    assert game.moves[2].unfinished
    face = game.clock_model.model.face()
    assert face.facts == {"sand_ms": 20000} and face.displays == (" 0:20", " 0:30")
    out_csv = tmp_path / "game.csv"
    code, out, err = run(["report", str(log), "--csv", str(out_csv)])
    assert code == 0, err
    assert toymode.NAME in out
    rows = list(csv.DictReader(out_csv.open()))
    assert [(r["move"], r["player"], r["used_ms"]) for r in rows] == [
        ("1", "A", "20000"), ("2", "B", "79000"), ("3", "A", "10000")]


def test_a_toy_modes_settings_are_checked_by_its_row(hourglass, tmp_path):
    script = tmp_path / "game.txt"
    script.write_text(GAME)
    code, _out, err = run(["simulate", "--mode", toymode.NAME, "--set", "move_s=0",
                           "--script", str(script), "--out", str(tmp_path / "x.jsonl")])
    assert code == 2 and "move_s must be 1 to 3600" in err
    code, _out, err = run(["simulate", "--mode", toymode.NAME, "--set", "warn_s=3",
                           "--script", str(script), "--out", str(tmp_path / "x.jsonl")])
    assert code == 2 and "settings: move_s" in err
    assert not os.path.exists(tmp_path / "x.jsonl")
    # its face says it takes no hall signals: hall-simulate refuses it by the registry
    code, _out, err = run(["hall-simulate", "--mode", toymode.NAME, "--script", str(script),
                           "--out", str(tmp_path / "h.jsonl")])
    assert code == 2 and "takes no hall signals" in err


def test_without_the_toy_the_mode_is_unknown(tmp_path):
    script = tmp_path / "game.txt"
    script.write_text(GAME)
    code, _out, err = run(["simulate", "--mode", toymode.NAME, "--script", str(script),
                           "--out", str(tmp_path / "x.jsonl")])
    assert code == 2 and "unknown mode" in err


def test_set_up_at_the_clock_takes_a_toy_mode_from_its_row(hourglass):
    """Set-up scrolls onto a mode it was never told of: the mode's name, its
    field's label and its step come from the mode's row (settings.ROWS), the
    seconds field shows as M:SS, and what it saves is the toy's settings."""
    from hallclock_fw.setup_mode import Setup, fields
    s = Setup("backgammon", settings.defaults("backgammon"))
    assert s.texts() == ("tyPE", "bAcG")
    assert s.change(+1) and s.mode == toymode.NAME
    assert s.texts() == ("tyPE", "SAnd")
    assert not s.change(+1)  # the last mode of the catalogue
    assert fields(toymode.NAME) == ["mode", "move_s"]
    assert not s.next_field()
    assert s.texts() == ("tUrn", 45000)
    assert s.change(+1) and s.values["move_s"] == 50  # the row's step: 5 s
    assert s.texts() == ("tUrn", 50000)
    assert s.next_field()  # the last field: save
    assert s.settings() == (toymode.NAME, {"move_s": 50})
    s = Setup(toymode.NAME, {"move_s": 3600})
    s.next_field()
    assert not s.change(+1) and s.values["move_s"] == 3600  # the row's check refuses 3605


def test_the_benchmarks_and_the_display_property_take_a_toy_mode(hourglass, tmp_path):
    """The heap bench, the unix port's calibration and the display property
    iterate the registry: the toy is in their plans, its steady game is a
    two-player game on its own settings (not another mode's), and the display
    property's random scenarios run on it (tests/displayprop.py)."""
    import sys
    from hypothesis import HealthCheck, given, seed, settings as hsettings

    import displayprop
    from hallclock.vboard import bootheap
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
    import heap32
    assert (toymode.NAME, "serial") in heap32.runs() and (toymode.NAME, "wifi") in heap32.runs()
    assert toymode.NAME in displayprop.all_kinds()
    text, pairs = bootheap.long_game(toymode.NAME, minutes=3)
    assert pairs == []  # its own defaults: no backgammon match
    script = tmp_path / "steady.txt"
    script.write_text(text)
    log = tmp_path / "steady.jsonl"
    code, _out, err = run(["simulate", "--mode", toymode.NAME, "--script", str(script),
                           "--out", str(log)])
    assert code == 0, err
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    presses = [r for r in recs if r["event"] == "press"]
    assert len(presses) == text.count("press") - 1  # every move taken, B's first starts
    assert not [r for r in recs if r["event"] == "expired"]  # 17 s a move, 45 s of sand

    @seed(20261203)
    @hsettings(max_examples=12, deadline=None, database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(displayprop.scenario(kinds=(toymode.NAME,)))
    def the_hosts_digits_are_the_clocks(case):
        assert case[0] == toymode.NAME
        compared, mismatches = displayprop.check(*case)
        assert mismatches == [] and compared >= 1

    the_hosts_digits_are_the_clocks()


def _files_a_mode_takes():
    """The files docs/design.md "Adding a mode" lists (its first list)."""
    import re
    root = os.path.join(os.path.dirname(__file__), "..")
    text = open(os.path.join(root, "docs", "design.md"), encoding="utf-8").read()
    section = text.split("## Adding a mode", 1)[1].split("\n## ", 1)[0]
    listed = section.split("The files a new mode takes:", 1)[1].split("\n\n", 2)[1]
    return re.findall(r"^- `([^`]+)`", listed, re.M)


def _snapshot():
    """{module file: its names and what they hold} of the loaded modules of
    both packages (a registry changed shows as a changed value)."""
    import sys
    out = {}
    for name, mod in list(sys.modules.items()):
        if not (name.startswith("hallclock_fw") or name.startswith("hallclock.")):
            continue
        path = getattr(mod, "__file__", None)
        if path is None:
            continue
        state = {}
        for key, value in list(vars(mod).items()):
            if isinstance(value, dict):
                state[key] = (id(value), tuple(value))
            elif isinstance(value, tuple):
                state[key] = (id(value), len(value))
        out[os.path.relpath(path, os.path.join(os.path.dirname(__file__), ".."))] = state
    return out


def test_adding_a_mode_lists_exactly_the_files_it_takes():
    """docs/design.md "Adding a mode" names the files a new mode takes: the
    ones the toy mode adds itself to are exactly its registries' files, and
    every file it names exists (the core's for each mode)."""
    listed = _files_a_mode_takes()
    root = os.path.join(os.path.dirname(__file__), "..")
    assert "firmware/hallclock_fw/core/<mode>.py" in listed
    for path in listed:
        if "<mode>" in path:
            for mode in settings.MODES:
                name = modes.CORES[mode]().__module__.rsplit(".", 1)[-1]
                assert os.path.exists(os.path.join(root, path.replace("<mode>", name))), path
        else:
            assert os.path.exists(os.path.join(root, path)), path
    before = _snapshot()
    with toymode.installed():
        during = _snapshot()
    touched = {path for path, state in during.items() if before.get(path) != state}
    registries = {p for p in listed if p.endswith(".py") and "<mode>" not in p}
    assert touched == registries, (touched, registries)
    assert _snapshot() == before  # and the toy leaves them as they were
