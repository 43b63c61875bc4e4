"""Benchmark 4: host scale.  N virtual devices, each on its own pty pair, into
one host logger (hallclock.link.logger.Logger with N ports), every device pressing
far faster than any player.  The same devices are then run into a plain
baseline that copies the serial bytes to one file (fsync per read), so the
difference is the logger's own cost.

Device side: the real firmware App in hallclock.vboard.vdev.runner.Runner, paced to
real time (device ms = real ms since the phase began: a pass runs once real
time reaches the pass's device time), spread over a few worker processes so
that the devices are not the bottleneck.  Each worker stamps the moment each
event frame has been written whole into its pty master (CLOCK_MONOTONIC, the
same clock in every process).

Host side: the logger runs in its own process; its LogWriter.flush is
wrapped to stamp the moment each record is fsync'd.  Latency = fsync'd stamp
- frame written stamp of the same (clock, seq).  In the baseline the workers
acknowledge each event themselves (the copier does not speak the protocol),
so the devices send each event once, as with a logger that keeps up.
"""
import multiprocessing as mp
import os
import random
import resource
import select
import shutil
import tempfile
import time
import tty

from hallclock import hostframes
from hallclock.link.transport import pty_pair
from hallclock.vboard.vdev.runner import DONE, RUNNING
from hallclock.vboard.device import make_runner

import common
from common import pct, run_due, scrabble_settings, summary

HOLD_MS = 30  # a press holds the contact this long (longer than the debounce)
BOOT_S = 2.0  # every clock's boot frames (and on the network its session's challenge) go in these
LEAD_MS = 1500  # the processes start; device time 0 is this long after the phase begins
DRAIN_S = 15.0  # after the scripts end, the sink and devices get this long to finish


def device_script(i, duration_ms, press_ms, seed):
    rnd = random.Random(seed * 7919 + i)
    t = 50 + rnd.randint(0, 200)
    actions = [(t, "press", "START")]
    t += 100
    actions.append((t, "hold", ("B", HOLD_MS)))
    player = "A"
    lo, hi = press_ms
    while True:
        t += rnd.randint(lo, hi)
        if t >= duration_ms:
            break
        actions.append((t, "hold", (player, HOLD_MS)))
        player = "B" if player == "A" else "A"
    actions.append((duration_ms, "end", None))
    return actions


WORKER_NICE = 10  # the simulated clocks' workers yield the CPU to the logger (and Mosquitto)


def yield_cpu():
    """In a hall every clock has its own CPU: the processes that simulate 200
    of them on the laptop's cores run below the logger and the broker, so a
    shared machine's CPU goes first to what the hall's laptop runs (a worker
    that then cannot keep its pace says so: the load was not offered)."""
    try:
        os.nice(WORKER_NICE)
    except OSError:
        pass


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- device worker -------------------------------------------------------------
def worker(devs, t0, duration_ms, press_ms, seed, self_ack, out_q, inherited=()):
    """devs: [(index, master fd)].  Runs them in real time until every device
    is DONE (or the drain time is over); puts its figures on ``out_q``."""
    mine = set(fd for _i, fd in devs)
    _close([fd for fd in inherited if fd not in mine])
    yield_cpu()
    values = scrabble_settings()
    runners = []
    for i, fd in devs:
        os.set_blocking(fd, False)
        r = make_runner("scrabble", values, device_script(i, duration_ms, press_ms, seed),
                        clock="bench-%03d" % i, sid="%08x" % (i + 1),
                        start_ticks=(1 << 30) - 5000)
        runners.append({"i": i, "fd": fd, "r": r, "status": RUNNING, "pending": bytearray(),
                        "written": 0, "marks": [], "stamps": {}, "sid": "%08x" % (i + 1)})
    by_fd = {d["fd"]: d for d in runners}
    lag = []
    while time.monotonic() < t0:
        time.sleep(0.005)
    cpu0 = _cpu()
    sched0 = common.sched()
    stop_at = t0 + duration_ms / 1000.0 + DRAIN_S
    while True:
        now = time.monotonic()
        now_ms = (now - t0) * 1000.0
        live = 0
        nxt = now_ms + 5.0
        for d in runners:
            r = d["r"]
            nxt = run_due(d, now_ms, lag, nxt)
            out = r.take_output()
            if out:
                base = d["written"] + len(d["pending"])
                for line in out.split(b"\n"):
                    base += len(line) + 1
                    if line.startswith(b"E "):
                        d["marks"].append((base - 1, int(line.split(b" ", 3)[2])))
                d["pending"] += out
            if d["pending"]:
                try:
                    n = os.write(d["fd"], d["pending"])
                except BlockingIOError:
                    n = 0
                if n:
                    del d["pending"][:n]
                    d["written"] += n
                    t = time.monotonic()
                    marks = d["marks"]
                    k = 0
                    while k < len(marks) and marks[k][0] <= d["written"]:
                        d["stamps"].setdefault(marks[k][1], t)
                        k += 1
                    if self_ack and k:  # what has left, never an event still in the ring
                        r.feed(hostframes.ack(d["sid"], marks[k - 1][1]))
                    del marks[:k]
            if d["status"] != DONE or d["pending"]:
                live += 1
        if not live or time.monotonic() > stop_at:
            break
        wait = max(0.0, min(0.005, (nxt - (time.monotonic() - t0) * 1000.0) / 1000.0))
        try:
            ready, _, _ = select.select(list(by_fd), [], [], wait)
        except InterruptedError:
            ready = []
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except (BlockingIOError, OSError):
                continue
            if data and not self_ack:
                by_fd[fd]["r"].feed(data)
    cpu = _cpu() - cpu0
    res = {"cpu_s": cpu, "wall_s": time.monotonic() - t0, "lag_ms_p99": pct(lag, 99),
           "sched": common.sched_since(sched0),
           "lag_ms_max": max(lag) if lag else 0, "devices": []}
    for d in runners:
        link = d["r"].app.link
        res["devices"].append({"i": d["i"], "emitted": link.seq, "dropped": link.lost,
                               "done": d["status"] == DONE and not d["pending"],
                               "stamps": d["stamps"]})
    out_q.put(res)


