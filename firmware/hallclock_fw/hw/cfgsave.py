"""Set-up at the clock saves hallclock.cfg (imported only for the save, and
dropped again): the new text, and a write that a power cut at any moment
leaves as the old file or the new one, whole (hw/config.py ``load`` reads it).
The same save keeps the newest referee signal counter the clock took on the
hall network (``save_counter``/``load_counter``, docs/network.md).  The
settings and the cfg parser are imported only by what needs them: the
counter's save imports neither."""

SIG_FILE = "hallclock.sig"  # the referee's newest counter taken (all/down)


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
    from .. import settings as settings_mod
    from .config import END
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


def save(fs, text, name=None):
    """Write ``text`` (ending in the end line) as ``name`` so that a power cut
    at any moment leaves the old file or the new one whole: the new text goes
    whole into ``name.new`` first, then takes the old one's place by a rename
    (LittleFS: one atomic step).  A filesystem whose rename will not replace
    (FAT) gets the old file removed first; between the two steps only the
    whole ``name.new`` is there, and ``load`` takes it."""
    if name is None:
        from .config import CFG_FILE
        name = CFG_FILE
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


def save_counter(fs, ctr, name=SIG_FILE):
    """Keep ``ctr`` (the referee's newest signal counter the clock took) across
    reboots: a few writes a round, as safe against a power cut as the cfg."""
    save(fs, "%d end\n" % ctr, name)


def load_counter(fs, name=SIG_FILE):
    """The counter ``save_counter`` kept (0: none); a file cut short is not
    taken, and after a cut between a FAT save's two steps ``name.new`` is."""
    best = 0
    for n in (name, name + ".new"):
        try:
            f = fs.open(n)
            try:
                parts = f.read().split()
            finally:
                f.close()
        except OSError:
            continue
        if len(parts) == 2 and parts[1] == "end" and parts[0].isdigit():
            best = max(best, int(parts[0]))
    return best
