"""``hallclock audit LOG LOG…``: two copies of a log (the hall's and the
office's, a standby's and the main one) agree only when they hold the same
records once each, the host's own fields aside (docs/host.md "Do two logs
agree: hallclock audit"; contract 1.3 "Several halls, one office")."""
import json

import pytest

from conftest import run_cli

GAME = """\
0       press START
1000    press B
50000   press A
70000   press B
200000  press A
250000  end
"""


@pytest.fixture(scope="module")
def real_log(tmp_path_factory):
    """A log a real simulate run wrote (the virtual clock over a pty and the
    host logger): the hall's log of the tests below."""
    d = tmp_path_factory.mktemp("audit")
    (d / "game.txt").write_text(GAME)
    res = run_cli("simulate", "--script", str(d / "game.txt"), "--out", str(d / "hall.jsonl"),
                  "--clock", "table-7")
    assert res.returncode == 0, res.stderr
    return (d / "hall.jsonl").read_text(encoding="utf-8")


def lines_of(text):
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def write(path, records, tail=""):
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail, encoding="utf-8")
    return str(path)


def copy_with_other_host_fields(records):
    """The office's copy: the same records, stored at other host times."""
    return [dict(r, host_time="2030-01-01T00:00:00.000Z") for r in records]


def audit(*paths):
    return run_cli("audit", *paths)


def test_two_copies_of_a_real_log_agree_whatever_the_host_times(tmp_path, real_log):
    recs = lines_of(real_log)
    assert len(recs) > 8 and all("host_time" in r for r in recs)
    a = write(tmp_path / "hall.jsonl", recs)
    b = write(tmp_path / "office.jsonl", copy_with_other_host_fields(recs))
    res = audit(a, b)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "the logs agree" in res.stdout
    assert "table-7" in res.stdout


def test_a_record_removed_is_missing_from_that_log(tmp_path, real_log):
    recs = lines_of(real_log)
    a = write(tmp_path / "hall.jsonl", recs)
    gone = recs[4]["seq"]
    b = write(tmp_path / "office.jsonl", recs[:4] + recs[5:])
    res = audit(a, b)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "disagree" in res.stdout
    assert f"missing in log 2: {gone}," in " ".join(res.stdout.split())


def test_a_run_of_records_removed_shows_as_a_range(tmp_path, real_log):
    recs = lines_of(real_log)
    b = write(tmp_path / "office.jsonl", recs[:2] + recs[5:])
    res = audit(write(tmp_path / "hall.jsonl", recs), b)
    assert res.returncode == 1
    assert f"missing in log 2: {recs[2]['seq']}-{recs[4]['seq']}," in " ".join(res.stdout.split())


def test_a_record_changed_differs(tmp_path, real_log):
    recs = lines_of(real_log)
    press = next(i for i, r in enumerate(recs) if r["event"] == "press")
    changed = [dict(r) for r in recs]
    changed[press]["used_ms"] += 1  # one ms more on the office's copy
    res = audit(write(tmp_path / "hall.jsonl", recs), write(tmp_path / "office.jsonl", changed))
    assert res.returncode == 1, res.stdout
    assert f"differing: {recs[press]['seq']}," in " ".join(res.stdout.split())


def test_a_record_doubled_in_one_log(tmp_path, real_log):
    recs = lines_of(real_log)
    doubled = recs[:6] + [recs[5]] + recs[6:]  # a redelivered record stored twice
    res = audit(write(tmp_path / "hall.jsonl", recs), write(tmp_path / "office.jsonl", doubled))
    assert res.returncode == 1, res.stdout
    assert f"doubled: log 2: {recs[5]['seq']}," in " ".join(res.stdout.split())


def test_a_host_field_differs_yet_the_clocks_field_does_not(tmp_path, real_log):
    """The round tag is the host's; a standby that came up after the round
    event has none.  The clock's own round event must still match."""
    recs = lines_of(real_log)
    tagged = [dict(r, round=3) for r in recs]
    res = audit(write(tmp_path / "a.jsonl", recs), write(tmp_path / "b.jsonl", tagged))
    assert res.returncode == 0, res.stdout
    own = {"clock": "table-7", "seq": 1, "t_ms": 0, "event": "round", "round": 3,
           "session": "s1"}
    a = write(tmp_path / "c.jsonl", [own])
    b = write(tmp_path / "d.jsonl", [dict(own, round=4)])
    assert audit(a, b).returncode == 1


def test_a_session_only_one_log_holds(tmp_path, real_log):
    recs = lines_of(real_log)
    other = [dict(r, session="ffffffff") for r in recs]
    res = audit(write(tmp_path / "a.jsonl", recs + other), write(tmp_path / "b.jsonl", recs))
    assert res.returncode == 1
    flat = " ".join(res.stdout.split())
    assert f"session: ffffffff, records in log 1: {len(recs)}, records in log 2: 0" in flat


