"""Settings are the clock's until changed (docs/contract.md, additions 1.3):
the host's settings (the ``K`` frame ``hallclock configure`` sends, here the
scenario's ``configure`` line, which puts that frame on the link) are saved
to the clock's hallclock.cfg as set-up's are, and are its settings after any
reboot; a power cut at any step of the save leaves the old settings or the
new ones, whole, never the defaults; a save that fails is a ``save_failed``
event and the clock runs on the new settings.  On CPython, the 32-bit
webassembly VM and the unix port (a fixed, board-sized heap)."""
import pytest

from conftest import read_log, run_cli, strip_host
from hallclock import scenario
from hallclock.errors import BadInput
from hallclock.vboard.vdev.flash import FakeFlash
from hallclock.vboard.vdev.runner import Runner
from hallclock_fw import settings as settings_mod
from hallclock_fw.hw import cfgsave, config

# the table's own settings (its hallclock.cfg), and the laptop's
OWN = settings_mod.parse("scrabble", ["move_s=60", "round_min=30"])
LAPTOP = "move_s=30;warn_s=20,10;round_min=2;round_warn_min=1"
NEW = settings_mod.parse_text("scrabble", LAPTOP)
CONFIGURE = "100 configure scrabble " + LAPTOP + "\n"


def run(text, values=OWN, flash=None):
    actions = [a.as_tuple() for a in scenario.parse_text(text)]
    r = Runner("scrabble", values, actions, clock="table-3")
    if flash is not None:
        r.flash = flash
    boots = []
    events = []

    def hook(runner):
        boots.append(dict(runner.app.settings))
        inner = runner.app.link.emit

        def emit(t_ms, code, *v):
            events.append((runner.boots, code, v))
            return inner(t_ms, code, *v)
        runner.app.link.emit = emit

    hook(r)
    seen = r.boots
    while r.step() == 0:
        if r.boots != seen:
            seen = r.boots
            hook(r)
    r.boots_seen = boots
    r.events = events
    return r


def test_the_hosts_settings_come_back_after_a_reboot():
    r = run(CONFIGURE + "2000 reboot\n3000 reboot\n4000 end\n")
    assert r.boots_seen == [OWN, NEW, NEW]  # two reboots in a row: still the laptop's
    cfg = config.parse(r.read_config(), "x")
    assert cfg.error is None and cfg.clock == "table-3" and cfg.settings == NEW


def test_a_clock_the_laptop_never_configured_boots_its_own_file():
    r = run("2000 reboot\n4000 end\n")
    assert r.boots_seen == [OWN, OWN]
    assert r.flash is None  # nothing was written: its file is as deploy left it


def test_settings_refused_mid_game_are_not_saved():
    """ČAS 3.2: new settings only while no game runs; a refused K writes nothing."""
    r = run("0 press START\n500 press B\n1000 configure scrabble " + LAPTOP
            + "\n2000 reboot\n3000 end\n")
    assert r.boots_seen == [OWN, OWN]
    assert r.flash is None


def _save_ops():
    r = run(CONFIGURE + "2000 end\n")
    return r.flash.ops


def test_a_power_cut_at_every_step_of_the_save_leaves_old_or_new():
    """Every flash operation of the save (the new file opened, written block
    by block, the old one's removal where rename will not replace, the
    rename) as the moment the power goes: the clock restarts with its own
    settings or the laptop's, never a broken file or the defaults; and the
    next save after such a cut (a half-written or whole hallclock.cfg.new
    left behind) is as safe."""
    total = _save_ops()
    assert total >= 5  # open, blocks, remove, rename
    kept = set()
    for n in range(total + 1):
        r = run("0 power-cut-save %d\n" % n + CONFIGURE + "2000 reboot\n"
                "3000 power-cut-save 1\n3100 configure scrabble move_s=90\n"
                "5000 reboot\n6000 end\n")
        first = r.boots_seen[1]
        assert first in (OWN, NEW), (n, first)
        kept.add(first == NEW)
        last = r.boots_seen[-1]
        assert last in (first, settings_mod.parse_text("scrabble", "move_s=90")), (n, last)
        cfg = config.parse(r.read_config(), "x")
        assert cfg.error is None and cfg.settings == last and cfg.clock == "table-3"
    assert kept == {False, True}  # early cuts keep the old file, the last step the new


class FullFlash(FakeFlash):
    """A flash with no room left: every block written fails (ENOSPC)."""

    def _op(self):
        if self.files.get("hallclock.cfg.new") == "" and self.ops >= 1:
            raise OSError(28)
        super()._op()


