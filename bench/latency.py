"""Benchmark 3: press latency, from the button edge (the FakePin goes low) to
the ``press`` event frame leaving the UART (the Runner's FakeUART output),
with the real debouncer (hw/buttons.py, 12 ms) in the path.

Half the presses are clean, half bounce for 9 ms (the scenario's ``bounce``
action); latency is measured from the first edge.  Device time: each frame is
stamped with the time of the loop pass that wrote it."""
import random

import common
from drive import run
from common import summary


def script(presses=400, seed=3):
    rnd = random.Random(seed)
    actions = [(1000, "press", "START"), (2000, "press", "B")]
    t = 2000
    player = "A"
    edges = []  # (edge ms, clean or bounce) of each press that ends a move
    for i in range(presses):
        t += rnd.randint(1500, 9000) + rnd.randint(0, 999)
        kind = "press" if i % 2 == 0 else "bounce"
        actions.append((t, kind, player))
        edges.append((t, kind))
        player = "B" if player == "A" else "A"
    actions.append((t + 2000, "end", None))
    return actions, edges


def measure(period, presses=400):
    actions, edges = script(presses)
    records, _runner, _passes = run(actions, period=period, start_ticks=(1 << 30) - 60000)
    press_frames = [r for r in records if r[2] == "press"]
    assert len(press_frames) == len(edges), (len(press_frames), len(edges))
    lat = {"press": [], "bounce": []}
    for (edge, kind), rec in zip(edges, press_frames):
        lat[kind].append(rec[4] - edge)  # pass that wrote the frame - the edge
    both = lat["press"] + lat["bounce"]
    return common.premise({"loop": "event-driven" if period is None else "jittered %d-%d ms" % period,
            "presses": len(both), "latency_ms": summary(both),
            "clean_ms": summary(lat["press"]), "bouncing_ms": summary(lat["bounce"])},
        ["no press measured" if not both else None])


def bench(presses=400):
    return {"debounce_ms": 12, "event_driven": measure(None, presses),
            "jittered_1_20": measure((1, 20), presses)}


if __name__ == "__main__":
    import json
    import sys
    sys.stdout.write(json.dumps(bench(), indent=1) + "\n")
