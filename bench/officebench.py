"""Benchmark: the tournament office (issue 35 item 5).  HALLS halls of CLOCKS
virtual clocks, each hall with its own Mosquitto (the real binary, on a free
localhost port) and its own logger (BrokerLogger, which ships the hall's log
to the office: hallclock.net.ship), every hall's broker bridged to the
office's Mosquitto (Mosquitto's own bridge, as ``broker-config --office``
writes it), and the office's process (``hallclock office``: net.officecopy).

Two figures from one run:

1. **Latency**, office up: for every event a clock sent while the office
   was up, the time from the clock handing its frame to the socket to the
   hall logger's fsync of it, and to the office's fsync of it (the same
   records, the same run: the ratio is the office's cost over the hall's).
2. **Catch-up after an office outage**: once the office holds every record
   the halls have stored (the clocks' time stands still meanwhile), the
   office's process is stopped; the clocks play on for ``outage_s`` at ``accel`` times a real game's pace
   (a move every REAL_MOVE_S per clock), so the hall logs gain what
   ``outage_s * accel`` seconds of real play would give them (5 minutes by
   default); then the clocks end, the office starts again, and the time is
   measured from its start to the moment its copy of every hall holds every
   record of that hall's log.

Clocks: the real firmware App (Runner) and its own network link on CPython
sockets, as bench/mqttscale.py runs them; every stamp is CLOCK_MONOTONIC,
shared by every process.  The bench checks its premise (every clock
played, every record reached its hall's log and the office's copy) and says
FAILED with the reason otherwise.
"""
import multiprocessing as mp
import os
import shutil
import tempfile
import time

import common
from common import pct, summary
import mqttscale
from scale import HOLD_MS, LEAD_MS

REAL_MOVE_S = 30.0  # a real game's pace: a move every 30 s per clock (the backlog's yardstick)
MARGIN_S = 2.0  # latency counts the events sent this long before the office stops, every one
CONNECT_S = 60.0


def hall_name(h):
    return "hall-%d" % (h + 1)


def script(i, latency_ms, outage_ms, live_press, outage_press, seed):
    """One clock's game: START, then presses at ``live_press`` (ms, lo-hi)
    while the office is up, at ``outage_press`` while it is down, then end."""
    import random
    rnd = random.Random(seed * 7919 + i)
    t = 50 + rnd.randint(0, 200)
    actions = [(t, "press", "START"), (t + 100, "hold", ("B", HOLD_MS))]
    t += 100
    player = "A"
    end = latency_ms + outage_ms
    while True:
        lo, hi = live_press if t < latency_ms else outage_press
        t += rnd.randint(lo, hi)
        if t >= end:
            break
        actions.append((t, "hold", (player, HOLD_MS)))
        player = "B" if player == "A" else "A"
    actions.append((end, "end", None))
    return actions


class _Tagged:
    """The results queue, each result tagged with the worker's hall."""

    def __init__(self, q, hall):
        self.q, self.hall = q, hall

    def put(self, res):
        res["hall"] = self.hall
        self.q.put(res)


def clock_worker(hall, devs, t0, end_ms, address, creds, q, scripts, hold):
    mqttscale.HALL = hall  # the worker's topics are this hall's
    mqttscale.worker(devs, t0, end_ms, (0, 0), 1, address, creds, _Tagged(q, hall), scripts,
                     hold=hold)


def hall_logger(hall, address, creds_file, out, clocks, stop, q):
    """The hall's logger (it ships its log to the office), its fsyncs stamped."""
    from hallclock.net.mqtt import BrokerLogger
    logger = BrokerLogger(address, hall, creds_file, out, clocks=clocks)
    stamps = common.stamp_flushes(logger.writer)
    logger.open()
    q.put({"ready": hall})
    c0 = os.times()
    logger.run(exit_on_end=False, stop=stop.is_set)
    c1 = os.times()
    q.put({"hall_logger": hall, "stamps": stamps,
           "cpu_s": (c1.user - c0.user) + (c1.system - c0.system)})


def office_sink(address, creds_file, out, stop, q, tag):
    """The office's process, each copy's fsyncs stamped per hall."""
    from hallclock.net import officecopy
    stamps = {}
    real = officecopy.HallCopy

    class Stamped(real):
        def __init__(self, folder, hall):
            real.__init__(self, folder, hall)
            stamps[hall] = common.stamp_flushes(self.writer)
    officecopy.HallCopy = Stamped
    office = officecopy.Office(address, creds_file, out, say=lambda _t: None).open()
    q.put({"ready": tag, "t": time.monotonic()})
    c0 = os.times()
    office.run(stop=stop.is_set)
    c1 = os.times()
    q.put({"office": tag, "stamps": stamps,
           "cpu_s": (c1.user - c0.user) + (c1.system - c0.system)})


