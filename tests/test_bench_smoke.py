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


def _analyse(stored_seqs, emitted=5, lag=1.0, press_ms=(50, 200), sink_name="logger",
             wait=0.1, sink_cpu=0.1):
    import scale
    dev = {"i": 0, "emitted": emitted, "dropped": 0, "done": True,
           "stamps": {s: 0.0 for s in range(1, emitted + 1)}}
    work = [{"cpu_s": 0.1, "wall_s": 1.0, "sched": [0.1, wait], "lag_ms_p99": lag,
             "devices": [dev]}]
    sink = {"cpu_s": sink_cpu, "wall_s": 1.0, "finished": True, "sched": [0.1, wait],
            "stamps": [("bench-000", s, "press", 0.01 * s) for s in stored_seqs]}
    return scale.analyse(1, sink_name, 1.0, press_ms, sink, work, 0)


def test_scale_benchmark_fails_loudly_when_an_event_is_undelivered(capsys):
    """A run that left events undelivered, or whose devices could not press
    at the pace meant, gives FAILED and its reason, not a latency figure; a
    whole run reports every FAILED (bench/run.py exits 1 on any)."""
    import common
    good = _analyse([1, 2, 3, 4, 5])
    assert "FAILED" not in good and good["latency_ms"]["n"] == 5
    short = _analyse([1, 2, 3])
    assert "2 events undelivered" in short["FAILED"] and "latency_ms" not in short
    assert "FAILED: 2 events undelivered" in capsys.readouterr().err
    late = _analyse([1, 2, 3, 4, 5], lag=350.0)
    assert "the load was not offered" in late["FAILED"]
    found = common.failures({"scale": {"runs": [good, short]}, "mqtt": late})
    assert [w for w, _ in found] == ["scale.runs[1]", "mqtt"]


def test_a_run_behind_its_pace_says_how_long_it_waited_for_a_cpu():
    """On a shared machine a run's figures may be its queue for a CPU: a run
    that fell behind says so in its FAILED (the workers' and the logger's
    wait, the load average), and the MQTT-against-pty verdict carries every
    process's wait beside its ratios, whether the goal is met or not."""
    import mqttscale
    late = _analyse([1, 2, 3, 4, 5], lag=350.0, wait=0.9)
    assert "waited for a CPU 90 % of the run, the logger 90 %" in late["FAILED"]
    pty = _analyse([1, 2, 3, 4, 5])
    quick = _analyse([1, 2, 3, 4, 5], sink_name="mqtt-logger", sink_cpu=0.12)
    costly = _analyse([1, 2, 3, 4, 5], sink_name="mqtt-logger", sink_cpu=0.2, wait=0.6)
    assert mqttscale.compare([quick, pty])[0]["verdict"] == "met"
    row = mqttscale.compare([costly, pty])[0]
    assert row["cpu_ratio"] == 2.0 and row["verdict"].startswith("not met")
    assert "MQTT logger 60 %" in row["verdict"] and "pty logger 10 %" in row["verdict"]
    late_mqtt = _analyse([1, 2, 3, 4, 5], lag=350.0, wait=0.9, sink_name="mqtt-logger")
    assert mqttscale.compare([late_mqtt, pty])[0]["verdict"].startswith("FAILED: ")


def test_start_spread_seals_its_start_and_every_clock_starts():
    """The referee's START on all/down is sealed with the hall key as the
    console seals it (an unsealed one is refused by every clock), and the
    benchmark checks that every clock started."""
    import mqttscale
    res = mqttscale.start_spread(3, workers=1)
    assert "FAILED" not in res, res
    assert res["started"] == 3 and res["spread_ms"] >= 0


def test_catchup_benchmark_times_each_fault_mode_against_the_clean_line():
    """The catch-up benchmark plays a game through the fault proxy, checks
    the log against the clean line's (nothing lost, nothing doubled) and
    gives the seconds of each mode with the clean line's beside them."""
    import catchup
    assert len(catchup.modes()) == 7
    res = catchup.bench(presses=4, only=["both ways"])
    assert "FAILED" not in res, res
    assert res["events"] > 8 and res["baseline_s"] > 0
    [mode] = res["modes"]
    assert "FAILED" not in mode, mode
    assert mode["mode"] == "noisy both ways" and mode["seconds"] > 0


def test_a_jittered_loop_is_woken_by_the_button_and_its_debounce_deadline():
    """The board's loop sleeps until its deadline or a pin's edge (hw.wait);
    the virtual jittered loop too: a clean press leaves exactly at the
    debouncer's 12 ms after the edge, a bouncing one 12 ms after its last
    bounce (9 ms), never a jittered period later (device time: no timing)."""
    res = latency.measure((1, 20), presses=10)
    assert res["clean_ms"]["max"] == 12 and res["clean_ms"]["n"] == 5
    assert res["bouncing_ms"]["max"] == 21


