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
