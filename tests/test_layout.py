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
              "hallclock.cliopts", "hallclock.hostframes", "hallclock.whytext")),
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


def imports(name, path, known, root):
    """(the modules of ``known`` that ``name`` imports, the top-level names
    of the others it imports): at the top or inside a function (a lazy
    import is still an arrow).  ``from a import b`` is an arrow to ``a`` and,
    if it is a module, to ``a.b``; the package ``root`` itself is no arrow."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found, other = set(), set()
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
            if not (t == root or t.startswith(root + ".")):
                other.add(t.split(".")[0])
                continue
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name and t != root:
                found.add(t)
    return found, other


GRAPH = {name: imports(name, path, MODULES, "hallclock")[0] for name, path in MODULES.items()}


def rank(floors, root, name):
    """(rank, title) of ``name`` on ``floors`` (lowest first): its longest
    matching prefix; ``root`` (the package itself) matches only itself."""
    best = None
    for at, (title, prefixes) in enumerate(floors):
        for prefix in prefixes:
            if name == prefix or (prefix != root and name.startswith(prefix + ".")):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), at, title)
    return None if best is None else best[1:]


def layer(name):
    return rank(LAYERS, "hallclock", name)


def circles(graph):
    """Every import circle of ``graph`` (name -> names it imports)."""
    state = {}
    found = []

    def visit(node, path):
        state[node] = "open"
        for t in sorted(graph.get(node, ())):
            if state.get(t) == "open":
                found.append(" -> ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


def arrows_up(graph, floor):
    up = []
    for name, targets in sorted(graph.items()):
        here = floor(name)
        for t in sorted(targets):
            there = floor(t)
            if here is not None and there is not None and there[0] > here[0]:
                up.append(f"{name} ({here[1]}) -> {t} ({there[1]})")
    return up


def test_every_module_has_a_layer():
    lost = sorted(m for m in MODULES if layer(m) is None)
    assert not lost, ("modules in no layer (give each a package, "
                      "or a layer in tests/test_layout.py): " + ", ".join(lost))


def test_no_arrow_back_up():
    up = arrows_up(GRAPH, layer)
    assert not up, "imports that point up a layer:\n" + "\n".join(up)


def test_no_import_circle():
    found = circles(GRAPH)
    assert not found, "import circles:\n" + "\n".join(found)


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


# -- the firmware (docs/design.md "The rules of the floors"): floors, lowest first.  A
# module may import its own floor and the ones below, never one above, and
# the import graph has no circle; the host imports only modules that are
# pure (no ``machine`` or ``network`` underneath) and build nothing at import.
FIRMWARE = HOST.parent / "firmware"
FW_FLOORS = [
    ("times, codes and words", ("hallclock_fw", "hallclock_fw.core.timing", "hallclock_fw.events",
                                "hallclock_fw.display", "hallclock_fw.names",
                                "hallclock_fw.seal", "hallclock_fw.forget")),
    ("the protocol and the settings", ("hallclock_fw.protocol", "hallclock_fw.settings",
                                       "hallclock_fw.settingswords")),
    ("the clock rules", ("hallclock_fw.core", "hallclock_fw.modes")),
    ("the link and the signals", ("hallclock_fw.link", "hallclock_fw.signals",
                                  "hallclock_fw.mqtt", "hallclock_fw.netlink",
                                  "hallclock_fw.tlslink")),
    ("the app", ("hallclock_fw.app", "hallclock_fw.setup_mode")),
    ("the hardware", ("hallclock_fw.hw",)),
]
# the board's own modules: what they import is in the board's image, not in
# the package (a host process has none of them)
BOARD_ONLY = ("machine", "network", "esp32")


def fw_modules():
    out = {}
    for p in sorted((FIRMWARE / "hallclock_fw").rglob("*.py")):
        parts = list(p.relative_to(FIRMWARE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


FW_MODULES = fw_modules()


def fw_imports(name, path, known=FW_MODULES):
    return imports(name, path, known, "hallclock_fw")


FW_GRAPH = {name: fw_imports(name, path)[0] for name, path in FW_MODULES.items()}


def fw_floor(name):
    return rank(FW_FLOORS, "hallclock_fw", name)


def impure(modules=FW_MODULES, graph=None):
    """{firmware module: why} of the modules a host must not import: those
    that import a board-only module, or run a call at import (an allocation
    such as the event ring's), or import such a module."""
    graph = FW_GRAPH if graph is None else graph
    why = {}
    for name, path in modules.items():
        board = fw_imports(name, path, modules)[1] & set(BOARD_ONLY)
        if board:
            why[name] = "imports " + ", ".join(sorted(board))
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                why[name] = "calls %s() at import (line %d)" % (
                    ast.unparse(node.value.func), node.lineno)
    changed = True
    while changed:
        changed = False
        for name in modules:
            if name in why:
                continue
            for t in sorted(graph.get(name, ())):
                if t in why and not name.startswith(t + "."):
                    why[name] = "imports %s (%s)" % (t, why[t].split(" (")[0])
                    changed = True
                    break
    return why


# the host's virtual board runs the clock's own hardware layer on fakes
HOST_RUNS_THE_HW = ("hallclock.vboard",)


def host_arrows_into_impure(graph=None, why=None):
    why = impure() if why is None else why
    bad = []
    for name, path in sorted(MODULES.items()):
        if any(name == p or name.startswith(p + ".") for p in HOST_RUNS_THE_HW):
            continue
        targets, _other = fw_imports(name, path)
        for t in sorted(targets):
            if t in why:
                bad.append(f"{name} -> {t}: {why[t]}")
    return bad


def test_every_firmware_module_has_a_floor():
    lost = sorted(m for m in FW_MODULES if fw_floor(m) is None)
    assert not lost, "firmware modules on no floor (add them to FW_FLOORS): " + ", ".join(lost)


def test_the_firmware_points_only_down():
    up = arrows_up(FW_GRAPH, fw_floor)
    assert not up, "firmware imports that point up a floor:\n" + "\n".join(up)


def test_the_firmware_has_no_import_circle():
    found = circles(FW_GRAPH)
    assert not found, "firmware import circles:\n" + "\n".join(found)


def test_the_host_imports_only_pure_firmware_modules():
    bad = host_arrows_into_impure()
    assert not bad, ("host modules importing firmware that needs a board or builds at "
                     "import:\n" + "\n".join(bad))


def test_the_firmware_checks_can_fail():
    """The checks above see what they must: a known arrow, the board-only
    and allocating modules, and a bad arrow injected into each graph."""
    assert "hallclock_fw.link" in FW_GRAPH["hallclock_fw.hw.device"]
    assert "hallclock_fw.core.round" in FW_GRAPH["hallclock_fw.core.scrabble"]
    why = impure()
    assert "reserve()" in why["hallclock_fw.hw.device"]  # the event ring, at import
    assert "machine" in why["hallclock_fw.hw.esp32"] and "network" in why["hallclock_fw.hw.wifi"]
    assert "hallclock_fw.settings" not in why and "hallclock_fw.hw.panel" not in why
    # an arrow up a floor, and a circle
    bad = dict(FW_GRAPH)
    bad["hallclock_fw.protocol"] = FW_GRAPH["hallclock_fw.protocol"] | {"hallclock_fw.app"}
    assert arrows_up(bad, fw_floor) == [
        "hallclock_fw.protocol (the protocol and the settings) -> hallclock_fw.app (the app)"]
    bad["hallclock_fw.hw.boot"] = FW_GRAPH["hallclock_fw.hw.boot"] | {"hallclock_fw.hw.device"}
    assert any("hallclock_fw.hw.boot -> hallclock_fw.hw.device -> hallclock_fw.hw.boot" in c
               for c in circles(bad))
    # a host module importing hw/device (as link/health.py once did)
    name = "hallclock.link.health"
    real = fw_imports
    try:
        globals()["fw_imports"] = lambda n, p, known=FW_MODULES: (
            real(n, p, known)[0] | ({"hallclock_fw.hw.device"} if n == name else set()),
            real(n, p, known)[1])
        assert host_arrows_into_impure(why=why) == [
            name + " -> hallclock_fw.hw.device: " + why["hallclock_fw.hw.device"]]
    finally:
        globals()["fw_imports"] = real
