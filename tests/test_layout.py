"""The house's shape: the host package's import graph has no circle and no
arrow back up (docs/design.md, "The house"), and every package says in its
docstring what it holds.  Every import counts, the ones inside functions too:
a lazy import is still an arrow."""
import ast
import pathlib

import pytest

HOST = pathlib.Path(__file__).resolve().parent.parent / "host"
PACKAGE = HOST / "hallclock"

# Layers, lowest first: a module may import its own layer and the ones below,
# never one above.  A new module takes the layer of its package; a new
# top-level module must be given one here.
LAYERS = [
    ("base", ("hallclock", "hallclock.errors", "hallclock.catalog", "hallclock.scenario",
              "hallclock.cliopts", "hallclock.hostframes")),
    ("the virtual device (MicroPython)", ("hallclock.vboard.vdev",)),
    ("the link and the log", ("hallclock.link",)),
    ("the VMs", ("hallclock.vboard.mpvm",)),
    ("the virtual board", ("hallclock.vboard",)),
    ("the views and reports", ("hallclock.views",)),
    ("the network", ("hallclock.net",)),
    ("the hall and the round", ("hallclock.hall",)),
    ("the commands", ("hallclock.commands",)),
    ("the command line", ("hallclock.cli", "hallclock.__main__")),
]


def modules():
    """{dotted name: path} of every module of the host package."""
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = list(p.relative_to(HOST).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = modules()


def imports(name, path):
    """The host modules ``name`` imports (at the top or inside a function)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [mod] + [mod + "." + a.name for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != name and t != "hallclock":
                found.add(t)
    return found


GRAPH = {name: imports(name, path) for name, path in MODULES.items()}


def layer(name):
    """(rank, layer name) of a module: its longest matching prefix."""
    best = None
    for rank, (title, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if name == prefix or (prefix != "hallclock" and name.startswith(prefix + ".")):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), rank, title)
    return None if best is None else best[1:]


def test_every_module_has_a_layer():
    lost = sorted(m for m in MODULES if layer(m) is None)
    assert not lost, ("modules in no layer (give each a package, "
                      "or a layer in tests/test_layout.py): " + ", ".join(lost))


def test_no_arrow_back_up():
    up = []
    for name, targets in sorted(GRAPH.items()):
        here = layer(name)
        for t in sorted(targets):
            there = layer(t)
            if here is not None and there is not None and there[0] > here[0]:
                up.append(f"{name} ({here[1]}) -> {t} ({there[1]})")
    assert not up, "imports that point up a layer:\n" + "\n".join(up)


def test_no_import_circle():
    state = {}
    circles = []

    def visit(node, path):
        state[node] = "open"
        for t in sorted(GRAPH.get(node, ())):
            if state.get(t) == "open":
                circles.append(" -> ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[node] = "done"

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert not circles, "import circles:\n" + "\n".join(circles)


@pytest.mark.parametrize("package", sorted(n for n, p in MODULES.items()
                                           if p.name == "__init__.py"))
def test_every_package_says_what_it_holds(package):
    doc = ast.get_docstring(ast.parse(MODULES[package].read_text()))
    assert doc and len(doc.split()) >= 12, f"{package}: a one-paragraph docstring"


def test_the_checks_can_fail():
    """The graph is read right: a known arrow is seen, and one pointing up
    would be reported (the checks above are not vacuous)."""
    assert "hallclock.link.logfile" in GRAPH["hallclock.link.logger"]
    assert layer("hallclock.hall.relay")[0] > layer("hallclock.link.logger")[0]
    assert layer("hallclock.vboard.vdev.runner")[0] < layer("hallclock.vboard.device")[0]
