"""The clock's own TLS (firmware/hallclock_fw/tlslink.py, docs/network.md
"TLS on the clock"), in the MicroPython unix port (its mbedTLS and frozen
``ssl``, as the ESP32 image's), against the hall's Mosquitto TLS listener
that broker-config writes:

- a clock pinning the hall's CA (DER, as deploy puts it on a board) plays a
  game through to a logger: the log is the one the serial link gives;
- against a broker whose certificate another CA signed, or that does not
  name the address the clock dialled, it is refused with a clear code
  (never connected, never a frame taken) and says why;
- a CA file that is not a certificate is refused before anything is built
  (CFG10 on the board);
- the handshake never waits for the network: the client's ``poll`` returns
  at once while the TCP connect and the broker's answers are under way
  (the CPU time of its longest step is measured, docs/network.md).
"""
import os
import ssl
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mqttrig import HALL, HALLCLOCK, Hall, clock_records, game, mp_opener, reference  # noqa: E402

from hallclock.vboard import unixport as mpunix  # noqa: E402


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    try:
        mpunix.binary()
    except mpunix.UnixPortMissing as exc:  # make setup installs it; say so, do not skip
        pytest.fail(str(exc))
    h = Hall(tmp_path_factory.mktemp("tlsclock"), clocks=("t1", "t2"), tls=True)
    yield h
    h.close()


def device_cmd(hall, clock, path, ca, port=None):
    return HALLCLOCK + ["device", "--broker", f"127.0.0.1:{port or hall.tls_port}", "--hall",
                        HALL, "--clock", clock, "--credentials", hall.cred_file, "--script",
                        path, "--session", "0000cafe", "--interpreter", "micropython-unix",
                        "--tls-ca", ca, "--silence-s", "8"]


