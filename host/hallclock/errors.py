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


def one_line(text):
    """A message as one printable line: control characters (a newline in a
    file name, an escape sequence in a clock's name) shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
