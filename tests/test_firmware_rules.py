"""House rules of the firmware, checked on every file under firmware/."""
import ast
import pathlib

import pytest

from tickcheck import violations

FIRMWARE = pathlib.Path(__file__).resolve().parent.parent / "firmware"
FILES = sorted(FIRMWARE.rglob("*.py"))
# the tick arithmetic itself (CPython fallback) lives here and only here
TIMING = FIRMWARE / "hallclock_fw" / "core" / "timing.py"
HW = FIRMWARE / "hallclock_fw" / "hw"


def test_there_is_firmware_to_check():
    names = {p.name for p in FILES}
    assert {"scrabble.py", "app.py", "protocol.py", "timing.py"} <= names


def _imports_machine(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "machine" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "machine":
            return True
    return False


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIRMWARE)))
def test_only_the_hardware_layer_imports_machine(path):
    if HW in path.parents or path.parent == FIRMWARE:  # hw/ and main.py/boot.py
        return
    assert not _imports_machine(path), f"{path} imports machine outside the hardware layer"


@pytest.mark.parametrize("path", [p for p in FILES if p != TIMING],
                         ids=lambda p: str(p.relative_to(FIRMWARE)))
def test_tick_values_only_through_ticks_add_and_ticks_diff(path):
    assert violations(path.read_text(), str(path)) == []


@pytest.mark.parametrize("bad", [
    "deadline = now + 120000",
    "if now < self.deadline: pass",
    "left = self.deadline - now",
    "x = time.ticks_ms() + 5",
    "self.since[i] += 3",
    "if ticks_add(a, 5) > b: pass",
])
def test_the_checker_catches_raw_tick_arithmetic(bad):
    assert violations(bad)


@pytest.mark.parametrize("good", [
    "deadline = ticks_add(now, 120000)",
    "if ticks_diff(now, self.deadline) >= 0: pass",
    "self.used_ms += ticks_diff(now, self.seg_start)",
    "n = self.count + 1",
])
def test_the_checker_lets_proper_code_pass(good):
    assert violations(good) == []


def test_machine_import_check_can_fail(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("from machine import Pin\n")
    assert _imports_machine(p)
