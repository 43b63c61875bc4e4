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


def print_table(console, table):
    """``table`` as it is where the screen holds every value whole; otherwise
    one block per row (its first cell, then ``heading: value`` pairs broken
    between pairs only): a value is never cut (docs/host.md "Reading a report")."""
    import io
    import textwrap

    # rich squeezes a table wider than the screen by cutting values with "…":
    # drawn once aside, a table with no "…" of rich's own is shown as drawn
    probe = _Console(width=console.width, file=io.StringIO(), color_system=None,
                     markup=False, emoji=False, highlight=False)
    probe.print(table)
    own = sum(str(c.header).count("…") + sum(str(v).count("…") for v in c.cells)
              for c in table.columns) + str(table.title or "").count("…")
    if probe.file.getvalue().count("…") <= own:
        console.print(table)
        return
    if table.title:
        console.print(table.title)
    heads = ["\xa0".join(str(c.header).replace("-\n", "").split()) for c in table.columns]
    cells = [list(c.cells) for c in table.columns]
    for r, row in enumerate(table.rows):
        # a value's own spaces, and the one after its heading, never break a line
        values = [("\xa0", " ")[c.no_wrap is False].join(str(col[r]).split())
                  for c, col in zip(table.columns, cells)]
        pairs = [f"{h}:\xa0{v}" for h, v in zip(heads[1:], values[1:]) if v]
        first = values[0] if heads[0] in values[0] else f"{heads[0]}\xa0{values[0]}"
        text = f"{first} — " + ", ".join(pairs) if pairs else first
        for line in textwrap.wrap(text, console.width, initial_indent="  ",
                                  subsequent_indent="    ", break_long_words=False,
                                  break_on_hyphens=False):
            console.print(styled(console, line.replace("\xa0", " "), row.style or ""))


def print_wrapped(console, label, text, style=None):
    """``label`` then ``text`` broken between words, the broken lines under
    the text's start, not under the label (a player's totals)."""
    from rich.table import Table

    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(label, console.render_str(text) if style is None
                 else styled(console, text, style[0], 0, style[1]))
    console.print(grid)