def test_office_benchmark_times_the_office_beside_the_hall_and_its_catch_up():
    """The office benchmark (issue 35): halls bridged to the office's broker,
    each hall logger's fsync and the office's fsync of the same records, and
    the office's catch-up after its outage; its copies equal the halls' logs."""
    import officebench
    res = officebench.bench(1, 2, latency_s=5.0, outage_s=2.0)
    assert "FAILED" not in res, res
    assert res["records_both_stored_office_up"] > 4
    assert res["office_latency_ms"]["n"] == res["hall_logger_latency_ms"]["n"]
    assert res["office_over_hall_p50"] > 0 and res["copies_equal_hall_logs"] == 1
    assert res["outage"]["backlog_records"] > 0 and res["outage"]["catch_up_s"] > 0


def test_office_benchmark_fails_loudly_when_nothing_reached_the_office(tmp_path, capsys):
    """Nothing stored by the office while it was up (a bridge that never
    connected, say): FAILED with the reason, no latency figure."""
    import officebench

    class Rig:
        halls = ["hall-1"]
        hall = {"hall-1": {"log": str(tmp_path / "hall-1.jsonl")}}
        copies = str(tmp_path / "copies")  # the office's copy: none
    (tmp_path / "hall-1.jsonl").write_text(
        '{"clock": "bench-000", "seq": 1, "t_ms": 0, "event": "boot", "session": "1"}\n')
    work = {"hall-1": [{"devices": [{"i": 0, "emitted": 1, "dropped": 0, "done": True,
                                     "stamps": {1: 0.0}}]}]}
    loggers = [{"hall_logger": "hall-1", "cpu_s": 0.1,
                "stamps": [("bench-000", 1, "boot", 0.01)]}]
    nothing = {"stamps": {}, "cpu_s": 0.0}
    res = officebench.analyse(Rig(), work, loggers, nothing, nothing, {"t": 1.0}, 1.0, 2.0,
                              {"hall-1": 1}, {"hall-1": 1}, 1, 1, 1.0, 1.0, 30.0, (700, 2500),
                              10.0)
    assert "no record reached both a hall's log and the office's copy" in res["FAILED"]
    assert "the office did not catch up" in res["FAILED"]
    assert "office_latency_ms" not in res
    assert "FAILED: no record reached both" in capsys.readouterr().err


def test_office_benchmark_counts_every_event_of_its_window(tmp_path):
    """The latency is of every event sent before the window's end (2 s
    before the office stopped), none left out for being slow: one the
    office had not stored by then makes the run FAILED."""
    import officebench

    class Rig:
        halls = ["hall-1"]
        hall = {"hall-1": {"log": str(tmp_path / "hall-1.jsonl")}}
        copies = str(tmp_path / "copies")
    work = {"hall-1": [{"devices": [{"i": 0, "emitted": 2, "dropped": 0, "done": True,
                                     "stamps": {1: 0.0, 2: 0.1}}]}]}
    loggers = [{"hall_logger": "hall-1", "cpu_s": 0.1,
                "stamps": [("bench-000", 1, "boot", 0.01), ("bench-000", 2, "turn", 0.11)]}]
    office1 = {"stamps": {"hall-1": [("bench-000", 1, "boot", 0.02)]}, "cpu_s": 0.0}
    office2 = {"stamps": {"hall-1": [("bench-000", 2, "turn", 3.0)]}, "cpu_s": 0.0}
    res = officebench.analyse(Rig(), work, loggers, office1, office2, {"t": 1.0}, 1.0, 2.0,
                              {"hall-1": 2}, {"hall-1": 2}, 1, 1, 1.0, 1.0, 30.0, (700, 2500),
                              10.0, window_end=5.0)
    assert "1 of the 2 events sent 2 s or more before the office stopped had not reached " \
           "the office" in res["FAILED"]
    res = officebench.analyse(Rig(), work, loggers, office1, office2, {"t": 1.0}, 1.0, 2.0,
                              {"hall-1": 2}, {"hall-1": 2}, 1, 1, 1.0, 1.0, 30.0, (700, 2500),
                              10.0, window_end=0.05)
    assert "events sent" not in res.get("FAILED", "")  # seq 2 is past the window
    assert res.get("unchecked", res)["office_latency_ms"]["n"] == 1


def test_the_romfs_ratio_covers_every_mode_of_the_registry(tmp_path):
    """bench/unixheap.py's ROMFS figure (docs/benchmarks.md "Heap on the unix
    port"): the heap after importing each mode's modules from /rom against
    from .mpy, for every mode the registry has (it once named a table that
    the registry replaced, and make bench stopped there)."""
    import unixheap
    from hallclock_fw import settings
    res = unixheap.romfs_ratio(str(tmp_path))
    assert res["image_bytes"] > 0
    for mode in settings.MODES:
        got = res[mode]
        assert 0 < got["romfs_bytes"] < got["mpy_bytes"], (mode, got)


def test_the_pty_baseline_stores_every_event_a_clock_emits(tmp_path):
    """The scale benchmark's baseline (bytes copied to a file, the device
    acknowledging what it wrote) on one clock for a second: every event is
    on disk.  It once acknowledged the link's newest event before the link
    had sent it (the boot's health report), and every clock came up short."""
    import scale
    res = scale.phase(1, "baseline", 1.0, tmp=str(tmp_path))
    assert "FAILED" not in res, res.get("FAILED")
    assert res["events_lost"] == 0 and res["events_stored"] == res["events_emitted"] > 2
