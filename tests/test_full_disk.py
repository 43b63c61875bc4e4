"""A full disk loses nothing: the logger survives ENOSPC and EFBIG, stores
nothing by halves, acknowledges only what is on disk (so every clock keeps
the events it could not store and sends them again), says so on stderr, keeps
serving every clock, and stores everything exactly once when there is space
again: the final log equals the one a logger with room wrote.

Two faults, each in a process of its own (tests/diskfull.py): a file-size
limit (RLIMIT_FSIZE: EFBIG, works anywhere, CI included) and a small tmpfs
filled up by another file (ENOSPC: needs mount, i.e. root)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, read_log, strip_host

HERE = os.path.dirname(os.path.abspath(__file__))
GAME_1 = """0 press START
1000 press B
20000 press A
45000 press B
60000 press A
200000 press B
210000 press PAUSE
215000 press A
230000 press B
240000 end
"""
GAME_2 = """0 press START
2000 press B
12000 press A
170000 press B
180000 press A
190000 press B
250000 end
"""


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    d = tmp_path_factory.mktemp("diskfull")
    (d / "table-1.txt").write_text(GAME_1)
    (d / "table-2.txt").write_text(GAME_2)
    return d


def run(out, scripts, fault):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"), os.path.join(ROOT, "firmware"),
                                         env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, os.path.join(HERE, "diskfull.py"), str(out),
                          str(scripts), fault], capture_output=True, text=True, timeout=180,
                         env=env)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1]), res.stderr


def by_clock(records):
    out = {}
    for r in strip_host(records):
        out.setdefault(r["clock"], []).append(r)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory, scripts):
    out = tmp_path_factory.mktemp("ref") / "ref.jsonl"
    info, _err = run(out, scripts, "none")
    assert info["full_count"] == 0 and all(info["devices_done"])
    return by_clock(read_log(out))


def check_survived(info, err, out, reference):
    assert all(info["devices_done"]) and not info["errors"], info
    assert info["full_count"] >= 1 and info["recovered"] >= 1 and info["space_back"]
    assert info["held_max"] > 0 and info["held_now"] == 0
    # acks went out while the disk was full, but never beyond what was on disk
    assert info["acks_while_full"] > 0 and info["acks_beyond_disk"] == []
    # loudly: when it filled, and when it was written again
    assert any("cannot write" in line and "not acknowledged" in line for line in info["said"])
    assert any("writable again" in line for line in info["said"])
    assert "cannot write" in err
    # everything once, in order, no half line: the log a logger with room wrote
    raw = out.read_bytes()
    assert raw.endswith(b"\n") and all(json.loads(line) for line in raw.splitlines())
    assert by_clock(read_log(out)) == reference


def test_file_size_limit_efbig(tmp_path, scripts, reference):
    out = tmp_path / "log.jsonl"
    info, err = run(out, scripts, "fsize:3000")
    check_survived(info, err, out, reference)


def _mount_tmpfs(path, size):
    if os.geteuid() != 0:
        return False
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                         capture_output=True)
    return res.returncode == 0


def test_full_filesystem_enospc(tmp_path, scripts, reference):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if not _mount_tmpfs(mnt, "64k"):
        pytest.skip("cannot mount a small tmpfs here (not root, or no mount in this "
                    "container); the file-size-limit test covers the logger's side")
    try:
        filler = mnt / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:  # fill it up, then give back one page: room for a few records
            while True:
                os.write(fd, b"x" * 4096)
        except OSError:
            pass
        os.ftruncate(fd, os.fstat(fd).st_size // 4096 * 4096 - 4096)
        os.close(fd)
        out = mnt / "log.jsonl"
        info, err = run(out, scripts, f"filler:{filler}")
        check_survived(info, err, out, reference)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_live_view_says_the_disk_is_full(tmp_path):
    """The live table of `hallclock log` shows the held records in red while
    the disk is full, and nothing of it once the records are stored."""
    import io
    import resource
    from rich.console import Console
    from hallclock.views.liveview import LiveView
    from hallclock.link.logger import Logger
    from hallclock.link.transport import pty_pair

    master, slave, path = pty_pair()
    logger = Logger([path], str(tmp_path / "live.jsonl"))
    try:
        view = LiveView(logger, console=Console(file=io.StringIO(), width=120), plain=False)
        w = logger.writer
        w.add({"clock": "t1", "seq": 1, "t_ms": 0, "event": "boot", "mode": "scrabble",
               "session": "00000001"})
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (10, hard))  # this process: EFBIG
        try:
            assert w.flush() == 0 and w.full is not None
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        out = Console(file=io.StringIO(), width=120)
        out.print(view.render(0.0))
        text = " ".join(out.file.getvalue().split())
        assert "DISK FULL: cannot write" in text and "1 record(s) held" in text
        w.retry_at = 0.0
        assert w.flush() == 1 and w.full is None
        out = Console(file=io.StringIO(), width=120)
        out.print(view.render(0.0))
        assert "DISK FULL" not in out.file.getvalue()
    finally:
        logger.close()
        os.close(master)
        os.close(slave)
