"""Set-up at the clock saves hallclock.cfg (imported only for the save, and
dropped again): the new text, and a write that a power cut at any moment
leaves as the old file or the new one, whole (hw/config.py ``load`` reads it)."""
from .. import settings as settings_mod
from .config import CFG_FILE, END


class BoardFiles:
    """The board's own filesystem, as ``save`` uses it (the
    virtual board's flash, vdev/fakes.py FakeFlash, has the same three calls)."""

    def open(self, name, mode="r"):
        return open(name, mode)

    def rename(self, old, new):
        import os
        os.rename(old, new)

    def remove(self, name):
        import os
        os.remove(name)


def cfg_text(old, mode, values):
    """The new hallclock.cfg: the old file's other lines (clock name,
    brightness, the hall network, comments) kept, the mode and settings
    replaced, and END last (``load``: a whole file)."""
    keys = ["mode"]
    for spec in settings_mod.SPEC.values():
        for key, _kind, _default in spec:
            keys.append(key)
    lines = []
    for raw in (old or "").split("\n"):
        key = raw.split("#", 1)[0].split("=", 1)[0].strip()
        if key in keys or raw.strip() == END or not raw.strip():
            continue
        lines.append(raw)
    lines.append("mode = " + mode)
    for pair in settings_mod.format_text(mode, values).split(";"):
        if pair:
            key, value = pair.split("=", 1)
            lines.append(key + " = " + value)
    lines.append(END)
    return "\n".join(lines) + "\n"


def save(fs, text, name=CFG_FILE):
    """Write ``text`` (ending in the end line) as ``name`` so that a power cut
    at any moment leaves the old file or the new one whole: the new text goes
    whole into ``name.new`` first, then takes the old one's place by a rename
    (LittleFS: one atomic step).  A filesystem whose rename will not replace
    (FAT) gets the old file removed first; between the two steps only the
    whole ``name.new`` is there, and ``load`` takes it."""
    tmp = name + ".new"
    f = fs.open(tmp, "w")
    try:
        f.write(text)
    finally:
        f.close()
    try:
        fs.rename(tmp, name)
    except OSError:
        fs.remove(name)
        fs.rename(tmp, name)
