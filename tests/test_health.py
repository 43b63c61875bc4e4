"""The clock's own margins and its watchdog: the ``health`` event (at boot,
every 10 minutes, and on the host's ``I`` frame), ``hallclock report``'s
health lines, ``hallclock doctor`` over the running clock's link, the
watchdog the loop feeds (a hung pass and an uncaught error restart the
board, and the host's restore brings the game back), and the GC threshold
fixed in bytes."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, read_log, run_cli, strip_host
import healthlog
from hallclock.link import health
from hallclock.vboard import unixport as mpunix, device as virtual
from hallclock import scenario
from hallclock.vboard.vdev.fakes import FakeWDT
from hallclock.vboard.vdev.runner import Runner
from hallclock.views.model import restore_for
from hallclock_fw import VERSION, protocol
from hallclock import hostframes
from hallclock_fw.core.timing import ticks_diff
from hallclock_fw.events import EV_HEALTH
from hallclock_fw.hw import device
from hallclock_fw.settings import MODES
from hallclock_fw.hw.boot import GC_THRESHOLD
from hallclock_fw.settings import parse

sys.path.insert(0, os.path.join(ROOT, "tests"))
from faultproxy import FaultProxy  # noqa: E402

HALLCLOCK = os.path.join(os.path.dirname(sys.executable), "hallclock")


def _simulate(tmp_path, text, interpreter, name="g", mode="scrabble", **kw):
    path = tmp_path / (name + ".txt")
    path.write_text(text)
    out = tmp_path / f"{name}-{interpreter}.jsonl"
    fig = {}
    if interpreter == "micropython-unix":
        kw["figures"] = fig
    virtual.simulate(scenario.load(str(path)), mode, parse(mode, []), str(out),
                     interpreter=interpreter, **kw)
    return read_log(out), fig, out


def _game(minutes):
    lines = ["0 press START", "2000 press B"]
    t, who = 2000, "A"
    while t < minutes * 60000:
        t += 45000
        lines.append("%d press %s" % (t, who))
        who = "B" if who == "A" else "A"
    return "\n".join(lines) + "\n%d end\n" % (t + 1000)


# -- the health event ----------------------------------------------------------
def test_health_at_boot_and_every_ten_minutes_and_in_the_report(tmp_path):
    recs, fig, out = _simulate(tmp_path, _game(25), "micropython-unix")
    reports = [r for r in recs if r["event"] == "health"]
    # at the first pass after boot, then every 10 minutes of the clock's time
    assert [r["t_ms"] // 600000 for r in reports] == [0, 1, 2]
    assert reports[0]["seq"] == 2 and recs[0]["event"] == "boot"
    for r in reports:
        assert r["gc_used"] > 0 and r["gc_free"] > 0
        assert 0 < r["gc_largest"] <= r["gc_free"]  # the unix port bisects it
        assert r["longest_pass_ms"] >= 0
        assert "idf_free" not in r  # the unix port has no IDF heap
    # the threshold is a number of bytes, not a share of the free heap
    want = int(GC_THRESHOLD * mpunix.word_ratio("scrabble")) + mpunix.HARNESS_GC_BYTES
    assert want - 32 < fig["threshold"] <= want  # (the port keeps it in 32-byte blocks)
    # the CPython virtual clock runs the same passes (hw/device.py one_pass):
    # its reports come at the same seq and t_ms, with no heap to report; the
    # logs are equal once the machine figures are masked
    cpy, _f, _o = _simulate(tmp_path, _game(25), "cpython")
    assert strip_host(recs) == strip_host(cpy)
    cpy_reports = [r for r in cpy if r["event"] == "health"]
    assert [(r["seq"], r["t_ms"]) for r in cpy_reports] == [(r["seq"], r["t_ms"])
                                                             for r in reports]
    assert all(r["gc_used"] is None and r["longest_pass_ms"] == 0 for r in cpy_reports)
    res = run_cli("report", str(out))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    at = [i for i, ln in enumerate(lines) if ln.startswith("health virtual-1")]
    assert at and "3 report(s)" in lines[at[0]] and "longest pass" in lines[at[0]], res.stdout
    used = max(r["gc_used"] for r in reports)
    assert lines[at[0] + 1].strip() == "GC heap: at most %d B live, margin %d B to 56000 B" % (
        used, 56000 - used)


def test_health_text_fields_and_what_is_short():
    f = health.health_fields("fw=0.1.0;mp=1.21.0;part=factory:1984,nvs:24;idf=20000,4000")
    assert f == {"firmware": "0.1.0", "micropython": "1.21.0",
                 "partitions": {"factory": 1984, "nvs": 24},
                 "idf_free": 20000, "idf_largest": 4000}
    rec = dict(f, gc_used=50000, gc_free=6000, gc_largest=None, longest_pass_ms=6000)
    short = " | ".join(health.shortfalls(rec))
    for words in ("GC heap: 50000 B live", "IDF heap: 20000 B free", "6000 ms",
                  "MicroPython 1.21.0 is older than 1.22", "no vfs partition"):
        assert words in short, short
    fine = {"gc_used": 30000, "gc_free": 26000, "idf_free": 60000, "idf_largest": 30000,
            "longest_pass_ms": 40, "firmware": VERSION, "micropython": "1.24.1",
            "partitions": {"factory": 1984, "vfs": 2048}}
    assert health.shortfalls(fine) == []
    assert "make deploy" in " ".join(health.shortfalls(dict(fine, firmware="0.0.9")))
    assert health.cannot_know(fine) == []  # a board: every figure is its own


def test_a_virtual_board_says_what_it_cannot_know_instead_of_short():
    """A virtual board's GC heap holds the virtual device too (the unix
    port's words are 64-bit): over the ESP32's area it is not "short", it is
    a figure that board cannot know; no IDF heap, no partitions either.  A
    long pass or an old MicroPython is short there as anywhere."""
    for port in ("unix", "webassembly"):
        rec = dict(health.health_fields(f"fw={VERSION};mp=1.27.0;port={port}"),
                   gc_used=70000, gc_free=100000, gc_largest=None, longest_pass_ms=40)
        assert health.shortfalls(rec) == []
        unknown = " | ".join(health.cannot_know(rec))
        for words in ("the GC heap against the ESP32's first 56000 B area", "the IDF heap",
                      "the flash partitions"):
            assert words in unknown, unknown
        slow = dict(rec, longest_pass_ms=6000, micropython="1.20.0")
        assert len(health.shortfalls(slow)) == 2
    board = dict(rec, port=None)
    assert "GC heap: 70000 B live" in " ".join(health.shortfalls(board))
    assert health.cannot_know(board) == []


def test_without_health_renumbers_the_session_after_each_report():
    recs = [{"session": "s", "seq": 1, "event": "boot"},
            {"session": "s", "seq": 2, "event": "health"},
            {"session": "s", "seq": 3, "event": "turn"},
            {"session": "s", "seq": 4, "event": "power_loss", "last_seq": 3},
            {"session": "t", "seq": 1, "event": "boot"}]
    assert healthlog.without_health(recs) == [
        {"session": "s", "seq": 1, "event": "boot"},
        {"session": "s", "seq": 2, "event": "turn"},
        {"session": "s", "seq": 3, "event": "power_loss", "last_seq": 2},
        {"session": "t", "seq": 1, "event": "boot"}]


def test_without_health_a_power_loss_after_a_report_names_the_event_before_it():
    """The power went after the boot's health report, the session's last stored
    event: without reports, the boot is the last one stored, and the
    power_loss follows it (seq = last_seq + 1, docs/contract.md)."""
    recs = [{"session": "s", "seq": 1, "event": "boot"},
            {"session": "s", "seq": 2, "event": "health"},
            {"session": "s", "seq": 3, "event": "power_loss", "last_seq": 2},
            {"session": "t", "seq": 1, "event": "boot"},
            {"session": "t", "seq": 2, "event": "health"},
            {"session": "t", "seq": 3, "event": "health"},
            {"session": "t", "seq": 4, "event": "power_loss", "last_seq": 3}]
    assert healthlog.without_health(recs) == [
        {"session": "s", "seq": 1, "event": "boot"},
        {"session": "s", "seq": 2, "event": "power_loss", "last_seq": 1},
        {"session": "t", "seq": 1, "event": "boot"},
        {"session": "t", "seq": 2, "event": "power_loss", "last_seq": 1}]


class LoopHW:
    """hw/device.py's hardware object around a CPython Runner (the loop's
    optional parts: watchdog, heap figures, info text)."""

    def __init__(self, runner):
        self.r = runner
        self.wdt = None
        self.fed = 0

    def ticks_ms(self):
        return self.r.now()

    def wait(self, due):
        self.r.ms += max(1, ticks_diff(due, self.r.now()))
        self.r.clock.now = self.r.now()
        self.r._apply()

    def watchdog(self, ms):
        self.wdt = FakeWDT(self.ticks_ms, ms)
        feed = self.wdt.feed

        def counted():
            self.fed += 1
            feed()
        self.wdt.feed = counted
        return self.wdt

    def heap_figures(self):
        return 1234, 45000, 30000

    def info_text(self):
        return "mp=1.24.1;part=factory:1984,vfs:2048"


def test_the_loop_feeds_the_watchdog_and_answers_the_info_frame():
    r = Runner("scrabble", parse("scrabble", []), [(0, "press", "START")])
    hw = LoopHW(r)
    r.feed(hostframes.info())
    device.loop(hw, r.app, passes=20)
    assert hw.fed == 20  # every pass
    assert hw.wdt.timeout_ms == device.WDT_MS and not hw.wdt.expired()
    frames = [protocol.check(protocol.unframe(ln + b"\n"))
              for ln in r.take_output().split(b"\n") if ln]
    infos = [t for t in frames if t and t[0] == "E" and int(t[4]) == EV_HEALTH]
    texts = [t[9] for t in infos if len(t) > 9]
    # the first pass reports; the I frame is answered with the versions
    assert any(t.startswith("fw=" + VERSION + ";mp=1.24.1;part=") and "idf=45000,30000" in t
               for t in texts), texts
    assert [int(t[7]) for t in infos][0] == 1234  # gc_largest from the port
    r.ms += device.WDT_MS + 1
    assert hw.wdt.expired()  # a pass that never returned: the watchdog fires


# -- the watchdog and the restore ---------------------------------------------
FAULTS = """\
0      press START
2000   press B
20000  press A
30000  hang
50000  press B
70000  press A
80000  crash
100000 press B
110000 end
"""


@pytest.mark.parametrize("interpreter", ["micropython-unix", "cpython"])
def test_a_hung_pass_and_an_uncaught_error_restart_and_restore_the_game(tmp_path, interpreter):
    recs, fig, _out = _simulate(tmp_path, FAULTS, interpreter, restore=restore_for)
    sessions = []
    for r in recs:
        if r.get("session") not in sessions:
            sessions.append(r["session"])
    assert len(sessions) == 3  # the watchdog's reset, then main.py's
    losses = [r for r in recs if r["event"] == "power_loss"]
    assert len(losses) == 2 and all("restore" in r for r in losses)
    resumes = [r for r in recs if r["event"] == "resume"]
    # the game goes on where it was: B's move 2, then B's move 4
    assert [(r["player"], r["move"]) for r in resumes] == [("B", 2), ("B", 4)]
    # the hang: 10 s of the watchdog (WDT_MS) before the board restarted, so
    # the press at 50 s comes 9.999 s into the new session; the crash: 3 s
    presses = [r for r in recs if r["event"] == "press" and r["session"] != sessions[0]]
    assert presses[0]["t_ms"] == 50000 - 30000 - device.WDT_MS - 1
    assert presses[-1]["t_ms"] == 100000 - 80000 - 3000
    assert recs[-1]["event"] == "end"
    if interpreter == "micropython-unix":
        assert fig["watchdog_resets"] == 1 and fig["crash_resets"] == 1


# -- hallclock doctor ----------------------------------------------------------
def test_doctor_asks_the_running_clock_on_its_serial_port(tmp_path):
    proxy = FaultProxy(str(tmp_path), device_by_path=True)
    proxy.start()
    script = tmp_path / "g.txt"
    script.write_text("0 press START\n2000 press B\n600000 end\n")
    dev = subprocess.Popen([HALLCLOCK, "device", "--script", str(script), "--port",
                            proxy.device_path, "--interpreter", "micropython-unix",
                            "--silence-s", "30"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        res = run_cli("doctor", "--port", proxy.path, "--wait-s", "20")
    finally:
        dev.kill()
        dev.communicate()
        proxy.close()
    out = res.stdout
    assert "clock virtual-1: mode scrabble, firmware " + VERSION in out, (out, res.stderr)
    assert "firmware %s, MicroPython 1." % VERSION in out
    assert "(the unix port: a virtual board)" in out
    assert "GC heap: " in out and "longest pass" in out
    # the unix port's heap is 64-bit words and holds the harness: not the
    # ESP32's figure, so the doctor says it cannot know it instead of "short"
    assert "cannot know here: the GC heap against the ESP32's first 56000 B area" in out
    assert "short:" not in out and "to the first 56000 B area" not in out
    assert res.returncode == 0 and "nothing is short" in out, out


def test_doctor_without_a_clock_is_one_line(tmp_path):
    master, slave = os.openpty()
    try:
        res = run_cli("doctor", "--port", os.ttyname(slave), "--wait-s", "0.5")
    finally:
        os.close(master)
        os.close(slave)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [res.stderr.strip()], res.stderr
    assert "no answer from" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("doctor")
    assert res.returncode == 2 and "--port" in res.stderr


def test_the_event_catalogue_names_the_health_fields():
    from hallclock import catalog
    assert catalog.EVENTS[EV_HEALTH][0] == "health"
    assert json.dumps(catalog.fields_of(EV_HEALTH, (100, 200, -1, 7))) == \
        '{"gc_used": 100, "gc_free": 200, "gc_largest": null, "longest_pass_ms": 7}'


def test_doctor_asks_a_clock_on_the_broker(tmp_path):
    """The same W and I over the hall network: the clock's down topic, its
    answer on its up topic (the virtual clock runs hw/device.py's passes on
    CPython, which has no MicroPython heap: its heap figures are null)."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from mqttrig import HALL, Hall
    hall = Hall(tmp_path, clocks=("t1",))
    try:
        hall.device("t1", "0 press START\n1500 press B\n600000 end\n")
        res = run_cli("doctor", "--broker", "127.0.0.1:%d" % hall.port, "--hall", HALL,
                      "--credentials", hall.cred_file, "--clock", "t1", "--wait-s", "20")
    finally:
        hall.close()
    assert "clock t1: mode scrabble, firmware " + VERSION in res.stdout, (res.stdout,
                                                                           res.stderr)
    assert "firmware %s, MicroPython none (a virtual clock on CPython)" % VERSION in res.stdout
    assert res.returncode == 0 and "nothing is short" in res.stdout
    res = run_cli("doctor", "--broker", "127.0.0.1:1", "--hall", HALL,
                  "--credentials", str(tmp_path / "none.json"))
    assert res.returncode == 2 and "--clock" in res.stderr