class Rig:
    """The office's broker, the halls' brokers bridged to it, their loggers."""

    def __init__(self, halls, clocks, tmp):
        from hallclock.net import broker
        self.broker = broker
        self.tmp = tmp
        self.halls = [hall_name(h) for h in range(halls)]
        self.clocks = [mqttscale.name(i) for i in range(clocks)]
        self.office_dir = os.path.join(tmp, "office")
        self.taken = set()
        port, local = self._port(), self._port()
        broker.write_office_config(self.office_dir, self.halls, port=port, bind="127.0.0.1",
                                   local_port=local)
        self.office_address = ("127.0.0.1", local)
        self.office_creds = os.path.join(self.office_dir, "credentials.json")
        self.brokers = [self._start(self.office_dir)]
        self.copies = os.path.join(tmp, "copies")
        os.mkdir(self.copies)
        self.hall = {}
        for h in self.halls:
            folder = os.path.join(tmp, h)
            hport, hlocal = self._port(), self._port()
            broker.write_config(folder, h, self.clocks, port=hport, bind="127.0.0.1",
                                local_port=hlocal)
            login = broker.load_bridge_login(os.path.join(self.office_dir, "halls", h + ".json"),
                                             h)
            broker.add_bridge(folder, h, ("127.0.0.1", port), login)
            creds_file = os.path.join(folder, "credentials.json")
            self.hall[h] = {"clocks": ("127.0.0.1", hport), "local": ("127.0.0.1", hlocal),
                            "creds_file": creds_file,
                            "creds": broker.load_credentials(creds_file),
                            "log": os.path.join(tmp, h + ".jsonl")}
            self.brokers.append(self._start(folder))

    def _port(self):
        """A free port no other listener of the rig was given."""
        while True:
            p = self.broker.free_port()
            if p not in self.taken:
                self.taken.add(p)
                return p

    def _start(self, folder):
        extra = ["user root"] if self.broker.reachable_by_broker(folder) else []
        b = self.broker.Broker(folder, extra=extra, log=open(os.path.join(
            self.tmp, os.path.basename(folder) + "-mosquitto.log"), "ab"))
        b.start(timeout=60.0)
        return b

    def stop(self):
        for b in self.brokers:
            try:
                b.stop()
            except Exception:  # noqa: BLE001 (a bench's cleanup)
                pass


def _get(q, procs, what, timeout):
    give_up = time.monotonic() + timeout
    while True:
        try:
            return q.get(timeout=1.0)
        except Exception:  # queue.Empty: is everyone still alive?
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead or time.monotonic() > give_up:
                raise RuntimeError("office bench: %s: a process died or hung" % what)


def _records(path):
    from hallclock.link.logfile import read_records
    try:
        return [r for r in read_records(path) if isinstance(r.get("seq"), int)]
    except OSError:
        return []


def _key(r):
    return (r.get("clock"), r.get("session"), r.get("seq"), r.get("event"))


def office_holds_halls(rig):
    """Every record of every hall's log is in the office's copy of it."""
    for h in rig.halls:
        want = {_key(r) for r in _records(rig.hall[h]["log"])}
        have = {_key(r) for r in _records(os.path.join(rig.copies, h + ".jsonl"))}
        if not want <= have:
            return False
    return True


