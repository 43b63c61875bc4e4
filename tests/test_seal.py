"""Sealed frames on the hall network (hallclock_fw/seal.py, netlink.py,
hallclock/net/seal.py; docs/protocol.md "Sealed frames on the network"):
the one HMAC-SHA256 against CPython's ``hmac`` and RFC 4231, on CPython and
inside MicroPython; what the clock's link takes and refuses (tag, link
session, counter, least authority); what the host takes and refuses."""
import hashlib
import hmac
import os
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from hallclock.vboard import unixport as mpunix
from hallclock.net.seal import ClockSeal, host_ms, seal_all
from hallclock_fw import mqtt, protocol, seal
from hallclock import hostframes
from hallclock_fw.netlink import _ALL_WINDOW_MS, NetLink

KEY = "00112233445566778899aabbccddeeff"
HALL_KEY = "ffeeddccbbaa99887766554433221100"
MAC = seal.Mac(seal.key_bytes(KEY))
HALL_MAC = seal.Mac(seal.key_bytes(HALL_KEY))
SID = "0a0b0c0d"
DOWN = b"hallclock/h/t1/down"
ALL = b"hallclock/h/all/down"

# RFC 4231 test cases 1, 3 and 6 (keys of 20, 20 and 131 bytes)
RFC4231 = [
    (b"\x0b" * 20, b"Hi There",
     "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
    (b"\xaa" * 20, b"\xdd" * 50,
     "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
    (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
]


@pytest.mark.parametrize("key, data, want", RFC4231)
def test_hmac_is_rfc_4231(key, data, want):
    assert seal.Mac(key).digest(data).hex() == want


@settings(max_examples=200, derandomize=True, deadline=None)
@given(key=st.binary(min_size=16, max_size=200), parts=st.lists(st.binary(max_size=300),
                                                                 max_size=4))
def test_hmac_agrees_with_cpython_hmac(key, parts):
    want = hmac.new(key, b"".join(parts), hashlib.sha256).digest()
    assert seal.Mac(key).digest(*parts) == want


def test_hmac_inside_micropython_agrees_with_cpython():
    """The same module compiled for the unix port (as on the board)."""
    env = dict(os.environ)
    env["MICROPYPATH"] = str(mpunix.device_tree())
    cases = RFC4231 + [(bytes(range(16)), b"E 0000cafe 3 1200 4 0 0 0 0*01234567~0a0b0c0d~9",
                        None)]
    code = "from hallclock_fw import seal\nimport binascii\n" + "".join(
        "print(binascii.hexlify(seal.Mac(%r).digest(%r)).decode())\n" % (k, d) for k, d, _ in cases)
    out = subprocess.run([mpunix.binary(), "-c", code], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = out.stdout.split()
    assert got == [hmac.new(k, d, hashlib.sha256).hexdigest() for k, d, _ in cases]


def test_a_sealed_frame_opens_only_with_its_key_and_direction():
    frame = hostframes.ack("0000cafe", 7)
    msg = seal.seal(MAC, b"D", frame, SID, 123)
    assert msg.startswith(frame[:-1] + b"~0a0b0c0d~123~") and msg.endswith(b"\n")
    assert seal.open_sealed(MAC, b"D", msg) == (frame, SID, 123)
    assert seal.open_sealed(MAC, b"U", msg) is None  # turned round
    assert seal.open_sealed(HALL_MAC, b"D", msg) is None  # another key
    for i in range(len(msg) - 1):  # any byte changed
        bad = bytearray(msg)
        bad[i] ^= 1
        assert seal.open_sealed(MAC, b"D", bytes(bad)) is None, i
    assert seal.open_sealed(MAC, b"D", frame) is None  # not sealed at all


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.binary(max_size=250))
def test_opening_any_bytes_never_raises(data):
    assert seal.open_sealed(MAC, b"D", data) is None or data.count(b"~") >= 3


def test_key_text_is_checked():
    assert seal.key_bytes("00" * 16) == bytes(16)
    for bad in ("00" * 15, "0" * 33, "zz" * 16, ""):
        with pytest.raises(ValueError):
            seal.key_bytes(bad)


# -- the clock's link -------------------------------------------------------
def link(t=None):
    t = t if t is not None else [0]
    return NetLink("h", "t1", "t1", "pw", lambda now: None, lambda: t[0], key=KEY,
                   hall_key=HALL_KEY, sid=SID)


def inbox(net):
    return bytes(net.inbox)


def connected(net):
    """The link as when its broker connection is up (CONNACK and SUBACK in)."""
    net.client.state = mqtt.UP
    return net


def test_a_link_without_its_broker_seals_nothing():
    """Nothing leaves while the connection is down, so nothing is sealed (no
    garbage on the clock's heap, no counter used); the DeviceLink sends the
    frame again once the link is up."""
    net = link()
    sent = []
    net.client.publish = lambda topic, payload: sent.append(payload)
    hello = protocol.hello("0000cafe", "t1", "scrabble", "1")
    assert net.write(hello) == len(hello)
    assert sent == [] and net.sent == 0 and net.client.dropped == 1
    connected(net).write(hello)
    assert [seal.open_sealed(MAC, b"U", p)[2] for p in sent] == [1]


def test_the_clock_seals_what_it_sends_with_a_rising_counter():
    net = connected(link())
    sent = []
    net.client.publish = lambda topic, payload: sent.append((topic, payload))
    net.write(protocol.hello("0000cafe", "t1", "scrabble", "1") + protocol.gap("0000cafe", 3))
    assert [t for t, _ in sent] == [b"hallclock/h/t1/up"] * 2
    assert [seal.open_sealed(MAC, b"U", p)[2] for _, p in sent] == [1, 2]
    # the last will, in the CONNECT packet: the L frame sealed with counter 0
    will = seal.seal(MAC, b"U", protocol.lost(), SID, 0)
    assert mqtt._str(b"hallclock/h/t1/up") + mqtt._str(will) in net.client.hello
    assert seal.open_sealed(MAC, b"U", will) == (protocol.lost(), SID, 0)


def test_the_clock_takes_a_fresh_host_frame_once():
    net = link()
    ack = seal.seal(MAC, b"D", hostframes.ack("0000cafe", 2), SID, 1000)
    net._message(DOWN, ack)
    assert inbox(net) == hostframes.ack("0000cafe", 2) and net.refused == 0
    net.inbox[:] = b""
    net._message(DOWN, ack)  # the same message again: a replay
    net._message(DOWN, seal.seal(MAC, b"D", hostframes.ack("0000cafe", 3), SID, 999))  # older
    assert net.refused == 2 and inbox(net) == protocol.who()  # the host hears a hello
    net._message(DOWN, seal.seal(MAC, b"D", hostframes.ack("0000cafe", 3), SID, 1001))
    assert inbox(net).endswith(hostframes.ack("0000cafe", 3))


def test_the_clock_refuses_forged_and_earlier_boot_frames():
    t = [0]
    net = link(t)
    frames = [hostframes.ack("0000cafe", 9), hostframes.command(3), hostframes.configure(
        "scrabble", "move_s=60"), hostframes.restore("scrabble", "", 1, 2)]
    for f in frames:
        net._message(DOWN, f)  # unsealed
        net._message(DOWN, seal.seal(HALL_MAC, b"D", f, SID, 5))  # another key
        net._message(DOWN, seal.seal(MAC, b"U", f, SID, 5))  # the clock's own, turned round
    assert net.refused == 12 and inbox(net) == b""
    net._message(DOWN, seal.seal(MAC, b"D", frames[0], "99999999", 5))  # an earlier boot
    net._message(DOWN, seal.seal(MAC, b"D", frames[0], "99999999", 6))
    assert net.refused == 14 and inbox(net) == protocol.who()  # one hello asked, not two
    t[0] = 1000
    net._message(DOWN, seal.seal(MAC, b"D", frames[0], "99999999", 7))
    assert inbox(net) == protocol.who() * 2


def test_maintenance_is_never_taken_from_the_network():
    net = link()
    net._message(DOWN, seal.seal(MAC, b"D", hostframes.maintenance(), SID, host_ms()))
    net._message(ALL, seal.seal(HALL_MAC, b"A", hostframes.maintenance(), "all", host_ms()))
    assert net.refused == 2 and b"M" not in inbox(net)


@pytest.mark.parametrize("frame, taken", [
    (hostframes.command(3), True),  # START
    (hostframes.command(4), True),  # GONG
    (hostframes.command(2), True),  # PAUSE
    (hostframes.round_number(3, 0), True),
    (hostframes.command(0), False),  # a player's button: never from the referee
    (hostframes.command(1), False),
    (hostframes.command(3, long=True), False),
    (hostframes.ack("0000cafe", 5), False),
    (hostframes.resend("0000cafe", 1), False),
    (protocol.who(), False),
    (hostframes.configure("scrabble", "move_s=60"), False),
    (hostframes.restore("scrabble", "", 1, 2), False),
])
def test_all_down_carries_only_the_referees_signals(frame, taken):
    net = link()
    net._message(ALL, seal.seal(HALL_MAC, b"A", frame, "all", host_ms()))
    assert (inbox(net) == frame) is taken and net.refused == (0 if taken else 1)


def test_all_down_refuses_forged_replayed_and_stale_signals():
    net = link()
    start = hostframes.command(3)
    now = host_ms()
    net._message(ALL, start)  # unsealed
    net._message(ALL, seal.seal(MAC, b"A", start, "all", now))  # a clock's key, not the hall's
    net._message(ALL, seal.seal(HALL_MAC, b"A", start, SID, now))  # not "all"
    assert net.refused == 3 and inbox(net) == b""
    good = seal.seal(HALL_MAC, b"A", start, "all", now)
    net._message(ALL, good)
    net._message(ALL, good)  # replayed
    assert net.refused == 4 and inbox(net) == start
    # the host's frames tell the clock the time: a signal from well before is refused
    net._message(DOWN, seal.seal(MAC, b"D", protocol.who(), SID, now + 10 * _ALL_WINDOW_MS))
    net._message(ALL, seal.seal(HALL_MAC, b"A", start, "all", now + 1))
    assert net.refused == 5


# -- the host's end -----------------------------------------------------------
def test_the_host_takes_each_clock_message_once():
    s = ClockSeal(MAC)
    hello = protocol.hello("0000cafe", "t1", "scrabble", "1")
    m1 = seal.seal(MAC, b"U", hello, SID, 1)
    m2 = seal.seal(MAC, b"U", protocol.event("0000cafe", 1, 0, 0, 0, 0, 0, 0), SID, 2)
    assert s.open_up(m1) == hello and s.open_up(m2) is not None and s.sid == SID
    assert s.open_up(m1) is None and s.open_up(m2) is None and s.refused == 2  # replays
    assert s.open_up(hello) is None  # unsealed
    assert s.open_up(seal.seal(HALL_MAC, b"U", hello, SID, 3)) is None  # another key
    assert s.open_up(seal.seal(MAC, b"D", hello, SID, 3)) is None  # the host's own, turned round
    assert s.refused == 5
    # the last will (counter 0) is a mark, any other frame with counter 0 is refused
    assert s.open_up(seal.seal(MAC, b"U", protocol.lost(), SID, 0)) == protocol.lost()
    assert s.open_up(seal.seal(MAC, b"U", hello, SID, 0)) is None
    # a new boot of the clock's link: the host talks to it from then on
    assert s.open_up(seal.seal(MAC, b"U", hello, "11111111", 1)) == hello
    assert s.sid == "11111111"
    down = s.seal_down(hostframes.ack("0000cafe", 1) + protocol.who())
    assert [seal.open_sealed(MAC, b"D", m)[1] for m in down] == ["11111111"] * 2
    a, b = (seal.open_sealed(MAC, b"D", m)[2] for m in down)
    assert b > a


def test_a_host_that_may_write_takes_a_session_only_once_it_answered_its_challenge():
    """docs/network.md "Replays and floods": the clock's messages echo the
    newest host counter it took; a session new to this host is taken only
    with an echo this host sealed (its challenge answered), never from a
    recording made before, and never changes the session sealed for."""
    sent = []
    now = [50.0]
    s = ClockSeal(MAC, send=sent.append, clock=lambda: now[0])
    net = link()
    out = []
    net.client.publish = lambda topic, payload: out.append(payload)
    connected(net).write(protocol.hello("0000cafe", "t1", "scrabble", "1"))
    old = out[-1]  # sealed before this host existed: echo 0
    assert s.open_up(old) is None and s.unproven == 1 and s.sid == "none"
    # the challenge: a W sealed for that session; the clock takes it and says hello
    assert len(sent) == 1 and seal.open_sealed(MAC, b"D", sent[0])[:2] == (protocol.who(), SID)
    net._message(DOWN, sent[0])
    assert inbox(net) == protocol.who()
    net.write(protocol.hello("0000cafe", "t1", "scrabble", "1"))
    assert s.open_up(out[-1]) is not None and s.sid == SID
    assert s.open_up(old) is None and s.replays == 1  # the recording: a replay now
    # a recorded session of an earlier boot (echoes from before this host): refused,
    # challenged, and the host still seals for the live session
    earlier = seal.seal(MAC, b"U", protocol.hello("0000beef", "t1", "scrabble", "1"),
                        "99999999:%d" % (s.since - 1), 7)
    assert s.open_up(earlier) is None and s.sid == SID and s.unproven == 2
    assert len(sent) == 1  # challenges are paced
    now[0] += 1
    assert seal.open_sealed(MAC, b"D", s.seal_down(protocol.who())[0])[1] == SID
    # the clock reboots: its new session answers a challenge, the old one is retired
    net2 = link()
    net2.sid = "22222222"
    out2 = []
    net2.client.publish = lambda topic, payload: out2.append(payload)
    connected(net2).write(protocol.hello("0000f00d", "t1", "scrabble", "1"))
    now[0] += 1
    assert s.open_up(out2[-1]) is None and len(sent) == 2
    net2._message(DOWN, sent[-1])
    net2.write(protocol.hello("0000f00d", "t1", "scrabble", "1"))
    assert s.open_up(out2[-1]) is not None and s.sid == "22222222"
    net.write(protocol.who())  # the old boot's messages: refused from now on
    assert s.open_up(out[-1]) is None and s.sid == "22222222"
    # the will: only the current session's
    assert s.open_up(seal.seal(MAC, b"U", protocol.lost(), SID, 0)) is None
    assert s.open_up(seal.seal(MAC, b"U", protocol.lost(), "22222222", 0)) == protocol.lost()


def test_a_clock_opens_a_few_new_sessions_a_minute_at_most():
    """A stolen key can answer every challenge; beyond the clock's budget of
    new sessions they are counted and dropped (docs/network.md)."""
    from hallclock.net import seal as hostseal
    now = [1000.0]
    s = ClockSeal(MAC, send=lambda m: None, clock=lambda: now[0])
    hello = protocol.hello("0000cafe", "t1", "scrabble", "1")
    taken = 0
    for i in range(50):
        m = seal.seal(MAC, b"U", hello, "%08x:%d" % (i, host_ms()), 1)
        taken += s.open_up(m) is not None
    assert taken == hostseal.SESSION_BURST and s.over_budget == 50 - taken
    now[0] += hostseal.SESSION_EVERY_S
    assert s.open_up(seal.seal(MAC, b"U", hello, "aaaaaaaa:%d" % host_ms(), 1)) is not None
    assert s.open_up(seal.seal(MAC, b"U", hello, "bbbbbbbb:%d" % host_ms(), 1)) is None


def test_a_viewer_opens_by_shape_and_sends_nothing():
    s = ClockSeal(None)
    assert s.open_up(seal.seal(MAC, b"U", protocol.who(), SID, 1)) == protocol.who()
    assert s.seal_down(protocol.who()) == []


def test_the_referees_signal_is_sealed_with_the_hall_key():
    msg = seal_all({"hall_key": HALL_KEY}, hostframes.command(4))
    frame, sid, ctr = seal.open_sealed(HALL_MAC, b"A", msg)
    assert frame == hostframes.command(4) and sid == "all" and ctr > 1_700_000_000_000


def test_a_host_that_knows_no_link_session_yet_is_answered_with_a_hello():
    """A logger just started seals for no session; the clock takes nothing
    of it but asks for its hello, after which the host's frames are taken."""
    host = ClockSeal(MAC)
    net = link()
    for m in host.seal_down(hostframes.ack("0000cafe", 4)):
        net._message(DOWN, m)
    assert inbox(net) == protocol.who() and net.refused == 1
    sent = []
    net.client.publish = lambda topic, payload: sent.append(payload)
    connected(net).write(protocol.hello("0000cafe", "t1", "scrabble", "1"))
    assert host.open_up(sent[0]) is not None and host.sid == SID
    net.inbox[:] = b""
    for m in host.seal_down(hostframes.ack("0000cafe", 4)):
        net._message(DOWN, m)
    assert inbox(net) == hostframes.ack("0000cafe", 4) and net.refused == 1


def test_broker_config_writes_each_clock_its_own_key_and_the_hall_key(tmp_path):
    from hallclock.net import broker
    from hallclock_fw.hw import config
    creds = broker.write_config(str(tmp_path / "b"), "open", ["t1", "t2"], port=1883,
                                bind="127.0.0.1")
    cfgs = {}
    for c in ("t1", "t2"):
        text = (tmp_path / "b" / "clocks" / (c + ".cfg")).read_text()
        cfgs[c] = config.parse(text, "x").net
        assert cfgs[c]["key"] == creds[c]["key"] and cfgs[c]["hall_key"] == creds[c]["hall_key"]
        seal.key_bytes(cfgs[c]["key"])
    assert cfgs["t1"]["key"] != cfgs["t2"]["key"]  # one clock's key speaks for it alone
    assert cfgs["t1"]["hall_key"] == cfgs["t2"]["hall_key"] == creds["referee"]["hall_key"]
    assert set(creds["referee"]) == {"user", "password", "hall_key"}
    for host in ("logger", "viewer"):
        assert set(creds[host]) == {"user", "password"}


def test_the_referees_newest_counter_survives_a_reboot_and_a_power_cut_in_its_save():
    """The clock keeps the newest all/down counter it took in flash
    (hw/cfgsave.py save_counter, the cfg's save): read back at boot, a save
    cut at any flash operation leaves the old counter or the new one."""
    from hallclock.vboard.vdev.fakes import PowerCut
    from hallclock.vboard.vdev.flash import FakeFlash
    from hallclock_fw.hw import cfgsave
    flash = FakeFlash()
    assert cfgsave.load_counter(flash) == 0
    saved = []
    net = NetLink("h", "t1", "t1", "pw", lambda now: None, lambda: 0, key=KEY, hall_key=HALL_KEY,
                  sid=SID, keep=lambda c: cfgsave.save_counter(flash, c) or saved.append(c))
    first = host_ms()
    net._message(ALL, seal.seal(HALL_MAC, b"A", hostframes.command(3), "all", first))
    assert saved == [first] and cfgsave.load_counter(flash) == first
    # after the reboot: the same START again is refused, a newer one taken
    net = NetLink("h", "t1", "t1", "pw", lambda now: None, lambda: 0, key=KEY, hall_key=HALL_KEY,
                  sid="22222222", all_ctr=cfgsave.load_counter(flash))
    net._message(ALL, seal.seal(HALL_MAC, b"A", hostframes.command(3), "all", first))
    assert net.refused == 1 and inbox(net) == b""
    net._message(ALL, seal.seal(HALL_MAC, b"A", hostframes.command(3), "all", first + 1))
    assert inbox(net) == hostframes.command(3)
    # a power cut at every flash operation of the next save: old or new, never less
    cuts = 0
    while True:
        flash.cut_after = cuts
        try:
            cfgsave.save_counter(flash, first + 5)
        except PowerCut:
            assert cfgsave.load_counter(flash) in (first, first + 5)
            cuts += 1
            continue
        flash.cut_after = None
        break
    assert cuts >= 3 and cfgsave.load_counter(flash) == first + 5


def test_broker_config_rotate_makes_a_new_hall_key_and_old_signals_are_refused(tmp_path):
    """``broker-config --rotate`` (each tournament day): a new hall key in
    credentials.json and every clock's cfg (the Wi-Fi the director filled in
    kept; passwords and the clocks' own keys unchanged, so the broker runs
    on); a clock on the new cfg refuses a START recorded under the old key
    (docs/network.md "Replays and floods", attack B) and takes the referee's
    new one."""
    import json
    import sys

    from hallclock_fw.hw import config
    out = tmp_path / "b"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "hallclock", "broker-config", *args],
                              capture_output=True, text=True, timeout=60)
    r = cli("--hall", "open", "--clocks", "t1,t2", "--out", str(out), "--bind", "127.0.0.1")
    assert r.returncode == 0, r.stderr
    cfg1 = out / "clocks" / "t1.cfg"
    cfg1.write_text(cfg1.read_text().replace("HALL-WIFI", "Hall-A"))
    before = json.loads((out / "credentials.json").read_text())
    old_start = seal_all(before["referee"], hostframes.command(3))
    r = cli("--rotate", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "deploy --cfg-dir" in r.stdout
    after = json.loads((out / "credentials.json").read_text())
    new_key = after["referee"]["hall_key"]
    assert new_key != before["referee"]["hall_key"]
    for name, entry in after.items():
        assert entry["password"] == before[name]["password"]
        assert entry.get("key") == before[name].get("key")
        assert entry.get("hall_key") == (new_key if "hall_key" in before[name] else None)
    for f in (out / "credentials.json", cfg1):
        assert oct(os.stat(f).st_mode & 0o777) == "0o600"
    text = cfg1.read_text()
    assert "wifi_ssid = Hall-A" in text and not list(out.glob("**/*.new"))
    net_cfg = config.parse(text, "x").net
    assert net_cfg["hall_key"] == new_key and net_cfg["key"] == before["t1"]["key"]
    net = NetLink("open", "t1", "t1", "pw", lambda now: None, lambda: 0, key=net_cfg["key"],
                  hall_key=net_cfg["hall_key"], sid=SID)
    net._message(b"hallclock/open/all/down", old_start)
    assert net.refused == 1 and inbox(net) == b""
    net._message(b"hallclock/open/all/down", seal_all(after["referee"], hostframes.command(3)))
    assert inbox(net) == hostframes.command(3)
    # --rotate only on a configuration there is, and without a new hall's options
    r = cli("--rotate", "--out", str(tmp_path / "none"))
    assert r.returncode == 2 and "broker-config --hall" in r.stderr and "Traceback" not in r.stderr
    r = cli("--rotate", "--out", str(out), "--hall", "open")
    assert r.returncode == 2 and "--rotate" in r.stderr
    r = cli("--out", str(tmp_path / "c"))
    assert r.returncode == 2 and "--hall" in r.stderr
