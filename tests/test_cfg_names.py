"""hallclock.cfg's hall and clock names become MQTT topic levels
(``hallclock/<hall>/<clock>/down``): the clock's cfg parser (hw/config.py)
refuses a name outside the topic-safe set (names.py: ``+``, ``#``, ``/``,
spaces, control characters, non-ASCII, empty, longer than 24) with a code
(``CFG8`` a hall, ``CFG2`` a clock) that the console line and both displays
show (``CF G8`` over the idle faces until each changes: by the first
press of each player at the latest) and the health
answer carries (``cfg=8``), which ``hallclock doctor`` words.  The
same parser inside the MicroPython unix port refuses the same names.

Before: ``hall = a/b`` was taken; the clock subscribed to a topic nobody
publishes on (``+``: a wildcard) and said only "the broker closed the
connection"."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_drivers import FakeHW, play_device  # noqa: E402

from hallclock.commands.doctor import verdict  # noqa: E402
from hallclock.link import health  # noqa: E402
from hallclock.vboard import unixport as mpunix  # noqa: E402
from hallclock_fw import VERSION  # noqa: E402
from hallclock_fw.events import BTN_A, BTN_B, BTN_START  # noqa: E402
from hallclock_fw.hw import config, device  # noqa: E402

KEY = "00112233445566778899aabbccddeeff"
NET = ("clock = t1\nwifi_ssid = HALL\nwifi_password = pw\nbroker = 10.0.0.2:1883\n"
       "hall = %s\nuser = t1\npassword = secret\nkey = " + KEY + "\nhall_key = " + KEY + "\n")
BAD_HALLS = ["a/b", "open+", "a b", "t\x1b]0;x\x07", "tab\there", "", "x" * 25, "s\u00e9ance",
             "+", "hall\x00"]


@pytest.mark.parametrize("hall", BAD_HALLS)
def test_a_hall_name_outside_the_topic_safe_set_is_refused_with_its_code(hall):
    cfg = config.parse(NET % hall, "x")
    assert cfg.net is None and cfg.code == 8  # the defaults: the USB link, not the network
    assert cfg.error.startswith("hallclock.cfg:5: hall name ") and cfg.error.endswith("(CFG8)")
    assert "clock" not in cfg.error.split(":", 3)[3]  # its words name the hall


@pytest.mark.parametrize("hall", ["open-2026", "Hall_3.b", "all", "x" * 24])
def test_a_topic_safe_hall_name_is_taken(hall):
    cfg = config.parse(NET % hall, "x")
    assert cfg.error is None and cfg.code == 0 and cfg.net["hall"] == hall


@pytest.mark.parametrize("clock", ["t/1", "t+1", "t 1", "t\x1b", "logger", "y" * 25])
def test_a_clock_name_outside_the_set_is_refused_with_its_code(clock):
    cfg = config.parse((NET % "open").replace("clock = t1", "clock = " + clock), "x")
    assert cfg.net is None and cfg.code == 2 and cfg.error.endswith("(CFG2)")


def test_every_refusal_has_a_code_and_words_for_the_doctor():
    from hallclock.whytext import CFG_WORDS
    cases = {1: "just words\n", 2: "clock = a/b\n", 3: "mode = chess\n", 4: "brightness = 9\n",
             5: "hall = open\n", 6: (NET % "open").replace("10.0.0.2:1883", "nohost"),
             7: (NET % "open").replace("key = " + KEY, "key = zz"), 8: NET % "a+b",
             9: "move_s = soon\n", 10: NET % "open" + "tls_ca_file = ../ca.der\n"}
    for code, text in cases.items():
        cfg = config.parse(text, "x")
        assert cfg.code == code, (code, cfg.error)
        assert cfg.error.endswith("(CFG%d)" % code)
    assert sorted(CFG_WORDS) == sorted(cases)
    assert len(set(CFG_WORDS.values())) == len(CFG_WORDS)


def test_the_clock_says_the_code_and_the_doctor_names_it():
    """Booted with ``hall = a/b``: the console line ends with the code, the
    health answer to the doctor's I frame carries ``cfg=8``, and the doctor
    lists it as what is short."""
    hw = FakeHW(NET % "a/b")
    hw.press(1000, BTN_START)
    hw.press(1500, BTN_B)
    hw.press(3500, BTN_A)
    app = play_device(hw, 900)
    assert hw.lines and "hall name 'a/b'" in hw.lines[0] and "(CFG8)" in hw.lines[0]
    assert [d.text for d in hw.displays] == ["CF G8", "CF G8"]  # until the faces change
    _used, _free, _largest, text = device.heap_text(hw, info=True)
    assert text.startswith("fw=%s;cfg=8" % VERSION), text
    while hw.ms < 3000:  # A's time runs: A's own face again; B's still the code
        device.loop(hw, app, passes=1)
    assert [d.text for d in hw.displays] == [" 1:59", "CF G8"]
    while hw.ms < 5000:  # then B's: both faces are the clock's
        device.loop(hw, app, passes=1)
    assert [d.text for d in hw.displays] == [" 2:00", " 1:59"]
    rec = health.health_fields(text)
    rec.update(gc_used=None, longest_pass_ms=3)
    short = verdict(("H", "0a0b0c0d", "clock-abc123", "scrabble", VERSION), rec)[1]
    assert len(short) == 1 and short[0].startswith("hallclock.cfg refused (CFG8: a hall name "
                                                   "outside the topic-safe set"), short
    good = FakeHW(NET % "open")
    good.use_network = lambda cfg: None  # no Wi-Fi on these fakes: the cfg is what counts
    play_device(good, 300)
    assert not good.lines and ";cfg=" not in device.heap_text(good, info=True)[3]


def test_the_parser_inside_micropython_refuses_the_same_names():
    try:
        binary = mpunix.binary()
    except mpunix.UnixPortMissing as exc:  # make setup installs it; say so, do not skip
        pytest.fail(str(exc))
    env = dict(os.environ, MICROPYPATH=str(mpunix.device_tree()))
    code = ("from hallclock_fw.hw import config\n"
            "for h in %r:\n"
            "    c = config.parse(%r %% h, 'x')\n"
            "    print(c.code, c.net is None)\n") % (BAD_HALLS + ["open-2026"], NET)
    out = subprocess.run([binary, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:-1] == ["8 True"] * len(BAD_HALLS) + ["0 False"]
