"""Players' names from the pairing program (``--pairings FILE``, contract 1.3).

The file is what pairing programs export: CSV in UTF-8 (a BOM is allowed),
comma, semicolon or tab separated, a header row naming the columns ``table``,
``A`` and ``B`` (any case, any order, other columns ignored) and optionally
``round``.  ``table`` is the clock's name (``table-5``) or the table's number
(``5`` names the clock whose name ends in that number: ``table-5``,
``table-05``).  A row without ``round`` holds for every round.

A name longer than ``NAME_MAX`` is shortened one way everywhere it is shown
(``short``): first names to initials, then the surname cut with "…"."""
import csv
import io
import re

from ..errors import BadInput

NAME_MAX = 18
COLUMNS = ("table", "a", "b")


def short(name, width=NAME_MAX):
    """``name`` in at most ``width`` characters, the same way in every view:
    'Jana Marie Nováková' -> 'J. M. Nováková', then 'Nováková-Dvořáková…'."""
    name = " ".join(name.split())
    if len(name) <= width:
        return name
    words = name.split(" ")
    if len(words) > 1:
        name = " ".join([w[0] + "." for w in words[:-1]] + [words[-1]])
        if len(name) <= width:
            return name
    return name[:width - 1] + "…"


def _number(clock):
    m = re.search(r"(\d+)$", clock)
    return int(m.group(1)) if m else None


class Pairings:
    """(round or None, table) -> (A, B), from one file."""

    def __init__(self, path, rows):
        self.path = path
        self.rows = rows

    def names(self, clock, round_=None):
        """(A, B) of the clock's table in ``round_`` (a row without a round
        holds for every round), or None."""
        for key in ((round_, clock), (None, clock)):
            if key in self.rows:
                return self.rows[key]
        n = _number(clock)
        if n is not None:
            for key in ((round_, n), (None, n)):
                if key in self.rows:
                    return self.rows[key]
        return None

    def shown(self, clock, round_=None):
        """(A, B) shortened as every view shows them (``short``), or None."""
        got = self.names(clock, round_)
        return (short(got[0]), short(got[1])) if got else None

    def label(self, clock, round_=None):
        """'Nováková vs Dvořák' (shortened names), or '' if the file has no such table."""
        got = self.shown(clock, round_)
        return f"{got[0]} vs {got[1]}" if got else ""


def load(path):
    """The pairings in ``path``; a bad file is refused in one line naming its
    line and what is wrong."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise BadInput(f"cannot read the pairings {path}: {e.strerror or e}; "
                       "give the CSV the pairing program exported") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise BadInput(f"{path} line {line}: not UTF-8; export the pairings as CSV in "
                       "UTF-8") from None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise BadInput(f"{path} line 1: no header; the first row names the columns "
                       "table, A and B")
    delimiter = max(",;\t", key=lines[0].count)
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = [h.strip().lower() for h in next(reader)]
    except csv.Error as e:
        raise BadInput(f"{path} line 1: {e}") from None
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise BadInput(f"{path} line 1: the header names {', '.join(header) or 'nothing'}; "
                       f"it must name table, A and B (missing: "
                       f"{', '.join(c if c == 'table' else c.upper() for c in missing)})")
    at = {c: header.index(c) for c in COLUMNS + ("round",) if c in header}
    rows = {}
    where = {}
    try:
        for row in reader:
            n = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) < len(header):
                raise BadInput(f"{path} line {n}: {len(row)} fields, the header has "
                               f"{len(header)}")
            cells = {c: row[i].strip() for c, i in at.items()}
            for c in COLUMNS:
                if not cells[c]:
                    raise BadInput(f"{path} line {n}: no {c if c == 'table' else c.upper()}")
            round_ = None
            if cells.get("round"):
                if not cells["round"].isdigit() or int(cells["round"]) < 1:
                    raise BadInput(f"{path} line {n}: round {cells['round']!r} is not a "
                                   "round number (1, 2, …)")
                round_ = int(cells["round"])
            table = int(cells["table"]) if cells["table"].isdigit() else cells["table"]
            if any(ord(ch) < 32 or 127 <= ord(ch) < 160
                   for c in COLUMNS for ch in cells[c]):
                raise BadInput(f"{path} line {n}: a control character in a name or table")
            key = (round_, table)
            if key in rows:
                raise BadInput(f"{path} line {n}: table {cells['table']} "
                               + (f"in round {round_} " if round_ else "")
                               + f"is paired already on line {where[key]}")
            rows[key] = (cells["a"], cells["b"])
            where[key] = n
    except csv.Error as e:
        raise BadInput(f"{path} line {reader.line_num}: {e}") from None
    if not rows:
        raise BadInput(f"{path}: a header but no table; one row a table: table,A,B")
    return Pairings(path, rows)


def apply(games, pairings):
    """Each game's ``names`` (A, B) from ``pairings`` (by its clock and round)."""
    if pairings is None:
        return games
    for g in games:
        g.names = pairings.names(g.clock, g.round)
    return games
