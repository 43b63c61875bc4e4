"""make bench: every benchmark, figures to bench/results.json (see docs/benchmarks.md).

    .venv/bin/python bench/run.py [--out bench/results.json] [--quick]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


PARTS = ("timing", "fwcost", "latency", "scale", "unixheap", "heap32", "mqtt", "display",
         "console", "tls", "catchup", "office", "rehearse")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "results.json"))
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--clocks", type=int, default=200,
                    help="clocks of the hall-network run (mqtt; 200: a big hall)")
    ap.add_argument("--halls", type=int, default=5,
                    help="halls of the office run (office; each of --office-clocks clocks)")
    ap.add_argument("--office-clocks", type=int, default=40,
                    help="clocks a hall in the office run (office; 5 x 40: a championship)")
    ap.add_argument("--only", action="append",
                    help=", ".join(PARTS))
    args = ap.parse_args(argv)
    only = set(args.only or PARTS)
    res = {"machine": common.machine(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "reproduce": "make bench  (or .venv/bin/python bench/run.py)", "seconds": {}}
    t_all = time.monotonic()

    def part(name, fn):
        if name not in only:
            return
        common.say("bench: %s ..." % name)
        t = time.monotonic()
        res[name] = fn()
        res["seconds"][name] = round(time.monotonic() - t, 1)
        common.say("bench: %s done in %.1f s" % (name, res["seconds"][name]))

    import timing
    import latency
    import fwcost
    import scale
    import unixheap
    import heap32
    import mqttscale
    import display
    import consoleapi
    import tlscost
    import catchup
    import officebench
    import rehearsal
    if args.quick:
        part("timing", lambda: timing.bench(round_ms=12 * 60000, seeds=[1]))
        part("fwcost", fwcost.bench)
        part("latency", lambda: latency.bench(presses=40))
        part("scale", lambda: scale.bench(sizes=(1, 4), duration_s=2.0, say=common.say))
        part("unixheap", lambda: unixheap.bench(quick=True))
        part("heap32", lambda: heap32.bench(quick=True, say=common.say))
        part("mqtt", lambda: mqttscale.bench(sizes=(4,), duration_s=2.0, spread_clocks=4,
                                             say=common.say))
        part("display", lambda: display.bench(examples=50, say=common.say))
        part("console", lambda: consoleapi.bench(quick=True, say=common.say))
        part("tls", lambda: tlscost.measure(4))
        part("catchup", lambda: catchup.bench(presses=20, say=common.say,
                                              only=["both ways", "split"]))
        part("office", lambda: officebench.bench(2, 4, latency_s=6.0, outage_s=3.0,
                                                 say=common.say))
        part("rehearse", lambda: rehearsal.bench(3, 1, 150.0, ("round_min=4",
                                                               "round_warn_min=1"),
                                                 say=common.say))
    else:
        part("timing", timing.bench)
        part("fwcost", fwcost.bench)
        part("latency", latency.bench)
        part("scale", lambda: scale.bench(say=common.say))
        part("unixheap", unixheap.bench)
        part("heap32", lambda: heap32.bench(say=common.say))
        part("mqtt", lambda: mqttscale.bench(sizes=(args.clocks,), say=common.say))
        part("display", lambda: display.bench(say=common.say))
        part("console", lambda: consoleapi.bench(say=common.say))
        part("tls", tlscost.measure)
        part("catchup", lambda: catchup.bench(say=common.say))
        part("office", lambda: officebench.bench(args.halls, args.office_clocks,
                                                 say=common.say))
        part("rehearse", lambda: rehearsal.bench(say=common.say))
    res["seconds"]["total"] = round(time.monotonic() - t_all, 1)
    if args.only and not args.quick and os.path.exists(args.out):
        # one benchmark run again: the others' figures stay (each table's
        # baseline is of its own run, docs/benchmarks.md)
        with open(args.out) as f:
            old = json.load(f)
        runs = old.get("runs_of", {k: old.get("started") for k in old if k in PARTS})
        for name in only:
            runs[name] = res["started"]
        old.update({k: v for k, v in res.items() if k != "seconds"})
        old.setdefault("seconds", {}).update(res["seconds"])
        old["runs_of"] = runs
        res = old
    failed = common.failures(res)
    res["failed"] = ["%s: %s" % f for f in failed]
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    common.say("bench: wrote %s (%.0f s)" % (args.out, res["seconds"]["total"]))
    for where, why in failed:
        common.say("bench: FAILED %s: %s" % (where, why))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
