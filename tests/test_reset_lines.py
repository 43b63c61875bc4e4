"""Opening a board's port never resets it (docs/hardware.md, "The reset lines").

An ESP32 DevKit's USB-serial chip drives two transistors from DTR and RTS
(esptool's auto-reset circuit): EN (reset) goes low while RTS is asserted and
DTR is not, IO0 (boot mode) goes low while DTR is asserted and RTS is not.
Every DTR/RTS change that ``log``, ``hall`` and ``ports`` make is recorded by a
``serial.Serial`` subclass and played into a model of that circuit, with the
kernel's own part: Linux raises both lines together when a tty is opened and
drops both together when it is closed (HUPCL).  From open to close, reconnects
included, the reset state must never be reached; ``--reset`` gives exactly one
clean EN pulse (IO0 high as EN rises: the board boots its firmware, not the
ROM's download mode) on the first open only.
"""
import os
import threading
import time

import pytest
import serial

from hallclock import cli, scenario
from hallclock.link import transport
from hallclock.vboard import device as virtual
from hallclock.link.logfile import read_records
from hallclock_fw.settings import parse

import sys
sys.path.insert(0, os.path.dirname(__file__))
from faultproxy import FaultProxy  # noqa: E402

SCRIPT = "0 press START\n1500 press B\n20000 press A\n45000 press B\n60000 end\n"


class AutoResetCircuit:
    """The two transistors of the DevKit (DevKitC V4 schematic, Q1/Q2): the
    truth table (DTR, RTS) -> (EN, IO0), and what the chip does on EN's edges."""

    TABLE = {  # (dtr, rts): (en, io0)
        (False, False): (True, True),
        (True, True): (True, True),
        (False, True): (False, True),  # RTS only: EN low, the chip is in reset
        (True, False): (True, False),  # DTR only: IO0 low (read only as EN rises)
    }

    def __init__(self):
        self.dtr = self.rts = False  # nobody has the port: both released
        self.resets = 0
        self.boots = []  # at each EN rise: "firmware" or "download" (IO0 low)
        self.states = [(False, False)]
        self.resets_at_close = []  # resets seen when each close began

    @property
    def en(self):
        return self.TABLE[(self.dtr, self.rts)][0]

    @property
    def io0(self):
        return self.TABLE[(self.dtr, self.rts)][1]

    def set(self, dtr=None, rts=None):
        en_before = self.en
        if dtr is not None:
            self.dtr = bool(dtr)
        if rts is not None:
            self.rts = bool(rts)
        self.states.append((self.dtr, self.rts))
        if en_before and not self.en:
            self.resets += 1
        elif not en_before and self.en:
            self.boots.append("firmware" if self.io0 else "download")

    def reset_states(self):
        return sum(1 for s in self.states if not self.TABLE[s][0])


class Lines:
    """The boards behind the ports (one circuit per port path) and what the
    kernel does on open/close; ``RecordingSerial`` plays into it."""

    def __init__(self, kernel="linux"):
        # linux: the tty driver raises both lines in one request at open and
        # drops both in one request at close (HUPCL); untouched: a pty, or a
        # driver that leaves the lines alone; dtr-first: a driver that drops
        # them at close one request per line, DTR first
        self.kernel = kernel
        self.kernel_raises = kernel != "untouched"
        self.boards = {}
        self.opens = []

    def board(self, path):
        return self.boards.setdefault(path, AutoResetCircuit())


class RecordingSerial(serial.Serial):
    """pyserial's own open/close (a real pty underneath), with every DTR/RTS
    change recorded instead of sent (a pty has no modem lines)."""

    lines = None  # set by the fixture

    def _board(self):
        return self.lines.board(self.portstr)

    def open(self):
        if os.path.exists(self.portstr) and self.lines.kernel_raises:
            self._board().set(dtr=True, rts=True)  # the tty driver's open, both at once
        super().open()
        self.lines.opens.append(self.portstr)

    def _update_dtr_state(self):
        self._board().set(dtr=self._dtr_state)

    def _update_rts_state(self):
        self._board().set(rts=self._rts_state)

    def close(self):
        if self.is_open:
            self._board().resets_at_close.append(self._board().resets)
            super().close()
            if self.lines.kernel == "dtr-first":
                self._board().set(dtr=False)
                self._board().set(rts=False)
            elif self.lines.kernel == "linux":
                self._board().set(dtr=False, rts=False)  # HUPCL: both dropped at once


