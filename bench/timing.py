"""Benchmark 1: timing accuracy of a 40-minute Scrabble game on the virtual
device, with a jittered loop (periods 1-20 ms) and event-driven.

The script: START, B starts move 1, then the running player presses after a
think time drawn from a fixed pseudo-random sequence (some moves run into
warnings, some expire and are pressed in overtime), through the end gong and
the play-out.  The device's ticks start 20 minutes below 2**30, so they wrap
mid-game.

Ideal times come from the script alone: a move starts at the press edge that
started it; its warnings are due at start + limit - 30/20/10 s, its expiry at
start + limit; the gongs at START + round - 10 min and START + round.  Each
event's error is its logged t_ms minus its ideal time.  ``own`` errors use the
clock's own reference instead (the logged turn / start-gong time), which
isolates the timekeeping from when the loop first saw the press.
"""
import bisect
import random

import common
from drive import run
from common import scrabble_settings, summary

TICKS_WRAP = 1 << 30
LIMIT_MS = 120000
WARN_S = (30, 20, 10)
ROUND_MS = 40 * 60000
TEN_MS = 10 * 60000


def game(seed=9, round_ms=ROUND_MS, playout_moves=6, start_at=1000):
    """(actions, presses): the script and the edge time of every player press."""
    rnd = random.Random(seed)
    actions = [(start_at, "press", "START")]
    t = start_at + 2000
    actions.append((t, "press", "B"))
    presses = [t]
    player = "A"
    end_gong = start_at + round_ms
    after_end = 0
    while True:
        r = rnd.random()
        if r < 0.12:
            think = rnd.randint(125000, 150000)  # expires, pressed in overtime
        elif r < 0.35:
            think = rnd.randint(92000, 117000)  # runs into one or more warnings
        else:
            think = rnd.randint(4000, 85000)
        think += rnd.randint(0, 999)  # edges at any ms
        t += think
        actions.append((t, "press", player))
        presses.append(t)
        player = "B" if player == "A" else "A"
        if t > end_gong:
            after_end += 1
            if after_end >= playout_moves:
                break
    actions.append((t + 5000, "end", None))
    return actions, presses


def ideal_events(presses, start_at, round_ms=ROUND_MS):
    """{key: ideal t_ms}; key ('warn', move, left_s), ('expired', move), ('gong', kind)."""
    ideal = {("gong", "start"): start_at, ("gong", "ten_minutes"): start_at + round_ms - TEN_MS,
             ("gong", "end"): start_at + round_ms}
    for i in range(len(presses) - 1):
        move = i + 1
        begin, end = presses[i], presses[i + 1]
        for s in WARN_S:
            due = begin + LIMIT_MS - s * 1000
            if due < end:
                ideal[("warn", move, s)] = due
        if begin + LIMIT_MS < end:
            ideal[("expired", move)] = begin + LIMIT_MS
    return ideal


def key_of(name, fields):
    if name == "warn":
        return ("warn", fields["move"], fields["left_s"])
    if name == "expired":
        return ("expired", fields["move"])
    if name == "gong":
        return ("gong", fields["kind"])
    return None


