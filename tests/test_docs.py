"""The docs name only what exists, and docs/design.md stays a ten-minute read
(issue: "every file and module a doc names exists").

Every repository path a doc names (``firmware/…``, ``host/…``, ``tests/…``,
``bench/…``, ``mk/…``, ``docs/…``, ``hardware/…``, ``tools/…``), every Python
file it names by a shorter path (``hw/device.py``: some file of the tree must
end so), every module it names (``hallclock.x.y``, ``hallclock_fw.x``, with
the first name after the module defined in it) and every name it gives with
the short name of a module of ours (``netlink.shed``) must exist."""
import ast
import functools
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "hardware").glob("*.md")])
PACKAGES = {"hallclock": ROOT / "host" / "hallclock", "hallclock_fw": ROOT / "firmware" / "hallclock_fw"}
DESIGN_WORDS = 3000

_ROOTS = "firmware|host|tests|bench|mk|docs|hardware|tools"
# a path from the repository's root; <mode> and * are wildcards
_PATH = re.compile(r"(?<![\w./<>*-])((?:%s)/[\w./<>*-]*[\w>*/])" % _ROOTS)
# a Python file named by a shorter path (hw/device.py, app.py); an absolute
# path (/path/to/…) is outside the tree
_PYFILE = re.compile(r"(?<![\w./<>*-])(\w[\w/]*\.py)\b")
# a dotted module name of one of the two packages
_MODULE = re.compile(r"(?<![\w./-])((?:hallclock_fw|hallclock)(?:\.[A-Za-z_]\w*)+)")
# names that look like modules but are files on the board or on the laptop
_NOT_MODULES = {"hallclock.cfg", "hallclock.cfg.example", "hallclock.romfs", "hallclock.sig",
                "hallclock.ca"}
# `module.name` of a module of ours named by its last part (`netlink.shed`)
_SHORT = re.compile(r"`([a-z_][a-z0-9_]*)\.([A-Za-z_]\w*)")
# the board's own modules, whose names some of ours share
_BOARD_MODULES = ("esp32", "machine", "network", "micropython")
_FILE_ENDINGS = {"py", "pyi", "md", "json", "jsonl", "cfg", "mpy", "txt", "csv", "mjs", "js",
                 "html", "css", "svg", "png", "sqlite", "romfs", "example", "toml", "mk", "lock"}


@functools.lru_cache(maxsize=None)
def tree_files():
    """Every file and folder of the tree (relative, as posix paths), build
    output, caches and virtual environments left out."""
    out = set()
    for p in ROOT.rglob("*"):
        rel = p.relative_to(ROOT).as_posix()
        if rel.split("/")[0] in (".git", ".venv", "build", "node_modules") or "/node_modules/" in rel \
                or "__pycache__" in rel or ".egg-info" in rel:
            continue
        out.add(rel)
    return frozenset(out)


def _exists(path):
    """A repository path exists: as it is, as a folder, or matching its
    wildcards (``<mode>`` and ``*`` stand for any name)."""
    path = path.rstrip("/")
    if "<" in path or "*" in path:
        pieces = re.split(r"<[^/>]*>|\*", path)
        rx = re.compile("[^/]*".join(re.escape(p) for p in pieces) + "$")
        return any(rx.match(f) for f in tree_files())
    return path in tree_files()


def _pyfile_exists(name):
    """``hw/device.py`` or ``app.py``: some file of the tree ends so."""
    if name in tree_files():
        return True
    suffix = "/" + name
    return any(f.endswith(suffix) for f in tree_files())


