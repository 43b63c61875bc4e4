"""One grammar on every interpreter: integers are an optional ``-`` and 1 to
10 ASCII digits (docs/protocol.md), in frames and in settings alike.  This
very module runs under CPython and inside the MicroPython VM
(tests/test_core_micropython.py), with the same hostile corpus, so the two
interpreters accept exactly the same inputs.  Plain asserts, no pytest."""
from hallclock_fw import protocol, settings
from hallclock_fw.link import DeviceLink
from hallclock.vboard.vdev.fakes import FakeUART

GOOD = (("0", 0), ("-0", 0), ("7", 7), ("007", 7), ("-12", -12), ("120000", 120000),
        ("2147483647", 2147483647), ("-2147483647", -2147483647), ("0000000001", 1))
# +, _, spaces, other scripts' digits (Arabic-Indic three, superscript two,
# fullwidth one, Devanagari four), empty, signs alone, floats, hex, overflow
BAD = ("", "-", "+", "+4", "0_0", "1_000", " 4", "4 ", "\t4", "4\n", "\u0663", "\u00b2",
       "\uff11", "\u096a", "1\u0663", "--1", "-+1", "1-", "4.0", "1e3", "0x10", "٣",
       "2147483648", "-2147483648", "99999999999", "00000000001", "four", "1,2", "\x00")


def test_the_integer_grammar():
    for text, value in GOOD:
        assert protocol.to_int(text) == value, text
    for text in BAD:
        try:
            protocol.to_int(text)
        except ValueError:
            continue
        raise AssertionError("taken: %r" % text)


def test_frames_with_bad_integers_are_not_sound():
    for text in BAD:
        if not text or " " in text or "\n" in text:
            continue  # these change the token count: unsound for that reason already
        for tokens in (["C", text, "0"], ["C", "3", text], ["A", "00000001", text],
                       ["R", "00000001", text], ["G", "00000001", text],
                       ["N", text, "0"], ["N", "1", text],
                       ["S", "scrabble", "move_s=120", text],
                       ["E", "00000001", text, "0", "2", "0", "1", "120000", "0"]):
            assert protocol.check(tokens) is None, tokens
    assert protocol.check(["C", "3", "2"]) is None  # long is 0 or 1
    assert protocol.check(["N", "-1", "0"]) is None  # a round and its elapsed time are >= 0
    assert protocol.check(["C", "3", "0"]) == ["C", "3", "0"]


def test_a_frame_with_non_ascii_digits_is_dropped_by_the_device():
    uart = FakeUART()
    dev = DeviceLink(uart, "00000001", "t1", "scrabble", "move_s=120", "v", 0)
    for body in ("C \u0663 0", "C +3 0", "C 3 0_0", "C 03 \u0660"):
        uart.feed(protocol.frame(body.encode()))  # the CRC is right: only the grammar is not
    while uart.any():
        dev.receive(0)
    assert dev.next_command() is None
    assert dev.bad == 4
    assert protocol.unframe(protocol.frame("C \u0663 0".encode())) is None  # not ASCII


def test_settings_take_the_same_grammar():
    for text in BAD:
        if ";" in text or "=" in text or "," in text:
            continue
        for pair in ("move_s=" + text, "warn_s=30," + text, "round_min=" + text):
            try:
                settings.parse("scrabble", [pair])
            except ValueError:
                continue
            raise AssertionError("taken: %r" % pair)
        try:
            settings.parse("backgammon", ["score=1-" + text])
        except ValueError:
            continue
        if text != "":  # "1-" with nothing after is caught above as well
            raise AssertionError("taken: score=1-%r" % text)
    assert settings.parse("scrabble", ["move_s=090"])["move_s"] == 90
    assert settings.parse_text("scrabble", "move_s=60;warn_s=30,20")["warn_s"] == (30, 20)
