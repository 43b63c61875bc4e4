"""Set-up at the clock (docs/contract.md "Set-up at the clock"): PAUSE held
5 s while no game runs, A lowers, B raises, PAUSE goes on and saves after
the last field, PAUSE held 1.5 s leaves; the saved hallclock.cfg comes back
after a reboot and a power cut in the save leaves the old or the new file,
on CPython, the 32-bit webassembly VM and the unix port."""
import sys

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from conftest import read_log, run_cli, strip_host
from hallclock import scenario
from hallclock.vboard.vdev.runner import Runner
from hallclock_fw import settings as settings_mod
from hallclock_fw.hw import cfgsave, config
from hallclock_fw import signals
from hallclock_fw.setup_mode import P_SETUP, Setup, fields

# scrabble's fields: mode, move_s, warn_s, round_min, round_warn_min
FIRST_SAVE = """\
0 hold PAUSE 5000
6000 press PAUSE
7000 press B
7500 press B
8000 press PAUSE
9000 press PAUSE
10000 press A
11000 press PAUSE
12000 press PAUSE
"""
# a second set-up after a reboot: move_s 140 -> 110, round_min 35 -> 40
SECOND_SAVE = """\
20000 hold PAUSE 5000
26000 press PAUSE
27000 press A
27500 press A
28000 press A
29000 press PAUSE
30000 press PAUSE
31000 press B
32000 press PAUSE
33000 press PAUSE
"""
OLD = {"move_s": 140, "warn_s": (30, 20, 10), "round_min": 35, "round_warn_min": 10}
NEW = {"move_s": 110, "warn_s": (30, 20, 10), "round_min": 40, "round_warn_min": 10}


def run(text, mode="scrabble", values=None, record=False):
    actions = [a.as_tuple() for a in scenario.parse_text(text)]
    r = Runner(mode, values if values is not None else settings_mod.defaults(mode), actions,
               record=record)
    events = []
    inner = r.app.link.emit

    def emit(t_ms, code, *v):
        events.append((r.boots, code))
        return inner(t_ms, code, *v)

    r.app.link.emit = emit
    r.boots_seen = [(r.boots, r.mode, dict(r.settings))]
    boots = r.boots
    while r.step() == 0:
        if r.boots != boots:  # a reboot (or a power cut): what the new session read
            boots = r.boots
            r.boots_seen.append((r.boots, r.app.mode, dict(r.app.settings)))
    return r


def test_the_gesture_sets_and_saves_and_the_setting_survives_a_reboot():
    r = run(FIRST_SAVE + "14000 reboot\n15000 end\n", record=True)
    assert r.boots_seen[-1][1:] == ("scrabble", OLD)
    saved = config.parse(r.read_config(), "x")
    assert saved.error is None and saved.settings == OLD and saved.clock == "virtual-1"
    # the short distinct beep when set-up opened, at the end of the 5 s hold
    assert (5000, P_SETUP[0]) in r.buzzer.changes
    others = [getattr(signals, n) for n in dir(signals) if n.startswith("P_")]
    assert P_SETUP not in others and P_SETUP[0] not in [p[0] for p in others]


def test_displays_name_the_field_and_its_value():
    text = "0 hold PAUSE 5000\n6000 press PAUSE\n7000 press B\n"
    actions = [a.as_tuple() for a in scenario.parse_text(text + "8000 end\n")]
    r = Runner("scrabble", settings_mod.defaults("scrabble"), actions)
    seen = []
    while r.step() == 0:
        seen.append((r.displays[0].text, r.displays[1].text))
    assert ("ty PE", "SC rA") in seen  # the mode
    assert ("tU rn", " 2:00") in seen  # move_s, as the clock shows a time
    assert ("tU rn", " 2:10") in seen  # B raised it by 10 s


def test_holding_pause_1_5_s_leaves_without_saving():
    r = run("0 hold PAUSE 5000\n6000 press PAUSE\n7000 press B\n8000 hold PAUSE 1500\n"
            "11000 press B\n12000 reboot\n13000 end\n")
    assert r.flash is None  # nothing was ever written
    assert r.boots_seen[-1][2] == settings_mod.defaults("scrabble")
    assert r.app.setup is None
    # the press after leaving was an ordinary press again (B starts A's first move)
    assert "hallclock_fw.setup_mode" not in sys.modules  # dropped after set-up


def test_a_hold_at_the_last_field_does_not_save():
    r = run("0 hold PAUSE 5000\n" + "".join("%d press PAUSE\n" % (6000 + 1000 * i)
                                            for i in range(4))
            + "11000 hold PAUSE 2000\n14000 end\n")
    assert r.flash is None and r.app.setup is None


