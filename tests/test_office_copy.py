"""The office's copy of every hall's log (``hallclock office``), on real
Mosquitto brokers (docs/network.md "Several halls"): two halls, each with
its own broker, logger (``hallclock log --broker``) and virtual clocks
playing a round, bridged to the office's broker through a TCP proxy (the
bridge's path), and the office's process.  Every hop is killed in turn
mid-round -- a hall's broker, the bridge, the office's broker, the office's
process (SIGKILL), a hall's logger (SIGKILL) -- while the clocks play on;
once all is back and the round over, ``hallclock audit`` finds each hall's
log and the office's copy of it the same, every record once.

A phone on the hall network with a clock's login (a third clock of the
hall, never on a table) and the hall's viewer login try to put a record into
the office's copy and to tell the hall's logger that the office has the
whole log already; the office's own read-only viewer login tries too: the
copy still equals the hall's log (a forged record would be one too many, a
believed acknowledgement would leave the copy short).

The clocks are the firmware on virtual boards (real time x SPEED); the test
grants them presses, which each clock takes in its own thread (after every
pass), so every hop goes down while the clocks are mid-game and speaking.
Every wait is on a condition."""
import json
import os
import signal
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from conftest import run_cli  # noqa: E402
from mqttrig import Proxy, bridged_hall, logs_agree as agree, start_broker, wait_for  # noqa: E402

from hallclock.net import broker, mqtt as mqtthost, ship  # noqa: E402
from hallclock.vboard import device as virtual  # noqa: E402
from hallclock.vboard.vdev.pump import RealPace, mark  # noqa: E402
from hallclock_fw.settings import parse  # noqa: E402

HALLCLOCK = [sys.executable, "-m", "hallclock"]
HALLS = ("hall-a", "hall-b")
TABLES = ("t1", "t2")  # the clocks that play; t3's login is the phone's
SPEED = 5.0  # the clocks' time: a 2-minute move limit is 24 s of the test's
PRESSES = 6  # presses each clock is granted while a hop is down


class Player:
    """Gives a virtual clock the presses the test granted, one at a time,
    from the clock's own thread (``after_pass``): each at the pass after the
    one due next, so no press falls between two passes unseen."""

    def __init__(self):
        self.runner = None
        self.granted = 0
        self.given = 0
        self.end = False
        self.ended = False

    def __call__(self):
        r = self.runner
        if r.ai < len(r.actions) or r.edges:
            return
        if self.given < self.granted:
            r.actions.append((r.ms + 1, "press", "AB"[self.given % 2]))  # B pressed first
            self.given += 1
        elif self.end and not self.ended:
            r.actions.append((r.ms + 1, "end", None))
            self.ended = True


def sigkill(b):
    """Mosquitto killed: what it held in memory (queues, sessions) is gone."""
    b.proc.send_signal(signal.SIGKILL)
    b.proc.wait()
    b.proc = None


def lines_of(p, into):
    """A process's stdout read into ``into`` (a list) in a thread."""
    def read():
        for line in p.stdout:
            into.append(line)
    threading.Thread(target=read, daemon=True).start()


