"""A hall on the real broker for the MQTT tests: a generated configuration
(broker-config) in a temporary folder, Mosquitto on a free localhost port
(stopped by the test), virtual clocks running the firmware's own network link
in threads, loggers as ``hallclock log --broker`` subprocesses, and a TCP
proxy that can cut one clock's path or reset its socket.

Mosquitto started as root drops to the ``mosquitto`` user, which cannot enter
pytest's private temporary folders: the test broker then runs with
``user root`` added to a run-time copy of its configuration (docs/network.md).
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from hallclock.net import broker, mqtt as mqtthost
from hallclock import scenario
from hallclock.errors import HallclockError
from hallclock.vboard import device as virtual
from hallclock.link.logfile import read_records
from hallclock_fw.settings import parse

HALLCLOCK = [sys.executable, "-m", "hallclock"]
HALL = "test-hall"


def strip(records):
    """host_time off, the health reports' machine figures masked (every
    virtual clock reports at the same passes: tests/healthlog.py health_masked)."""
    from healthlog import health_masked
    return [{k: v for k, v in r.items() if k != "host_time"} for r in health_masked(records)]


def wait_for(cond, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def game(moves=40, gap_ms=5000, start=0):
    """A Scrabble game: START, then a press every ``gap_ms``, then end."""
    lines = [f"{start} press START", f"{start + 1500} press B"]
    t = start + 1500
    for i in range(moves):
        t += gap_ms
        lines.append(f"{t} press {'A' if i % 2 == 0 else 'B'}")
    lines.append(f"{t + 3000} end")
    return "\n".join(lines) + "\n"


class Hall:
    def __init__(self, folder, clocks=("t1", "t2", "t3"), tls=False):
        self.folder = str(folder)
        self.clocks = list(clocks)
        self.broker_log = open(os.path.join(self.folder, "mosquitto.log"), "ab")
        # A free port is free when it is picked, not when Mosquitto binds it:
        # another process on the machine (another test session) may take it
        # in between.  Mosquitto cannot bind port 0 and say which it got, so
        # a broker that found its port taken gets new ports in a new folder
        # (bounded: three picks); any other failure is the test's.
        for attempt in range(3):
            self.broker_log.flush()
            logged = os.path.getsize(self.broker_log.name)
            try:
                self._start_broker("broker" if attempt == 0 else f"broker-{attempt}", tls)
                break
            except HallclockError:
                self.broker_log.flush()
                with open(self.broker_log.name, "rb") as f:
                    f.seek(logged)
                    taken = b"Address already in use" in f.read()
                if not taken or attempt == 2:
                    raise
        self.address = ("127.0.0.1", self.port)
        self.local = ("127.0.0.1", self.local_port)
        self.loggers = []  # every subprocess of the test (loggers, devices, views)
        self.devices = []
        self.proxies = []

    def _start_broker(self, name, tls):
        self.conf_dir = os.path.join(self.folder, name)
        self.port = broker.free_port()  # the hall listener: the clocks
        self.local_port = broker.free_port()  # the laptop's listener: the host tools
        tls_conf = None
        if tls:
            from hallclock.net import tls as tlsca
            self.tls_port = broker.free_port()
            tls_conf = (self.tls_port,) + tlsca.make_ca(os.path.join(self.conf_dir, "tls"),
                                                        "127.0.0.1")
            self.ca = tls_conf[1]
        self.creds = broker.write_config(self.conf_dir, HALL, self.clocks, port=self.port,
                                         bind="127.0.0.1", tls=tls_conf,
                                         local_port=self.local_port)
        self.cred_file = os.path.join(self.conf_dir, "credentials.json")
        extra = ["user root"] if broker.reachable_by_broker(self.conf_dir) else []
        self.broker = broker.Broker(self.conf_dir, extra=extra, log=self.broker_log)
        logged = os.path.getsize(self.broker_log.name)
        self.broker.start(timeout=60.0)  # a loaded machine; costs time only on failure
        # start() saw something listen on the port: Mosquitto says "running"
        # once it has bound every listener (or it exits, its port taken)
        proc = self.broker.proc

        def settled():
            with open(self.broker_log.name, "rb") as f:
                f.seek(logged)
                return b" running" in f.read() or proc.poll() is not None
        wait_for(settled, 60.0, "mosquitto running")
        if proc.poll() is not None:
            raise HallclockError(f"mosquitto exited (status {proc.returncode})")

    # -- loggers -----------------------------------------------------------
    def start_logger(self, out, clocks=None, extra=(), wait=True):
        args = HALLCLOCK + ["log", "--broker", f"127.0.0.1:{self.local_port}", "--hall", HALL,
                            "--credentials", self.cred_file, "--out", str(out),
                            "--exit-on-end", "--plain"]
        if clocks:
            args += [x for c in clocks for x in ("--clock", c)]
        p = subprocess.Popen(args + list(extra), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.loggers.append(p)
        if wait:  # the live view's first line: connected and subscribed
            p.stdout.readline()
        threading.Thread(target=p.stdout.read, daemon=True).start()
        return p

    def wait_logger(self, p, timeout=60):
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise AssertionError("the logger did not exit on end: " + p.stderr.read())
        err = p.stderr.read()
        assert p.returncode == 0, err
        return err

    # -- clocks ------------------------------------------------------------
    def device(self, clock, text, sid="0000cafe", via=None, start=True, after_pass=None,
               pace=None):
        actions = scenario.parse_text(text, "<test>")
        runner = virtual.make_runner("scrabble", parse("scrabble", []), actions, clock=clock,
                                     sid=sid)
        address = via.address if via is not None else self.address
        net = mqtthost.device_link(address, HALL, clock, self.creds[clock])
        d = virtual.DeviceThread(runner, net, pace=pace, silence_s=20, after_pass=after_pass)
        self.devices.append(d)
        if start:
            d.start()
        return d

    def proxy(self):
        p = Proxy(self.address)
        self.proxies.append(p)
        return p

    def close(self):
        for d in self.devices:
            d.halt = True
        for d in self.devices:
            if d.is_alive():
                d.join(10)
        for p in self.loggers:
            if p.poll() is None:
                p.kill()
                p.wait()
        for p in self.proxies:
            p.close()
        self.broker.stop()
        self.broker_log.close()


def reference(folder, clock, text, sid="0000cafe", mode="scrabble", pairs=()):
    """The fault-free log of ``text`` over a pty (the serial link, CPython)."""
    out = os.path.join(str(folder), f"ref-{clock}.jsonl")
    actions = scenario.parse_text(text, "<test>")
    runner = virtual.make_runner(mode, parse(mode, list(pairs)), actions, clock=clock, sid=sid)
    from hallclock.link.logger import Logger
    from hallclock.link.transport import pty_pair
    master, slave, path = pty_pair()
    logger = Logger([path], out)
    logger.open()
    dev = virtual.DeviceThread(runner, master)
    dev.start()
    logger.run(stop=lambda: not dev.is_alive(), max_s=180)
    dev.join(30)
    os.close(master)
    os.close(slave)
    return strip(read_records(out))


def clock_records(path, clock):
    return strip([r for r in read_records(path) if r.get("clock") == clock])


class Proxy:
    """A TCP proxy between clocks and the broker: ``cut()`` stops moving bytes
    both ways (the path is down, TCP holds what was sent), ``mend()`` moves
    them again, ``reset()`` kills every connection (the clock's socket dies)."""

    def __init__(self, target):
        self.target = target
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.address = self.lsock.getsockname()
        self.open = threading.Event()
        self.open.set()
        self.pairs = []
        self.closed = False
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                a, _ = self.lsock.accept()
            except OSError:
                return
            try:
                b = socket.create_connection(self.target)
            except OSError:
                a.close()
                continue
            self.connections += 1
            self.pairs.append((a, b))
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()
            threading.Thread(target=self._pipe, args=(b, a), daemon=True).start()

    def _pipe(self, src, dst):
        while True:
            self.open.wait()
            try:
                data = src.recv(4096)
            except OSError:
                data = b""
            if not data:
                break
            self.open.wait()  # bytes read just before a cut wait for the mend
            try:
                dst.sendall(data)
            except OSError:
                break
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        self.open.clear()

    def mend(self):
        self.open.set()

    def reset(self):
        import struct
        for a, b in self.pairs:
            for s in (a, b):
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.close()
                except OSError:
                    pass
        self.pairs = []

    def close(self):
        self.closed = True
        self.open.set()
        self.reset()
        self.lsock.close()


def kill(p):
    p.send_signal(signal.SIGKILL)
    p.wait()


# -- attack C: a stolen clock's flood beside a dense game (test and bench) --------
class AckWatch:
    """On a clock's NetLink: when each of its events first went out, when
    the host's ack covering it came (real time): the longest wait."""

    def __init__(self, net):
        from hallclock_fw import protocol
        self.first = {}  # seq -> monotonic time it was first written
        self.acked = 0
        self.longest = 0.0
        write, take = net.write, net._take

        def watched_write(data):
            tokens = protocol.check(protocol.unframe(bytes(data)))
            if tokens and tokens[0] == "E":
                self.first.setdefault(int(tokens[2]), time.monotonic())
            return write(data)

        def watched_take(payload):
            tokens = protocol.check(protocol.unframe(bytes(payload)))
            if tokens and tokens[0] == "A":
                now = time.monotonic()
                seq = int(tokens[2])
                for n in range(self.acked + 1, seq + 1):
                    if n in self.first:
                        self.longest = max(self.longest, now - self.first[n])
                self.acked = max(self.acked, seq)
            return take(payload)
        net.write = watched_write
        net._take = watched_take

    def wait_s(self):
        """The longest wait, counting events never acknowledged until now."""
        now = time.monotonic()
        open_waits = [now - t for n, t in self.first.items() if n > self.acked]
        return max([self.longest] + open_waits)


def peak_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def dense_game(moves=150, gap_ms=60):
    return game(moves=moves, gap_ms=gap_ms)


def flood_beside_a_game(hall, folder, n=60000, seconds=7.0, thief="t2", player="t1",
                        text=None):
    """Attack C: ``thief``'s cfg floods fresh sessions (tests/mqttflood.py,
    its own process) while ``player`` plays ``text`` in real time under one
    ``log --broker --exit-on-end``.  Figures: the player's longest wait for
    an ack (s), the flood offered, the log, the logger's peak memory (KiB)
    and its stats line."""
    import json

    from hallclock.vboard.vdev.pump import RealPace, mark
    text = text or dense_game()
    out = os.path.join(str(folder), "flood.jsonl")
    p = self_logger = hall.start_logger(out, clocks=[player])
    peak = [0]
    watching = [True]

    def sample():
        while watching[0] and p.poll() is None:
            kib = peak_rss_kib(p.pid)
            if kib:
                peak[0] = max(peak[0], kib)
            time.sleep(0.05)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    flooder = None
    offered = {"sent": 0, "seconds": 0.0}
    try:
        if n:
            here = os.path.dirname(os.path.abspath(__file__))
            flooder = subprocess.Popen(
                [sys.executable, os.path.join(here, "mqttflood.py"), hall.address[0],
                 str(hall.address[1]), HALL, thief, hall.cred_file, str(n), str(seconds)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            line = flooder.stdout.readline()  # the flood is under way
            assert "started" in line, flooder.stderr.read()
        d = hall.device(player, text, start=False, pace=RealPace(mark()))
        watch = AckWatch(d.line)
        d.start()
        if flooder is not None:
            line = flooder.stdout.readline()
            flooder.wait(120)
            assert line, "the flood failed: " + flooder.stderr.read()
            offered = json.loads(line)
        err = hall.wait_logger(self_logger, timeout=240)
        d.join(60)
    finally:
        watching[0] = False
        if flooder is not None and flooder.poll() is None:
            flooder.kill()
            flooder.wait()
    sampler.join(5)
    return {"wait_s": watch.wait_s(), "offered": offered, "log": out,
            "logger_peak_kib": peak[0], "stats": err.strip().splitlines()[-1] if err else "",
            "device": d}


def start_broker(folder, log):
    """Mosquitto on ``folder``'s configuration (hall or office), its own
    output into the file ``log``; stopped by the test."""
    extra = ["user root"] if broker.reachable_by_broker(folder) else []
    b = broker.Broker(folder, extra=extra, log=log)
    b.start(timeout=60.0)
    return b


def bridged_hall(root, hall="hall-a", clocks=("t1",)):
    """An office (office-config) and one hall (broker-config) bridged to it,
    both in ``root``: (office folder, the office tools' local port, hall
    folder, the hall's local port)."""
    office_dir = os.path.join(str(root), "office")
    port, local = broker.free_port(), broker.free_port()
    broker.write_office_config(office_dir, [hall], port=port, bind="127.0.0.1",
                               local_port=local)
    hall_dir = os.path.join(str(root), hall)
    hlocal = broker.free_port()
    broker.write_config(hall_dir, hall, list(clocks), port=broker.free_port(),
                        bind="127.0.0.1", local_port=hlocal)
    broker.add_bridge(hall_dir, hall, ("127.0.0.1", port), broker.load_bridge_login(
        os.path.join(office_dir, "halls", hall + ".json"), hall))
    return office_dir, local, hall_dir, hlocal


def logs_agree(a, b):
    """``hallclock audit`` finds the two logs (a hall's, the office's copy) the same."""
    from hallclock.commands.audit import audit, read_copy
    if not (os.path.exists(a) and os.path.exists(b)):
        return False
    rows = audit([read_copy(a)[0], read_copy(b)[0]])
    return bool(rows) and all(r["agree"] for r in rows)


def mp_opener(port, name="raw"):
    """MicroPython source for a unix-port clock script: ``addr`` and
    ``<name>(now)``, a non-blocking socket connecting to 127.0.0.1:``port``
    (the connect under way, EINPROGRESS or EAGAIN, is no error)."""
    return f'''addr = socket.getaddrinfo("127.0.0.1", {int(port)})[0][-1]
def {name}(now):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(addr)
    except OSError as e:
        if e.args[0] not in (115, 11):
            s.close()
            raise
    return s'''
