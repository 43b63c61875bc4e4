"""The display property at length: many random scenarios of every mode and
delay kind (presses, bounces, remote commands, long presses, reboots with
--restore, jittered loops, the tick wrap) on the virtual device with the real
host link; at every change of a device display the host's model, the live
view's row and the hall display's answer must show the same digits
(tests/displayprop.py; tests/test_display_property.py runs a bounded few).
Prints and returns how many scenarios, displayed seconds and restores it
compared."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests"))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from displayprop import check, scenario  # noqa: E402


def bench(examples=2000, say=print):
    counts = {"scenarios": 0, "displayed_seconds": 0, "restores": 0, "by_mode": {},
              "mismatches": 0}
    stats = {}

    @seed(20261201)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(scenario(max_actions=24))
    def run(case):
        mode = case[0]
        compared, mismatches = check(*case, stats=stats)
        assert mismatches == [], mismatches
        counts["scenarios"] += 1
        counts["displayed_seconds"] += compared
        counts["by_mode"][mode] = counts["by_mode"].get(mode, 0) + 1

    t = time.monotonic()
    run()
    counts["restores"] = stats.get("restores", 0)
    counts["seconds"] = round(time.monotonic() - t, 1)
    if counts["scenarios"] != examples:
        import common
        return common.premise(counts, ["%d of %d scenarios ran" % (counts["scenarios"],
                                                                   examples)])
    say("display property: %(scenarios)d scenarios, %(displayed_seconds)d displayed seconds "
        "and %(restores)d restores compared (device = model = live view = hall display), "
        "%(seconds).1f s" % counts)
    return counts


if __name__ == "__main__":
    bench(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
