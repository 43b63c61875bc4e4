"""Work a module fixture would do once per pytest-xdist worker, done once per
test run: the first worker that asks makes it in the run's shared temporary
folder (under a lock), the others wait for it and read it (docs/testing.md,
"Parallel workers").  Only for work whose result depends on nothing but the
tree under test (a simulated game's log, the VM's results of the pure-core
tests): the tree does not change during a run, so one result serves every
worker, and every test still asserts on it as before.  Without xdist the
folder is the process's own."""
import fcntl
import json
import os
import shutil


def _root(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base is <run>/popen-gwN: <run> is this run's
    # own and shared by its workers (without xdist the parent is every run's)
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = root / "once"
    root.mkdir(exist_ok=True)
    return root


def once_dir(tmp_path_factory, name, make):
    """The folder ``make(folder)`` filled, made once per run; read-only to
    its users."""
    root = _root(tmp_path_factory)
    done = root / name
    with open(root / (name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.is_dir():
            part = root / (name + ".part")
            shutil.rmtree(part, ignore_errors=True)  # a worker that failed half-way
            part.mkdir()
            make(part)
            os.replace(part, done)
    return done


def once_json(tmp_path_factory, name, compute):
    """``compute()`` (a JSON value), computed once per run."""
    def make(folder):
        (folder / "value.json").write_text(json.dumps(compute()))
    return json.loads((once_dir(tmp_path_factory, name, make) / "value.json").read_text())