class Rig:
    def __init__(self, root):
        self.root = root
        self.procs = []
        self.office_dir = str(root / "office")
        port, local = broker.free_port(), broker.free_port()
        self.office_creds = broker.write_office_config(self.office_dir, list(HALLS), port=port,
                                                       bind="127.0.0.1", local_port=local)
        self.office_local = local
        self.office_broker = start_broker(self.office_dir, open(root / "office.log", "ab"))
        self.copies = str(root / "copies")
        os.mkdir(self.copies)
        self.halls = {}
        for h in HALLS:
            folder = str(root / h)
            hport, hlocal = broker.free_port(), broker.free_port()
            creds = broker.write_config(folder, h, list(TABLES) + ["t3"], port=hport,
                                        bind="127.0.0.1", local_port=hlocal)
            proxy = Proxy(("127.0.0.1", port))  # the bridge's path to the office
            login = broker.load_bridge_login(os.path.join(self.office_dir, "halls",
                                                          h + ".json"), h)
            broker.add_bridge(folder, h, proxy.address, login)
            creds = broker.load_credentials(os.path.join(folder, "credentials.json"))
            self.halls[h] = {
                "folder": folder, "port": hport, "local": hlocal, "creds": creds,
                "proxy": proxy, "log": str(root / f"{h}.jsonl"),
                "broker": start_broker(folder, open(root / f"{h}-mosquitto.log", "ab")),
                "players": {}, "devices": {}}
        self.office = None
        self.start_office()
        for h in HALLS:
            self.start_logger(h)
        t0 = mark()
        for h in HALLS:
            for c in TABLES:
                self.start_clock(h, c, t0)

    # -- processes -----------------------------------------------------------
    def spawn(self, args):
        p = subprocess.Popen(HALLCLOCK + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        self.procs.append(p)
        out = []
        first = p.stdout.readline()  # connected (and subscribed) by then
        assert first, p.stderr.read()
        out.append(first)
        lines_of(p, out)
        p.stdout_lines = out
        return p

    def start_office(self):
        self.office = self.spawn(["office", "--broker", f"127.0.0.1:{self.office_local}",
                                  "--credentials",
                                  os.path.join(self.office_dir, "credentials.json"),
                                  "--out", self.copies, "--http-port", "0"])
        first = self.procs[-1].stdout_lines[0]
        self.page = first[first.index("http://"):].split()[0].rstrip(";")

    def start_logger(self, h):
        hall = self.halls[h]
        hall["logger"] = self.spawn([
            "log", "--broker", f"127.0.0.1:{hall['local']}", "--hall", h, "--credentials",
            os.path.join(hall["folder"], "credentials.json"), "--out", hall["log"],
            "--exit-on-end", "--plain"] + [x for c in TABLES for x in ("--clock", c)])

    def start_clock(self, h, clock, t0):
        hall = self.halls[h]
        player = Player()
        actions = [(0, "press", "START"), (300, "press", "B")]  # the rest: Player
        runner = virtual.make_runner("scrabble", parse("scrabble", []), actions, clock=clock,
                                     sid=f"{h[-1]}{clock}cafe".ljust(8, "0")[:8])
        player.runner = runner
        net = mqtthost.device_link(("127.0.0.1", hall["port"]), h, clock, hall["creds"][clock])
        d = virtual.DeviceThread(runner, net, pace=RealPace(t0, SPEED), silence_s=60,
                                 after_pass=player)
        d.start()
        hall["players"][clock] = player
        hall["devices"][clock] = d

    # -- the round -------------------------------------------------------------
    def seqs(self):
        return {(h, c): d.runner.last_seq() for h in HALLS
                for c, d in self.halls[h]["devices"].items()}

    def grant(self, presses=PRESSES):
        """Every clock gets ``presses`` more; returns the seqs they reach past."""
        before = self.seqs()
        for h in HALLS:
            for p in self.halls[h]["players"].values():
                p.granted += presses
        return before

    def played(self, before, presses=PRESSES):
        """Every clock has made an event for each granted press."""
        wait_for(lambda: all(p.given == p.granted and not p.runner.edges
                             for h in HALLS for p in self.halls[h]["players"].values())
                 and all(s >= before[k] + presses for k, s in self.seqs().items()),
                 60, "the clocks' presses")

    def stored(self, halls, before, presses=PRESSES):
        """The halls' loggers have stored every event the clocks made."""
        def done():
            for h in halls:
                last = {}
                for rec in broker_records(self.halls[h]["log"]):
                    last[rec["clock"]] = max(last.get(rec["clock"], 0), rec["seq"])
                if any(last.get(c, 0) < before[(h, c)] + presses for c in TABLES):
                    return False
            return True
        wait_for(done, 60, f"the logs of {', '.join(halls)}")

    def close(self):
        for h in HALLS:
            for d in self.halls[h]["devices"].values():
                d.halt = True
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for h in HALLS:
            for d in self.halls[h]["devices"].values():
                d.join(10)
            self.halls[h]["proxy"].close()
            if self.halls[h]["broker"].proc is not None:
                self.halls[h]["broker"].stop()
        if self.office_broker.proc is not None:
            self.office_broker.stop()


def broker_records(path):
    from hallclock.link.logfile import read_records
    return read_records(path)


def current(rig, h):
    """(log id, bytes) of a hall's log now."""
    with open(rig.halls[h]["log"], "rb") as f:
        data = f.read()
    return ship.log_id(data[:data.index(b"\n") + 1]), len(data)


def forge(rig, h, messages):
    """``messages`` [(topic, payload)] published by the phone (t3's login, on
    the hall's listener), the hall's viewer, and the office's viewer login
    (at the office).  QoS 1: each client's last publish acknowledged means
    the broker has handled the ones before it."""
    import paho.mqtt.client as mqtt
    hall = rig.halls[h]
    for user, password, port in (
            ("t3", hall["creds"]["t3"]["password"], hall["port"]),
            ("viewer", hall["creds"]["viewer"]["password"], hall["port"]),
            ("viewer", rig.office_creds["viewer"]["password"], rig.office_local)):
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=user,
                        protocol=mqtt.MQTTv311)
        c.username_pw_set(user, password)
        c.connect("127.0.0.1", port)
        c.loop_start()
        try:
            infos = [c.publish(t, p, qos=1) for t, p in messages]
            infos[-1].wait_for_publish(timeout=30)
            assert infos[-1].is_published()
        finally:
            c.disconnect()
            c.loop_stop()


