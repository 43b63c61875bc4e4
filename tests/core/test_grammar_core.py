"""One grammar on every interpreter: integers are an optional ``-`` and 1 to
10 ASCII digits (docs/protocol.md), in frames and in settings alike.  This
very module runs under CPython and inside the MicroPython VM
(tests/test_core_micropython.py), with the same hostile corpus, so the two
interpreters accept exactly the same inputs.  Plain asserts, no pytest."""
from hallclock_fw import protocol, settings
from hallclock_fw.link import DeviceLink
from hallclock.vboard.vdev.fakes import FakeUART

GOOD = (("0", 0), ("-0", 0), ("7", 7), ("007", 7), ("-12", -12), ("120000", 120000),
        ("2147483647", 2147483647), ("-2147483647", -2147483647), ("0000000001", 1),
        ("9", 9), ("-1999999999", -1999999999), ("-0000000009", -9))
# +, _, spaces, other scripts' digits (Arabic-Indic three, superscript two,
# fullwidth one, Devanagari four), empty, signs alone, floats, hex, overflow
BAD = ("", "-", "+", "+4", "0_0", "1_000", " 4", "4 ", "\t4", "4\n", "\u0663", "\u00b2",
       "\uff11", "\u096a", "1\u0663", "--1", "-+1", "1-", "4.0", "1e3", "0x10", "٣",
       "2147483648", "-2147483648", "99999999999", "00000000001", "four", "1,2", "\x00",
       "/", ":", "1/", "1:", "-00000000001")  # '/' and ':' stand either side of the digits


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


# -- frames (docs/protocol.md, "Frames" and "Frame types") --------------------
SID = "0a1b2c3d"  # 8 lowercase hex digits: not an integer token
# one sound frame of each type, at the fewest tokens its grammar takes, and the
# most (H: 6 in this grammar, 5 from a first-version clock, up to 8 still read
# so that the host can name the version it refuses; E: an optional text; S: 1
# to 12 integers)
FEWEST = {"H": ["H", SID, "t1", "scrabble", "v1"], "E": ["E", SID, "1", "0", "2", "0", "1",
          "120000", "0"], "G": ["G", SID, "5"], "L": ["L"], "A": ["A", SID, "5"],
          "R": ["R", SID, "5"], "W": ["W"], "C": ["C", "3", "0"],
          "S": ["S", "scrabble", "move_s=120", "1"], "K": ["K", "scrabble", "move_s=120"],
          "N": ["N", "1", "0"], "M": ["M"], "I": ["I"]}
MOST = {"H": 8, "E": 10, "S": 15}


def _sound(tokens):
    return protocol.check(list(tokens)) == list(tokens)


def test_each_frame_type_takes_exactly_its_token_counts():
    for kind, fewest in FEWEST.items():
        most = MOST.get(kind, len(fewest))
        tokens = list(fewest)
        while len(tokens) < most:
            tokens.append("7")
            assert _sound(tokens), tokens
        assert _sound(fewest), fewest
        assert not _sound(tokens + ["7"]), tokens  # one token more than the most
        if len(fewest) > 1:
            assert not _sound(fewest[:-1]), fewest  # one token fewer than the fewest
    assert protocol.check([]) is None
    assert protocol.check(["X", "1", "2"]) is None and protocol.check(["w"]) is None


def test_every_number_of_an_event_frame_is_an_integer():
    ev = FEWEST["E"]
    assert _sound(ev + ["boot:scrabble;move_s=120"])  # the text is no number
    for i in range(2, 9):
        bad = list(ev)
        bad[i] = "x"
        assert not _sound(bad), i
        bad[i] = "-1"
        assert _sound(bad) == (i != 2 and i != 4), i  # seq >= 1 and code >= 0


def test_the_event_code_and_sequence_ranges():
    from hallclock_fw.events import EV_COUNT
    ev = FEWEST["E"]
    for code, ok in ((-1, False), (0, True), (EV_COUNT - 1, True), (EV_COUNT, False)):
        assert _sound(ev[:4] + [str(code)] + ev[5:]) == ok, code
    for seq, ok in ((0, False), (1, True), (2147483647, True)):
        assert _sound(ev[:2] + [str(seq)] + ev[3:]) == ok, seq


