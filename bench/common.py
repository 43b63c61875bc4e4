"""Shared helpers for the benchmarks: the machine, percentiles, frame decoding."""
import os
import platform
import subprocess
import sys

from hallclock import catalog
from hallclock_fw import protocol


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        node = None
    return {"cpus": os.cpu_count(), "cpu_model": model,
            "python": platform.python_version(), "node": node,
            "system": platform.system() + " " + platform.release()}


def sched(pid="self"):
    """(CPU s, s spent runnable but waiting for a CPU) of a process, every
    live thread (/proc/PID/task/*/schedstat); None where there is no such
    file.  The second is the machine's load as that process felt it: on a
    shared machine a benchmark's latency may be its queue for a CPU."""
    try:
        tasks = os.listdir("/proc/%s/task" % pid)
    except OSError:
        return None
    run = wait = 0
    for t in tasks:
        try:
            with open("/proc/%s/task/%s/schedstat" % (pid, t)) as f:
                a = f.read().split()
        except OSError:
            continue
        run += int(a[0])
        wait += int(a[1])
    return [run / 1e9, wait / 1e9]


def sched_since(before, pid="self"):
    """What :func:`sched` says has passed since ``before`` (None: unknown)."""
    now = sched(pid)
    if before is None or now is None:
        return None
    return [round(now[0] - before[0], 3), round(now[1] - before[1], 3)]


def pct(values, p):
    """The p-th percentile (nearest rank) of ``values``; None if empty."""
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


def summary(values, scale=1.0, digits=3):
    """max, p99, p50, mean and count of a list of numbers (times ``scale``)."""
    if not values:
        return {"n": 0, "max": None, "p99": None, "p50": None, "mean": None}

    def r(x):
        return round(x * scale, digits)
    return {"n": len(values), "max": r(max(values)), "p99": r(pct(values, 99)),
            "p50": r(pct(values, 50)), "mean": r(sum(values) / len(values))}


def frames(data):
    """Checked token lists of every sound frame in ``data`` (bytes)."""
    out = []
    for line in data.split(b"\n"):
        if line:
            tokens = protocol.check(protocol.unframe(line))
            if tokens is not None:
                out.append(tokens)
    return out


def events(data):
    """(seq, t_ms, name, fields) of every event frame in ``data``, and the sid."""
    out = []
    sid = None
    for tokens in frames(data):
        if tokens[0] == "E":
            sid = tokens[1]
            seq, t_ms, name, values, _text = catalog.event_fields(tokens)
            out.append((seq, t_ms, name, values))
    return out, sid


def scrabble_settings(pairs=()):
    from hallclock_fw import settings
    return settings.parse("scrabble", list(pairs))


def say(*args):
    print(*args, file=sys.stderr, flush=True)


def stamp_flushes(writer):
    """Wrap ``writer.flush`` (one write + fsync for a batch of records) so each
    record stored gets the time its flush returned: (clock, seq, event, t)."""
    import time
    stamps = []
    orig = writer.flush

    def flush():
        batch = [(r.get("clock"), r.get("seq"), r.get("event")) for r in writer.pending_records]
        n = orig()
        t = time.monotonic()
        stamps.extend((c, q, e, t) for c, q, e in batch)
        return n
    writer.flush = flush
    return stamps


def run_due(d, now_ms, lag, nxt):
    """The scale benchmarks' scheduler, for one of a worker's many devices
    (``d["r"]`` its Runner, ``d["status"]``): every pass due by ``now_ms``
    (device ms = real ms since the phase began), each pass's lateness into
    ``lag``; after the scenario's end, real time.  Returns the earliest
    pass still due of the worker's devices (``nxt``, or this one's)."""
    from hallclock.vboard.vdev.runner import RUNNING, WAITING
    r = d["r"]
    if d["status"] == RUNNING:
        if r.ms <= now_ms:
            lag.append(now_ms - r.ms)
        while d["status"] == RUNNING and r.ms <= now_ms:
            d["status"] = r.step()
        if d["status"] == RUNNING and r.ms < nxt:
            nxt = r.ms
    elif d["status"] == WAITING and now_ms >= r.ms + 1:
        d["status"] = r.advance(int(now_ms - r.ms))
    return nxt


def premise(res, problems):
    """A benchmark's figures, or FAILED: ``problems`` (the premises that did
    not hold: a clock that never started, an event not delivered, a load not
    offered) replace the figures with the reason, said loudly on stderr; the
    figures stay under ``unchecked`` for whoever looks into it.  bench/run.py
    lists every FAILED again at the end and exits 1."""
    problems = [p for p in problems if p]
    if not problems:
        return res
    reason = "; ".join(problems)
    say("FAILED: %s" % reason)
    return {"FAILED": reason, "unchecked": res}


def failures(res, where=""):
    """Every FAILED reason in a results tree, with where it was found."""
    out = []
    if isinstance(res, dict):
        if "FAILED" in res:
            out.append((where, res["FAILED"]))
        for k, v in res.items():
            if k != "unchecked":
                out.extend(failures(v, "%s.%s" % (where, k) if where else str(k)))
    elif isinstance(res, list):
        for i, v in enumerate(res):
            out.extend(failures(v, "%s[%d]" % (where, i)))
    return out
