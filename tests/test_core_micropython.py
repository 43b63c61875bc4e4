"""The pure-core tests (tests/core/) run again inside a real MicroPython VM:
the same test functions, the same assertions, on the firmware as mpy-cross
builds it.  Each CPython test function has its twin here."""
import importlib
import json
import pathlib

import pytest

from hallclock.vboard.mpvm.files import VDEV, firmware_mpy, package_inits, vdev_folder
from hallclock.vboard.mpvm import VMProcess
from sessiononce import once_json

CORE = pathlib.Path(__file__).resolve().parent / "core"
MODULES = sorted(p.stem for p in CORE.glob("test_*.py"))

RUN_ALL = """
import json
_results = {}
for _name in sorted(dir(_mod)):
    if _name.startswith('test_'):
        try:
            getattr(_mod, _name)()
            _results[_name] = 'ok'
        except Exception as _e:
            _results[_name] = '%s: %s' % (type(_e).__name__, _e)
print('@@' + json.dumps(_results))
"""


def _functions(module):
    mod = importlib.import_module(f"core.{module}")
    return sorted(n for n in dir(mod) if n.startswith("test_") and callable(getattr(mod, n)))


CASES = [(m, f) for m in MODULES for f in _functions(m)]


@pytest.fixture(scope="module")
def vm_results(tmp_path_factory):
    # one VM run of every core module per test run, read by every worker
    # (tests/sessiononce.py): the results depend only on the tree
    return once_json(tmp_path_factory, VM_RUN, run_core_in_vm)


VM_RUN = "core-in-micropython"  # its name in the run's folder (conftest starts it early)


def run_core_in_vm():
    files = firmware_mpy()
    files.update(package_inits())  # hallclock/__init__.py and the packages to vdev
    host = CORE.parent.parent / "host" / "hallclock"
    files["hallclock/catalog.py"] = (host / "catalog.py").read_text()
    files[f"{vdev_folder()}/__init__.py"] = ""
    files[f"{vdev_folder()}/fakes.py"] = (VDEV / "fakes.py").read_text()
    for p in CORE.glob("*.py"):
        files[f"core/{p.name}"] = p.read_text()
    results = {}
    with VMProcess(files, "", obj_expr=None, timeout=300) as vm:
        for module in MODULES:
            out = vm.exec(f"import core.{module} as _mod\n" + RUN_ALL, timeout=300)
            line = [x for x in out.splitlines() if x.startswith("@@")][-1]
            results[module] = json.loads(line[2:])
    return results


def test_every_core_test_module_is_covered():
    assert {"test_scrabble_core"} <= set(MODULES)
    assert len(CASES) >= 15


@pytest.mark.parametrize("module, func", CASES, ids=[f"{m}::{f}" for m, f in CASES])
def test_in_micropython(vm_results, module, func):
    assert func in vm_results[module], f"{func} did not run in the VM"
    assert vm_results[module][func] == "ok", vm_results[module][func]


def test_the_vm_really_reports_failures():
    files = firmware_mpy()
    files["core/__init__.py"] = ""
    files["core/test_bad.py"] = "def test_fails():\n    assert 1 == 2, 'boom'\n"
    with VMProcess(files, "", obj_expr=None) as vm:
        out = vm.exec("import core.test_bad as _mod\n" + RUN_ALL)
    assert json.loads(out.split("@@")[1]) == {"test_fails": "AssertionError: boom"}
