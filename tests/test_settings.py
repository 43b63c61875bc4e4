import pytest

from hallclock import catalog
from hallclock_fw import settings


def test_defaults_follow_the_contract():
    assert settings.parse("scrabble", []) == {
        "move_s": 120, "warn_s": (30, 20, 10), "round_min": 40, "round_warn_min": 10}
    assert settings.parse("duplicate", []) == {"move_s": 180, "announce_s": (120, 60, 30)}
    bg = settings.parse("backgammon", [])
    assert bg["match"] == 7 and bg["score"] == (0, 0) and bg["delay_s"] == 15
    assert bg["delay"] == "simple" and bg["per_point_s"] == 150 and bg["bank_s"] is None


def test_text_form_round_trips():
    v = settings.parse("scrabble", ["warn_s=10,30", "move_s=90"])
    assert v["warn_s"] == (30, 10)  # sorted, most time left first
    text = settings.format_text("scrabble", v)
    assert text == "move_s=90;warn_s=30,10;round_min=40;round_warn_min=10"
    assert settings.parse_text("scrabble", text) == v
    assert catalog.settings_json("scrabble", v)["warn_s"] == [30, 10]


@pytest.mark.parametrize("mode, pairs, words", [
    ("scrabble", ["move_s=abc"], "not a whole number"),
    ("scrabble", ["move_s=0"], "at least 1"),
    ("scrabble", ["warn_s=130"], "between 1 and move_s-1"),
    ("scrabble", ["warn_s=30,30"], "given twice"),
    ("scrabble", ["colour=red"], "not a setting of mode scrabble"),
    ("scrabble", ["move_s"], "not KEY=VALUE"),
    ("scrabble", ["round_warn_min=40"], "less than round_min"),
    ("duplicate", ["announce_s=200"], "between 1"),
    ("backgammon", ["score=7-0"], "match is over"),
    ("backgammon", ["delay_s=-1"], "at least 0"),
    ("backgammon", ["delay=hourglass"], "not one of simple, bronstein, fischer"),
    ("chess", [], "unknown mode"),
    ("scrabble", ["move_s=999999999"], "at most 86400"),
    ("backgammon", ["bank_s=999999999"], "at most 86400"),
    ("backgammon", ["match=99", "per_point_s=3600"], "24 h"),
])
def test_bad_settings_are_refused(mode, pairs, words):
    with pytest.raises(settings.SettingsError) as err:
        settings.parse(mode, pairs)
    assert words in str(err.value)


def test_every_settings_error_code_has_its_words():
    """settings.py raises codes (no error text on the clock's heap); every
    code has its words in settingswords.py, the one place they are written."""
    import pathlib
    import re
    from hallclock_fw import settingswords
    src = (pathlib.Path(settings.__file__)).read_text()
    codes = dict((n, int(v)) for n, v in re.findall(r"^(_E_\w+) = const\((\d+)\)", src, re.M))
    assert len(set(codes.values())) == len(codes) == 14
    assert set(codes.values()) == set(settingswords.WORDS)
    used = set(re.findall(r"SettingsError\((_E_\w+)", src))
    assert used == set(codes)  # every code is raised somewhere
    # a plain message (a mode of the host's own, tests/toymode.py) is shown as it is
    assert str(settings.SettingsError("move_s must be 1 to 3600")) == "move_s must be 1 to 3600"