def test_no_set_up_while_a_game_runs():
    r = run("0 press START\n1000 press B\n2000 hold PAUSE 6000\n9000 press B\n10000 end\n")
    assert r.app.setup is None and not r.app.armed
    assert r.app.core.move >= 1


@pytest.mark.parametrize("mode", settings_mod.MODES)
def test_fields_follow_the_settings_table(mode):
    keys = [k for k, _kind, _d in settings_mod.SPEC[mode]]
    got = fields(mode)
    assert got[0] == "mode"
    flat = [("score" if f.startswith("score_") else f) for f in got[1:]]
    assert [k for i, k in enumerate(flat) if i == 0 or flat[i - 1] != k] == keys


@hsettings(max_examples=150, derandomize=True, deadline=None)
@given(st.sampled_from(settings_mod.MODES),
       st.lists(st.sampled_from(["A", "B", "PAUSE"]), max_size=80))
def test_no_impossible_value_can_be_chosen(mode, presses):
    s = Setup(mode, settings_mod.defaults(mode))
    for p in presses:
        if p == "PAUSE":
            if s.next_field():
                s.index = 0
        else:
            s.change(-1 if p == "A" else 1)
        settings_mod.validate(s.mode, dict(s.values))  # raises on an impossible value
        assert settings_mod.parse_text(s.mode, settings_mod.format_text(s.mode, s.values)) \
            == s.settings()[1]
        s.texts()


def test_steps_fit_the_field():
    s = Setup("scrabble", settings_mod.defaults("scrabble"))
    s.next_field()
    s.change(1)
    assert s.values["move_s"] == 130
    for _ in range(20):
        s.change(-1)
    assert s.values["move_s"] == 40  # a warning at 30 s needs more than 30 s
    s.next_field()
    s.change(1)  # the next preset that fits under 40 s: (20, 10), skipping (60, 30, 10)
    assert s.values["warn_s"] == (20, 10)
    b = Setup("backgammon", dict(settings_mod.defaults("backgammon"), score=(2, 4)))
    b.index = fields("backgammon").index("score_a")
    for _ in range(10):
        b.change(1)
    assert b.values["score"] == (6, 4)  # a 7-point match: at most 6
    b.index = fields("backgammon").index("delay")
    b.change(1)
    assert b.values["delay"] == "bronstein"


def test_backgammon_score_fields_show_the_bank_they_give():
    """İSTAVDER 2.4: the points the trailing player still needs × per_point_s,
    the figure `backgammon-time` prints for the same match and score."""
    s = Setup("backgammon", settings_mod.defaults("backgammon"))
    s.index = fields("backgammon").index("score_b")
    s.change(1)
    s.change(1)  # 0-2
    label, bank = s.texts()
    assert label == "b  2" and bank == 7 * 150 * 1000
    res = run_cli("backgammon-time", "--match", "7", "--score", "0-2")
    assert res.returncode == 0, res.stderr
    assert "17:30 (1050 s) per player" in res.stdout
    s.index = fields("backgammon").index("score_a")
    s.change(1)  # 1-2: the trailing player needs 6
    assert s.texts() == ("A  1", 6 * 150 * 1000)


def test_saved_file_keeps_the_clock_name_and_the_network():
    old = ("clock = table-07  # the name\nbrightness = 3\nmode = backgammon\nmatch = 5\n"
           "wifi_ssid = H\nwifi_password = p\nbroker = 10.0.0.1:1883\nhall = h\nuser = u\n"
           "password = q\nkey = " + "1f" * 16 + "\nhall_key = " + "2e" * 16 + "\n")
    text = cfgsave.cfg_text(old, "scrabble", settings_mod.format_text(
        "scrabble", dict(settings_mod.defaults("scrabble"), move_s=90)))
    cfg = config.parse(text, "x")
    assert cfg.error is None and cfg.clock == "table-07" and cfg.brightness == 3
    assert cfg.mode == "scrabble" and cfg.settings["move_s"] == 90 and cfg.net["hall"] == "h"
    assert "match" not in text


def _save_ops():
    r = run(FIRST_SAVE + "14000 reboot\n" + SECOND_SAVE + "35000 end\n")
    assert r.boots_seen[-1][2] == NEW or r.app.settings == NEW
    return r.flash.ops


