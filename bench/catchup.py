"""Benchmark: catch-up on a bad serial line.  One virtual clock plays a game of
about 430 events (a Scrabble game of quick moves) into the real ``hallclock
log`` (a subprocess) through tests/faultproxy.py, once per fault mode; the
figure is the real time from the clock's first pass to the logger's exit on
the game's end with every event stored.  Baseline: the same game on a clean
line, in the same run.

The virtual clock runs simulated time as fast as the host acknowledges and no
faster than real time while events wait for the host (as a board would), so
a line that delays the acknowledgements stretches the game towards real
time: the seconds say how quickly the link gets what is missing across.
Every run is checked against the clean line's log (nothing lost, nothing
doubled), or the mode says FAILED.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from faultproxy import FaultProxy, Faults, wait_for  # noqa: E402

import common  # noqa: E402

SID = "0000cafe"
HALLCLOCK = [sys.executable, "-m", "hallclock"]
GIVE_UP_S = 600.0


def script(presses=200, seed=5):
    """START, then ``presses`` moves of 1-6 s: about 430 events."""
    rnd = random.Random(seed)
    lines = ["0 press START", "1500 press B"]
    t = 1500
    player = "A"
    for _ in range(presses):
        t += rnd.randint(1000, 6000)
        lines.append("%d press %s" % (t, player))
        player = "B" if player == "A" else "A"
    lines.append("%d end" % (t + 2000))
    return "\n".join(lines) + "\n"


def modes():
    """(name, proxy keyword arguments, what happens while the game runs)."""
    noisy = dict(drop=0.002, flip=0.002, dup=0.002, delay=(0.0, 0.02), noise=0.05)
    return [
        ("noisy both ways", dict(to_host=Faults(**noisy), to_device=Faults(**noisy)), None),
        ("noisy to the host", dict(to_host=Faults(**noisy)), None),
        ("noisy to the clock (acks hit)", dict(to_device=Faults(**noisy)), None),
        ("flapping (0.3 s cut every 2 s)", {}, "flap"),
        ("4 kB/s and noisy", dict(baud=40000, to_host=Faults(**noisy),
                                  to_device=Faults(**noisy)), None),
        ("every byte split", dict(to_host=Faults(split=True, delay=(0.0, 0.001)),
                                  to_device=Faults(split=True, delay=(0.0, 0.001))), None),
        ("logger crashes twice on a noisy line", dict(to_host=Faults(**noisy),
                                                      to_device=Faults(**noisy)), "crash"),
    ]


def _strip(records):
    from healthlog import without_health  # tests/healthlog.py
    return [{k: v for k, v in r.items() if k != "host_time"} for r in without_health(records)]


def one(folder, text, proxy_kw, action, seed=7):
    from hallclock import scenario
    from hallclock.link.logfile import read_records
    from hallclock.vboard import device as virtual
    from hallclock_fw.settings import parse
    path = os.path.join(folder, "script.txt")
    with open(path, "w") as f:
        f.write(text)
    out = os.path.join(folder, "log.jsonl")
    proxy = FaultProxy(folder, seed=seed, **proxy_kw)
    proxy.start()
    runner = virtual.make_runner("scrabble", parse("scrabble", []), scenario.load(path), sid=SID)
    dev = virtual.DeviceThread(runner, proxy.device_fd, silence_s=60)
    logger = None

    def start_logger():
        p = subprocess.Popen(HALLCLOCK + ["log", "--port", proxy.path, "--out", out,
                                          "--exit-on-end", "--plain"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: proxy.attached or p.poll() is not None, "the logger's port", 60)
        return p
    try:
        logger = start_logger()
        t0 = time.monotonic()
        dev.start()
        crashes = 0
        flap_at = t0 + 2.0
        while logger.poll() is None and time.monotonic() - t0 < GIVE_UP_S:
            now = time.monotonic()
            if action == "flap" and now >= flap_at:
                proxy.cut(0.3)
                flap_at = now + 2.0
            if action == "crash" and crashes < 2 and now - t0 >= 2.0 + 3.0 * crashes:
                logger.send_signal(signal.SIGKILL)
                logger.wait()
                logger = start_logger()
                crashes += 1
            time.sleep(0.01)
        took = time.monotonic() - t0
        if logger.poll() is None:
            return {"seconds": None, "problem": "not delivered within %d s" % GIVE_UP_S}
        err = logger.stderr.read()
        dev.join(60)
        return {"seconds": round(took, 1), "records": _strip(read_records(out)),
                "logger_status": logger.returncode, "stderr": err[-300:],
                "device": dev.result, "stats": dict(proxy.stats)}
    finally:
        dev.halt = True
        dev.join(5)
        if logger is not None and logger.poll() is None:
            logger.kill()
            logger.wait()
        proxy.close()


def bench(presses=200, say=None, only=None):
    text = script(presses)
    tmp = tempfile.mkdtemp(prefix="hallclock-catchup-")
    try:
        def run(name, kw, action):
            folder = os.path.join(tmp, "m%d" % len(os.listdir(tmp)))
            os.mkdir(folder)
            if say:
                say("  catch-up: %s" % name)
            return one(folder, text, kw, action)
        base = run("clean line (baseline)", {}, None)
        ref = base.get("records") or []
        res = {"events": sum(1 for r in ref if isinstance(r.get("seq"), int)),
               "baseline_s": base["seconds"], "modes": []}
        if base.get("problem") or base.get("logger_status") != 0 or not ref \
                or ref[-1].get("event") != "end":
            return common.premise(res, ["the clean line did not deliver the game: %s" % (
                base.get("problem") or base.get("stderr"))])
        for name, kw, action in modes():
            if only and not any(o in name for o in only):
                continue
            got = run(name, kw, action)
            fig = {"mode": name, "seconds": got["seconds"],
                   "ratio": round(got["seconds"] / base["seconds"], 1)
                   if got["seconds"] and base["seconds"] else None}
            problems = [got.get("problem")]
            if not got.get("problem"):
                recs = got["records"]
                problems.append("logger exit status %s: %s" % (got["logger_status"],
                                                               got["stderr"])
                                if got["logger_status"] != 0 else None)
                if recs != ref:
                    seqs = [r.get("seq") for r in recs if r.get("session") == SID]
                    problems.append("the log differs from the clean line's (%d records "
                                    "against %d, %d doubled)" % (
                                        len(recs), len(ref), len(seqs) - len(set(seqs))))
            fig = common.premise(fig, problems)
            if say:
                say("  catch-up: %s: %s" % (name, fig.get("FAILED") or "%.1f s (clean %.1f s)"
                                            % (fig["seconds"], base["seconds"])))
            res["modes"].append(fig)
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    import json
    sys.path.insert(0, os.path.join(ROOT, "host"))
    print(json.dumps(bench(int(sys.argv[1]) if len(sys.argv) > 1 else 200, say=common.say,
                           only=sys.argv[2:] or None), indent=1))
