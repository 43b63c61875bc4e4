"""A tournament day rehearsed (``hallclock rehearse``, docs/hall.md "Rehearse
the day"): 12 tables x 2 rounds at --speed 60 by default, the default faults,
on the serial path and then over MQTT (its own default faults).
Wall time against the day's own time at that speed (the plan's clock time /
speed: what the day costs if the laptop spent nothing), the goal 5 minutes;
FAILED if the rehearsal failed a check or printed no summary."""
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

GOAL_S = 300.0


def bench(tables=12, rounds=2, speed=60.0, sets=(), say=print, mqtt=True):
    """The serial day, and (``mqtt``) the same day over the hall network in
    the same run: its figures under ``mqtt`` with its wall time against the
    serial day's (``mqtt_vs_serial_wall``)."""
    got = day(tables, rounds, speed, sets, say)
    if mqtt:
        net = got["mqtt"] = day(tables, rounds, speed, sets, say, transport="mqtt")
        got["mqtt_vs_serial_wall"] = round(net["wall_s"] / got["wall_s"], 2)
        if "FAILED" in net and "FAILED" not in got:
            got["FAILED"] = "over MQTT: " + net["FAILED"]
    return got


def day(tables=12, rounds=2, speed=60.0, sets=(), say=print, transport="serial"):
    out = tempfile.mkdtemp(prefix="bench-rehearse-")
    argv = [sys.executable, "-m", "hallclock", "rehearse", "--tables", str(tables),
            "--rounds", str(rounds), "--speed", str(speed), "--transport", transport,
            "--out", os.path.join(out, "day")]
    for s in sets:
        argv += ["--set", s]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    res = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = res.stdout.strip().splitlines()
    summary = lines[-1] if lines else ""
    got = {"transport": transport, "tables": tables, "rounds": rounds, "speed": speed,
           "wall_s": round(wall, 1),
           "cpu_s": round(cpu, 1), "goal_s": GOAL_S, "summary": summary,
           "notes": [ln for ln in lines if ln.startswith("note: ")]}
    m = re.search(r"every view agreed at (\d+) checkpoints", summary)
    plan_path = os.path.join(out, "day", "plan.json")
    if os.path.exists(plan_path):
        with open(plan_path, encoding="utf-8") as f:
            plan = json.load(f)
        day_ms = sum(max(a[0] + t.get("boot_ms", 0) for t in r["tables"] for a in t["actions"])
                     for r in plan["rounds"])
        got["day_s_at_speed"] = round(day_ms / 1000.0 / speed, 1)
        got["wall_vs_day"] = round(wall / got["day_s_at_speed"], 2)
    got["wall_vs_goal"] = round(wall / GOAL_S, 2)
    if res.returncode != 0 or m is None:
        why = (res.stderr.strip().splitlines() or ["no summary"])[-1]
        got["FAILED"] = f"rehearse exit {res.returncode}: {why}"
    else:
        got["checkpoints"] = int(m.group(1))
    say("bench: rehearse %d tables x %d rounds at %gx over %s: %.0f s wall (goal %.0f s), %s"
        % (tables, rounds, speed, transport, wall, GOAL_S, summary))
    return got
