"""Every input bounded: whatever the command line or the log holds, a command
ends with exit 0, or one line ``hallclock: …`` and exit 1/2 -- never a
traceback, never a hang (docs/contract.md: bad input exits 2 with one clear
message).  Hypothesis with a fixed seed and a bounded number of examples.

No generated command can run for long: ports are never real ports (a missing
path, a folder), and a script that parses has its times within a few
minutes of simulated time (the bound at 2**29-1 ms is tested on its own)."""
import contextlib
import io
import json
import os

import pytest
from hypothesis import HealthCheck, given, seed, settings, strategies as st

from hallclock import cli
from hallclock.scenario import MAX_T_MS, parse_text
from hallclock.errors import BadInput

FUZZ = settings(max_examples=int(__import__("os").environ.get("FUZZ_N", "60")), deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def run(argv):
    """(exit status, stdout, stderr) of one in-process run."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def assert_clean(code, err):
    assert code in (0, 1, 2), code
    if code:
        assert err.startswith("hallclock: ") and err.count("\n") == 1, err
        assert "Traceback" not in err


# -- pieces of a command line ---------------------------------------------------
NAMES = st.one_of(
    st.sampled_from(["table-1", "", "table 1", "x" * 300, "all", "a/b", "+", "#", "ŕ",
                     "-x", "a\x00b", "t" * 24, "t" * 25]),
    st.text(max_size=30))
NUMBERS = st.one_of(st.sampled_from(["0", "-1", "1e9", "nan", "inf", "0x10", "", "10" * 20,
                                     "3.5", "1_000", "٣"]),
                    st.integers(-10**30, 10**30).map(str))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    (d / "game.txt").write_text("0 press START\n1500 press B\n47200 press A\n100000 end\n")
    (d / "binary.txt").write_bytes(bytes(range(256)) * 4)
    (d / "huge.txt").write_text(f"0 press START\n{10**27} end\n")
    (d / "edge.txt").write_text(f"0 press START\n{MAX_T_MS + 1} end\n")
    (d / "log.jsonl").write_text(json.dumps({"clock": "t", "seq": 1, "t_ms": 0,
                                             "event": "boot", "mode": "scrabble"}) + "\n")
    (d / "notes.txt").write_text("not a log\n")
    (d / "folder").mkdir()
    return d


def paths(d):
    return st.sampled_from([str(d / n) for n in ("game.txt", "binary.txt", "huge.txt",
                                                   "edge.txt", "log.jsonl", "notes.txt",
                                                   "folder", "missing.txt")])


def outs(d):
    # fresh names (a run that succeeds writes there), existing files, folders
    return st.one_of(st.integers(0, 10**9).map(lambda i: str(d / f"out-{i}.jsonl")),
                     st.sampled_from([str(d / "log.jsonl"), str(d / "notes.txt"),
                                      str(d / "folder"), str(d / "none" / "x.jsonl"), ""]))


def command_lines(d):
    p, o = paths(d), outs(d)
    port = st.sampled_from([str(d / "no-port"), str(d / "folder"), "auto", ""])
    value = st.one_of(NAMES, NUMBERS, p)
    sets = st.lists(st.tuples(st.sampled_from(["move_s", "warn_s", "round_min", "bank_s",
                                               "score", "delay", "match", "x", ""]), value)
                    .map(lambda kv: ["--set", f"{kv[0]}={kv[1]}"]), max_size=2)
    device = st.tuples(
        st.lists(st.one_of(
            st.tuples(st.just("--clock"), NAMES),
            st.tuples(st.just("--mode"), st.sampled_from(["scrabble", "duplicate", "backgammon",
                                                          "chess", ""])),
            st.tuples(st.just("--loop"), st.sampled_from(["event", "jitter:1-20", "jitter:0-1",
                                                          "jitter:5-1", "jitter:", "x"])),
            st.tuples(st.just("--start-ticks"), NUMBERS)), max_size=3),
        sets)

    def flat(pairs):
        return [x for pair in pairs for x in pair]

    simulate = st.tuples(p, o, device).map(
        lambda t: ["simulate", "--script", t[0], "--out", t[1]] + flat(t[2][0]) + flat(t[2][1]))
    dev = st.tuples(p, port, device, NUMBERS).map(
        lambda t: ["device", "--script", t[0], "--port", t[1], "--silence-s", t[3]]
        + flat(t[2][0]) + flat(t[2][1]))
    report = st.tuples(p, st.lists(st.tuples(st.sampled_from(["--csv", "--plot"]), o),
                                   max_size=2), st.booleans()).map(
        lambda t: ["report", t[0]] + flat(t[1]) + (["--force"] if t[2] else []))
    log = st.tuples(port, o).map(lambda t: ["log", "--port", t[0], "--out", t[1], "--plain"])
    hall = st.tuples(p, o, st.sampled_from(["scrabble", "duplicate", "backgammon", "x"]),
                     NUMBERS, NUMBERS).map(
        lambda t: ["hall-simulate", "--script", t[0], "--out", t[1], "--mode", t[2],
                   "--tables", t[3] if t[3].lstrip("-").isdigit() and abs(int(t[3])) < 100
                   else t[3], "--speed", t[4]])
    backgammon = st.tuples(NUMBERS, st.one_of(NUMBERS, st.sampled_from(["3-5", "0-0", "9-9"]))).map(
        lambda t: ["backgammon-time", "--match", t[0], "--score", t[1]])
    lateness = st.tuples(NUMBERS, NUMBERS).map(
        lambda t: ["lateness", "--match", t[0], "--late-min", t[1]])
    junk = st.lists(st.one_of(st.sampled_from(["--out", "--script", "--port", "report",
                                               "simulate", "--force", "-x", "--"]),
                              st.text(max_size=10)), max_size=5)
    return st.one_of(simulate, dev, report, log, hall, backgammon, lateness, junk)


@pytest.fixture(scope="module")
def strategy(files):
    return command_lines(files)


def test_fuzz_command_lines(files):
    codes = set()

    @FUZZ
    @seed(20260116)
    @given(command_lines(files))
    def check(argv):
        if any(a in ("-h", "--help", "--version") for a in argv):
            return
        # a hall simulation that would really run paces real time: keep it bounded
        if argv[:1] == ["hall-simulate"] and argv[2] == str(files / "game.txt"):
            argv = argv + ["--speed", "1000"]
        code, _out, err = run(argv)
        assert_clean(code, err)
        codes.add(code)
    check()
    assert codes >= {0, 2}  # the fuzz reaches runs that work, not only refusals


# -- the bounds themselves -------------------------------------------------------
def test_times_up_to_what_ticks_diff_holds():
    """2**29-1 ms is the last time a 2**30 tick clock can tell from the
    session's start (ticks_diff's range); one more is refused, naming the line."""
    assert MAX_T_MS == 2**29 - 1
    assert parse_text(f"0 press START\n{MAX_T_MS} end\n")[-1].t_ms == MAX_T_MS
    for text in (f"0 press START\n{MAX_T_MS + 1} end\n", f"{10**27} end\n",
                 f"1 hold A {MAX_T_MS}\n{MAX_T_MS} end\n", "0 press A\n" + "9" * 5000 + " end\n"):
        with pytest.raises(BadInput) as err:
            parse_text(text, "s.txt")
        assert "beyond what the clock can count" in str(err.value)
        assert len(str(err.value)) < 200  # a 5000-digit time is not echoed whole


@pytest.mark.parametrize("name, why", [
    ("table 1", "' ' is not allowed"), ("", "needs a name"), ("x" * 300, "at most 24"),
    ("a/b", "'/' is not allowed"), ("t+", "'+' is not allowed"), ("t#", "'#' is not allowed"),
    ("all", "taken")])
def test_clock_names_refused_at_once(name, why, files):
    """A clock name that cannot travel in a hello frame or an MQTT topic level
    is bad input, before anything runs (it used to hang simulate for 600 s)."""
    for argv in (["simulate", "--script", str(files / "game.txt"), "--out",
                  str(files / "never.jsonl"), "--clock", name],
                 ["device", "--script", str(files / "game.txt"), "--port", str(files / "no-port"),
                  "--clock", name]):
        code, _out, err = run(argv)
        assert code == 2 and why in err, err
        assert_clean(code, err)
    assert not (files / "never.jsonl").exists()


def test_clock_name_grammar_shared_with_the_board():
    from hallclock_fw.hw import config
    from hallclock_fw.names import name_error
    for good in ("table-07", "hall.3", "A_b", "t" * 24):
        assert name_error(good) is None and config.parse(f"clock = {good}\n", "c").error is None
    for bad in ("table 7", "t" * 25, "all", "x/y", "ä"):
        assert name_error(bad) is not None
        assert config.parse(f"clock = {bad}\n", "c").error is not None


def test_a_name_with_several_bad_characters_names_the_first():
    """The message names the first character not allowed, reading left to
    right, as the club typed it (the others come one fix at a time)."""
    from hallclock_fw.names import name_error
    assert name_error("table 7/8").startswith("' ' is not allowed")
    assert name_error("t/7 8").startswith("'/' is not allowed")


def test_hall_simulate_refuses_backgammon(files):
    code, _out, err = run(["hall-simulate", "--mode", "backgammon", "--script",
                           str(files / "game.txt"), "--out", str(files / "bg.jsonl")])
    assert code == 2 and "takes no hall signals" in err
    assert not (files / "bg.jsonl").exists()


def test_script_end_far_away_is_refused_before_a_log_exists(files):
    for name in ("huge.txt", "edge.txt"):
        out = files / f"{name}.jsonl"
        code, _out, err = run(["simulate", "--script", str(files / name), "--out", str(out)])
        assert code == 2 and "beyond what the clock can count" in err
        assert not out.exists()


# -- log files for report ----------------------------------------------------------
FIELD_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**31, 2**31),
                         st.sampled_from([10**30, -10**30, 2**29 - 1, -2**29, 1.5, "1500", "A",
                                          "B", "start", "end", "over", [], {}, [1, 2]]),
                         st.text(max_size=5))
EVENTS = ["boot", "gong", "turn", "press", "warn", "expired", "pause", "resume", "announce",
          "dup_start", "dup_end", "end", "playout", "break", "break_end", "refused", "gap",
          "power_loss", "x"]


def record_lines():
    good = st.fixed_dictionaries({
        "clock": st.sampled_from(["t1", "t2"]), "seq": st.integers(1, 30),
        "t_ms": st.integers(0, 400000), "event": st.sampled_from(EVENTS),
        "session": st.sampled_from(["00000001", "00000002"]),
    }, optional={
        "player": st.sampled_from(["A", "B", None]), "move": st.one_of(st.none(),
                                                                       st.integers(0, 12)),
        "limit_ms": st.integers(0, 200000), "bank_ms": st.integers(-5000, 600000),
        "used_ms": st.integers(0, 300000), "left_s": st.integers(0, 180),
        "kind": st.sampled_from(["start", "ten_minutes", "end", "manual", 7]),
        "step": st.sampled_from(["finish_round", "one_more_move", "last_move", "over", 9]),
        "number": st.integers(1, 3), "break_ms": st.integers(0, 300000),
        "mode": st.sampled_from(["scrabble", "duplicate", "backgammon", "chess"]),
        "settings": st.sampled_from([{"move_s": 120}, {"move_s": -5}, {"warn_s": "x"},
                                     {"bank_s": 10**9}, {"delay": "fischer", "bank_s": 5},
                                     {"announce_s": [1, 2, 3]}, {}, {"x": [[1]]}]),
        "host_time": st.sampled_from(["2026-03-01T14:00:00.000Z", "garbage", "",
                                      "2026-03-01T14:05:00.5+01:00"]),
        "missing": st.just([3, 5]),
    })
    mutated = st.tuples(good, st.sampled_from(["clock", "seq", "t_ms", "event", "move",
                                               "player", "limit_ms", "host_time", "settings",
                                               "missing", "session"]), FIELD_VALUES).map(
        lambda t: {**t[0], t[1]: t[2]})
    as_line = st.one_of(good, mutated).map(lambda r: json.dumps(r).encode())
    junk = st.one_of(st.binary(max_size=40), st.sampled_from([
        b"[1, 2]", b"null", b"{}", b"[" * 5000 + b"]" * 5000, b'{"clock": "t1"', b"NaN",
        b'{"clock": "t1", "seq": 1, "t_ms": Infinity, "event": "boot"}']))
    return st.lists(st.one_of(as_line, as_line, as_line, junk), max_size=25)


def test_fuzz_report_logs(files):
    @FUZZ
    @seed(20260117)
    @given(record_lines(), st.booleans())
    def check(lines, csv):
        path = files / "fuzz.jsonl"
        path.write_bytes(b"\n".join(lines))
        argv = ["report", str(path)]
        if csv:
            argv += ["--csv", str(files / "fuzz.csv"), "--force"]
        code, _out, err = run(argv)
        assert code in (0, 2), err
        if code == 0 and err:
            assert err.startswith("hallclock: ") and "skipped" in err and err.count("\n") == 1
        else:
            assert_clean(code, err)
    check()


def test_report_on_bad_logs_says_what_is_wrong(files):
    cases = {
        "array.jsonl": (b"[1, 2, 3]\n", "no records"),
        "string.jsonl": (json.dumps({"clock": "t", "seq": 1, "t_ms": "1500",
                                     "event": "boot"}).encode() + b"\n", "t_ms"),
    }
    for name, (data, word) in cases.items():
        (files / name).write_bytes(data)
        code, _out, err = run(["report", str(files / name)])
        assert code == 2 and word in err, err
        assert_clean(code, err)
    code, _out, err = run(["report", str(files / "folder")])
    assert code == 2 and "folder" in err


def test_report_counts_the_lines_it_skips(files):
    good = (files / "log.jsonl").read_bytes()
    path = files / "junk.jsonl"
    path.write_bytes(good + b"line noise\n" + good.replace(b'"t_ms": 0', b'"t_ms": "0"')
                     + b"\x00\xff\n")
    code, _out, err = run(["report", str(path)])
    assert code == 0
    assert err.startswith(f"hallclock: 3 lines of {path} skipped") and "line 2: not JSON" in err
    assert "line 3: t_ms" in err


def test_deep_nesting_is_not_a_traceback(files):
    path = files / "deep.jsonl"
    path.write_bytes((files / "log.jsonl").read_bytes() + b"[" * 100000 + b"\n")
    code, _out, err = run(["report", str(path)])
    assert code == 0 and "skipped" in err


def test_no_traceback_from_the_installed_command(files):
    """The console command as a user runs it: a string t_ms, a JSON array, a folder."""
    from conftest import run_cli
    for target in ("array.jsonl", "folder", "missing.jsonl"):
        res = run_cli("report", str(files / target), timeout=60)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert os.path.basename(target) in res.stderr


@pytest.fixture(scope="module")
def real_logs(files):
    """Logs of the bundled samples, made by the real host from the real firmware."""
    import hallclock
    samples = os.path.join(os.path.dirname(hallclock.__file__), "samples")
    out = []
    for name, extra in (("scrabble_game.txt", []), ("duplicate_game.txt", ["--mode", "duplicate"]),
                        ("backgammon_match.txt", ["--mode", "backgammon", "--set", "match=7",
                                                  "--set", "score=3-5"])):
        log = files / f"real-{name}.jsonl"
        code, _o, err = run(["simulate", "--script", os.path.join(samples, name), "--out",
                             str(log), *extra])
        assert code == 0, err
        out.append(log.read_bytes().splitlines())
    return out


def test_fuzz_report_on_damaged_real_logs(files, real_logs):
    """Real logs with lines dropped, doubled, swapped, retimed or retyped (a
    hand-edited or damaged log): the replay into the clock's core and the
    report never fail; what the core cannot explain is said, not raised."""
    mutation = st.tuples(st.sampled_from(["drop", "double", "swap", "retime", "field"]),
                         st.integers(0, 10**6), st.integers(-200000, 200000),
                         st.sampled_from(["move", "player", "used_ms", "limit_ms", "bank_ms",
                                          "event", "session"]),
                         st.sampled_from([None, 0, 3, -1, "A", "B", "press", "turn", "end",
                                          "00000002", 10**6]))

    # each damaged record makes the replay search the core's inputs: a few examples
    @settings(FUZZ, max_examples=int(os.environ.get("FUZZ_N", "60")) // 3 or 1)
    @seed(20260118)
    @given(st.integers(0, len(real_logs) - 1), st.lists(mutation, min_size=1, max_size=6),
           st.booleans())
    def check(which, mutations, plot):
        lines = list(real_logs[which])
        for kind, at, delta, key, value in mutations:
            if not lines:
                break
            i = at % len(lines)
            if kind == "drop":
                del lines[i]
            elif kind == "double":
                lines.insert(i, lines[i])
            elif kind == "swap" and i + 1 < len(lines):
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
            else:
                rec = json.loads(lines[i])
                if kind == "retime":
                    rec["t_ms"] = max(0, rec["t_ms"] + delta)
                else:
                    rec[key] = value
                lines[i] = json.dumps(rec).encode()
        path = files / "damaged.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        argv = ["report", str(path), "--claims", "--csv", str(files / "damaged.csv"), "--force"]
        if plot:
            argv += ["--plot", str(files / "damaged.png")]
        code, _out, err = run(argv)
        assert code in (0, 2), err
        assert "Traceback" not in err
        if code:
            assert_clean(code, err)
    check()


@pytest.mark.parametrize("argv_tail, words", [
    (["device", "--port", "/nonexistent", "--silence-s", "nan"], "--silence-s"),
    (["device", "--port", "/nonexistent", "--silence-s", "inf"], "--silence-s"),
    (["simulate", "--out", "x.jsonl", "--loop", "jitter:1-100000000"], "at most a second"),
])
def test_numbers_that_would_never_end_are_refused(files, argv_tail, words):
    argv = argv_tail[:1] + ["--script", str(files / "game.txt")] + argv_tail[1:]
    code, _out, err = run(argv)
    assert code == 2 and words in err, err


def test_hall_simulate_bounded_in_real_time(files):
    """hall-simulate paces real time: a script that would run for days is refused."""
    (files / "long-hall.txt").write_text(f"0 press START\n{MAX_T_MS} end\n")
    code, _out, err = run(["hall-simulate", "--script", str(files / "long-hall.txt"), "--out",
                           str(files / "long.jsonl"), "--speed", "1"])
    assert code == 2 and "of real time" in err
    assert not (files / "long.jsonl").exists()
