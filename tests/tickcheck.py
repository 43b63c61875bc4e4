"""A static check of the firmware's tick discipline.

Tick values are recognised by the house naming convention — ``now``, ``t0``,
``deadline``, ``due``, ``edge``, ``since``, ``held``, ``when``, ``progress``,
``last_hello``, ``seg_start``, names ending in ``_at``, ``_tick`` or
``_ticks``, a ``*tick*`` list — and by calls of ``ticks_ms``/``ticks_us``/
``ticks_add``.  None of them may meet ``+``, ``-``, ``<``, ``>``, ``<=``,
``>=`` (or ``+=``/``-=``): only ``ticks_add``/``ticks_diff``.
"""
import ast
import re

TICK_NAME = re.compile(
    r"^(now|t0|deadline|due|edge|since|held|when|progress|last_hello|seg_start|qtick|"
    r".*_at|.*_tick|.*_ticks)$")
TICK_CALLS = {"ticks_ms", "ticks_us", "ticks_cpu", "ticks_add"}


def _name(node):
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def is_tick(node):
    if isinstance(node, ast.Call):
        f = node.func
        fname = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
        return fname in TICK_CALLS
    name = _name(node)
    return name is not None and bool(TICK_NAME.match(name))


def violations(source, filename="<src>"):
    tree = ast.parse(source, filename)
    found = []
    for node in ast.walk(tree):
        operands = ()
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            operands = (node.left, node.right)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            operands = (node.target, node.value)
        elif isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Lt, ast.Gt, ast.LtE, ast.GtE)) for op in node.ops):
            operands = (node.left, *node.comparators)
        for op in operands:
            if is_tick(op):
                found.append(f"{filename}:{node.lineno}: tick value "
                             f"{ast.unparse(op)!r} in {ast.unparse(node)!r}")
                break
    return found
