"""The display property, shared by tests/test_display_property.py (bounded,
in ``make test``) and bench/display.py (a longer run in ``make bench``):
random scenarios of every mode and delay kind run on the virtual device with
the real host link (``lockstep.Lockstep``), and at every change of a device
display the host shows exactly those digits -- the model, the live view's
row and the hall display's answer for that clock."""
from hypothesis import strategies as st

from hallclock.views.model import restore_for
from hallclock.views.liveview import row_cells
from hallclock.views.model import Clocks, epoch_of
from hallclock.hall.display import face as hall_face
from hallclock_fw.events import BUTTON_NAMES
from hallclock import hostframes
from hallclock_fw import settings
from hallclock_fw.settings import format_text, parse
from lockstep import Lockstep

WRAP = (1 << 30) - 30000  # ticks wrap 30 s into the game


def all_kinds():
    """Every mode of the registry, a mode with a delay setting once per delay
    kind ("backgammon:fischer")."""
    out = []
    for mode in settings.MODES:
        if any(kind == "delay" for _key, kind, _d in settings.SPEC[mode]):
            out += ["%s:%s" % (mode, d) for d in settings.DELAY_KINDS]
        else:
            out.append(mode)
    return tuple(out)


@st.composite
def settings_for(draw, kind):
    mode, _, delay = kind.partition(":")
    if mode == "scrabble":
        move = draw(st.integers(8, 60))
        warn = sorted(draw(st.sets(st.integers(1, move - 1), max_size=3)), reverse=True)
        rmin = draw(st.integers(1, 3))
        return mode, ["move_s=%d" % move, "warn_s=" + ",".join(map(str, warn)),
                      "round_min=%d" % rmin, "round_warn_min=%d" % draw(st.integers(0, rmin - 1))]
    if mode == "duplicate":
        move = draw(st.integers(5, 40))
        ann = sorted(draw(st.sets(st.integers(1, move - 1), max_size=3)), reverse=True)
        return mode, ["move_s=%d" % move, "announce_s=" + ",".join(map(str, ann))]
    if mode == "backgammon":
        return mode, ["bank_s=%d" % draw(st.integers(10, 120)), "delay=" + delay,
                      "delay_s=%d" % draw(st.integers(0, 8))]
    return mode, []  # a mode not named here: its defaults


@st.composite
def scenario(draw, kinds=None, max_actions=16):
    """(mode, settings pairs, actions, start_ticks, loop period); ``kinds``:
    every mode of the registry (``all_kinds()``) unless given."""
    kinds = all_kinds() if kinds is None else kinds
    modes = sorted({k.partition(":")[0] for k in kinds})
    mode = draw(st.sampled_from(modes))  # every mode as often, then its delay kind
    kind = draw(st.sampled_from([k for k in kinds if k.partition(":")[0] == mode]))
    mode, pairs = draw(settings_for(kind))
    actions = []
    t = 0
    for _ in range(draw(st.integers(3, max_actions))):
        t += draw(st.integers(0, 20000))
        what = draw(st.sampled_from(("press",) * 6 + ("bounce", "command", "command", "hold",
                                                       "reboot")))
        button = draw(st.sampled_from(BUTTON_NAMES))
        if what == "hold":
            # a long press (from 1500 ms).  Not backgammon's PAUSE: asking for a
            # break emits nothing, so no log can show the break select (the
            # known gap, docs/design.md)
            if mode == "backgammon" and button == "PAUSE":
                continue
            actions.append((t, "hold", (button, draw(st.integers(1500, 2500)))))
            t += 2600
        elif what == "reboot":
            actions.append((t, "reboot", None))
        else:
            actions.append((t, what, button))
            t += 150  # one press at a time: the contact opens before the next
    actions.append((t + draw(st.integers(5000, 90000)), "end", None))
    start = draw(st.sampled_from((0, WRAP)))
    period = draw(st.sampled_from((None, None, (1, 20))))
    # frames the host sends of its own: settings (K, taken only while no game
    # runs; any mode, or unreadable) and the round (N: now, or a late join)
    frames = []
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, t))
        if draw(st.booleans()):
            other, other_pairs = draw(settings_for(draw(st.sampled_from(kinds))))
            text = settings_text(other, other_pairs) if draw(st.integers(0, 4)) else "x=1"
            frames.append((at, hostframes.configure(other, text)))
        else:
            frames.append((at, hostframes.round_number(draw(st.integers(1, 9)),
                                                     draw(st.sampled_from((0, 0, 30000))))))
        if frames[-1][1].startswith(b"K backgammon "):
            # the clock may become a backgammon clock: no break requests (see above)
            actions = [a for a in actions if a[1] != "hold" or a[2][0] != "PAUSE"]
    return mode, pairs, actions, start, period, tuple(frames)