def forged_ack(rig, h):
    """"The office has the whole log": believed, the hall's logger would
    never send what the office lacks."""
    log, size = current(rig, h)
    return [(ship.ack_topic(h), ship.ack(log, size))]


FORGED = {"clock": "t1", "session": "forged", "seq": 1, "t_ms": 1, "event": "boot",
          "mode": "scrabble", "host_time": "2026-01-01T00:00:00.000Z"}


def forged_batch(rig, h):
    """A record the hall never logged, where the office's copy goes on."""
    log, size = current(rig, h)
    line = (json.dumps(FORGED) + "\n").encode()
    return [(ship.log_topic(h), ship.batch(log, size, size + len(line), line)),
            (f"hallclock/{h}/t3/up", ship.batch(log, size, size + len(line), line))]


def copy_of(rig, h):
    return os.path.join(rig.copies, h + ".jsonl")


@pytest.fixture
def rig(tmp_path):
    r = Rig(tmp_path)
    yield r
    r.close()


def test_every_hop_killed_mid_round_and_the_offices_copies_equal_the_halls_logs(rig):
    a, b = (rig.halls[h] for h in HALLS)
    before = rig.grant()
    rig.played(before)
    rig.stored(HALLS, before)
    wait_for(lambda: all(agree(rig.halls[h]["log"], copy_of(rig, h))
                         for h in HALLS), 60, "the first copies")

    # 1. hall-a's broker killed: its clocks keep their events, its logger and bridge wait
    sigkill(a["broker"])
    before = rig.grant()
    wait_for(lambda: all(s >= before[k] + PRESSES for k, s in rig.seqs().items()
                         if k[0] == "hall-b"), 60, "hall-b's clocks")
    a["broker"].start(timeout=60.0)
    rig.played(before)
    rig.stored(HALLS, before)

    # 2. hall-b's bridge: its path stalls while the hall speaks, then its socket dies
    b["proxy"].cut()
    before = rig.grant()
    rig.played(before)
    rig.stored(HALLS, before)
    b["proxy"].reset()
    b["proxy"].mend()

    # 3. the office's broker killed (its sessions and queues with it)
    sigkill(rig.office_broker)
    before = rig.grant()
    rig.played(before)
    rig.stored(HALLS, before)
    rig.office_broker.start(timeout=60.0)

    # 4. the office's process killed; meanwhile the phone and the viewers say
    # the office has every hall's whole log (no record is made after it: only
    # the hall's own resend brings the copy up to date)
    rig.office.send_signal(signal.SIGKILL)
    rig.office.wait()
    before = rig.grant()
    rig.played(before)
    rig.stored(HALLS, before)
    for h in HALLS:
        forge(rig, h, forged_ack(rig, h))
    rig.start_office()
    for h in HALLS:
        wait_for(lambda: agree(rig.halls[h]["log"], copy_of(rig, h)), 60,
                 f"{h}'s copy after the office's restart")
        forge(rig, h, forged_batch(rig, h))  # found by the last audit if taken

    # 5. hall-a's logger killed mid-round, and started again on its log
    a["logger"].send_signal(signal.SIGKILL)
    a["logger"].wait()
    before = rig.grant()
    rig.played(before)
    rig.start_logger("hall-a")
    rig.stored(HALLS, before)

    # the round ends; each logger exits once its clocks ended and the office has its log
    for h in HALLS:
        for p in rig.halls[h]["players"].values():
            p.end = True
    for h in HALLS:
        p = rig.halls[h]["logger"]
        p.wait(timeout=90)
        err = p.stderr.read()
        assert p.returncode == 0, err
        assert "not acknowledged" not in err, err
    for h in HALLS:
        copy = copy_of(rig, h)
        wait_for(lambda: agree(rig.halls[h]["log"], copy), 60, f"{h}'s copy")
        res = run_cli("audit", rig.halls[h]["log"], copy)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "the logs agree: 2 clocks" in res.stdout, res.stdout
        with open(copy, "rb") as f:
            assert b"forged" not in f.read()
        ends = [r for r in broker_records(copy) if r["event"] == "end"]
        assert len(ends) == 2  # the round's end of both tables is in the office's copy
    # the office page (office --http-port) shows every hall from the copies
    import urllib.request
    with urllib.request.urlopen(rig.page + "state", timeout=30) as r:
        state = r.read().decode()
    assert "hall-a" in state and "hall-b" in state and "t1" in state
    # the office's copy is the one writer's: a second office on the folder is refused
    res = run_cli("office", "--broker", f"127.0.0.1:{rig.office_local}", "--credentials",
                  os.path.join(rig.office_dir, "credentials.json"), "--out", rig.copies)
    assert res.returncode == 2 and "being written by" in res.stderr, res.stderr