def test_a_unix_port_clock_over_tls_pinning_the_halls_ca_gives_the_serial_log(
        hall, tmp_path, script):
    text = game(moves=10)
    log = tmp_path / "tls.jsonl"
    lg = hall.start_logger(log, clocks=["t1"])
    p = subprocess.run(device_cmd(hall, "t1", script(text), hall.ca), capture_output=True,
                       text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    hall.wait_logger(lg)
    assert clock_records(log, "t1") == reference(tmp_path, "t1", text)


def _other_ca(tmp_path, host="127.0.0.1"):
    from hallclock.net import tls as tlsca
    return tlsca.make_ca(str(tmp_path / "other"), host)[0]


def test_a_broker_signed_by_another_ca_is_refused_with_a_clear_code(hall, tmp_path, script):
    p = subprocess.run(device_cmd(hall, "t2", script(game(moves=2)), _other_ca(tmp_path)),
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 1
    assert "TLS refused: the broker's certificate is not the hall's" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_a_broker_not_named_by_its_certificate_is_refused(hall, tmp_path, script):
    """A certificate signed by the hall's own CA, but for another address
    (10.9.9.9: a rogue broker with a stolen certificate of another of the
    hall's machines): the clock dialled 127.0.0.1, which it does not name."""
    from hallclock.net import broker as brokermod
    tls_dir = os.path.dirname(hall.ca)
    d = tmp_path / "rogue"
    d.mkdir()
    for args in (["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                  "-keyout", "r.key", "-out", "r.csr", "-subj", "/CN=10.9.9.9"],
                 ["x509", "-req", "-in", "r.csr", "-CA", hall.ca, "-CAkey",
                  os.path.join(tls_dir, "ca.key"), "-CAcreateserial", "-out", "r.crt",
                  "-days", "2", "-extfile", "ext.cnf"]):
        (d / "ext.cnf").write_text("subjectAltName=IP:10.9.9.9\n")
        r = subprocess.run(["openssl"] + args, cwd=d, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    port = brokermod.free_port()
    (d / "m.conf").write_text(f"user root\nlistener {port} 127.0.0.1\nallow_anonymous true\n"
                              f"certfile {d / 'r.crt'}\nkeyfile {d / 'r.key'}\n"
                              "tls_version tlsv1.2\n")
    rogue = subprocess.Popen(["mosquitto", "-c", str(d / "m.conf")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import socket

        from mqttrig import wait_for

        def up():
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                return True
            except OSError:
                return False
        wait_for(up, 30, "the rogue broker listening")
        p = subprocess.run(device_cmd(hall, "t2", script(game(moves=2)), hall.ca, port=port),
                           capture_output=True, text=True, timeout=180)
    finally:
        rogue.terminate()
        rogue.wait(10)
    assert p.returncode == 1
    assert "TLS refused: the broker's certificate is not the hall's" in p.stderr, p.stderr


DRIVER = r"""
from hallclock_fw import tlslink
class Cfg:
    pass
cfg = Cfg()
cfg.net = {"tls_ca_file": %(ca)r, "broker": "127.0.0.1:8883"}
if tlslink.opener(cfg) is None:
    print("REFUSED", cfg.code, cfg.net, cfg.error)
else:
    print("TAKEN", cfg.net is not None)
"""


@pytest.mark.parametrize("content", [b"", b"-----BEGIN CERTIFICATE-----\nMIIB\n",
                                     b"\x30\x82\x01\x00" + b"\x00" * 256, None])
def test_a_ca_file_that_is_no_certificate_is_refused(tmp_path, content):
    path = tmp_path / "hallclock.ca"
    if content is not None:
        path.write_bytes(content)
    out = _mp(DRIVER % {"ca": str(path)})
    assert out.startswith("REFUSED 10 None hallclock.cfg: tls_ca_file "), out
    assert out.rstrip().endswith("no CA to pin (CFG10)"), out


def test_the_halls_ca_in_der_is_taken(hall, tmp_path):
    path = tmp_path / "hallclock.ca"
    path.write_bytes(ssl.PEM_cert_to_DER_cert(open(hall.ca).read()))
    assert _mp(DRIVER % {"ca": str(path)}).startswith("TAKEN True")


def _mp(code, timeout=60):
    env = dict(os.environ, MICROPYPATH=".frozen:" + str(mpunix.device_tree()))
    p = subprocess.run([mpunix.binary(), "-X", "heapsize=262144", "-c", code],
                       capture_output=True, text=True, env=env, timeout=timeout)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return p.stdout


HANDSHAKE = r"""
import socket, time
from hallclock_fw import mqtt, tlslink
%(opener)s
class Cfg:
    pass
cfg = Cfg()
cfg.net = {"tls_ca_file": %(ca)r, "broker": "127.0.0.1:%(port)d"}
opener = tlslink.opener(cfg)(raw)
c = mqtt.Client("t1", "t1", %(pw)r, 30, ())
polls = 0
longest = 0
t0 = time.ticks_ms()
c.start(opener(time.ticks_ms()), time.ticks_ms())
while c.state == 1 and time.ticks_diff(time.ticks_ms(), t0) < 20000:
    a = time.ticks_us()
    c.poll(time.ticks_ms())
    d = time.ticks_diff(time.ticks_us(), a)
    longest = d if d > longest else longest
    polls += 1
    time.sleep_ms(1)
print("STATE", c.state, c.why, "POLLS", polls, "LONGEST_US", longest,
      "TOTAL_MS", time.ticks_diff(time.ticks_ms(), t0))
c.disconnect()
"""


def test_the_handshake_is_driven_by_the_loops_passes(hall, tmp_path):
    """The client's poll returns while the handshake waits for the broker:
    it takes several passes (the TCP connect, the broker's hello, its
    Finished, the CONNACK), each returning, none waiting for the network."""
    ca = tmp_path / "hallclock.ca"
    ca.write_bytes(ssl.PEM_cert_to_DER_cert(open(hall.ca).read()))
    out = _mp(HANDSHAKE % {"port": hall.tls_port, "opener": mp_opener(hall.tls_port), "ca": str(ca),
                           "pw": hall.creds["t1"]["password"]})
    words = out.split()
    assert words[:2] == ["STATE", "2"], out  # UP: CONNACK taken over TLS
    polls = int(words[words.index("POLLS") + 1])
    assert polls >= 3, out  # the handshake spread over passes, not one blocking call
    print(out)


def test_a_tls_clock_without_its_ca_says_cfg10_and_stays_off_the_network(
        hall, tmp_path, monkeypatch):
    """Booted with ``tls_ca_file = hallclock.ca`` but no such file on the
    board (deploy not run): the cfg is refused as any bad one -- the
    console line ends (CFG10), both displays say CF10, the health answer
    carries cfg=10 and the doctor words it; the network is not used (no
    plain MQTT instead: that would send the password in clear).  With
    the hall's CA in DER there, the same cfg is taken."""
    from test_drivers import FakeHW, play_device

    from hallclock.commands.doctor import verdict
    from hallclock.link import health
    from hallclock_fw import VERSION, tlslink
    from hallclock_fw.hw import device
    from test_cfg_names import NET
    monkeypatch.chdir(tmp_path)
    text = NET % "open" + "tls_ca_file = hallclock.ca\n"
    used = []

    def use_network(cfg):  # hw/esp32rare.use_network's TLS branch, on CPython
        if tlslink.opener(cfg) is not None:
            used.append(cfg.net["tls_ca_file"])
    hw = FakeHW(text)
    hw.use_network = use_network
    play_device(hw, 300)
    assert not used and hw.lines and hw.lines[0].endswith(
        "hallclock.cfg: tls_ca_file hallclock.ca: no CA to pin (CFG10) (on USB, not the network)"), \
        hw.lines
    assert [d.text for d in hw.displays] == ["CF 10", "CF 10"]  # (the colon's place: a space)
    _u, _f, _l, info = device.heap_text(hw, info=True)
    assert info.startswith("fw=%s;cfg=10" % VERSION), info
    rec = health.health_fields(info)
    rec.update(gc_used=None, longest_pass_ms=3)
    short = verdict(("H", "0a0b0c0d", "clock-abc123", "scrabble", VERSION), rec)[1]
    assert short and short[0].startswith("hallclock.cfg refused (CFG10: tls_ca_file names no CA"), \
        short
    (tmp_path / "hallclock.ca").write_bytes(ssl.PEM_cert_to_DER_cert(open(hall.ca).read()))
    good = FakeHW(text)
    good.use_network = use_network
    play_device(good, 300)
    assert used == ["hallclock.ca"] and not good.lines


def test_the_tls_words_are_the_firmwares_codes():
    from hallclock import whytext
    from hallclock_fw import tlslink
    assert sorted(whytext.TLS_WORDS) == sorted([tlslink._E_REFUSED, tlslink._E_TLS])
    assert whytext.words(3 | tlslink._E_REFUSED << 5).startswith("TLS refused")
    assert tlslink._C_TLS in whytext.CFG_WORDS


def test_the_plain_wifi_clock_interns_none_of_tls_names():
    """The heap model's Wi-Fi clock (the webassembly VM: the firmware's
    modules as a board imports them, hallclock.cfg's parser and the link's
    builders included): no name of TLS's is interned, the module is not
    loaded (the plain Wi-Fi clock is at the qstr pools' limit)."""
    from hallclock.vboard import bootheap
    with bootheap.open_vm() as vm:
        _fig, st = bootheap.boot32(vm, "scrabble", "wifi", minutes=1)
        loaded = vm.exec("import sys\nprint(sorted(k for k in sys.modules if 'tls' in k))")
    interned = st["sets"]["booted"]
    assert "WifiLink" in interned and "NetLink" in interned  # (the set is the Wi-Fi clock's)
    for name in ("tlslink", "hallclock_fw.tlslink", "Tls", "tls_ca_file", "_io", "ioctl",
                 "server_hostname", "load_verify_locations"):
        assert name not in interned, name
    assert "[]" in loaded, loaded


# A reconnect during a running move (docs/network.md "TLS on the clock"): the
# firmware's App on the unix port's real time (RealPace), its NetLink over TLS
# through tlslink, the link dropped 500 ms before the move's first warning.
# A board's handshake holds one pass for about a second (mbedTLS's arithmetic,
# no restartable ECC); the unix port's is 18-108 ms, so the step that did the
# arithmetic (the one call of the handshake over 10 ms) is made to hold the
# loop 1 000 ms more, as a board's would.  Short settings, the rule's shape
# (three warnings, then expiry): a 12 s move, warnings at 9/6/3 s left.
RECONNECT = r"""
import time
from hallclock_fw import tlslink
from hallclock_fw.events import EV_EXPIRED, EV_TURN, EV_WARN
from hallclock_fw.netlink import NetLink
from hallclock.vboard.vdev.netpump import NetLine, _Cfg, opener, ticks_ms
from hallclock.vboard.vdev.pump import RealPace, mark, pump, since
from hallclock.vboard.vdev.runner import Runner

settings = {"move_s": 12, "warn_s": (9, 6, 3), "round_min": 40, "round_warn_min": 10}
actions = [(0, "press", "START"), (1500, "press", "B"), (%(press)d, "press", "A"),
           (%(press)d + 4000, "press", "B"), (%(press)d + 6000, "end", None)]
runner = Runner("scrabble", settings, actions, clock="t1", sid="0000cafe")
net = NetLink(%(hall)r, "t1", "t1", %(pw)r, opener("127.0.0.1", %(port)d), ticks_ms,
              key=%(key)r, hall_key=%(hall_key)r)
cfg = _Cfg({"tls_ca_file": %(ca)r, "broker": "127.0.0.1:%(port)d"})
net.opener = tlslink.opener(cfg)(net.opener)

board = tlslink.Tls._io
def board_speed(self, send, arg):
    if self.up:
        return board(self, send, arg)
    a = time.ticks_ms()
    try:
        return board(self, send, arg)
    finally:
        if time.ticks_diff(time.ticks_ms(), a) >= 10 and not getattr(self, "held", 0):
            self.held = 1
            time.sleep_ms(1000)
tlslink.Tls._io = board_speed

events = []
t0 = 0
app_link = runner.app.link
emit = app_link.emit
def record(t, code, v0, v1, v2, v3):
    # when it happened: real ms since t0 (a board stamps its pass's own time;
    # RealPace stamps the pass's due time however late it ran)
    events.append((int(since(t0)) if t0 else t, t, code, v2))
    emit(t, code, v0, v1, v2, v3)
app_link.emit = record

line = NetLine(net)
while not line.ready():
    line.wait(20)
t0 = mark()
if %(minded)r:  # as hw/boot.py on a board; the App's time now is real time since t0
    tlslink._minded_clock = (lambda: runner.app, lambda: runner.start + int(since(t0)))
st = {"dropped": 0, "last": 0.0, "up": 1}
gaps = []
connects = []
def after_pass():
    now = since(t0)
    if now - st["last"] >= 300:
        gaps.append((int(st["last"]), int(now)))
    st["last"] = now
    if not st["dropped"] and now >= %(drop)d:
        st["dropped"] = 1
        st["up"] = 0
        net.drop(ticks_ms())
    if not st["up"] and net.connected():
        st["up"] = 1
        connects.append(int(now))
pump(runner, line, RealPace(t0), stop=lambda: runner.ended, after_pass=after_pass)
print("EVENTS", [e for e in events if e[2] in (EV_TURN, EV_WARN, EV_EXPIRED)])
print("GAPS", gaps)
print("CONNECTS", connects, net.connects)
net.close()
"""


def _reconnect_run(hall, ca, minded):
    import ast
    c = hall.creds["t1"]
    code = RECONNECT % {"hall": HALL, "pw": c["password"], "key": c["key"],
                        "hall_key": c["hall_key"], "port": hall.tls_port, "ca": str(ca),
                        "minded": minded, "press": 15000, "drop": 4000}
    env = dict(os.environ, MICROPYPATH=".frozen:" + str(mpunix.device_tree()))
    return subprocess.Popen([mpunix.binary(), "-X", "heapsize=1048576", "-c", code],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env), ast


def _reconnect_figures(proc_ast):
    proc, ast = proc_ast
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in err, err
    lines = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] for ln in out.splitlines() if " " in ln}
    return (ast.literal_eval(lines["EVENTS"]), ast.literal_eval(lines["GAPS"]),
            ast.literal_eval(lines["CONNECTS"].rsplit(" ", 1)[0]), out)


def _lateness(events):
    """(due, ms late) of each warning and expiry: when it sounded (real time)
    against its move's start (its ``turn``'s stamp, the press's contact): a
    12 s move, warnings at 9/6/3 s left, expiry at 12 s."""
    from hallclock_fw.events import EV_EXPIRED, EV_TURN, EV_WARN
    late = []
    start = 0
    for t, stamp, code, left_s in events:
        if code == EV_TURN:
            start = stamp
        elif code == EV_WARN or code == EV_EXPIRED:
            due = start + 12000 - (left_s * 1000 if code == EV_WARN else 0)
            late.append((due, t - due))
    return late


def test_a_tls_reconnect_during_a_running_move_keeps_the_warnings_and_expiry_on_time(
        hall, tmp_path):
    """Rules: warnings at 30/20/10 s left, expiry exact to the ms (here the
    same shape on a 12 s move).  The link drops 500 ms before the first
    warning; a board's handshake would hold the loop about a second across
    it.  The minded clock (hw/boot.py's ``_minded_clock``) starts no
    handshake while a deadline is within 2 s, nor while a player's time
    runs until just after a press: it reconnects after the next press, and
    every warning and the expiry are on time (within 250 ms on this loaded
    machine), no long pass straddling one.  The same run without the clock
    minded (the tree before) has the first warning about 800 ms late: the
    test fails without the deferral."""
    ca = tmp_path / "hallclock.ca"
    ca.write_bytes(ssl.PEM_cert_to_DER_cert(open(hall.ca).read()))
    minded = _reconnect_run(hall, ca, True)
    unminded = _reconnect_run(hall, ca, False)
    events, gaps, connects, out = _reconnect_figures(minded)
    late = _lateness(events)
    # move 1 (1.5 s): three warnings and its expiry; move 2 (15 s): its first warning
    assert [d for d, _ms in late] == [4500, 7500, 10500, 13500, 18000], out
    print("minded: (due, ms late)", late, "held passes", gaps, "reconnected at", connects)
    assert all(0 <= ms < 250 for _d, ms in late), (late, out)
    assert connects and connects[0] >= 15000, out  # after the press that began move 2
    for a, b in gaps:  # no held pass straddles a warning or the expiry
        assert not any(a < d < b for d, _ms in late), (a, b, out)
    assert any(b - a >= 900 for a, b in gaps), out  # the board-speed handshake held a pass
    events, _gaps, connects, out = _reconnect_figures(unminded)
    late = _lateness(events)
    print("unminded: (due, ms late)", late, "held passes", _gaps, "reconnected at", connects)
    assert connects and connects[0] < 6000, out  # the tree before: reconnected at once ...
    assert late and late[0][0] == 4500 and late[0][1] >= 500, (late, out)  # ... the warning late


CALM_LOCKED = r"""
import micropython
from hallclock_fw import tlslink
from hallclock.vboard.vdev.runner import Runner
settings = {"move_s": 20, "warn_s": (9, 6, 3), "round_min": 40, "round_warn_min": 10}
runner = Runner("scrabble", settings, [(0, "press", "START"), (1500, "press", "B"),
                                       (9000, "end", None)], clock="t1")
while runner.last_ms < 3000:  # the move's first warning at 12 500, its press at 1 500
    runner.step()
tlslink._minded_clock = (lambda: runner.app, lambda: runner.clock.now)  # the last pass's time
first = step = None  # (a new global in the lock would grow the module's dict)
micropython.heap_lock()
try:
    first = tlslink._calm(True)
    step = tlslink._calm(False)
finally:
    micropython.heap_unlock()
print("CALM", first, step, runner.app.core.running(), runner.ms)
dup = Runner("duplicate", {"move_s": 180, "announce_s": (120, 60, 30)},
             [(0, "press", "START"), (9000, "end", None)], clock="t2")
while dup.last_ms < 3000:
    dup.step()
tlslink._minded_clock = (lambda: dup.app, lambda: dup.clock.now)
print("DUPLICATE", tlslink._calm(True), dup.app.core.running())
"""


def test_the_calm_check_allocates_nothing(tmp_path):
    """While a TLS reconnect waits, every pass asks ``_calm``: habit 3 (a
    pass allocates nothing when nothing is due) holds for it, under the unix
    port's heap_lock, with a move running 1.5 s after its press (not calm
    to start one: no press within 1 s; calm for a step of one under way: no
    deadline within 2 s); a running duplicate countdown needs no press."""
    out = _mp(CALM_LOCKED)
    assert out.split()[:4] == ["CALM", "False", "True", "True"], out
    # the duplicate countdown (the hall's, no player presses): calm 3 s in, its
    # first announcement 57 s away, no press needed
    assert "DUPLICATE True True" in out, out