@functools.lru_cache(maxsize=None)
def _top_names(path):
    """The names a module defines or imports at its top level."""
    names = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        names.add(n.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                    names.add(sub.name)
                elif isinstance(sub, ast.Assign):
                    for t in sub.targets:
                        if isinstance(t, ast.Name):
                            names.add(t.id)
                elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                    names.update((a.asname or a.name).split(".")[0] for a in sub.names)
    return frozenset(names)


@functools.lru_cache(maxsize=None)
def _short_modules():
    """{last part of a module's name: its files} over the tree's Python code
    (packages left out: `core.tick` is a core object's, not the package's)."""
    out = {}
    for f in tree_files():
        p = pathlib.PurePosixPath(f)
        if p.suffix == ".py" and p.stem != "__init__" \
                and p.parts[0] in ("firmware", "host", "bench", "tests", "mk"):
            out.setdefault(p.stem, []).append(ROOT / f)
    for other in (*sys.stdlib_module_names, *_BOARD_MODULES):
        out.pop(other, None)  # `esp32.Partition` is the board's module's
    return out


@functools.lru_cache(maxsize=None)
def _names_anywhere(path):
    """Every name ``path`` defines anywhere (functions, classes, methods,
    variables) and every attribute it names (``self.when``)."""
    names = set(_top_names(path))
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return frozenset(names)


def _short_problem(module, name):
    """None when some module of ours called ``module`` has ``name``; also
    None when no module of ours is called so (an object, a library)."""
    files = _short_modules().get(module)
    if not files or name in _FILE_ENDINGS:
        return None
    if any(name in _names_anywhere(p) for p in files):
        return None
    if any(f.endswith("/%s/%s.py" % (module, name)) or f.endswith("/%s/%s/__init__.py" % (module, name))
           for f in tree_files()):
        return None  # a package of that name has the module (`link.logger`)
    return "%s.%s: no name %r in %s" % (module, name, name, ", ".join(
        sorted(p.relative_to(ROOT).as_posix() for p in files)))


def _module_problem(dotted):
    """None when ``dotted`` names a module of ours (and, after it, a name the
    module defines); else what is wrong."""
    parts = dotted.split(".")
    path = PACKAGES[parts[0]]
    i = 1
    while i < len(parts):
        if (path / parts[i]).is_dir() and (path / parts[i] / "__init__.py").exists():
            path = path / parts[i]
        elif (path / (parts[i] + ".py")).exists():
            path = path / (parts[i] + ".py")
            i += 1
            break
        else:
            break
        i += 1
    if i >= len(parts):
        return None
    module_file = path / "__init__.py" if path.is_dir() else path
    if module_file.suffix == ".py" and module_file.exists() and parts[i] in _top_names(module_file):
        return None
    where = ".".join(parts[:i])
    return "%s: no module or name %r in %s" % (dotted, parts[i], where)


def problems(text):
    """What ``text`` names that does not exist, one line each."""
    out = []
    for m in _PATH.finditer(text):
        path = m.group(1).rstrip(".")
        if not _exists(path):
            out.append("no such path: " + path)
    for m in _PYFILE.finditer(text):
        name = m.group(1)
        if re.match(r"(%s)/" % _ROOTS, name):
            continue  # checked whole above
        if not _pyfile_exists(name):
            out.append("no such file: " + name)
    for m in _MODULE.finditer(text):
        dotted = m.group(1).rstrip(".")
        if dotted in _NOT_MODULES:
            continue
        problem = _module_problem(dotted)
        if problem:
            out.append(problem)
    for m in _SHORT.finditer(text):
        problem = _short_problem(*m.groups())
        if problem:
            out.append(problem)
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_path_and_module_a_doc_names_exists(doc):
    found = problems(doc.read_text(encoding="utf-8"))
    assert not found, "%s names what does not exist:\n  %s" % (
        doc.relative_to(ROOT), "\n  ".join(sorted(set(found))))


def test_the_check_fails_on_what_does_not_exist():
    text = """See `firmware/hallclock_fw/hw/nosuch.py`, tests/test_nosuch.py,
    `hw/gone.py`, `hallclock.vboard.mpunix`, hallclock_fw.nosuch,
    `hallclock.views.model.no_such_name`, `netlink.no_such_name` and docs/nosuch.md."""
    found = problems(text)
    assert "no such path: firmware/hallclock_fw/hw/nosuch.py" in found
    assert "no such path: tests/test_nosuch.py" in found
    assert "no such path: docs/nosuch.md" in found
    assert "no such file: hw/gone.py" in found
    assert any(p.startswith("hallclock.vboard.mpunix:") for p in found)
    assert any(p.startswith("hallclock_fw.nosuch:") for p in found)
    assert any(p.startswith("hallclock.views.model.no_such_name:") for p in found)
    assert any(p.startswith("netlink.no_such_name:") for p in found)
    assert len(found) == 8, found


def test_the_check_passes_what_exists():
    text = """`firmware/hallclock_fw/core/<mode>.py`, `tests/test_mqtt_*.py`,
    `hw/device.py` (`hw/device.py`'s loop), tests/core/, `hallclock.views.model.Model`,
    `hallclock_fw.core.timing`, hallclock.cfg, `bench/run.py --only timing`,
    docs/design.md, `netlink.shed`, `link.logger`, `settings.py`, `panel.show`,
    `time.monotonic`, `m.feed`."""
    assert problems(text) == []


def too_long(text, limit=DESIGN_WORDS):
    """None when ``text`` is at most ``limit`` words (as ``wc -w`` counts
    them: runs of non-space), else what is wrong."""
    n = len(text.split())
    return None if n <= limit else "%d words; at most %d" % (n, limit)


def test_design_is_a_ten_minute_read():
    problem = too_long((ROOT / "docs" / "design.md").read_text(encoding="utf-8"))
    assert problem is None, "docs/design.md: " + problem


def test_the_word_count_fails_one_word_over():
    assert too_long("word\n" * DESIGN_WORDS) is None
    assert too_long("a `b` c|d\n" * 1000) is None  # 3 000 words
    assert too_long("word " * (DESIGN_WORDS + 1)) == "3001 words; at most 3000"


def benchmark_layout_problems(text):
    """docs/benchmarks.md's shape: every ``##`` section but "Open" names its
    code (a ``bench/`` file or a make target) and has a table whose header
    gives the same-run baseline and the ratio."""
    out = []
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        lines = section.splitlines()
        title = lines[0]
        if title.strip() == "Open":
            continue
        headers = [lines[i].lower() for i in range(len(lines) - 1)
                   if lines[i].startswith("|") and lines[i + 1].startswith("| ---")]
        if not any("baseline" in h and "ratio" in h for h in headers):
            out.append("%s: no table with a baseline and a ratio column" % title)
        if "bench/" not in title and "make " not in title and "hallclock " not in title:
            out.append("%s: the title names no bench/ file or command" % title)
    return out


def test_every_benchmark_gives_its_baseline_and_ratio():
    found = benchmark_layout_problems((ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8"))
    assert not found, "docs/benchmarks.md:\n  " + "\n  ".join(found)


def test_the_benchmark_layout_check_can_fail():
    good = "## A (`bench/a.py`)\n\n| figure | baseline | measured | ratio |\n| --- | --- | --- | --- |\n"
    assert benchmark_layout_problems(good) == []
    assert benchmark_layout_problems("## Open\n\n- nothing\n") == []
    no_ratio = "## B (`bench/b.py`)\n\n| figure | before | now |\n| --- | --- | --- |\n"
    assert benchmark_layout_problems(no_ratio) == ["B (`bench/b.py`): no table with a baseline "
                                                    "and a ratio column"]
    no_code = good.replace("(`bench/a.py`)", "(by hand)")
    assert benchmark_layout_problems(no_code) == ["A (by hand): the title names no bench/ file or command"]