def one_game(period, seed, round_ms, start_ticks):
    start_at = 1000
    actions, presses = game(seed, round_ms, start_at=start_at)
    values = scrabble_settings(["round_min=%d" % (round_ms // 60000)])
    records, runner, passes = run(actions, period=period, start_ticks=start_ticks, seed=seed,
                                  settings=values)
    ideal = ideal_events(presses, start_at, round_ms)
    turns = {}
    start_gong = None
    g = {"errors": [], "own": [], "over_gap": 0, "per_kind": {}, "series": [],
         "uart_delay": [], "passes": runner.passes, "moves": 0}
    found = set()
    for seq, t_ms, name, fields, pass_ms, _gap in records:
        if name == "turn":
            turns[fields["move"]] = t_ms
        if name == "gong" and fields["kind"] == "start":
            start_gong = t_ms
        key = key_of(name, fields)
        if key is None or key not in ideal:
            if key is not None and key[0] != "gong":
                raise AssertionError("unexpected event %r at %d" % (key, t_ms))
            continue
        found.add(key)
        err = t_ms - ideal[key]
        g["errors"].append(err)
        g["series"].append((ideal[key], err))
        g["per_kind"].setdefault(key[0], []).append(err)
        g["uart_delay"].append(pass_ms - t_ms)
        if key[0] == "gong":
            ref = start_gong + (ideal[key] - start_at)
        else:
            move = key[1]
            ref = turns[move] + (ideal[key] - presses[move - 1])
        e_own = t_ms - ref
        g["own"].append(e_own)
        i = bisect.bisect_left(passes, t_ms)
        gap = t_ms - passes[i - 1] if i > 0 else 0  # the period the emitting pass closed
        if e_own > gap or e_own < 0:
            g["over_gap"] += 1
    g["missing"] = sorted(set(ideal) - found, key=str)
    end_gong = [r for r in records if r[2] == "gong" and r[3]["kind"] == "end"][0][1]
    last_move = max(turns)
    g["moves"] = last_move
    g["end_drift"] = end_gong - (start_at + round_ms)
    g["end_drift_own"] = end_gong - start_gong - round_ms
    g["last_turn"] = turns[last_move] - presses[last_move - 1]
    return g


def measure(period, seeds=range(1, 9), round_ms=ROUND_MS,
            start_ticks=TICKS_WRAP - 20 * 60000):
    """``len(seeds)`` different games (and jitter sequences), figures over all."""
    games = [one_game(period, s, round_ms, start_ticks) for s in seeds]

    def cat(k):
        return [x for g in games for x in g[k]]
    series = cat("series")
    # drift: least-squares slope of the error against the time in the round
    n = len(series)
    mx = sum(x for x, _ in series) / n
    my = sum(y for _, y in series) / n
    sxx = sum((x - mx) ** 2 for x, _ in series) or 1
    slope = sum((x - mx) * (y - my) for x, y in series) / sxx * 3600000
    kinds = {}
    for g in games:
        for k, v in g["per_kind"].items():
            kinds.setdefault(k, []).extend(v)
    res = {
        "loop": "event-driven" if period is None else "jittered %d-%d ms" % period,
        "period_max_ms": 0 if period is None else period[1],
        "games": len(games), "round_min": round_ms // 60000,
        "moves": sum(g["moves"] for g in games),
        "start_ticks": start_ticks, "ticks_wrap_at_ms": TICKS_WRAP - start_ticks,
        "passes": sum(g["passes"] for g in games),
        "checked_events": n,
        "missing_events": sum(len(g["missing"]) for g in games),
        "error_ms": summary(cat("errors")),
        "error_by_kind_ms": {k: summary(v) for k, v in sorted(kinds.items())},
        "error_own_ms": summary(cat("own")),
        "events_outside_their_pass_period": sum(g["over_gap"] for g in games),
        "frame_after_event_ms": summary(cat("uart_delay")),
        "end_drift_ms": summary([g["end_drift"] for g in games]),
        "end_drift_own_ms": summary([g["end_drift_own"] for g in games]),
        "last_turn_vs_script_ms": summary([g["last_turn"] for g in games]),
        "error_slope_ms_per_hour": round(slope, 3),
    }
    missing = res["missing_events"]
    return common.premise(res, [
        "%d expected events never logged" % missing if missing else None,
        "no game played" if not games or not n else None])


def bench(round_ms=ROUND_MS, seeds=range(1, 9)):
    return {"event_driven": measure(None, seeds, round_ms),
            "jittered_1_20": measure((1, 20), seeds, round_ms)}


if __name__ == "__main__":
    import json
    import sys
    sys.stdout.write(json.dumps(bench(), indent=1) + "\n")
