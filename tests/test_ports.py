"""`hallclock ports` and `--port auto`, with serial.tools.list_ports.comports
replaced by a list of made-up ports."""
import pytest
from serial.tools import list_ports as lp

from hallclock import cli
from hallclock.commands import ports
from hallclock.errors import BadInput


class Info:
    def __init__(self, device, vid=None, pid=None, description="n/a"):
        self.device = device
        self.vid = vid
        self.pid = pid
        self.description = description


BUILTIN = Info("/dev/ttyS0")
CP2102 = Info("/dev/ttyUSB0", 0x10C4, 0xEA60, "CP2102 USB to UART Bridge Controller")
CH340 = Info("/dev/ttyUSB1", 0x1A86, 0x7523, "USB2.0-Serial")
CH9102 = Info("/dev/ttyACM1", 0x1A86, 0x55D4, "USB Single Serial")
FTDI = Info("/dev/ttyUSB2", 0x0403, 0x6001, "FT232R USB UART")
S3 = Info("/dev/ttyACM0", 0x303A, 0x1001, "USB JTAG/serial debug unit")
MOUSE_SERIAL = Info("/dev/ttyACM5", 0x2341, 0x0043, "Arduino Uno")


@pytest.fixture
def fake_ports(monkeypatch):
    def use(*infos):
        monkeypatch.setattr(lp, "comports", lambda *a, **k: list(infos))
    return use


def test_chips_are_recognised():
    assert ports.chip_of(0x10C4, 0xEA60) == "CP210x"
    assert ports.chip_of(0x1A86, 0x7523) == "CH340"
    assert ports.chip_of(0x1A86, 0x55D4) == "CH9102"
    assert ports.chip_of(0x0403, 0x6001).startswith("FTDI")
    assert ports.chip_of(0x303A, 0x4001) == "Espressif native USB"  # any Espressif PID
    assert ports.chip_of(0x2341, 0x0043) is None
    assert ports.chip_of(None, None) is None


def test_list_marks_likely_boards(fake_ports, capsys):
    fake_ports(BUILTIN, S3, CP2102, MOUSE_SERIAL)
    assert cli.main(["ports"]) == 0
    out = capsys.readouterr().out.splitlines()  # not a terminal: one tab-separated line each
    assert out == [
        "/dev/ttyACM0\t303A:1001\tlikely ESP32 (Espressif native USB)\tUSB JTAG/serial debug unit",
        "/dev/ttyACM5\t2341:0043\t-\tArduino Uno",
        "/dev/ttyUSB0\t10C4:EA60\tlikely ESP32 (CP210x)\tCP2102 USB to UART Bridge Controller",
    ]
    assert cli.main(["ports", "--all"]) == 0
    assert "/dev/ttyS0\t-\t-\t" in capsys.readouterr().out


def test_no_usb_ports_says_so(fake_ports, capsys):
    fake_ports(BUILTIN)
    assert cli.main(["ports"]) == 0
    out = capsys.readouterr().out
    assert "No USB serial ports found" in out and "--all" in out


def test_auto_picks_the_only_board(fake_ports):
    fake_ports(BUILTIN, MOUSE_SERIAL, CH340)
    assert ports.resolve_port("auto") == "/dev/ttyUSB1"
    assert ports.resolve_port("/dev/ttyUSB7") == "/dev/ttyUSB7"  # a path is left alone


def test_auto_with_several_boards_names_them(fake_ports):
    fake_ports(CP2102, CH9102, FTDI, BUILTIN)
    with pytest.raises(BadInput) as err:
        ports.resolve_port("auto")
    msg = str(err.value)
    assert "3 boards found" in msg
    for text in ("/dev/ttyUSB0 (CP210x)", "/dev/ttyACM1 (CH9102)", "/dev/ttyUSB2 (FTDI FT232R)",
                 "--port PATH"):
        assert text in msg
    assert "ttyS0" not in msg


def test_auto_with_no_board(fake_ports, capsys, tmp_path):
    fake_ports(BUILTIN)
    with pytest.raises(BadInput) as err:
        ports.resolve_port("auto")
    assert "no ESP32 board found" in str(err.value) and "/dev/ttyS0" in str(err.value)
    # through the CLI: exit 2, one line, and no log written
    log = tmp_path / "x.jsonl"
    assert cli.main(["log", "--port", "auto", "--out", str(log)]) == 2
    err_text = capsys.readouterr().err
    assert err_text.startswith("hallclock: --port auto: no ESP32 board found")
    assert len(err_text.strip().splitlines()) == 1
    assert not log.exists()
