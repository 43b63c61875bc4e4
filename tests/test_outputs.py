"""Nothing written over: no command replaces an existing file, or its own
input, unless told to (``--force``); a log is never overwritten; every output
is checked before any is written; `log --out` appends only to a hallclock log."""
import json
import os

import pytest

from conftest import run_cli
from hallclock import cli

GAME = "0 press START\n1500 press B\n47200 press A\n300000 end\n"


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    d = tmp_path_factory.mktemp("outputs")
    (d / "game.txt").write_text(GAME)
    path = d / "game.jsonl"
    assert cli.main(["simulate", "--script", str(d / "game.txt"), "--out", str(path)]) == 0
    return path


def one_line_error(capsys):
    err = capsys.readouterr().err
    assert err.startswith("hallclock: ") and err.count("\n") == 1, err
    return err


def test_report_never_writes_its_own_log(log, tmp_path, capsys):
    before = log.read_bytes()
    for extra in ([], ["--force"]):
        assert cli.main(["report", str(log), "--csv", str(log), *extra]) == 2
        assert "is the input" in one_line_error(capsys)
        assert cli.main(["report", str(log), "--plot", str(log) + ".png", "--csv",
                         str(log) + ".png", *extra]) == 2
        assert "give each output its own name" in one_line_error(capsys)
    # the same file by another path (a link) is the input too
    other = tmp_path / "same.jsonl"
    os.link(log, other)
    assert cli.main(["report", str(log), "--csv", str(other), "--force"]) == 2
    one_line_error(capsys)
    assert log.read_bytes() == before


def test_existing_outputs_need_force(log, tmp_path, capsys):
    csv_path, png = tmp_path / "moves.csv", tmp_path / "moves.png"
    csv_path.write_text("mine\n")
    assert cli.main(["report", str(log), "--csv", str(csv_path)]) == 2
    assert "--force" in one_line_error(capsys) and csv_path.read_text() == "mine\n"
    png.write_bytes(b"not a plot")
    assert cli.main(["report", str(log), "--plot", str(png)]) == 2
    assert "--force" in one_line_error(capsys) and png.read_bytes() == b"not a plot"
    assert cli.main(["report", str(log), "--csv", str(csv_path), "--plot", str(png),
                     "--force"]) == 0
    assert csv_path.read_text().startswith("clock,session,move")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_a_log_is_never_overwritten_even_with_force(log, tmp_path, capsys):
    other = tmp_path / "other.jsonl"
    other.write_bytes(log.read_bytes())
    assert cli.main(["report", str(log), "--csv", str(other), "--force"]) == 2
    assert "is a hallclock log" in one_line_error(capsys)
    assert other.read_bytes() == log.read_bytes()


def test_every_output_is_checked_before_any_is_written(log, tmp_path, capsys):
    csv_path = tmp_path / "new.csv"
    assert cli.main(["report", str(log), "--csv", str(csv_path), "--plot",
                     str(tmp_path / "x.txt")]) == 2
    assert ".png" in one_line_error(capsys)
    assert cli.main(["report", str(log), "--csv", str(csv_path), "--plot",
                     str(tmp_path / "none" / "x.png")]) == 2
    assert "does not exist" in one_line_error(capsys)
    assert not csv_path.exists()
    assert capsys.readouterr().out == ""  # refused before the report was printed


def test_log_refuses_to_append_to_what_is_not_a_log(tmp_path):
    for name, content in (("notes.txt", b"my notes\n"), ("table.csv", b"a,b\n1,2\n"),
                          ("torn.txt", b"no newline at the end"),
                          ("half.jsonl", b'{"clock": "t", "seq": 1, "t_ms": 0, "event": "boot"}\n'
                                         b"junk\n")):
        path = tmp_path / name
        path.write_bytes(content)
        res = run_cli("log", "--port", str(tmp_path / "no-port"), "--out", str(path),
                      "--plain", timeout=30)
        assert res.returncode == 2, res.stderr
        assert res.stderr.startswith(f"hallclock: {path}: not a hallclock log")
        assert res.stderr.count("\n") == 1
        assert path.read_bytes() == content  # untouched


def test_log_resumes_its_own_log(tmp_path, log):
    """A hallclock log (even one whose last record was cut short by a crash)
    is resumed: the LogWriter takes it."""
    from hallclock.link.logfile import LogWriter
    path = tmp_path / "resume.jsonl"
    data = log.read_bytes()
    path.write_bytes(data + data.splitlines(keepends=True)[1][:20])
    w = LogWriter(path)
    assert w.last_seq("virtual-1", "00000001") == len(data.splitlines())
    w.close()
    assert path.read_bytes() == data  # only the torn line was cut


def test_demo_replaces_only_its_own_files(tmp_path, capsys):
    out = tmp_path / "demo"
    assert cli.main(["demo", "--out", str(out)]) == 0
    assert cli.main(["demo", "--out", str(out)]) == 0  # an earlier demo: made afresh
    capsys.readouterr()
    log = out / "demo-game.jsonl"
    foreign = json.dumps({"clock": "table-1", "seq": 1, "t_ms": 0, "event": "boot"}) + "\n"
    log.write_text(foreign)
    for extra in ([], ["--force"]):
        assert cli.main(["demo", "--out", str(out), *extra]) == 2
        assert "not an earlier demo's log" in one_line_error(capsys)
    assert log.read_text() == foreign