def test_a_gap_both_logs_share_agrees_one_log_alone_does_not(tmp_path):
    def rec(seq, event="press", **kw):
        return {"clock": "t", "seq": seq, "t_ms": seq * 10, "event": event, "session": "s",
                **kw}
    with_gap = [rec(1), rec(2, "gap", missing=[2, 4]), rec(5)]
    full = [rec(1), rec(2), rec(3), rec(4), rec(5)]
    a = write(tmp_path / "a.jsonl", with_gap)
    b = write(tmp_path / "b.jsonl", with_gap)
    res = audit(a, b)
    assert res.returncode == 0, res.stdout
    assert "all lack 2-4" in " ".join(res.stdout.split())
    res = audit(a, write(tmp_path / "c.jsonl", full))
    assert res.returncode == 1
    assert "missing in log 1: 2-4," in " ".join(res.stdout.split())


def test_a_torn_last_line_is_not_counted_and_not_refused(tmp_path, real_log):
    recs = lines_of(real_log)
    torn = json.dumps(recs[-1])[:25]  # the logger crashed writing its last record
    b = write(tmp_path / "office.jsonl", recs[:-1], tail=torn)
    res = audit(write(tmp_path / "hall.jsonl", recs), b)
    assert res.returncode == 1, res.stdout + res.stderr
    flat = " ".join(res.stdout.split())
    assert "cut short by a crash" in flat
    assert f"missing in log 2: {recs[-1]['seq']}," in flat
    # the same copy once the record is stored again: they agree
    c = write(tmp_path / "office2.jsonl", recs[:-1], tail=torn + "\n" + json.dumps(recs[-1]))
    assert audit(str(tmp_path / "hall.jsonl"), c).returncode == 2  # torn mid-file: refused
    d = write(tmp_path / "office3.jsonl", recs, tail=torn)
    assert audit(str(tmp_path / "hall.jsonl"), d).returncode == 0


@pytest.mark.parametrize("content, why", [
    (None, "no such log file"),
    ("not json at all\n", "no records"),
    ('{"clock": "t", "seq": 1, "t_ms": 0, "event": "boot"}\nrubbish\n'
     '{"clock": "t", "seq": 2, "t_ms": 0, "event": "end"}\n', "line 2 is not a log record"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, real_log, content, why):
    good = write(tmp_path / "hall.jsonl", lines_of(real_log))
    bad = tmp_path / "bad.jsonl"
    if content is not None:
        bad.write_text(content)
    res = audit(good, str(bad))
    assert res.returncode == 2
    assert res.stderr.startswith("hallclock: ") and why in res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_one_log_is_bad_input(tmp_path, real_log):
    res = audit(write(tmp_path / "hall.jsonl", lines_of(real_log)))
    assert res.returncode == 2 and "two or more logs" in res.stderr


def test_control_characters_in_names_are_shown_escaped(tmp_path):
    evil = "t\x1b]0;owned\x07\x1b[2J"
    recs = [{"clock": evil, "seq": 1, "t_ms": 0, "event": "boot", "session": "s\x1b[1A"},
            {"clock": evil, "seq": 2, "t_ms": 5, "event": "end", "session": "s\x1b[1A"}]
    a = write(tmp_path / "a.jsonl", recs)
    b = write(tmp_path / "b\x1b[31m.jsonl", recs[:1])
    res = audit(a, b)
    assert res.returncode == 1
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout
    assert "\\x1b]0;owned\\x07\\x1b[2J" in res.stdout
    assert "s\\x1b[1A" in res.stdout and "b\\x1b[31m.jsonl" in res.stdout


def test_three_copies_a_standby_an_office_and_the_hall(tmp_path, real_log):
    recs = lines_of(real_log)
    a = write(tmp_path / "hall.jsonl", recs)
    b = write(tmp_path / "standby.jsonl", copy_with_other_host_fields(recs))
    c = write(tmp_path / "office.jsonl", recs[:-1])
    assert audit(a, b).returncode == 0
    res = audit(a, b, c)
    assert res.returncode == 1
    assert f"missing in log 3: {recs[-1]['seq']}," in " ".join(res.stdout.split())


def test_a_huge_seq_or_gap_is_a_range_not_a_list(tmp_path):
    """A crafted log claiming seq 2**53 (or a gap that long) is answered at
    once with its ranges: nothing is counted seq by seq."""
    big = 1 << 53
    recs = [{"clock": "t", "seq": 1, "t_ms": 0, "event": "boot", "session": "s"},
            {"clock": "t", "seq": 2, "t_ms": 0, "event": "gap", "missing": [2, big - 1],
             "session": "s"},
            {"clock": "t", "seq": big, "t_ms": 0, "event": "press", "session": "s"}]
    res = run_cli("audit", write(tmp_path / "a.jsonl", recs), write(tmp_path / "b.jsonl",
                                                                     recs[:1]), timeout=60)
    assert res.returncode == 1
    flat = " ".join(res.stdout.split())
    assert f"missing in log 1: 2-{big - 1}," in flat and f"missing in log 2: 2-{big}," in flat