def phase(halls=5, clocks=40, latency_s=20.0, outage_s=10.0, accel=30.0,
          live_press=(700, 2500), catchup_max_s=300.0, seed=1, say=None):
    say = say or (lambda *a: None)
    tmp = tempfile.mkdtemp(prefix="hallclock-officebench-")
    os.chmod(tmp, 0o711)  # mosquitto (when we are root) enters its folders
    # while the office is down: ``accel`` times a real game's pace (a move every REAL_MOVE_S)
    mean_ms = REAL_MOVE_S * 1000.0 / accel
    outage_press = (int(mean_ms * 0.5), int(mean_ms * 1.5))
    latency_ms, outage_ms = int(latency_s * 1000), int(outage_s * 1000)
    end_ms = latency_ms + outage_ms
    rig = Rig(halls, clocks, tmp)
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = []
    stop_halls, stop_office, office_down = ctx.Event(), ctx.Event(), ctx.Event()
    try:
        office = ctx.Process(target=office_sink, args=(rig.office_address, rig.office_creds,
                                                       rig.copies, stop_office, q, 1))
        office.start()
        procs.append(office)
        _get(q, procs, "the office's start", 60)
        for h in rig.halls:
            hall = rig.hall[h]
            p = ctx.Process(target=hall_logger, args=(h, hall["local"], hall["creds_file"],
                                                      hall["log"], rig.clocks, stop_halls, q))
            p.start()
            procs.append(p)
        for _h in rig.halls:
            _get(q, procs, "a hall logger's start", 60)
        n = halls * clocks
        t0 = time.monotonic() + LEAD_MS / 1000.0 + n * 0.02
        per = max(1, (clocks + 24) // 25)  # clock worker processes per hall
        workers = 0
        for hk, h in enumerate(rig.halls):
            hall = rig.hall[h]
            scripts = {i: script(hk * clocks + i, latency_ms, outage_ms, live_press,
                                 outage_press, seed) for i in range(clocks)}
            for k in range(per):
                p = ctx.Process(target=clock_worker, args=(
                    h, list(range(k, clocks, per)), t0, end_ms, hall["clocks"],
                    hall["creds"], q, scripts, (latency_ms, office_down)))
                p.start()
                procs.append(p)
                workers += 1
        say("  office bench: %d halls x %d clocks, %d clock workers; office up for %.0f s"
            % (halls, clocks, workers, latency_s))
        while time.monotonic() < t0 + latency_s:
            time.sleep(0.05)
        # the clocks stand still at latency_ms (their hold) until the office is
        # down; it stops once it holds every record the halls have stored (the
        # window's events: a loaded machine's bridge may take a resend to get them there)
        limit = time.monotonic() + 60
        while not office_holds_halls(rig) and time.monotonic() < limit:
            time.sleep(0.1)
        stop_office.set()  # the office's outage
        got = _get(q, procs, "the office's stop", 120)
        office1 = got
        down_at = time.monotonic()
        office_down.set()  # the clocks play on
        say("  office bench: office down; the clocks play on %.0f s at %gx a real game's pace"
            % (outage_s, accel))
        work = {}
        for _ in range(workers):
            r = _get(q, procs, "the clocks' games", end_ms / 1000.0 + 300)
            work.setdefault(r["hall"], []).append(r)
        # the hall logs hold every event the clocks sent before the office comes back
        wanted = {h: sum(d["emitted"] for r in work.get(h, []) for d in r["devices"])
                  for h in rig.halls}

        def hall_complete():
            return all(len(_records(rig.hall[h]["log"])) >= wanted[h] for h in rig.halls)
        limit = time.monotonic() + 120
        while not hall_complete() and time.monotonic() < limit:
            time.sleep(0.2)
        backlog = {h: len(_records(rig.hall[h]["log"])) for h in rig.halls}
        stop_office.clear()
        restart = time.monotonic()
        office = ctx.Process(target=office_sink, args=(rig.office_address, rig.office_creds,
                                                       rig.copies, stop_office, q, 2))
        office.start()
        procs.append(office)
        ready = _get(q, procs, "the office's restart", 60)
        say("  office bench: office back after %.1f s down; catching up" % (ready["t"] - down_at))

        limit = ready["t"] + catchup_max_s
        while not office_holds_halls(rig) and time.monotonic() < limit:
            time.sleep(0.25)
        seen_done = time.monotonic()
        stop_office.set()
        office2 = _get(q, procs, "the office's second stop", 120)
        stop_halls.set()
        loggers = [_get(q, procs, "a hall logger's stop", 120) for _ in rig.halls]
        for p in procs:
            p.join(timeout=30)
        return analyse(rig, work, loggers, office1, office2, ready, ready["t"] - down_at,
                       seen_done, backlog, wanted, halls, clocks, latency_s, outage_s, accel,
                       live_press, catchup_max_s, window_end=t0 + latency_s - MARGIN_S)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        rig.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def analyse(rig, work, loggers, office1, office2, ready, down_s, seen_done, backlog, wanted,
            halls, clocks, latency_s, outage_s, accel, live_press, catchup_max_s,
            window_end=None):
    """The figures; ``window_end``: the events sent before it (MARGIN_S before
    the office stopped) are the latency's, every one of them (none left out
    for being slow: one the office had not stored by its stop is a FAILED)."""
    sent = {}  # (hall, clock index, seq) -> the frame's send stamp
    emitted = dropped = unfinished = 0
    for h, rs in work.items():
        for r in rs:
            for d in r["devices"]:
                emitted += d["emitted"]
                dropped += d["dropped"]
                unfinished += not d["done"]
                for seq, t in d["stamps"].items():
                    sent[(h, d["i"], seq)] = t

    def index(stamps, h):
        out = {}
        for clock, seq, event, t in stamps:
            if not isinstance(seq, int) or event == "gap" or not isinstance(clock, str):
                continue
            out.setdefault((h, int(clock.rsplit("-", 1)[1]), seq), t)
        return out
    hall_fsync = {}
    for lg in loggers:
        hall_fsync.update(index(lg["stamps"], lg["hall_logger"]))
    office_fsync = {}
    for h, stamps in office1["stamps"].items():
        office_fsync.update(index(stamps, h))
    if window_end is None:
        window_end = max(sent.values(), default=0.0) + 1.0
    window = [k for k, t in sent.items() if t < window_end]
    both = [k for k in window if k in office_fsync and k in hall_fsync]
    late = len(window) - len(both)
    hall_lat = [hall_fsync[k] - sent[k] for k in both]
    office_lat = [office_fsync[k] - sent[k] for k in both]
    caught = {}
    for h, stamps in office2["stamps"].items():
        caught.update(index(stamps, h))
    last = max(caught.values()) if caught else None
    copies_equal = []
    for h in rig.halls:
        want = {_key(r) for r in _records(rig.hall[h]["log"])}
        have = [_key(r) for r in _records(os.path.join(rig.copies, h + ".jsonl"))]
        copies_equal.append(want == set(have) and len(have) == len(set(have)))
    real_s = outage_s * accel
    res = {
        "halls": halls, "clocks_per_hall": clocks, "clocks": halls * clocks,
        "office_up_s": latency_s, "press_every_ms_office_up": list(live_press),
        "events_emitted": emitted, "ring_dropped": dropped,
        "records_both_stored_office_up": len(both),  # every event sent MARGIN_S before the stop
        "hall_logger_latency_ms": summary(hall_lat, 1000.0, 2),
        "office_latency_ms": summary(office_lat, 1000.0, 2),
        "office_over_hall_p50": round(pct(office_lat, 50) / max(pct(hall_lat, 50), 1e-9), 2)
        if both else None,
        "office_over_hall_p99": round(pct(office_lat, 99) / max(pct(hall_lat, 99), 1e-9), 2)
        if both else None,
        "outage": {
            "office_down_s": round(down_s, 1),
            "clocks_played_s": outage_s, "pace_x_real": accel,
            "real_play_equivalent_s": real_s, "real_move_every_s": REAL_MOVE_S,
            "hall_log_records": sum(backlog.values()),
            "backlog_records": len(caught),  # stored by the office after its restart
            "catch_up_s": round(last - ready["t"], 2) if last is not None else None,
            "catch_up_records_per_s": round(len(caught) / max(last - ready["t"], 1e-9), 1)
            if last is not None else None,
            "caught_up_seen_within_s": round(seen_done - ready["t"], 2),
        },
        "device_lag_ms_p99": round(max((r.get("lag_ms_p99") or 0) for rs in work.values()
                                       for r in rs), 2) if work else None,
        "office_cpu_s": round(office1["cpu_s"] + office2["cpu_s"], 2),
        "hall_loggers_cpu_s": round(sum(lg["cpu_s"] for lg in loggers), 2),
        "copies_equal_hall_logs": sum(copies_equal),
    }
    problems = [
        "no record reached both a hall's log and the office's copy while the office was up"
        if not both else None,
        "%d of the %d events sent %.0f s or more before the office stopped had not reached "
        "the office by then" % (late, len(window), MARGIN_S) if both and late else None,
        "%d clocks never finished their game" % unfinished if unfinished else None,
        "%d events dropped from the clocks' rings" % dropped if dropped else None,
        "the hall logs hold %d records, the clocks emitted %d" % (
            sum(backlog.values()), sum(wanted.values()))
        if sum(backlog.values()) < sum(wanted.values()) else None,
        "the office did not catch up within %.0f s" % catchup_max_s
        if not all(copies_equal) else None,
        "nothing reached the office after its restart (no backlog measured)"
        if not caught else None,
    ]
    return common.premise(res, problems)


def bench(halls=5, clocks=40, say=None, **kw):
    return phase(halls, clocks, say=say, **kw)


if __name__ == "__main__":
    import json
    import sys
    h = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    c = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    sys.stdout.write(json.dumps(bench(h, c, say=common.say, latency_s=float(
        sys.argv[3]) if len(sys.argv) > 3 else 10.0, outage_s=float(
        sys.argv[4]) if len(sys.argv) > 4 else 5.0), indent=1) + "\n")
