"""The program a clock runs (``main.py`` calls ``run``): configuration, the
self-test when START is held at power-on, then the App in an event-driven loop.

It gets the hardware as one object (``hw/esp32.py`` builds the real one; tests
build one on fake pins), so this module never imports ``machine``:

    hw.panel            the front panel (hw/panel.py)
    hw.uart             the link to the host: any(), readinto(buf), write(data),
                        kbd_intr(char) (the console's Ctrl-C: -1 off, 3 on)
    hw.ticks_ms()       the millisecond tick counter
    hw.wait(due)        sleep until tick ``due``, a button edge or host bytes
    hw.read_config()    the text of hallclock.cfg, or None
    hw.save_settings(mode, values)  optional: set-up at the clock saves hallclock.cfg
    hw.default_clock    the clock name when the file gives none
    hw.session_id()     8 hex digits, new at every power-on
    hw.console(text)    a line for a person on the USB console (not on the tick path)
    hw.set_brightness(level)
    hw.use_network(cfg)  optional: hw.uart becomes the hall-network link (hw/wifi.py)

    hw.watchdog(ms)     optional: a started watchdog (feed()); hw.watchdog_off()
                        keeps feeding it once the console is handed back
    hw.heap_figures()   optional: (largest free GC block or -1, IDF heap free,
                        IDF largest free block), -1 where the port has no figure
    hw.info_text()      optional: the versions and partitions ``hallclock doctor`` asks for

Garbage collection happens at moments the loop chooses (docs/micropython.md,
"GC at our moments"): the event ring is allocated first, when this module is
imported (``link.reserve``); at the end of boot hw/boot.py reserves the
emergency exception buffer and sets ``gc.threshold`` to a fixed number of
bytes; the loop collects when it is idle and the next deadline is at least
``_GC_IDLE_MS`` away.  Boot-only code (hw/boot.py: config parsing, the
self-test, the collector's set-up; the board's hw/esp32rare.py) is imported
lazily and dropped again after boot (docs/micropython.md "Boot-only code").

The loop feeds the watchdog every pass (``WDT_MS``: a healthy pass sleeps at
most ``app._MAX_SLEEP`` = 1 s) and reports a ``health`` event at boot, every
``_HEALTH_MS`` and when the host asks (``I``): docs/hardware.md.
"""
import gc
import sys

from micropython import const

from ..link import reserve

reserve()  # the event ring first: one block before other imports fragment the heap

from .. import VERSION  # noqa: E402
from ..app import _MICROPYTHON, App  # noqa: E402
from ..core.timing import ticks_add, ticks_diff  # noqa: E402
from ..events import NULL  # noqa: E402

_GC_IDLE_MS = const(10)  # collect only when the next pass is at least this far away
_GC_EVERY_MS = const(900)  # ... and at most about once a second,
_GC_GARBAGE = const(1024)  # ... unless this much garbage built up (a burst of resends)
# [loop's collections, heap before the last, its tick, app.events then, heap after it]
GC = [0, 0, 0, 0, 0]
WDT_MS = const(10000)  # the watchdog's timeout: ten times the longest healthy pass
_HEALTH_MS = const(600000)  # a health event every 10 minutes (and at boot)
# _MICROPYTHON (app.py's): on CPython the heap's steps here do nothing


def idle_collect(now, due, events=0):
    """Collect now if the next deadline is at least _GC_IDLE_MS away and
    events were made since the last collection, or _GC_GARBAGE bytes of
    garbage built up (resends after an outage), or _GC_EVERY_MS passed (the
    host's frames)."""
    if not _MICROPYTHON or ticks_diff(due, now) < _GC_IDLE_MS:
        return False
    used = gc.mem_alloc()
    if GC[0] and events == GC[3] and ticks_diff(now, GC[2]) < _GC_EVERY_MS \
            and used - GC[4] < _GC_GARBAGE:
        return False
    GC[1] = used
    gc.collect()
    GC[0] += 1
    GC[2] = now
    GC[3] = events
    GC[4] = gc.mem_alloc()
    return True


# the link is the console (docs/hardware.md): a 0x03 on it is line noise, not Ctrl-C
_KBD_OFF = const(-1)
_KBD_CTRL_C = const(3)


def shed(app):
    """Drop what the App needs only to build a core or take new settings:
    settings.py (the catalogue and its parser), modes.py, events.py (every
    importer holds its own copy of the constants), and the cores of the
    modes not running.  After boot, and after the host's settings, a restore
    or set-up at the clock (app.py calls ``app.shed``); the next of those
    imports them again (docs/micropython.md "Boot-only code")."""
    from ..forget import forget
    modes = sys.modules.get("hallclock_fw.modes")
    if modes is not None:
        for mode in modes.CORES:
            if mode != app.mode:
                forget("hallclock_fw.core." + mode)
    forget("hallclock_fw.modes")
    forget("hallclock_fw.settings")
    forget("hallclock_fw.events")


