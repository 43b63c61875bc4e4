"""Health reports in logs compared by the tests: a clock makes its own
health reports (hw/device.py's one_pass), whose machine figures differ
between interpreters and whose moments differ between a virtual clock and a
board; these put two logs on the same footing before they are compared."""

# The figures of a health record that belong to the interpreter and the
# machine, not to the clock's rules: the heaps (CPython has none; the unix
# port's are 64-bit), the pass lengths, the versions and partitions.
MACHINE_FIGURES = ("gc_used", "gc_free", "gc_largest", "longest_pass_ms", "idf_free",
                   "idf_largest", "idf", "micropython", "partitions", "port")
MASK = "*"


def health_masked(records):
    """The log with each health record's machine figures (MACHINE_FIGURES)
    replaced by ``MASK``: what every interpreter and link must write alike
    (the reports' seq and t_ms, when they come, the firmware version), so
    two runs of one game compare equal, schedule of reports included."""
    out = []
    for r in records:
        if r.get("event") == "health":
            r = {k: (MASK if k in MACHINE_FIGURES else v) for k, v in r.items()}
        out.append(r)
    return out


def without_health(records):
    """The log as a clock that makes no health reports would have written it:
    health records dropped, every later ``seq`` (and a power_loss's
    ``last_seq``) of the same session lowered by the reports up to it.  A
    ``last_seq`` that names a health report itself (the old session's last
    stored event was the report, e.g. the one at boot before a power cut)
    becomes the event before it, the last one such a clock would have stored,
    so ``seq`` stays ``last_seq + 1``.  For a log of a clock whose reports
    come at other moments than a virtual clock's (a board, whose passes
    follow real time), compared by the rules alone; two virtual clocks
    compare with their reports (``health_masked``)."""
    removed = {}  # (clock, session) -> sorted seqs of its health records
    for r in records:
        if r.get("event") == "health" and isinstance(r.get("seq"), int):
            removed.setdefault((r.get("clock"), r.get("session")), []).append(r["seq"])
    out = []
    for r in records:
        if r.get("event") == "health":
            continue
        gone = removed.get((r.get("clock"), r.get("session")))
        if gone:
            r = dict(r)
            for key in ("seq", "last_seq"):
                if isinstance(r.get(key), int):
                    r[key] -= sum(1 for s in gone if s <= r[key])
        out.append(r)
    return out