def test_a_power_cut_at_any_moment_of_the_save_leaves_old_or_new():
    """Every flash operation of the second save (the new file written block
    by block, the old one removed, the new one renamed) as the moment the
    power goes: after the restart the clock has the old settings or the new
    ones, never a broken file or the defaults."""
    first = run(FIRST_SAVE + "14000 reboot\n15000 end\n").flash.ops
    total = _save_ops() - first
    assert total >= 4  # open, blocks, remove, rename
    results = set()
    for n in range(total + 1):
        r = run(FIRST_SAVE + "14000 reboot\n" + SECOND_SAVE.replace(
            "32000 press PAUSE", "32000 press PAUSE\n32500 power-cut-save %d" % n)
            + "35000 reboot\n36000 end\n")
        booted = r.boots_seen[-1][2]
        assert booted in (OLD, NEW), (n, booted)
        cfg = config.parse(r.read_config(), "x")
        assert cfg.error is None and cfg.settings == booted
        results.add(booted == NEW)
    assert results == {False, True}  # early cuts keep the old, the last the new


def test_power_cut_save_needs_a_count():
    from hallclock.errors import BadInput
    with pytest.raises(BadInput, match="power-cut-save"):
        scenario.parse_text("0 power-cut-save\n1 end\n")
    with pytest.raises(BadInput, match="x"):
        scenario.parse_text("0 power-cut-save x\n1 end\n")


# the second save: open, 4 blocks, remove the old file, rename: a cut at the
# 3rd operation keeps the old file; at the 7th (after the removal) only the
# whole new one is there
@pytest.mark.parametrize("cut, last", [(None, 110), (2, 140), (6, 110)])
def test_same_set_up_log_on_every_interpreter(tmp_path, cut, last):
    """The scenario through CPython, the webassembly VM and the unix port: the
    same log, a reboot between the two saves, and a power cut in the second."""
    second = SECOND_SAVE
    if cut is not None:
        second = second.replace("32000 press PAUSE",
                                "32000 press PAUSE\n32500 power-cut-save %d" % cut)
    path = tmp_path / "s.txt"
    path.write_text(FIRST_SAVE + "14000 reboot\n" + second + "36000 reboot\n37000 end\n")
    logs = {}
    for interp in ("cpython", "micropython", "micropython-unix"):
        out = tmp_path / f"{interp}.jsonl"
        res = run_cli("simulate", "--script", str(path), "--out", str(out),
                      "--interpreter", interp)
        assert res.returncode == 0, (interp, res.stderr)
        logs[interp] = strip_host(read_log(out))
    boots = [r for r in logs["cpython"] if r["event"] == "boot"]
    assert [b["settings"]["move_s"] for b in boots[:2]] == [120, 140]
    assert boots[-1]["settings"]["move_s"] == last
    saved = [r for r in logs["cpython"] if r["event"] == "settings"]
    assert saved and saved[0]["settings"]["move_s"] == 140
    assert logs["micropython"] == logs["cpython"]
    assert logs["micropython-unix"] == logs["cpython"]


def test_every_text_set_up_shows_is_drawable():
    """Each label and value is made of display.CHARS, and the TM1637 driver
    has a segment pattern for every code (an unknown character would be blank)."""
    from hallclock_fw import setup_mode
    from hallclock_fw.display import CHARS
    from hallclock_fw.hw.tm1637 import SEGMENTS
    assert len(SEGMENTS) == len(CHARS)
    texts = [setup_mode._MODE_LABEL] + list(setup_mode._DELAY_TEXT.values())
    for row in settings_mod.ROWS:  # each mode's name and labels (4 characters each)
        assert len(row[3]) == 4 * len(fields(row[0])), row
        texts += [row[3][i:i + 4] for i in range(0, len(row[3]), 4)]
    texts += ["AUto", "nonE"]
    for mode in settings_mod.MODES:
        s = Setup(mode, settings_mod.defaults(mode))
        for _ in fields(mode):
            for shown in s.texts():
                if isinstance(shown, str):
                    texts.append(shown)
            s.next_field()
    for text in texts:
        assert len(text) <= 4 and all(c in CHARS for c in text), text


def test_backgammon_hold_opens_set_up_not_a_break():
    """In backgammon a 1.5 s PAUSE before the first move asks for a break
    (İSTAVDER 2.3); held on to 5 s it is set-up, and leaving it the clock is
    fresh: the next press starts the match."""
    r = run("0 hold PAUSE 5000\n6000 hold PAUSE 1600\n9000 press A\n10000 end\n",
            mode="backgammon")
    assert r.app.setup is None and r.flash is None
    assert r.app.core.move == 1 and r.app.core.running()
