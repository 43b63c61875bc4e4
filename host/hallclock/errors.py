"""One exception base class; the CLI turns it into ``hallclock: message``."""


class HallclockError(Exception):
    """Something the user can act on.  ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class BadInput(HallclockError):
    """Bad command line, script, setting or port: exit status 2."""

    exit_code = 2


class LinkError(HallclockError):
    """The serial link failed in a way retries could not mend."""

    exit_code = 1


def shown(text, lines=False):
    """The one helper for anything from outside on a terminal (a clock's or a
    hall's name, any string from a log, a frame or a lock file): control
    characters shown escaped (``\\x1b``, ``\\n``), so a crafted name can neither
    move the cursor, clear the screen, retitle the window nor forge a line of
    its own.  ``lines``: the text's own line breaks are kept (each line
    escaped).  Rich output takes no markup from such text either:
    hallclock.views.terminal.console."""
    if lines:
        return "\n".join(shown(line) for line in str(text).split("\n"))
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


one_line = shown  # an error message as one printable line
