"""The real firmware passes the static checks that stand in for a board:
it builds with mpy-cross for the ESP32 and type-checks against the ESP32 stubs;
and the same check catches a wrong call into ``machine`` in the real tree."""
import pathlib
import shutil

from hallclock.vboard.mpvm import checks

FIRMWARE = pathlib.Path(__file__).resolve().parent.parent / "firmware"


def test_every_firmware_file_builds_for_xtensawin(tmp_path):
    result = checks.build_mpy(FIRMWARE, tmp_path / "out")
    assert result.ok, "\n".join(result.errors)
    sources = sorted(p.relative_to(FIRMWARE).with_suffix(".mpy") for p in FIRMWARE.rglob("*.py"))
    built = sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob("*.mpy"))
    assert built == sources


def test_firmware_type_checks_against_the_esp32_stubs(tmp_path):
    result = checks.typecheck(FIRMWARE, tmp_path / "pyright")
    assert result.ok, result.output


def test_a_wrong_machine_call_in_the_firmware_fails_the_check(tmp_path):
    tree = tmp_path / "firmware"
    shutil.copytree(FIRMWARE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    # (hw/esp32rare.py builds the pins: the board's Pin and PWM calls are there)
    esp32 = tree / "hallclock_fw" / "hw" / "esp32rare.py"
    esp32.write_text(esp32.read_text() + "\n\ndef _broken():\n"
                     "    Pin(4).irq(triggr=Pin.IRQ_FALLING)\n"
                     "    PWM(Pin(5)).dutyy(3)\n")
    result = checks.typecheck(tree, tmp_path / "pyright")
    assert not result.ok
    text = "\n".join(result.errors)
    assert "esp32rare.py" in text and '"dutyy"' in text and '"triggr"' in text
