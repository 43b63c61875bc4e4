"""Fuzz tests of both parsers: the host's (protocol.unframe/check,
HostLink.feed) and the device's (DeviceLink._feed, through the App).  Random
bytes and mutated frames must never crash either side, never be taken when
their CRC is wrong, and never disturb the clock."""
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

from hallclock.link.hostlink import HostLink
from hallclock.link.logfile import LogWriter, read_records
from hallclock.vboard.vdev.runner import Runner
from hallclock import catalog
from hallclock_fw import link as link_mod, protocol
from hallclock import hostframes
from hallclock_fw.events import BTN_A, EV_BOOT, EV_END, EV_GONG, EV_PRESS, EV_TURN, EV_WARN
from hallclock_fw.link import DeviceLink
from hallclock_fw.settings import parse

SETTINGS = "move_s=120;warn_s=30,20,10;round_min=40;round_warn_min=10"
HEX = b"0123456789abcdef"
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

VALID = [
    protocol.hello("0000beef", "table-1", "scrabble", "0.1.0"),
    protocol.event("0000beef", 1, 0, EV_BOOT, 0, 0, 0, 0, "scrabble:" + SETTINGS),
    protocol.event("0000beef", 2, 0, EV_GONG, 0, -1, 0, 0),
    protocol.event("0000beef", 3, 1500, EV_TURN, 0, 1, 120000, 0),
    protocol.event("0000beef", 4, 99000, EV_WARN, 0, 1, 30, 0),
    protocol.event("0000beef", 5, 130000, EV_PRESS, 0, 1, 128500, 0),
    protocol.event("0000beef", 6, 140000, EV_END, 0, 0, 0, 0),
    protocol.gap("0000beef", 3),
    hostframes.ack("0000beef", 4),
    hostframes.resend("0000beef", 2),
    protocol.who(),
    hostframes.command(BTN_A),
    hostframes.restore("scrabble", SETTINGS, 5, 0, 45000, 0, 0, -1, -1, 0),
    hostframes.configure("scrabble", SETTINGS),
    hostframes.round_number(3, 0),
]


def sound(line):
    """True when ``line`` really carries the CRC of its body (the reference).
    A line ends with at most one newline, after at most one carriage return
    (the reader splits the stream at newlines; a doubled newline is not a frame)."""
    if line.endswith(b"\n"):
        line = line[:-1]
    if line.endswith(b"\r"):
        line = line[:-1]
    if len(line) < 10 or line[-9:-8] != b"*" or any(b not in HEX for b in line[-8:]):
        return False
    return protocol.crc(line[:-9]) == int(line[-8:], 16)


@st.composite
def mutated(draw):
    """A valid frame with a few bytes flipped, dropped, doubled or inserted."""
    data = bytearray(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 3))
        i = draw(st.integers(0, max(0, len(data) - 1)))
        if not data:
            break
        if kind == 0:
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == 1:
            del data[i]
        elif kind == 2:
            data.insert(i, data[i])
        else:
            data.insert(i, draw(st.integers(0, 255)))
    return bytes(data)


lines = st.one_of(st.binary(max_size=200), mutated(), st.sampled_from(VALID))


# -- host side -------------------------------------------------------------------
@FUZZ
@given(lines)
def test_unframe_never_crashes_nor_takes_a_bad_crc(line):
    tokens = protocol.unframe(line)
    if tokens is not None:
        assert sound(line)
        checked = protocol.check(tokens)
        if checked is not None and checked[0] == "E":
            catalog.event_fields(checked)  # the host decodes what it took


@FUZZ
@given(mutated())
def test_a_mutated_frame_is_refused_unless_it_is_still_sound(line):
    assert (protocol.unframe(line) is not None) == sound(line)