def test_a_save_that_fails_is_logged_and_the_clock_runs_on_the_new_settings():
    flash = FullFlash()
    flash.files["hallclock.cfg"] = "clock = table-3\nmove_s = 60\nround_min = 30\n"
    # (the first press only shows the new settings: ČAS 3.2)
    r = run(CONFIGURE + "1500 press A\n2000 press START\n2500 press B\n3000 end\n", flash=flash)
    from hallclock_fw.events import EV_SAVE_FAILED, EV_SETTINGS
    codes = [c for _b, c, _v in r.events]
    assert codes.index(EV_SAVE_FAILED) > codes.index(EV_SETTINGS)
    assert [v[0] for _b, c, v in r.events if c == EV_SAVE_FAILED] == [28]
    from hallclock_fw.events import EV_TURN
    assert r.app.settings == NEW
    assert [v[2] for _b, c, v in r.events if c == EV_TURN] == [30000]  # A's move: 30 s
    # its file is the old one, whole: a reboot would bring the table's own
    cfg = config.parse(r.read_config(), "x")
    assert cfg.error is None and cfg.settings == OWN


def test_save_failed_in_the_log(tmp_path):
    from hallclock import catalog
    from hallclock_fw import protocol
    from hallclock_fw.events import EV_SAVE_FAILED
    tokens = protocol.check(protocol.unframe(
        protocol.event("0a0b0c0d", 4, 900, EV_SAVE_FAILED, 28, 0, 0, 0)))
    assert catalog.event_fields(tokens)[2:4] == ("save_failed", {"errno": 28})


def test_the_saved_file_keeps_name_network_and_comments_and_drops_other_modes():
    old = ("# table 7\nclock = table-07\nbrightness = 3\nmode = backgammon\nmatch = 5\n"
           "wifi_ssid = H\nwifi_password = p\nbroker = 10.0.0.1:1883\nhall = h\nuser = u\n"
           "password = q\nkey = " + "1f" * 16 + "\nhall_key = " + "2e" * 16 + "\n"
           + cfgsave.END + "\n")
    text = cfgsave.cfg_text(old, "scrabble", LAPTOP)
    cfg = config.parse(text, "x")
    assert cfg.error is None and cfg.clock == "table-07" and cfg.brightness == 3
    assert cfg.mode == "scrabble" and cfg.settings == NEW and cfg.net["hall"] == "h"
    assert "match" not in text and text.count(cfgsave.END) == 1 and "# table 7" in text


def test_configure_lines_are_checked():
    with pytest.raises(BadInput, match="configure: unknown mode"):
        scenario.parse_text("0 configure chess move_s=3\n1 end\n")
    with pytest.raises(BadInput, match="2 argument"):
        scenario.parse_text("0 configure scrabble\n1 end\n")
    with pytest.raises(BadInput, match=r"s\.txt:1: configure: .*move_s"):
        scenario.parse_text("0 configure scrabble move_s=x\n1 end\n", "s.txt")


# a cut at the 1st flash operation (hallclock.cfg.new never opened), at the
# 3rd (half the new file written), after the last (the save whole)
@pytest.mark.parametrize("cut, move_s", [(0, 60), (2, 60), (None, 30)])
def test_configure_then_reboot_on_every_interpreter(tmp_path, cut, move_s):
    """configure, then a reboot (two in a row), through CPython, the
    webassembly VM and the unix port: the same log, the rebooted clock's
    boot record carries the laptop's settings (or its own after a cut)."""
    path = tmp_path / "k.txt"
    text = CONFIGURE + "2000 reboot\n2500 reboot\n3000 press START\n4000 press B\n6000 end\n"
    if cut is not None:
        text = "0 power-cut-save %d\n" % cut + text.replace("2000 reboot\n", "")
    path.write_text(text)
    logs = {}
    for interp in ("cpython", "micropython", "micropython-unix"):
        out = tmp_path / f"{interp}.jsonl"
        res = run_cli("simulate", "--script", str(path), "--out", str(out),
                      "--set", "move_s=60", "--set", "round_min=30", "--interpreter", interp)
        assert res.returncode == 0, (interp, res.stderr)
        logs[interp] = strip_host(read_log(out))
    for interp, log in logs.items():
        boots = [r for r in log if r["event"] == "boot"]
        assert boots[0]["settings"]["move_s"] == 60, interp
        assert [b["settings"]["move_s"] for b in boots[1:]] == [move_s, move_s], interp
        assert boots[-1]["settings"]["round_min"] == (2 if move_s == 30 else 30), interp
    if cut is None:
        # (a cut comes in the pass after the settings event: whether the host
        # had stored it before the power went is a matter of real time)
        assert logs["micropython"] == logs["cpython"]
        assert logs["micropython-unix"] == logs["cpython"]