@pytest.fixture(params=["linux", "untouched", "dtr-first"])
def lines(request, monkeypatch):
    rec = Lines(kernel=request.param)
    monkeypatch.setattr(RecordingSerial, "lines", rec)
    monkeypatch.setattr(serial, "Serial", RecordingSerial)
    monkeypatch.setattr(transport, "RESET_HOLD_S", 0.01)
    return rec


# -- the model and the recorder catch a reset --------------------------------------
def test_the_circuit_resets_on_rts_alone_and_selects_download_on_dtr_alone():
    c = AutoResetCircuit()
    c.set(dtr=True, rts=True)
    c.set(dtr=False, rts=False)
    assert c.resets == 0 and c.boots == []
    c.set(rts=True)
    assert c.resets == 1 and not c.en
    c.set(rts=False)
    assert c.boots == ["firmware"]
    c.set(rts=True)
    c.set(dtr=True)  # EN rises with IO0 ... still high: both asserted
    c.set(rts=False)  # DTR alone now: IO0 low
    assert c.boots == ["firmware", "firmware"] and not c.io0
    c.set(dtr=False, rts=True)
    c.set(dtr=True, rts=False)  # esptool's classic sequence: EN rises with IO0 low
    assert c.boots[-1] == "download"


def test_a_naive_open_would_reset_the_board(lines, tmp_path):
    """Releasing both lines before open (a common 'fix') resets a board whose
    tty driver raised them: pyserial applies DTR first, leaving RTS alone."""
    master, slave, path = transport.pty_pair()
    try:
        ser = serial.Serial()
        ser.port, ser.dtr, ser.rts = path, False, False
        ser.open()
        ser.close()
    finally:
        os.close(master)
        os.close(slave)
    assert lines.board(path).resets == (1 if lines.kernel_raises else 0)


def test_lines_left_asserted_reset_the_board_at_close(lines):
    """pyserial's defaults assert DTR and RTS while the port is open; a driver
    that drops them one at a time at close passes through RTS alone."""
    master, slave, path = transport.pty_pair()
    try:
        ser = serial.Serial(path, 115200)
        ser.close()
    finally:
        os.close(master)
        os.close(slave)
    assert lines.board(path).resets == (1 if lines.kernel == "dtr-first" else 0)


# -- log -----------------------------------------------------------------------------
def _device_behind_proxy(folder):
    (folder / "s.txt").write_text(SCRIPT)
    proxy = FaultProxy(str(folder))
    proxy.start()
    runner = virtual.make_runner("scrabble", parse("scrabble", []),
                                 scenario.load(str(folder / "s.txt")), sid="0000beef")
    device = virtual.DeviceThread(runner, proxy.device_fd, silence_s=60)
    return proxy, device


def _wait(cond, timeout=60):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "condition not met"
        time.sleep(0.01)


def _log_with_a_reconnect(tmp_path, capsys, extra=()):
    proxy, device = _device_behind_proxy(tmp_path)
    out = tmp_path / "log.jsonl"

    failed = []

    def unplug_once():  # mid-game the line goes dead, the cable is pulled and put back
        try:
            _wait(lambda: proxy.attached)  # the logger has the port open
            device.start()
            _wait(lambda: proxy.is_cut() and out.exists() and len(read_records(out)) >= 1)
            proxy.unplug(0.8)
            _wait(lambda: proxy.stats["unplugs"] == 1)
        except AssertionError as exc:
            failed.append(exc)
        finally:
            proxy.uncut()  # the game always gets through, so the logger ends

    proxy.cut_after(6)
    ctl = threading.Thread(target=unplug_once, daemon=True)
    try:
        ctl.start()
        rc = cli.main(["log", "--port", proxy.path, "--out", str(out), "--exit-on-end",
                       "--plain", *extra])
        ctl.join(5)
    finally:
        device.halt = True
        if device.is_alive():
            device.join(5)
        proxy.close()
    err = capsys.readouterr().err
    assert not failed, failed
    assert rc == 0, err
    assert proxy.stats["unplugs"] == 1
    names = [r["event"] for r in read_records(out)]
    assert names[0] == "boot" and names[-1] == "end"
    return proxy.path


