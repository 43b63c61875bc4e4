"""The device's event codes and the host's catalogue agree, row for row."""
import re

from hallclock import catalog
from hallclock_fw import events


def test_every_code_has_its_row_and_no_more():
    codes = {name: value for name, value in vars(events).items() if name.startswith("EV_")
             and name != "EV_COUNT"}
    assert sorted(codes.values()) == list(range(events.EV_COUNT))
    assert len(catalog.EVENTS) == events.EV_COUNT
    for name, code in codes.items():
        # EV_TURN_BANK -> "turn", EV_DUP_START -> "dup_start", EV_BREAK_END -> "break_end"
        base = re.sub(r"_BANK$", "", name[3:]).lower()
        assert catalog.EVENTS[code][0] == base, (name, catalog.EVENTS[code][0])


def test_decoding_uses_the_field_types():
    assert catalog.fields_of(events.EV_GONG, [events.GONG_TEN, -1, 0, 0]) == {
        "kind": "ten_minutes", "move": None}
    assert catalog.fields_of(events.EV_REFUSED, [1, events.REFUSED_BREAK, 0, 0]) == {
        "player": "B", "what": "break"}
    assert catalog.code_of("dup_end") == events.EV_DUP_END
    assert catalog.code_of("nothing") == -1


def test_the_host_frames_events_decode():
    assert catalog.EVENTS[events.EV_SETTINGS] == ("settings", ())
    assert catalog.fields_of(events.EV_ROUND, [3, 754000, 0, 0]) == {
        "round": 3, "elapsed_ms": 754000}
    # a refused request of the host: what, and why (no reason: no field)
    assert catalog.fields_of(events.EV_REFUSED, [-1, 2, 1, 0]) == {
        "player": None, "what": "settings", "reason": "game_running"}
    assert catalog.fields_of(events.EV_REFUSED, [-1, 2, 2, 0])["reason"] == "bad_settings"
    assert catalog.fields_of(events.EV_REFUSED, [-1, 3, 3, 0]) == {
        "player": None, "what": "round", "reason": "round_started"}


def test_settings_json_types():
    from hallclock_fw.settings import parse
    assert catalog.settings_json("scrabble", parse("scrabble", ["warn_s=30"])) == {
        "move_s": 120, "warn_s": [30], "round_min": 40, "round_warn_min": 10}
    bg = catalog.settings_json("backgammon", parse("backgammon", ["score=3-5"]))
    assert bg["score"] == "3-5" and bg["delay"] == "simple" and "bank_s" not in bg