# -- sinks ---------------------------------------------------------------------
def _close(fds):
    """Drop the pty fds a forked process inherited and does not use, so it
    runs with the fds a logger alone would have (select() stops at fd 1023)."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def logger_sink(paths, out, t0, max_s, out_q, inherited=()):
    _close(inherited)
    from hallclock.link.logger import Logger
    logger = Logger(paths, out)
    stamps = common.stamp_flushes(logger.writer)
    logger.open()
    while time.monotonic() < t0:
        time.sleep(0.005)
    cpu0 = _cpu()
    sched0 = common.sched()
    finished = logger.run(exit_on_end=True, max_s=max_s)
    out_q.put({"sink": "logger", "cpu_s": _cpu() - cpu0, "wall_s": time.monotonic() - t0,
               "finished": finished, "stamps": stamps, "sched": common.sched_since(sched0)})


def baseline_sink(paths, out, t0, max_s, n, out_q, inherited=()):
    _close(inherited)
    fds = []
    for p in paths:
        fd = os.open(p, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(fd)
        fds.append(fd)
    wfd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    bufs = {fd: b"" for fd in fds}
    stamps = []
    ended = 0
    while time.monotonic() < t0:
        time.sleep(0.005)
    cpu0 = _cpu()
    deadline = time.monotonic() + max_s
    while ended < n and time.monotonic() < deadline:
        ready, _, _ = select.select(fds, [], [], 0.05)
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except (BlockingIOError, OSError):
                continue
            if not data:
                continue
            os.write(wfd, data)
            os.fsync(wfd)
            t = time.monotonic()
            # bench bookkeeping, not part of the copy: which events are now on disk
            buf = bufs[fd] + data
            lines = buf.split(b"\n")
            bufs[fd] = lines.pop()
            for line in lines:
                if line.startswith(b"E "):
                    parts = line.split(b" ", 5)
                    end = parts[4] == b"11"  # events.EV_END
                    stamps.append((int(parts[1], 16) - 1, int(parts[2]), "end" if end else "",
                                   t))
                    ended += end
    cpu = _cpu() - cpu0
    for fd in fds:
        os.close(fd)
    os.close(wfd)
    out_q.put({"sink": "baseline", "cpu_s": cpu, "wall_s": time.monotonic() - t0,
               "finished": ended >= n, "stamps": stamps})


# -- one phase -----------------------------------------------------------------
def phase(n, sink, duration_s=12.0, press_ms=(50, 200), workers=None, seed=1, tmp=None):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, 8 * n + 256))
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    own_tmp = tmp is None
    tmp = tmp or tempfile.mkdtemp(prefix="hallclock-bench-")
    out = os.path.join(tmp, "%s-%d.log" % (sink, n))
    pairs = [pty_pair() for _ in range(n)]
    duration_ms = int(duration_s * 1000)
    t0 = time.monotonic() + LEAD_MS / 1000.0
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    paths = [p[2] for p in pairs]
    max_s = duration_s + DRAIN_S
    every = [fd for p in pairs for fd in p[:2]]
    if sink == "logger":
        sp = ctx.Process(target=logger_sink, args=(paths, out, t0, max_s, q, every))
    else:
        sp = ctx.Process(target=baseline_sink, args=(paths, out, t0, max_s, n, q, every))
    sp.start()
    # pty writes stall under load here (about 0.7 ms each at 200 ports), so the
    # devices are spread over enough processes that one pass over a worker's
    # devices stays short; device_lag_ms_p99 in the result checks it
    w = max(1, min(workers or max(2, (n + 19) // 20), n))
    procs = []
    for k in range(w):
        devs = [(i, pairs[i][0]) for i in range(k, n, w)]
        p = ctx.Process(target=worker, args=(devs, t0, duration_ms, press_ms, seed,
                                             sink != "logger", q, every))
        p.start()
        procs.append(p)
    results = []
    give_up = time.monotonic() + LEAD_MS / 1000.0 + max_s + 60
    while len(results) < w + 1:
        try:
            results.append(q.get(timeout=1.0))
        except Exception:  # queue.Empty: is everyone still alive?
            dead = [p for p in procs + [sp] if p.exitcode not in (None, 0)]
            if dead or time.monotonic() > give_up:
                for p in procs + [sp]:
                    if p.is_alive():
                        p.kill()
                raise RuntimeError("scale phase (%d devices, %s) failed: a process died "
                                   "or hung" % (n, sink))
    for p in procs + [sp]:
        p.join(timeout=30)
    for master, slave, _path in pairs:
        for fd in (master, slave):
            try:
                os.close(fd)
            except OSError:
                pass
    log_bytes = os.path.getsize(out) if os.path.exists(out) else 0
    if own_tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    sink_res = [r for r in results if "sink" in r][0]
    work = [r for r in results if "sink" not in r]
    return analyse(n, sink, duration_s, press_ms, sink_res, work, log_bytes)


def analyse(n, sink, duration_s, press_ms, sink_res, work, log_bytes):
    devices = {}
    for w in work:
        for d in w["devices"]:
            devices[d["i"]] = d
    stored = {}  # device -> {seq: fsync stamp}
    first_t = None
    last_t = None
    for clock, seq, _event, t in sink_res["stamps"]:
        if isinstance(clock, str):
            i = int(clock.rsplit("-", 1)[1])
        else:
            i = clock
        if not isinstance(seq, int) or _event == "gap":
            continue
        stored.setdefault(i, {}).setdefault(seq, t)
        first_t = t if first_t is None else min(first_t, t)
        last_t = t if last_t is None else max(last_t, t)
    lat, lat_press = [], []
    steady = []  # sent BOOT_S or more after the first frame: the boots' burst left out
    sent = [w for d in devices.values() for w in d["stamps"].values()]
    boots_end = (min(sent) + BOOT_S) if sent else 0.0
    emitted = lost = 0
    for i, d in devices.items():
        got = stored.get(i, {})
        emitted += d["emitted"]
        lost += sum(1 for s in range(1, d["emitted"] + 1) if s not in got)
        for seq, t in got.items():
            w = d["stamps"].get(seq)
            if w is not None:
                lat.append(t - w)
                if w >= boots_end:
                    steady.append(t - w)
    total = sum(len(v) for v in stored.values())
    span = (last_t - first_t) if total > 1 else 0
    wcpu = sum(w["cpu_s"] for w in work)
    res = {
        "sink": sink, "devices": n, "press_every_ms": list(press_ms),
        "device_time_s": duration_s, "events_emitted": emitted, "events_stored": total,
        "events_lost": lost, "finished": sink_res["finished"]
        and all(d["done"] for d in devices.values()),
        "offered_events_per_s": round(emitted / duration_s, 1),
        "stored_events_per_s": round(total / span, 1) if span else None,
        "latency_ms": summary(lat, 1000.0, 2),
        "latency_after_boots_ms": summary(steady, 1000.0, 2),
        "sink_cpu_s": round(sink_res["cpu_s"], 2), "sink_wall_s": round(sink_res["wall_s"], 2),
        "sink_cpu_share": round(sink_res["cpu_s"] / max(sink_res["wall_s"], 1e-9), 3),
        "sink_cpu_us_per_event": round(sink_res["cpu_s"] / max(total, 1) * 1e6, 1),
        "device_workers": len(work), "device_cpu_s": round(wcpu, 2),
        "device_cpu_us_per_event": round(wcpu / max(emitted, 1) * 1e6, 1),
        # time runnable but waiting for a CPU (the machine's load), per
        # second of the run: the logger's, and the device workers' mean
        "sink_cpu_wait_share": _wait_share([sink_res]),
        "device_cpu_wait_share": _wait_share(work),
        "load_avg_1min": round(os.getloadavg()[0], 1),
        "device_lag_ms_p99": round(max((w["lag_ms_p99"] or 0) for w in work), 2),
        "device_ring_dropped": sum(d["dropped"] for d in devices.values()),
        "devices_unfinished": sum(1 for d in devices.values() if not d["done"]),
        "devices_short": sum(1 for i, d in devices.items()
                             if len(stored.get(i, {})) < d["emitted"]),
        "log_bytes": log_bytes,
    }
    return common.premise(res, offered(n, devices, stored, res, press_ms))


def _load_note(res):
    """The machine's share in a run that fell behind: how long its processes
    waited for a CPU, the load average."""
    dw, sw = res.get("device_cpu_wait_share"), res.get("sink_cpu_wait_share")
    if dw is None:
        return ""
    return (" (the machine's load: the clocks' workers waited for a CPU %.0f %% of the "
            "run, the logger %.0f %%; load average %.1f on %d CPUs)"
            % (100 * dw, 100 * (sw or 0), res.get("load_avg_1min", 0), os.cpu_count()))


def _wait_share(procs):
    """Seconds a process waited for a CPU per second of its run (mean over
    ``procs``); None where the system does not say."""
    got = [(p["sched"][1], p["wall_s"]) for p in procs if p.get("sched") and p.get("wall_s")]
    if not got:
        return None
    return round(sum(w / max(t, 1e-9) for w, t in got) / len(got), 3)


def offered(n, devices, stored, res, press_ms):
    """What must hold for the figures to mean anything: every clock ran its
    game (started, and emitted more than its boot), every event it emitted
    reached the log, and the devices pressed at the pace meant (their passes
    ran late by less than the longest gap between two presses)."""
    silent = sum(1 for d in devices.values() if d["emitted"] < 3)
    lag = res["device_lag_ms_p99"]
    return [
        "%d of %d clocks ran" % (len(devices), n) if len(devices) != n else None,
        "%d clocks never started their game" % silent if silent else None,
        "%d clocks unfinished" % res["devices_unfinished"] if res["devices_unfinished"]
        else None,
        "%d events undelivered (%d clocks short)" % (res["events_lost"], res["devices_short"])
        if res["events_lost"] else None,
        "the load was not offered: the devices' passes ran %.0f ms late (p99), more "
        "than the %d ms between two presses%s" % (lag, press_ms[1], _load_note(res))
        if lag > press_ms[1] else None,
        "nothing stored" if not res["events_stored"] else None,
    ]


def bench(sizes=(1, 50, 200), duration_s=12.0, press_ms=(50, 200), human_ms=(700, 2500),
          say=None):
    runs = []
    plan = [(n, press_ms) for n in sizes] + [(max(sizes), human_ms)]
    for n, pm in plan:
        for sink in ("logger", "baseline"):
            if say:
                say("  scale: %d devices, press every %d-%d ms, %s" % (n, pm[0], pm[1], sink))
            runs.append(phase(n, sink, duration_s, pm))
    return {"runs": runs}


if __name__ == "__main__":
    import json
    import sys
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    sink = sys.argv[2] if len(sys.argv) > 2 else "logger"
    sys.stdout.write(json.dumps(phase(n, sink, float(sys.argv[3]) if len(sys.argv) > 3 else 8.0),
                                indent=1) + "\n")
