"""``forget(name)``: drop a boot-only or rare module (or only some of its
functions) so the next collection frees its code (docs/micropython.md
"Boot-only code").  Imported inside the function that needs it, and gone
again after each call: it is rare code itself."""
import sys


def forget(name, *attrs, always=False):
    """Drop the module ``name``, or only its functions ``attrs``.  A no-op
    on CPython unless ``always`` (the host shares the firmware's modules)."""
    board = sys.implementation.name == "micropython"
    mod = sys.modules.get(name)
    if mod is None or not (always or board):
        name = None
    elif attrs:
        for attr in attrs:
            mod.__dict__.pop(attr, None)
        name = None
    # the module, and on the board this one too (the next call imports it again)
    for name in (name, __name__ if board else None):
        if name is not None and sys.modules.pop(name, None) is not None:
            parent, _dot, attr = name.rpartition(".")
            pkg = sys.modules.get(parent)
            if pkg is not None and attr in pkg.__dict__:
                delattr(pkg, attr)
