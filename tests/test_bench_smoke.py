"""The benchmarks run (tiny sizes) and report the figures docs/benchmarks.md
names.  No timing assertions: speed is measured by `make bench`, not tested."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))

import latency  # noqa: E402
import timing  # noqa: E402


def test_timing_benchmark_checks_every_warning_expiry_and_gong():
    res = timing.measure(None, seeds=[2], round_ms=12 * 60000)
    assert res["missing_events"] == 0
    assert res["checked_events"] > 5
    for key in ("error_ms", "error_own_ms", "end_drift_ms", "last_turn_vs_script_ms"):
        assert set(res[key]) >= {"max", "p99", "n"}
    # event-driven: every event at its ideal ms (the clock's own arithmetic)
    assert res["error_ms"]["max"] == 0


def test_latency_benchmark_pairs_each_press_with_its_frame():
    res = latency.measure((1, 20), presses=10)
    assert res["presses"] == 10
    assert res["latency_ms"]["max"] >= 12  # the debouncer is in the path
