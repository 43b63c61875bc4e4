"""The rich console every terminal view prints with (the report, the round's
report, the live view, ``ports``): it takes no markup and no emoji codes from
what it prints, so ``[bold]`` or ``:smile:`` in a clock's name prints as
itself (the views give their own styles as ``style=`` or ``Text``), and every
string it renders has its control characters shown escaped
(hallclock.errors.shown; line breaks kept: the views' own), so a crafted log
or frame cannot move the cursor or retitle the terminal (docs/network.md,
threat model)."""
from rich.console import Console as _Console

from ..errors import shown


class SafeConsole(_Console):
    def __init__(self, **kwargs):
        kwargs.setdefault("markup", False)
        kwargs.setdefault("emoji", False)
        super().__init__(**kwargs)

    def render_str(self, text, **kwargs):
        return super().render_str(shown(text, lines=True), **kwargs)


def console(**kwargs):
    """A console for names from outside (see the module's doc)."""
    return SafeConsole(**kwargs)


def styled(console, text, style, start=0, end=None):
    """``text`` as the console prints a string (highlighted), with ``style``
    from ``start`` to ``end`` over the highlighting's colours: what
    ``[style]…[/]`` markup gave, with no markup taken from the text."""
    line = console.render_str(text)
    line.stylize(style, start, end)
    return line
