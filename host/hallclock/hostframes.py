"""The host's frames to a clock (A R C S K N M I; docs/protocol.md): the
one implementation, built on the firmware's ``protocol.frame``.  The host
package, not the firmware's: the clock only reads these frames, so a board
never holds their builders.  MicroPython-compatible: the virtual device's
runner sends a C frame with ``command`` inside the VMs too
(``hallclock.vboard.mpvm.files`` puts this module beside it).
"""
from hallclock_fw.protocol import MAX_VALUES, frame


def ack(sid, seq):
    return frame(("A %s %d" % (sid, seq)).encode())


def resend(sid, seq):
    return frame(("R %s %d" % (sid, seq)).encode())


def command(button, long=False):
    return frame(("C %d %d" % (button, 1 if long else 0)).encode())


def restore(mode, settings_text, *values):
    """The S frame: ``values`` are a core's ``snapshot`` (ints):
    ``restore(mode, text, *core.snapshot(now))``."""
    if not 1 <= len(values) <= MAX_VALUES:
        raise ValueError("a restore carries 1 to %d values" % MAX_VALUES)
    body = "S %s %s" % (mode, settings_text)
    for v in values:
        body = body + " %d" % v
    return frame(body.encode())


def configure(mode, settings_text):
    """The K frame: take these settings while no game runs."""
    return frame(("K %s %s" % (mode, settings_text)).encode())


def round_number(number, elapsed_ms):
    """The N frame: round ``number`` started ``elapsed_ms`` ago (0: now)."""
    return frame(("N %d %d" % (number, elapsed_ms)).encode())


def maintenance():
    return frame(b"M")


def info():
    """The I frame: the clock answers with a health event carrying its versions."""
    return frame(b"I")
