"""The clock's own margins, host side: the ``health`` event's text, the
summary per clock that ``hallclock report`` prints, and what ``hallclock
doctor`` calls short (docs/hardware.md "The health event").

A health event carries four integers (catalog.EVENTS: gc_used, gc_free,
gc_largest, longest_pass_ms) and a text of ``;``-separated parts:

    idf=<free>,<largest>        the IDF heap (Wi-Fi's and the sockets' memory),
                                where the port has esp32.idf_heap_info
    fw=<version>                answering the host's I frame: hallclock_fw.VERSION
    mp=<a.b.c>                  ... MicroPython's version
    part=<label>:<KiB>,...      ... the flash partitions (esp32.Partition)
"""
from hallclock_fw.hw.boot import GC_THRESHOLD

GC_AREA = 56000  # the ESP32's first GC area since MicroPython 1.22 (docs/micropython.md)
IDF_FREE_MIN = 32768  # Wi-Fi takes 28-46 KB of the IDF heap, each lwIP socket 4-7 KB
IDF_BLOCK_MIN = 8192  # a socket's buffers in one piece
PASS_MAX_MS = 5000  # half the watchdog's timeout (hw/device.py _WDT_MS)
MP_MIN = (1, 22, 0)  # the heap model (one 56 000-byte area that grows) holds from here


def health_fields(text):
    """The fields of a health event's text (unknown parts are kept as text)."""
    out = {}
    for part in (text or "").split(";"):
        key, _eq, value = part.partition("=")
        if not key:
            continue
        if key == "idf":
            free, _c, largest = value.partition(",")
            try:
                out["idf_free"] = int(free)
                out["idf_largest"] = int(largest)
            except ValueError:
                out["idf"] = value
        elif key == "fw":
            out["firmware"] = value
        elif key == "mp":
            out["micropython"] = value
        elif key == "part":
            parts = {}
            for item in value.split(","):
                label, _c, kib = item.partition(":")
                if label:
                    parts[label] = int(kib) if kib.isdigit() else kib
            out["partitions"] = parts
        else:
            out[key] = value
    return out


def _version(text):
    try:
        return tuple(int(x) for x in str(text).split("."))
    except ValueError:
        return None


# The ports a virtual board runs on (the health text's ``port=``: hw info_text):
# their GC heap holds the virtual device's harness beside the firmware (the
# unix port's words are 64-bit too), so its figure says nothing of the ESP32's
# first area (bench/heap32.py measures that); they have no ESP-IDF and no flash
# partitions.
VIRTUAL_PORTS = {"unix": "the unix port", "webassembly": "the webassembly port"}


def virtual_port(rec):
    """The virtual board's port a health record comes from, or None (a board,
    or a clock that does not say)."""
    port = rec.get("port")
    return port if port in VIRTUAL_PORTS else None


def cannot_know(rec):
    """What a virtual board cannot know of an ESP32's figures: one sentence
    each, said instead of calling them short (doctor, the report's health)."""
    port = virtual_port(rec)
    if port is None:
        return []
    out = []
    if isinstance(rec.get("gc_used"), int):
        out.append(f"the GC heap against the ESP32's first {GC_AREA} B area ({VIRTUAL_PORTS[port]}'s "
                   "heap holds the virtual device beside the firmware; bench/heap32.py "
                   "measures every clock against that area)")
    if not isinstance(rec.get("idf_free"), int) or rec["idf_free"] < 0:
        out.append("the IDF heap (no ESP-IDF, no Wi-Fi: on a board, doctor reports it)")
    if not rec.get("partitions"):
        out.append("the flash partitions (a virtual board has none)")
    return out


def shortfalls(rec, network=None):
    """What a health record says is short: one plain sentence each (only what
    is short on that board: a virtual board's GC figure is not an ESP32's,
    ``cannot_know``)."""
    out = []
    used = rec.get("gc_used")
    if isinstance(used, int) and used + GC_THRESHOLD > GC_AREA and virtual_port(rec) is None:
        out.append(f"GC heap: {used} B live leaves less than the collection threshold "
                   f"({GC_THRESHOLD} B) inside the first {GC_AREA} B area: the heap will "
                   "grow into the memory Wi-Fi needs (docs/micropython.md)")
    idf_free, idf_largest = rec.get("idf_free"), rec.get("idf_largest")
    if isinstance(idf_free, int) and idf_free >= 0 and network is not False:
        if idf_free < IDF_FREE_MIN:
            out.append(f"IDF heap: {idf_free} B free, under {IDF_FREE_MIN} B: Wi-Fi and its "
                       "sockets may drop packets (ENOBUFS)")
        elif isinstance(idf_largest, int) and 0 <= idf_largest < IDF_BLOCK_MIN:
            out.append(f"IDF heap: largest free block {idf_largest} B, under "
                       f"{IDF_BLOCK_MIN} B: a new socket may not get its buffers")
    longest = rec.get("longest_pass_ms")
    if isinstance(longest, int) and longest > PASS_MAX_MS:
        out.append(f"a pass of the loop took {longest} ms, more than half the watchdog's "
                   "10 s: a longer one restarts the clock")
    mp = rec.get("micropython")
    if mp is not None:
        v = _version(mp)
        if v is not None and v < MP_MIN:
            out.append(f"MicroPython {mp} is older than 1.22: flash a current ESP32_GENERIC "
                       "image (make flash)")
    fw = rec.get("firmware")
    if fw is not None:
        from hallclock_fw import VERSION
        if fw != VERSION:
            out.append(f"firmware {fw} on the clock, {VERSION} on this host: make deploy")
    parts = rec.get("partitions")
    if isinstance(parts, dict) and parts and "vfs" not in parts and "ffat" not in parts:
        out.append("no vfs partition: the firmware has nowhere to live (flash a stock image)")
    cfg = rec.get("cfg")
    if cfg is not None:
        out.append(cfg_refused(cfg))
    return out