# -- the heap: the running serial clock inside the ESP32's first GC area --------
@pytest.mark.parametrize("mode", MODES)
def test_a_serial_clock_stays_inside_the_first_gc_area(mode):
    """32-bit sizes (the webassembly VM, bench/heap32.py): a 3-minute game
    with a minute of host outage; the heap's peak before each of the loop's
    collections, and the live heap after boot plus the fixed GC threshold
    (the peak if only the automatic collection ran), inside 56 000 bytes.
    `make bench` runs the 40-minute game of every mode on both links."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import heap32
    fig = heap32.game(mode, "serial", minutes=3, outage=(60000, 120000))
    assert fig["peak_in_outage"] > 0  # the outage was measured
    assert fig["peak"] <= heap32.GC_AREA, fig
    assert fig["after_boot"] + GC_THRESHOLD <= heap32.GC_AREA, fig


# -- the board's own parts: hw/esp32.py on a fake `machine` and `esp32` ---------
def _esp32_on_fakes(monkeypatch, esp32_mod):
    """hw/esp32.py imported on fake ``machine`` (WDT, Timer) and ``esp32``
    modules; the ESP32 object without its panel (these parts need none)."""
    import types
    made = {"wdt": [], "timers": []}

    class WDT:
        def __init__(self, timeout):
            self.timeout = timeout
            self.fed = 0
            made["wdt"].append(self)

        def feed(self):
            self.fed += 1

    class Timer:
        def __init__(self, n):
            self.n = n
            made["timers"].append(self)

        def init(self, period, callback):
            self.period, self.callback = period, callback

    machine = types.ModuleType("machine")
    machine.Pin = machine.PWM = object
    machine.WDT, machine.Timer = WDT, Timer
    machine.reset = lambda: None
    monkeypatch.setitem(sys.modules, "machine", machine)
    import time
    for name in ("ticks_ms", "ticks_us", "sleep_ms", "sleep_us"):
        monkeypatch.setattr(time, name, lambda *a: 0, raising=False)
    monkeypatch.setattr(time, "ticks_diff", lambda a, b: a - b, raising=False)
    if esp32_mod is None:  # (no module of that name on this host: ImportError)
        monkeypatch.delitem(sys.modules, "esp32", raising=False)
    else:
        monkeypatch.setitem(sys.modules, "esp32", esp32_mod)
    import importlib
    import hallclock_fw.hw as hw_pkg
    for m in ("hallclock_fw.hw.esp32", "hallclock_fw.hw.esp32rare"):
        # hw/esp32.py and its once-or-rarely half (imported by a call) imported
        # afresh on this test's fakes, and dropped after it: not the package's
        # attribute or module of an earlier test, on its own fake machine
        # (not ``from hallclock_fw.hw import esp32``: that takes the attribute)
        short = m.rsplit(".", 1)[1]
        monkeypatch.setitem(sys.modules, m, None)
        monkeypatch.delitem(sys.modules, m)
        monkeypatch.setattr(hw_pkg, short, None, raising=False)
        monkeypatch.delattr(hw_pkg, short)
    board_hw = importlib.import_module("hallclock_fw.hw.esp32")
    hw = board_hw.ESP32.__new__(board_hw.ESP32)
    hw.wdt = None
    return hw, made


class FakeEsp32Module:
    HEAP_DATA = 4

    class Partition:
        TYPE_APP, TYPE_DATA = 0, 1
        TABLE = {0: [(0, 0, 0x10000, 0x1F0000, "factory", False)],
                 1: [(1, 2, 0x9000, 0x6000, "nvs", False),
                     (1, 129, 0x200000, 0x200000, "vfs", False)]}

        def __init__(self, info):
            self._info = info

        def info(self):
            return self._info

        @classmethod
        def find(cls, kind):
            return [cls(i) for i in cls.TABLE[kind]]

    @staticmethod
    def idf_heap_info(caps):
        assert caps == FakeEsp32Module.HEAP_DATA
        # (total, free, largest free block, minimum free) per IDF region
        return [(240000, 21000, 9000, 15000), (16000, 14000, 12000, 10000)]


def test_the_board_watchdog_is_machine_wdt_and_a_timer_feeds_it_in_maintenance(monkeypatch):
    hw, made = _esp32_on_fakes(monkeypatch, FakeEsp32Module)
    hw.watchdog_off()  # never started (PAUSE at power-on): nothing to feed
    assert made["timers"] == []
    wdt = hw.watchdog(device.WDT_MS)
    assert made["wdt"] == [wdt] and wdt.timeout == device.WDT_MS == 10000
    hw.watchdog_off()  # the console handed back: a 1 s timer feeds it from now on
    (timer,) = made["timers"]
    assert timer.period == 1000 and timer.period < device.WDT_MS
    timer.callback(timer)
    timer.callback(timer)
    assert wdt.fed == 2


def test_the_board_reports_the_idf_heap_and_its_partitions(monkeypatch):
    hw, _made = _esp32_on_fakes(monkeypatch, FakeEsp32Module)
    # the regions' free bytes summed, the largest block of any; no GC figure
    assert hw.heap_figures() == (-1, 35000, 12000)
    v = sys.implementation.version
    assert hw.info_text() == "mp=%d.%d.%d;part=factory:1984,nvs:24,vfs:2048" % (
        v[0], v[1], v[2])
    used, free, largest, text = device.heap_text(hw, info=True)
    assert largest == -1 and text.endswith(";idf=35000,12000"), text
    rec = health.health_fields(text)
    assert rec["idf_free"] == 35000 and rec["partitions"]["vfs"] == 2048


def test_a_port_without_the_esp32_module_reports_no_idf_heap(monkeypatch):
    hw, _made = _esp32_on_fakes(monkeypatch, None)
    assert hw.heap_figures() == (-1, -1, -1)
    v = sys.implementation.version
    assert hw.info_text() == "mp=%d.%d.%d" % (v[0], v[1], v[2])
    assert device.heap_text(hw)[3] is None  # no idf= part


# -- the event ring first -------------------------------------------------------
RING_FIRST = """
import sys
from hallclock_fw import link
seen = []
real = link.reserve
def spy(capacity=link.CAPACITY):
    seen.append(sorted(m for m in sys.modules if m.startswith("hallclock_fw")))
    real(capacity)
