"""``hallclock audit LOG LOG…``: do several copies of a log agree?  The hall's
log and the office's copy of it, a hot standby's log and the main one.  Per
clock and session: how many records each log holds, the seqs each one lacks
(as ranges), seqs a log holds twice, and seqs whose records differ between
copies (the fields the host adds, hallclock.link.logfile.HOST_FIELDS, aside).
Exit 0 only when every log holds the same records once each; 1 when they
disagree; 2 for a log that cannot be read (docs/host.md "Do two logs agree").
"""
import json

from ..errors import BadInput, shown

GROUP = "report"  # the director's task (hallclock.cliopts.GROUPS)


def register(sub):
    p = sub.add_parser("audit", help="do copies of a log agree (the hall's and the "
                       "office's, a standby's and the main one)? exit 0 only if they do")
    p.add_argument("logs", nargs="+", metavar="LOG",
                   help="the logs to compare (two or more, JSON Lines)")
    p.set_defaults(func=cmd_audit)


def read_copy(path):
    """(records, torn) of one log: every record, and whether its last line is
    a record cut short by a crash (not counted: its record is missing).  Any
    other line that is not a record makes the log unreadable: BadInput."""
    from ..link.logfile import is_torn_record
    from ..views.figures import read_log
    records, skipped = read_log(path, strict=False)
    torn = False
    if skipped:
        with open(path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        last = len(lines)  # the line number of the last line, b"" if it ends with \n
        for lineno, why in skipped:
            if lineno == last and is_torn_record(lines[-1]):
                torn = True
                continue
            raise BadInput(f"{path}: line {lineno} is not a log record ({why}); give the "
                           "logs as their loggers wrote them")
    return records, torn


def _key(v):
    """A sort key for a session id (string, int, or None)."""
    return (v is None, str(type(v)), v if v is not None else "")


def _natural(name):
    import re
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def audit(copies):
    """``copies``: [records of each log].  Returns [row] per clock and session
    in natural order, each a dict: clock, session, held [count per log],
    missing [[(first, last)] per log], doubled [[seq] per log], differing
    [seq], shared [(first, last)] (what every log lacks), and ``agree``.
    Missing seqs are kept as ranges: a log claiming seq 2**53 costs nothing."""
    from ..link.logfile import clock_part
    n = len(copies)
    found = {}  # (clock, session) -> seq -> [list of canonical texts per log]
    for i, records in enumerate(copies):
        for rec in records:
            seqs = found.setdefault((rec["clock"], rec.get("session")), {})
            per = seqs.setdefault(rec["seq"], [[] for _ in range(n)])
            if rec["event"] == "gap":
                # the host's note that the clock overwrote these before they were
                # stored: its own seq and ``missing`` are not held in this log
                continue
            per[i].append(json.dumps(clock_part(rec), sort_keys=True, ensure_ascii=False))
    rows = []
    for key in sorted(found, key=lambda k: (_natural(k[0]), _key(k[1]))):
        seqs = found[key]
        last = max(seqs)  # seq is 1, 2, 3, … within a session (contract): 1..last
        held = [sorted(s for s in seqs if seqs[s][i]) for i in range(n)]
        doubled = [[s for s in sorted(seqs) if len(seqs[s][i]) > 1] for i in range(n)]
        differing = [s for s in sorted(seqs)
                     if len({t for per in seqs[s] for t in per}) > 1]
        # what every log lacks: a gap they share (the clock's ring overflowed,
        # or it was lost before any of them stored it); the logs still agree
        shared = _lacking(sorted(s for s in seqs if any(seqs[s])), last)
        agree = all(h == held[0] for h in held) and not any(doubled) and not differing
        rows.append({"clock": key[0], "session": key[1], "held": [len(h) for h in held],
                     "missing": [_lacking(h, last) for h in held], "doubled": doubled,
                     "differing": differing, "shared": shared, "agree": agree})
    return rows


def _lacking(held, last):
    """[(first, last)] of 1..``last`` not in ``held`` (sorted)."""
    out = []
    nxt = 1
    for s in held:
        if s > nxt:
            out.append((nxt, s - 1))
        nxt = max(nxt, s + 1)
    if nxt <= last:
        out.append((nxt, last))
    return out


def ranges(seqs):
    """[1, 2, 3, 7, 9, 10] or [(1, 3), (7, 7), (9, 10)] -> '1-3, 7, 9-10' ('-' for none)."""
    spans = []
    for s in seqs:
        lo, hi = s if isinstance(s, tuple) else (s, s)
        if spans and lo == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], hi)
        else:
            spans.append((lo, hi))
    return ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in spans) or "-"


def cmd_audit(args):
    from rich.table import Table
    from ..views.terminal import console, print_table
    if len(args.logs) < 2:
        raise BadInput("audit compares two or more logs: give the hall's log and its copy "
                       "(hallclock audit LOG LOG…)")
    copies, torn = [], []
    for path in args.logs:
        records, cut = read_copy(path)
        copies.append(records)
        torn.append(cut)
    rows = audit(copies)
    out = console()
    names = [f"log {i + 1}" for i in range(len(args.logs))]
    for name, path, cut in zip(names, args.logs, torn):
        note = " (its last line was cut short by a crash: not counted)" if cut else ""
        out.print(f"{name}: {shown(path)}{note}", soft_wrap=True)  # a path is never broken
    table = Table(title=None, show_lines=False)
    table.add_column("clock")
    table.add_column("session")
    for name in names:
        table.add_column(f"records in {name}", justify="right")
    for name in names:
        table.add_column(f"missing in {name}")
    table.add_column("doubled")
    table.add_column("differing")
    table.add_column("verdict")
    for row in rows:
        doubled = "; ".join(f"{name}: {ranges(d)}" for name, d in zip(names, row["doubled"]) if d)
        verdict = "agree" if row["agree"] else "DISAGREE"
        if row["agree"] and row["shared"]:
            verdict = f"agree (all lack {ranges(row['shared'])})"
        table.add_row(row["clock"], "-" if row["session"] is None else str(row["session"]),
                      *[str(h) for h in row["held"]], *[ranges(m) for m in row["missing"]],
                      doubled or "-", ranges(row["differing"]), verdict,
                      style=None if row["agree"] else "bold red")
    print_table(out, table)
    bad = [r for r in rows if not r["agree"]]
    sessions = len(rows)
    clocks = len({r["clock"] for r in rows})
    if bad:
        out.print(f"the logs disagree: {len(bad)} of {_n(sessions, 'session')} "
                  f"({len({r['clock'] for r in bad})} of {_n(clocks, 'clock')})")
        return 1
    records = sum(r["held"][0] for r in rows)
    out.print(f"the logs agree: {_n(clocks, 'clock')}, {_n(sessions, 'session')}, "
              f"{_n(records, 'record')} each")
    return 0


def _n(count, noun):
    return f"{count} {noun}{'' if count == 1 else 's'}"