def test_the_numbers_of_host_frames():
    for kind in ("A", "R", "G"):
        assert _sound([kind, SID, "0"]) and _sound([kind, SID, "-3"])  # ignored later, not unsound
        assert not _sound([kind, SID, "x"])
    assert _sound(["C", "0", "1"]) and _sound(["C", "4", "0"])
    assert not _sound(["C", "3", "01"]) and not _sound(["C", "3", "-0"])
    values = ["1"] * 12
    assert _sound(["S", "scrabble", "move_s=120"] + values)
    for i in range(12):
        bad = list(values)
        bad[i] = "x"
        assert not _sound(["S", "scrabble", "move_s=120"] + bad), i
    # the round's number (0: not known) and its elapsed time are >= 0
    assert _sound(["N", "0", "0"]) and _sound(["N", "3", "2147483647"])
    assert not _sound(["N", "0", "-1"]) and not _sound(["N", "-1", "5"])
    for tokens in (["A", SID, ""], ["A", "", "5"], ["C", "3", "0", ""], ["W", ""]):
        assert protocol.check(tokens) is None, tokens  # an empty token


def test_the_crc_is_zlibs_crc32_in_eight_lowercase_hex_digits():
    # docs/protocol.md: "the W frame is W*270d2bda"
    assert protocol.frame(b"W") == b"W*270d2bda\n"
    assert protocol.frame(b"A 0a1b2c3d 5") == b"A 0a1b2c3d 5*d97dd4de\n"
    assert protocol.crc(b"M") == 0xda6fd2a0 and protocol.crc(b"") == 0
    assert protocol.event("00000001", 1, 0, 2, 0, 1, 120000, 0) == \
        protocol.frame(b"E 00000001 1 0 2 0 1 120000 0")
    assert protocol.event("00000001", 1, 0, 0, 0, 0, 0, 0, "boot:x") == \
        protocol.frame(b"E 00000001 1 0 0 0 0 0 0 boot:x")
    assert protocol.gap(SID, 17) == protocol.frame(("G %s 17" % SID).encode())


def _crc_hex(body):
    return ("%08x" % protocol.crc(body)).encode()


def test_every_hex_digit_of_a_crc_is_read_and_nothing_else():
    seen = set()
    for i in range(200):
        body = ("A %s %d" % (SID, i)).encode()
        line = protocol.frame(body)
        assert protocol.unframe(line) == ["A", SID, str(i)]
        seen.update(_crc_hex(body))
    assert len(seen) == 16  # every digit 0-9 a-f was read above
    # a byte just outside the digits, in place of the digit it would stand for
    # if the ranges were one wider, is refused: ':' for 'a', '`' for '9',
    # '/' for '0', 'g' for 'f'+1 (a nibble of 16 would carry into the next)
    for digit, other in ((b"a", b":"), (b"9", b"`"), (b"0", b"/"), (b"0", b"g")):
        for i in range(400):
            body = ("R %s %d" % (SID, i)).encode()
            hexes = _crc_hex(body)
            # for 'g': the digit before it odd, so that a carried 16 would match
            if hexes[-1:] == digit and (other != b"g" or hexes[-2] in b"13579bdf"):
                break
        else:
            raise AssertionError("no CRC ending in %r" % digit)
        assert protocol.unframe(body + b"*" + hexes) == ["R", SID, str(i)]
        assert protocol.unframe(body + b"*" + hexes[:-1] + other) is None, other
    assert protocol.unframe(b"W*270D2BDA") is None  # upper case is not the grammar


def test_the_shortest_and_the_longest_frame():
    assert protocol.unframe(b"W*270d2bda") == ["W"]  # 10 bytes: the shortest frame
    assert protocol.unframe(b"*00000000") is None  # an empty body (its CRC is 0) is no frame
    assert protocol.unframe(b"*00000000\n") is None
    body = b"E " + b"x" * 149  # 151 bytes of body + "*" + 8 digits = MAX_LINE (160)
    line = protocol.frame(body)
    assert len(line) == protocol.MAX_LINE + 1  # with the newline
    assert protocol.unframe(line) == ["E", "x" * 149]
    longer = protocol.frame(body + b"x")
    assert protocol.unframe(longer) is None
    assert protocol.unframe(longer[:-1] + b"\r\n") is None


def test_a_frame_may_end_in_a_newline_a_carriage_return_and_newline_or_neither():
    line = protocol.frame(b"W")
    for ending in (b"\n", b"\r\n", b""):
        assert protocol.unframe(line[:-1] + ending) == ["W"], ending
    assert protocol.unframe(line[:-1] + b"\n\r") is None
    assert protocol.unframe(line[:-1] + b"\r\r\n") is None


def test_a_frame_is_printable_ascii_from_space_to_tilde():
    # (a trailing space is a sound line; check refuses its empty token)
    for byte, ok in ((0, False), (31, False), (32, True), (126, True), (127, False),
                     (128, False), (255, False)):
        line = protocol.frame(b"E A" + bytes([byte]))  # the CRC is right
        assert (protocol.unframe(line) is not None) == ok, byte
