"""hallclock.cfg on the board's flash: read at boot (``load``), saved by
set-up at the clock and for the host's settings (``save_settings``): the
new text, and a write that a power cut at any moment leaves as the old file
or the new one, whole.  The same save keeps the newest referee signal
counter the clock took on the hall network (``save_counter``/
``load_counter``, docs/network.md).

Imported only for one read or one save, and dropped again.  It imports no
other firmware module (not the settings' catalogue, not the config parser):
a Wi-Fi clock saves the host's settings in a pass of its own with only a
few KB of its heap to spare (docs/micropython.md "Boot-only code").
"""
from micropython import const

CFG_FILE = "hallclock.cfg"
END = "# end of hallclock.cfg"  # the last line of a file a save wrote (``load``)
# the hall network's keys (hw/config.py reads them): all of them, or none
NET_KEYS = const(("wifi_ssid", "wifi_password", "broker", "hall", "user", "password", "key",
                  "hall_key"))
# with NET_KEYS: the lines a save keeps (tls_ca_file: optional, hw/config.py)
_KEEP = const(("clock", "brightness", "tls_ca_file"))
_SIG_FILE = const("hallclock.sig")  # the referee's newest counter taken (all/down)


class BoardFiles:
    """The board's own filesystem, as ``save`` uses it (the
    virtual board's flash, vdev/flash.py FakeFlash, has the same three calls)."""

    def open(self, name, mode="r"):
        return open(name, mode)

    def rename(self, old, new):
        import os
        os.rename(old, new)

    def remove(self, name):
        import os
        os.remove(name)


def _read(open_fn, name):
    try:
        f = open_fn(name, "r")
    except OSError:
        return None
    try:
        return f.read()
    finally:
        f.close()


def load(open_fn, name=CFG_FILE):
    """The text of hallclock.cfg (``open_fn``: ``open``, or the virtual
    board's flash's ``open``), or None.  When a save was cut between its two last steps
    only ``name.new`` is there: taken if it is whole (its last line is END);
    a cut while it was written leaves the old file beside it."""
    text = _read(open_fn, name)
    if text is not None:
        return text
    text = _read(open_fn, name + ".new")
    if text is not None and text.rstrip().endswith(END):
        return text
    return None


def _kept(line):
    """True for a line a save keeps: a comment (not END), or one of _KEEP's
    or NET_KEYS' ``key = value`` (tested in place: a save allocates little)."""
    line = line.lstrip()
    if line.startswith("#"):
        return not line.startswith(END)
    for keys in (_KEEP, NET_KEYS):
        for key in keys:
            if line.startswith(key):  # (hall, hall_key: the whole key must match)
                eq = line.find("=")
                if eq > 0 and not line[len(key):eq].strip():
                    return True
    return False


def cfg_text(old, mode, settings_text):
    """The new hallclock.cfg: the old file's clock name, brightness, hall
    network and comments kept; the mode and the settings (``settings_text``,
    ``settings.format_text``'s ``key=value;...``) replacing every other
    line (a setting of another mode would make the file wrong); END last."""
    lines = [raw for raw in (old or "").split("\n") if _kept(raw)]
    lines.append("mode = " + mode)
    lines.append(settings_text.replace("=", " = ").replace(";", "\n"))
    lines.append(END + "\n")
    return "\n".join(lines)


def save(fs, text, name=CFG_FILE, moved=False):
    """Write ``text`` (ending in the end line) as ``name`` so that a power cut
    at any moment leaves the old file or the new one whole: the new text goes
    whole into ``name.new`` first, then takes the old one's place by a rename
    (LittleFS: one atomic step).  A filesystem whose rename will not replace
    (FAT) gets the old file removed first; between the two steps only the
    whole ``name.new`` is there, and ``load`` takes it.  ``moved``: that is
    the state now (a save cut there before): the whole ``name.new`` takes its
    place first (writing ``name.new`` again would leave no whole file for a
    moment).  ``fs``: BoardFiles, or the virtual board's flash."""
    tmp = name + ".new"
    if moved:
        fs.rename(tmp, name)
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


def save_settings(fs, mode, settings_text):
    """hallclock.cfg with ``mode`` and ``settings_text`` (the old file's
    other lines kept), written by ``save``."""
    old = _read(fs.open, CFG_FILE)
    moved = old is None
    if moved:
        old = load(fs.open)
        moved = old is not None
    save(fs, cfg_text(old, mode, settings_text), CFG_FILE, moved)


def save_counter(fs, ctr, name=_SIG_FILE):
    """Keep ``ctr`` (the referee's newest signal counter the clock took) across
    reboots: a few writes a round, as safe against a power cut as the cfg."""
    save(fs, "%d end\n" % ctr, name)


def load_counter(fs, name=_SIG_FILE):
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