def settings_text(mode, pairs):
    return format_text(mode, parse(mode, pairs))


def restore_at_last_heard(records, restored=None, say=None):
    """``restore_for`` with the wall clock stopped at the old session's last
    record.  The virtual device's outage takes no scenario time, but its run
    takes real time: with the real wall clock the round part of a restore
    grew with the machine's load (the lockstep run stamps records with the
    real host_time), so the same scenario gave other faces on a busy machine."""
    heard = [r for r in records if r.get("event") != "power_loss"]
    wall = epoch_of(heard[-1].get("host_time")) if heard else None
    return restore_for(records, wall=wall, restored=restored, say=say)


def check(mode, pairs, actions, start, period, frames=(), views=True, stats=None):
    """Run one scenario; at every display change (and every pass that brought
    records) compare.  Returns (display changes compared, model mismatches); ``stats`` (a dict) counts
    restores too.  Raises AssertionError with the first difference.

    After a reboot with ``--restore`` the game goes on with the time as it
    stood: the first displays after the clock took the restore are those of
    the old session when last heard (the host cannot know the outage), except
    the mover's display in a simple delay (the restored move's delay counts
    as spent: it shows the bank)."""
    run = Lockstep(mode, parse(mode, pairs), actions, start_ticks=start, period=period,
                   restore=restore_at_last_heard, host_frames=frames)
    clocks = Clocks()
    fed = 0
    compared = 0
    name = run.runner.clock_name
    shown = None  # the texts compared last (to count the changes)
    before = None  # the old session's face when last heard (a restore was sent)
    expect = None  # ... to compare at the next display change
    for t, texts in run.changes():
        while fed < len(run.records):
            rec = run.records[fed]
            fed += 1
            at = rec["t_ms"] / 1000.0 if rec.get("session") == run.session() else None
            c = clocks.get(name)
            if rec["event"] == "power_loss" and rec.get("restore") and c is not None:
                before = c.model.face()
                expect = None  # a restore taken and lost again before any pass showed it
            clocks.feed(rec, at)
        c = clocks.get(name)
        if before is not None and c.model is not None and c.model.session == run.session() \
                and c.model.inputs:
            # the clock took the restore and nothing else since: compare now
            if c.model.inputs[-1][1] == "restore":
                expect = before
            before = None  # taken (and compared), or the game went on without it
        c = clocks.get(name)
        f = c.model.face(t)
        where = (t, mode, pairs, actions, start, period, frames, c.model.inputs[-4:],
                 c.model.mismatches[:3])
        assert f.displays == texts, ("model", f.displays, texts, where)
        if expect is not None:
            same_time = list(expect.displays)
            if expect.player in ("A", "B"):
                side = ("A", "B").index(expect.player)
                shown = expect.shown[side]
                if shown is not None and shown < 0 and not expect.overtime:
                    same_time[side] = texts[side]  # a delay showed: it is spent, the bank shows
            assert list(texts) == same_time, ("restore", texts, expect.displays, where)
            if stats is not None:
                stats["restores"] = stats.get("restores", 0) + 1
            expect = None
        if views:
            host_now = t / 1000.0
            cells = row_cells(c, c.face(host_now))
            assert (cells["A"], cells["B"]) == (texts[0].strip(), texts[1].strip()), \
                ("live view", cells, texts, where)
            hall = hall_face(clocks, name, host_now)
            if hall["displays"] is None:  # a hall countdown, no players: its digits
                assert hall["digits"] == texts[0].strip(), ("hall display", hall, texts, where)
            else:
                assert hall["displays"] == [texts[0].strip(), texts[1].strip()], \
                    ("hall display", hall["displays"], texts, where)
        if texts != shown:
            shown = texts
            compared += 1
    while fed < len(run.records):
        clocks.feed(run.records[fed], None)
        fed += 1
    mismatches = [m for c in clocks for m in (c.model.mismatches if c.model else [])]
    return compared, mismatches