def make_app(panel, uart, mode, settings, clock, sid, now):
    """The clock on its link, the console's keyboard interrupt off, the
    modules only boot needed dropped (``shed``).  The board (``start``) and
    the virtual device (vdev/runner.py) both build it here."""
    uart.kbd_intr(_KBD_OFF)
    app = App(panel, uart, mode, settings, clock, sid, now)
    app.shed = shed
    shed(app)
    return app


def hand_back(uart):
    """The console back to the REPL: Ctrl-C works again (mpremote needs it)."""
    uart.kbd_intr(_KBD_CTRL_C)


def start(hw):
    """Configuration and self-test, then the App (not yet looping), or None
    when PAUSE is held at power-on: boot-only code in hw/boot.py (the
    collector's set-up too), dropped again once the App is built, and a
    collection that frees it."""
    from . import boot
    app = boot.start(hw, make_app)
    del boot
    from ..forget import forget
    forget("hallclock_fw.hw.boot")
    if _MICROPYTHON:
        gc.collect()
    return app


def heap_text(hw, info=False):
    """(used, free, largest free GC block, text) for a health event: the GC
    heap after a collection, the IDF heap's free and largest block where the
    port has them (text ``idf=<free>,<largest>``), and with ``info`` the
    versions and partitions (``hw.info_text``)."""
    used = free = largest = NULL  # (CPython: no such heap)
    if _MICROPYTHON:
        gc.collect()
        used = gc.mem_alloc()
        free = gc.mem_free()
    text = None
    figures = getattr(hw, "heap_figures", None)
    if figures is not None:
        largest, idf_free, idf_largest = figures()
        if idf_free >= 0:
            text = "idf=%d,%d" % (idf_free, idf_largest)
    if info:
        more = "fw=" + VERSION + getattr(hw, "cfg_note", "")  # ";cfg=<code>": boot.py
        fn = getattr(hw, "info_text", None)
        if fn is not None:
            more = more + ";" + fn()
        text = more if text is None else more + ";" + text
    return used, free, largest, text


def health_state(now):
    """[longest pass since the last health event (ms), tick of the next
    one]: one per running App (a host process may run many virtual clocks);
    the first pass from ``now`` reports."""
    return [0, now]


def report_health(hw, app, now, health, info=False):
    """A health event now; the next periodic one _HEALTH_MS later."""
    used, free, largest, text = heap_text(hw, info)
    app.health(now, used, free, largest, health[0], text)
    health[0] = 0
    health[1] = ticks_add(now, _HEALTH_MS)


def one_pass(hw, app, now, health):
    """One pass of the loop at tick ``now``: first a health event if one is
    owed (the host's ``I``, the first pass after boot, _HEALTH_MS after the
    last one), then the App's pass; its length (``hw.ticks_ms``) is kept for
    the next report.  The board's loop and every virtual clock (the host's
    Runner, under any interpreter, on any link) run their passes here."""
    link = app.link
    if link.info_owed:
        link.info_owed = False
        report_health(hw, app, now, health, True)
    elif ticks_diff(now, health[1]) >= 0:
        report_health(hw, app, now, health)
    app.step(now)
    took = ticks_diff(hw.ticks_ms(), now)
    if took > health[0]:
        health[0] = took


def loop(hw, app, passes=-1):
    """The device loop: one pass, then sleep until the app's next wake-up (a
    deadline, a signal edge, a display change) or a button or host byte.
    ``passes`` < 0: for ever (tests give a number).  Ends early when the host
    asked for the console (an ``M`` frame, docs/protocol.md "Maintenance").
    Feeds the watchdog every pass; a pass that hangs (or a loop that died)
    lets it restart the board.  Health events: at the first pass, every
    _HEALTH_MS, and when the host asks (``I``)."""
    ticks_ms = hw.ticks_ms
    wait = hw.wait
    link = app.link
    start_wdt = getattr(hw, "watchdog", None)
    wdt = start_wdt(WDT_MS) if start_wdt is not None else None
    health = health_state(ticks_ms())
    while passes != 0 and not link.maintenance:
        now = ticks_ms()
        if wdt is not None:
            wdt.feed()
        one_pass(hw, app, now, health)
        due = app.next_wake(now)
        idle_collect(now, due, app.events)
        wait(due)
        if passes > 0:
            passes -= 1
    if wdt is not None and hasattr(hw, "watchdog_off"):
        hw.watchdog_off()  # the console is handed back: nobody feeds it from the loop


def run(hw):
    """The clock until the host asks for the console; then back to main.py
    and the REPL.  PAUSE held at power-on: no clock, the console stays with
    the REPL (maintenance when the firmware itself is broken; hw/boot.py)."""
    app = start(hw)
    if app is None:
        return
    try:
        loop(hw, app)
    finally:  # a crash too: main.py's 3 s before the reset can be Ctrl-C'd
        hand_back(hw.uart)
    hw.console("hallclock: console handed back for maintenance; the clock has stopped "
               "(reset the board to start it again)")