@FUZZ
@given(st.lists(lines, max_size=30), st.lists(st.integers(1, 64), min_size=1, max_size=8))
def test_host_link_stores_only_sound_events(chunks, cuts):
    stream = b"\n".join(chunks) + b"\n"
    sent = []
    with tempfile.TemporaryDirectory() as d:
        writer = LogWriter(d + "/log.jsonl")
        host = HostLink(writer, sent.append)
        i = k = 0
        while i < len(stream):  # in chunks of random sizes, as a serial port gives them
            n = cuts[k % len(cuts)]
            host.feed(stream[i:i + n])
            i += n
            k += 1
        writer.close()
        records = read_records(d + "/log.jsonl")
    sound_events = {protocol.unframe(v)[2] for v in VALID if v.startswith(b"E ")}
    for r in records:
        if r["event"] in ("gap", "power_loss"):
            continue
        assert r["session"] == "0000beef"
        assert str(r["seq"]) in sound_events
    seqs = [r["seq"] for r in records if r["event"] != "gap"]
    assert seqs == sorted(set(seqs))  # each once, in order
    for frame in sent:
        assert protocol.check(protocol.unframe(frame)) is not None


# -- device side -------------------------------------------------------------------
@FUZZ
@given(st.lists(st.one_of(st.binary(max_size=100), mutated()), max_size=20))
def test_device_link_feed_never_crashes_nor_takes_a_bad_frame(chunks):
    from hallclock.vboard.vdev.fakes import FakeUART
    uart = FakeUART()
    dev = DeviceLink(uart, "0000beef", "t", "scrabble", SETTINGS, "v", 0)
    for i in range(5):
        dev.emit(i, EV_TURN, 0, i + 1, 120000, 0)
    for chunk in chunks:
        n = len(chunk)
        for j in range(0, n, 64):
            part = chunk[j:j + 64]
            dev.chunk[:len(part)] = part
            dev._feed(len(part), 100)
            while dev.next_command() is not None:  # a command was taken: only from a sound frame
                assert any(chunk.find(v) >= 0 for v in VALID if v[:1] in b"CSKN")
    assert 0 <= dev.acked <= dev.seq
    assert dev.rxn <= protocol.MAX_LINE


SCRIPT = [(0, "press", "START"), (1000, "press", "B"), (20000, "press", "A"),
          (140000, "press", "B"), (150000, "end", None)]


def _events(noise):
    """Every event the clock emits in SCRIPT, with ``noise`` fed to its UART
    every 50 ms of the game (no host: nothing is acknowledged)."""
    r = Runner("scrabble", parse("scrabble", []), SCRIPT)
    k = 0
    status = 0
    passes = 0
    due = 0
    while status == 0 and passes < 100000:
        if noise and r.ms >= due:
            r.feed(noise[k % len(noise)])
            k += 1
            due = r.ms + 50
        status = r.step()
        passes += 1
    link = r.app.link
    out = []
    for seq in range(link.first, link.seq + 1):
        i = (seq % link.cap) * link_mod._F
        out.append((seq,) + tuple(link.ring[i:i + link_mod._F]))
    return out


CLEAN_EVENTS = None


@FUZZ
@given(st.lists(st.one_of(st.binary(min_size=1, max_size=80), mutated()).filter(
    # noise only: no line of it (as the reader splits them) is a sound frame
    lambda f: not any(sound(line) for line in f.split(b"\n"))), min_size=1, max_size=10))
def test_the_clock_keeps_time_whatever_the_line_says(noise):
    global CLEAN_EVENTS
    if CLEAN_EVENTS is None:
        CLEAN_EVENTS = _events([])
        names = [e[2] for e in CLEAN_EVENTS]
        assert EV_WARN in names and names[-1] == EV_END
    assert _events(noise) == CLEAN_EVENTS


def test_crc_digits_must_be_eight_lowercase_hex():
    good = protocol.who()
    assert protocol.unframe(good) == ["W"]
    digits = good[2:10]
    for bad in (digits.upper(), b" " + digits[1:], b"+" + digits[1:], digits[:4] + b"_" + digits[5:]):
        if bad != digits:
            assert protocol.unframe(b"W*" + bad + b"\n") is None