def test_a_log_kept_on_serial_ports_is_shipped_by_hallclock_ship(tmp_path):
    """A hall whose clocks are on USB (its logger has no broker): ``hallclock
    ship`` follows the log beside it through the hall's broker; with the
    office down it exits 1 naming what the office lacks, once the office is
    back the copy is the hall's log (``audit``)."""
    from hallclock.vboard.device import simulate
    office_dir, local, hall_dir, hlocal = bridged_hall(tmp_path)
    office_creds = os.path.join(office_dir, "credentials.json")
    log = str(tmp_path / "round1.jsonl")
    # the serial logger's log: a game over a pty, logged by the real host
    actions = [(0, "press", "START"), (300, "press", "B")] + [
        (1000 + 700 * i, "press", "AB"[i % 2]) for i in range(40)] + [(30000, "end", None)]
    simulate(actions, "scrabble", parse("scrabble", []), log, clock="t1")
    assert len(broker_records(log)) > 40
    copies = str(tmp_path / "copies")
    os.mkdir(copies)
    hb = start_broker(hall_dir, open(tmp_path / "hall.log", "ab"))
    ob = start_broker(office_dir, open(tmp_path / "office.log", "ab"))
    office = None
    ship_args = ["ship", "--log", log, "--broker", f"127.0.0.1:{hlocal}", "--hall", "hall-a",
                 "--credentials", os.path.join(hall_dir, "credentials.json"), "--until-shipped"]
    try:
        res = run_cli(*ship_args, "--max-s", "2")
        assert res.returncode == 1 and "has not acknowledged" in res.stderr, res.stderr
        assert res.stderr.count("\n") == 1
        office = subprocess.Popen(HALLCLOCK + ["office", "--broker", f"127.0.0.1:{local}",
                                               "--credentials", office_creds, "--out", copies],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert office.stdout.readline()
        res = run_cli(*ship_args, "--max-s", "60")
        assert res.returncode == 0, res.stderr
        assert "the office holds the whole of" in res.stdout
        res = run_cli("audit", log, os.path.join(copies, "hall-a.jsonl"))
        assert res.returncode == 0 and "the logs agree: 1 clock" in res.stdout, res.stdout
    finally:
        if office is not None:
            office.terminate()
            office.wait(10)
        hb.stop()
        ob.stop()