@pytest.mark.parametrize("lines", ["linux", "dtr-first"], indirect=True)
def test_log_never_resets_the_board_reconnects_included(lines, tmp_path, capsys):
    path = _log_with_a_reconnect(tmp_path, capsys)
    board = lines.board(path)
    assert lines.opens.count(path) >= 2  # the first open and the reconnect
    assert board.reset_states() == 0 and board.resets == 0, board.states
    assert board.states[-1] == (False, False)  # at rest, as when nobody has the port


@pytest.mark.parametrize("lines", ["linux"], indirect=True)
def test_log_reset_gives_one_clean_pulse_on_the_first_open_only(lines, tmp_path, capsys):
    path = _log_with_a_reconnect(tmp_path, capsys, extra=["--reset"])
    board = lines.board(path)
    assert lines.opens.count(path) >= 2
    assert board.resets == 1 and board.boots == ["firmware"], board.states
    assert board.resets_at_close[0] == 1  # while the port was open, not by its close
    # the pulse is RTS alone between two released states, nothing else
    i = board.states.index((False, True))
    assert board.states[i - 1] == board.states[i + 1] == (False, False)


# -- hall ------------------------------------------------------------------------------
def _hall(tmp_path, extra=()):
    """`hallclock hall` on a hall unit and two tables (ptys with nobody behind:
    the port opens, the logger polls, Ctrl-C stops it)."""
    pairs = [transport.pty_pair() for _ in range(3)]
    paths = [p[2] for p in pairs]
    out = tmp_path / "hall.jsonl"
    from hallclock.hall import relay

    calls = {"n": 0}
    real_poll = relay.Relay.service

    def service(self):  # a few passes, then the referee presses Ctrl-C
        calls["n"] += 1
        if calls["n"] > 20:
            raise KeyboardInterrupt
        return real_poll(self)

    relay.Relay.service = service
    try:
        rc = cli.main(["hall", "--hall-unit-port", paths[0], "--port", paths[1],
                       "--port", paths[2], "--out", str(out), *extra])
    finally:
        relay.Relay.service = real_poll
        for m, s, _p in pairs:
            os.close(m)
            os.close(s)
    assert rc == 0
    return paths


def test_hall_never_resets_a_board(lines, tmp_path, capsys):
    paths = _hall(tmp_path)
    for p in paths:
        b = lines.board(p)
        assert lines.opens.count(p) == 1
        assert b.reset_states() == 0 and b.resets == 0, (p, b.states)
        assert b.states[-1] == (False, False)


def test_hall_reset_resets_every_board_once(lines, tmp_path, capsys):
    for p in _hall(tmp_path, extra=["--reset"]):
        b = lines.board(p)
        assert b.resets == 1 and b.boots == ["firmware"], (p, b.states)
        assert b.resets_at_close == [1], (p, b.states)  # by the open, not by the close


# -- ports -------------------------------------------------------------------------------
def test_ports_lists_without_opening_a_port(lines, monkeypatch, capsys):
    from serial.tools import list_ports as lp

    class Info:
        device, vid, pid, description = "/dev/ttyUSB0", 0x10C4, 0xEA60, "CP2102"
    monkeypatch.setattr(lp, "comports", lambda *a, **k: [Info()])
    assert cli.main(["ports"]) == 0
    assert "likely ESP32 (CP210x)" in capsys.readouterr().out
    assert lines.opens == [] and lines.boards == {}


def test_reset_option_is_documented():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for doc in ("docs/hardware.md", "docs/host.md"):
        text = open(os.path.join(root, doc)).read()
        assert "--reset" in text and "RTS" in text, doc


def test_reset_is_refused_on_the_hall_network(tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    rc = cli.main(["log", "--broker", "127.0.0.1:1883", "--hall", "h", "--credentials",
                   str(tmp_path / "c.json"), "--out", str(out), "--reset"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("hallclock: --reset is for serial ports")
    assert len(err.strip().splitlines()) == 1 and not out.exists()
