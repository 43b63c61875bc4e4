"""The scenario file a device process reads: the host tool writes the mode,
the settings and the actions as JSON (compiling them as a literal would take
far more heap), the MicroPython unix port's device reads them back.  One
format for the serial device (``unixhw``) and the network one (``netpump``).
``load`` is MicroPython-compatible; ``write`` runs on the host (CPython)."""
import json


def load(path):
    """(mode, settings, actions) from the file ``write`` made."""
    with open(path) as f:
        s = json.load(f)
    settings = {}
    for key, value in s["settings"].items():  # JSON has lists where settings hold tuples
        settings[key] = tuple(value) if isinstance(value, list) else value
    actions = [(a[0], a[1], tuple(a[2]) if isinstance(a[2], list) else a[2])
               for a in s["actions"]]
    return s["mode"], settings, actions


def write(mode, values, actions, prefix="hallclock-unix-"):
    """A temporary scenario file (its path; the caller removes it)."""
    import os
    import tempfile
    plain = [a.as_tuple() if hasattr(a, "as_tuple") else tuple(a) for a in actions]
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump({"mode": mode, "settings": dict(values), "actions": plain}, f)
    return path