# One TLS connection to the broker on the clock (bench/tlscost.py, docs/network.md
# "Does TLS fit the clock?"): mbedTLS holds 24-27 KB of the IDF heap (28 KB taken),
# its 16 KiB in-record buffer (and its header) in one block
TLS_IDF_BYTES = 28672
TLS_BLOCK_BYTES = 17408


# The modes whose clock's GC heap has room for the TLS link (bench/tlscost.py on
# heap32's Wi-Fi peaks, docs/network.md "TLS on the clock": about 4 800 B more)
TLS_GC_MODES = ("duplicate",)


def tls_gc_note(mode):
    """None, or the doctor's sentence when a clock of ``mode`` on TLS would
    outgrow the first GC area whatever its IDF heap says."""
    if mode is None or mode in TLS_GC_MODES:
        return None
    return (f"but a {mode} clock on TLS would outgrow the first GC area (its TLS link: about "
            f"4 800 B more; it fits a {', '.join(TLS_GC_MODES)} clock only): keep it on plain "
            "MQTT (docs/network.md \"TLS on the clock\")")


def tls_fits(rec):
    """None (the clock reports no IDF heap), or (fits, sentence): whether the
    IDF heap this health record shows leaves the doctor's floor after one TLS
    connection to the broker."""
    idf_free, idf_largest = rec.get("idf_free"), rec.get("idf_largest")
    if not isinstance(idf_free, int) or idf_free < 0 or not isinstance(idf_largest, int):
        return None
    need = IDF_FREE_MIN + TLS_IDF_BYTES
    if idf_free >= need and idf_largest >= TLS_BLOCK_BYTES:
        return True, (f"TLS to the broker would fit: {idf_free} B of IDF heap free (needs "
                      f"{need}: {TLS_IDF_BYTES} for the connection, {IDF_FREE_MIN} left to "
                      f"Wi-Fi), largest block {idf_largest} B (needs {TLS_BLOCK_BYTES})")
    return False, (f"TLS to the broker would not fit: {idf_free} B of IDF heap free, largest "
                   f"block {idf_largest} B (needs {need} and {TLS_BLOCK_BYTES}); keep this "
                   "clock on plain MQTT (docs/network.md \"Does TLS fit the clock?\")")


def cfg_refused(code):
    """The doctor's sentence for a health text's ``cfg=<code>`` (hw/config.py)."""
    from ..whytext import CFG_WORDS
    try:
        n = int(code)
    except (TypeError, ValueError):
        n = None
    what = CFG_WORDS.get(n, "a fault this host does not know")
    return (f"hallclock.cfg refused (CFG{code}: {what}): the clock runs on its defaults, "
            "over USB, not on the hall network; the clock's console line names the line; "
            "write the file again (hallclock deploy, or broker-config's names)")


def per_clock(records):
    """{clock: summary} of the health records of a log, in order of appearance."""
    out = {}
    for rec in records:
        if rec.get("event") != "health":
            continue
        s = out.setdefault(str(rec.get("clock")), {"reports": 0, "last": None})
        s["reports"] += 1
        s["last"] = rec
        for key, pick in (("gc_used", max), ("gc_free", min), ("gc_largest", min),
                          ("idf_free", min), ("idf_largest", min), ("longest_pass_ms", max)):
            v = rec.get(key)
            if not isinstance(v, int) or v < 0:
                continue
            s[key] = v if key not in s else pick(s[key], v)
    return out


def summary_lines(records):
    """The report's lines: per clock the worst figure of each kind."""
    lines = []
    for clock, s in per_clock(records).items():
        lines.append(f"health {clock}: {s['reports']} report(s); longest pass "
                     f"{s.get('longest_pass_ms', 0)} ms")
        if "gc_used" in s:
            lines.append(f"  GC heap: at most {s['gc_used']} B live, margin "
                         f"{GC_AREA - s['gc_used']} B to {GC_AREA} B")
        if "gc_free" in s:
            lines.append(f"  GC free: at least {s['gc_free']} B"
                         + (f", largest block {s['gc_largest']} B" if "gc_largest" in s else ""))
        if "idf_free" in s:
            lines.append(f"  IDF heap: at least {s['idf_free']} B free, largest block "
                         f"{s.get('idf_largest', '?')} B")
        worst = dict(s["last"])
        worst.update({k: v for k, v in s.items() if k not in ("reports", "last")})
        for short in shortfalls(worst):
            lines.append(f"  short: {short}")
        for unknown in cannot_know(worst):
            lines.append(f"  cannot know here: {unknown}")
    return lines


def print_health(games, console):
    """``hallclock report``: the health summary of every clock in the games."""
    records = [r for g in games for r in g.records]
    for line in summary_lines(records):
        console.print(line, markup=False)