link.reserve = spy
from hallclock_fw.hw import device
ring = link._RESERVED[0]
print("BEFORE", " ".join(seen[0]) if len(seen) == 1 else "calls=%d" % len(seen))
dl = link.DeviceLink(None, "00000001", "t1", "scrabble", "", "v", 0)
print("TAKEN", dl.ring is ring, len(link._RESERVED), len(ring))
"""


def test_the_event_ring_is_allocated_before_the_clocks_code_is_loaded():
    """Inside MicroPython: importing hw/device.py reserves the event ring (its
    largest block) before the App, the modes, the display and the settings
    are loaded (their code and tables fragment the heap; only the link's own
    modules come before), and the clock's link takes that block."""
    try:
        binary = mpunix.binary()
    except mpunix.UnixPortMissing as exc:  # make setup installs it; say so, do not skip
        pytest.fail(str(exc))
    env = dict(os.environ, MICROPYPATH=str(mpunix.device_tree()))
    res = subprocess.run([binary, "-c", RING_FIRST], capture_output=True, text=True, env=env,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    out = dict(line.split(" ", 1) for line in res.stdout.splitlines())
    before = out["BEFORE"].split()
    assert "hallclock_fw.link" in before, out
    for later in ("hallclock_fw.app", "hallclock_fw.modes", "hallclock_fw.display",
                  "hallclock_fw.settings"):
        assert later not in before, (later, before)
    from hallclock_fw import link
    assert out["TAKEN"] == "True 0 %d" % (link._F * link.CAPACITY)  # _F ints per event


def test_a_unix_port_clock_on_the_broker_reports_its_health_in_the_log_and_report(tmp_path):
    """The hall network: the firmware's NetLink inside the MicroPython unix
    port, a game past the 10-minute mark; the logger's log holds the boot's
    report and the periodic one, at the passes the serial CPython clock makes
    them (figures masked), and ``hallclock report`` shows them for the clock."""
    from mqttrig import HALL, HALLCLOCK, Hall, clock_records, game, reference
    try:
        mpunix.binary()
    except mpunix.UnixPortMissing as exc:  # make setup installs it; say so, do not skip
        pytest.fail(str(exc))
    text = game(moves=26, gap_ms=25000)  # 11 minutes of play
    path = tmp_path / "t1.txt"
    path.write_text(text)
    hall = Hall(tmp_path, clocks=("t1",))
    try:
        log = tmp_path / "hall.jsonl"
        lg = hall.start_logger(log, clocks=["t1"])
        p = subprocess.Popen(HALLCLOCK + [
            "device", "--broker", f"127.0.0.1:{hall.port}", "--hall", HALL, "--clock", "t1",
            "--credentials", hall.cred_file, "--script", str(path), "--session", "0000cafe",
            "--interpreter", "micropython-unix", "--heap-kib", "56"],  # a board's heap
            stderr=subprocess.PIPE, text=True)
        hall.loggers.append(p)
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        hall.wait_logger(lg)
    finally:
        hall.close()
    recs = read_log(log)
    reports = [r for r in recs if r["event"] == "health"]
    assert [r["t_ms"] // 600000 for r in reports] == [0, 1]
    assert all(r["gc_used"] > 0 and r["gc_free"] > 0 for r in reports)  # MicroPython's heap
    got, want = clock_records(log, "t1"), reference(tmp_path, "t1", text)
    # the periodic report comes at the first pass from 10 minutes on: the serial
    # clock's next scheduled one, or earlier where the broker's ack woke a pass
    # (an ack that missed the simulated clock's hold wakes it at a later sim ms)
    late = [i for i, r in enumerate(want) if r["event"] == "health" and r["t_ms"]]
    assert len(late) == 1 and got[late[0]]["event"] == "health", (got, want)
    assert 600000 <= got[late[0]]["t_ms"] <= want[late[0]]["t_ms"], (got[late[0]], want[late[0]])
    got[late[0]]["t_ms"] = want[late[0]]["t_ms"]
    assert got == want
    res = run_cli("report", str(log))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    at = [i for i, ln in enumerate(lines) if ln.startswith("health t1: 2 report(s)")]
    assert at, res.stdout
    used = max(r["gc_used"] for r in reports)
    assert lines[at[0] + 1].strip() == "GC heap: at most %d B live, margin %d B to 56000 B" % (
        used, 56000 - used)


def test_doctor_on_a_board_answer_names_its_heaps_partitions_and_what_is_short():
    """What ``hallclock doctor`` prints of a board's answer (hw/esp32.py's
    text, as test_the_board_reports_the_idf_heap_and_its_partitions makes it):
    the versions, both heaps, the partitions, each shortfall."""
    from hallclock.commands.doctor import verdict
    hello = ("H", "0a0b0c0d", "hall-3", "scrabble", VERSION)
    rec = health.health_fields("fw=%s;mp=1.24.1;part=factory:1984,nvs:24;idf=20000,4000"
                               % VERSION)
    rec.update(gc_used=51000, gc_free=90000, gc_largest=None, longest_pass_ms=12)
    lines, short, unknown = verdict(hello, rec)
    assert unknown == []  # a board: every figure is its own
    assert lines == [
        "clock hall-3: mode scrabble, firmware %s (hello)" % VERSION,
        "firmware %s, MicroPython 1.24.1" % VERSION,
        "GC heap: 51000 B live, 90000 B free; 5000 B to the first 56000 B area",
        "IDF heap (Wi-Fi, sockets): 20000 B free, largest block 4000 B",
        "TLS to the broker would not fit: 20000 B of IDF heap free, largest block 4000 B "
        "(needs 61440 and 17408); keep this clock on plain MQTT (docs/network.md \"Does TLS "
        "fit the clock?\")",
        "longest pass since the last report: 12 ms",
        "partitions: factory 1984 KiB, nvs 24 KiB"]
    said = " | ".join(short)
    assert len(short) == 3, short
    for words in ("GC heap: 51000 B live", "IDF heap: 20000 B free, under 32768 B",
                  "no vfs partition"):
        assert words in said, said


@pytest.mark.parametrize("idf, fits", [
    ("70000,30000", True),  # enough free and a block for the 16 KiB record buffer
    ("61440,17408", True),  # exactly the floor after the connection, exactly the block
    ("61439,30000", False),  # a byte short of Wi-Fi's floor after the connection
    ("90000,17407", False),  # enough free, no block for the record buffer
])
def test_the_doctor_says_whether_tls_to_the_broker_fits_the_clock(idf, fits):
    """One TLS connection holds 24-27 KB of the IDF heap (bench/tlscost.py: 28 KB taken),
    its in-record buffer in one 17 KB block; what must stay is the doctor's
    Wi-Fi floor (32 KB)."""
    from hallclock.commands.doctor import verdict
    rec = health.health_fields("fw=%s;mp=1.24.1;idf=%s" % (VERSION, idf))
    rec.update(gc_used=40000, gc_free=90000, gc_largest=None, longest_pass_ms=12)
    lines = verdict(None, rec)[0]
    said = [x for x in lines if x.startswith("TLS to the broker")]
    assert len(said) == 1 and said[0].startswith(
        "TLS to the broker would fit" if fits else "TLS to the broker would not fit"), said
    rec = health.health_fields("fw=%s;mp=1.24.1" % VERSION)  # no IDF heap: nothing said
    rec.update(gc_used=40000, gc_free=90000, gc_largest=None, longest_pass_ms=12)
    assert not [x for x in verdict(None, rec)[0] if x.startswith("TLS")]


@pytest.mark.parametrize("mode, gc_fits", [("duplicate", True), ("scrabble", False),
                                           ("backgammon", False)])
def test_the_doctor_says_which_modes_gc_heap_has_room_for_tls(mode, gc_fits):
    """The IDF heap has room; the GC heap of a Scrabble or backgammon clock
    on TLS does not (bench/tlscost.py on heap32's peaks): the doctor says so
    beside "would fit"; a duplicate clock gets no such line."""
    from hallclock.commands.doctor import verdict
    rec = health.health_fields("fw=%s;mp=1.24.1;idf=70000,30000" % VERSION)
    rec.update(gc_used=40000, gc_free=90000, gc_largest=None, longest_pass_ms=12)
    lines = verdict(("H", "0a0b0c0d", "t1", mode, VERSION), rec)[0]
    note = [x for x in lines if x.startswith("but a ")]
    assert any(x.startswith("TLS to the broker would fit") for x in lines), lines
    assert (not note) if gc_fits else (len(note) == 1 and f"a {mode} clock on TLS would "
                                       "outgrow the first GC area" in note[0]), lines


# -- main.py: an uncaught error restarts the board --------------------------------
def _run_main(monkeypatch, exc):
    """firmware/main.py on CPython: hw/device.py's run raises ``exc``; the
    board's reset, sleep and traceback printer recorded."""
    import runpy
    import time
    import types
    calls = []
    board = types.ModuleType("hallclock_fw.hw.esp32")
    board.ESP32 = lambda: "the board"
    board.reset = lambda: calls.append("reset")
    import hallclock_fw.hw as hw_pkg
    monkeypatch.setitem(sys.modules, "hallclock_fw.hw.esp32", board)
    monkeypatch.setattr(hw_pkg, "esp32", board, raising=False)

    def run(hw):
        calls.append(("run", hw))
        raise exc
    monkeypatch.setattr(device, "run", run)
    monkeypatch.setattr(time, "sleep_ms", lambda ms: calls.append(("sleep", ms)), raising=False)
    monkeypatch.setattr(sys, "print_exception", lambda e: calls.append(("traceback", str(e))),
                        raising=False)
    runpy.run_path(os.path.join(ROOT, "firmware", "main.py"))
    return calls


def test_main_restarts_the_board_3_s_after_an_uncaught_error(monkeypatch):
    calls = _run_main(monkeypatch, RuntimeError("a bug in a pass"))
    # the traceback on the console, 3 s to Ctrl-C it (within the watchdog's
    # 10 s), then the reset: a new session the host's restore brings back
    assert calls == [("run", "the board"), ("traceback", "a bug in a pass"), ("sleep", 3000),
                     "reset"]
    assert 3000 < device.WDT_MS


def test_main_leaves_a_ctrl_c_to_the_repl(monkeypatch):
    with pytest.raises(KeyboardInterrupt):
        _run_main(monkeypatch, KeyboardInterrupt())


class SlowPasses:
    """hw/device.py's hardware object whose App passes take ``took`` ms of
    its tick (a board's pass takes time; a virtual clock's takes none)."""

    def __init__(self, runner):
        self.r = runner
        self.took = 0

    def ticks_ms(self):
        return self.r.now() + self.took


def _health_events(r):
    """(t_ms, longest_pass_ms) of the health events in the link's ring
    (t_ms, code, v0..v3 per event; its seq is its place)."""
    link = r.app.link
    out = []
    for seq in range(1, link.seq + 1):
        i = (seq % link.cap) * 6
        if link.ring[i + 1] == EV_HEALTH:
            out.append((link.ring[i], link.ring[i + 5]))
    return out


def test_each_report_gives_the_longest_pass_since_the_one_before():
    r = Runner("scrabble", parse("scrabble", []), [])
    hw = SlowPasses(r)
    health_state = device.health_state(r.now())
    for ms, took in ((0, 35), (1000, 12), (2000, 80), (599000, 3), (600000, 20),
                     (601000, 4), (1200000, 0)):
        r.ms = ms
        hw.took = took
        device.one_pass(hw, r.app, r.now(), health_state)
    # the first pass reports before its App pass (nothing measured yet); the
    # one at 10 min the longest of the passes since (80 ms), and its own pass
    # (20 ms) goes into the next report
    assert _health_events(r) == [(0, 0), (600000, 80), (1200000, 20)]


def test_the_heap_bench_runs_a_wifi_clock_to_the_end_of_its_game():
    """bench/heap32.py on Wi-Fi: the bench's broker and host speak the
    firmware's own MQTT reader and sealed frames (docs/protocol.md "Sealed
    frames on the network"), so the clock's ring drains as on a hall network:
    the game ends with the host holding every event (heap32.game raises
    otherwise), no message is refused either way, and the outage was
    measured.  The Wi-Fi heap goal is a figure of `make bench`, not this."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import heap32
    fig = heap32.game("duplicate", "wifi", minutes=3, outage=(60000, 120000))
    assert fig["events"] > 3 and fig["peak_in_outage"] > 0, fig
    assert fig["host_refused"] == 0 and fig["clock_refused"] == 0, fig


def test_the_names_a_stock_esp32_image_has_built_in_come_from_its_stubs():
    """The heap model's estimate of the firmware's names that take no pool
    entry on a board (docs/micropython.md "Limits of the model"): the ROM
    names of its C modules and of its frozen ones, not the words of a
    docstring nor the parameters of a def split over lines."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import heap32
    names = heap32.esp32_image_names()
    # machine, esp32, network (C) and umqtt.simple (frozen)
    assert {"WDT", "idf_heap_info", "isconnected", "getaddrinfo", "publish"} <= names
    assert "modes" not in names  # only in machine.Pin's docstring
    assert "firstbit" not in names  # only a parameter (of machine.SPI's init)
    assert "hallclock" not in names and "ticks_add" in names
