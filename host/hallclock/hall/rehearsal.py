"""``hallclock rehearse``: a tournament day on virtual clocks through the real
host, every view checked against the day's plan (docs/hall.md "Rehearse the
day").

The **plan** (JSON, written to DIR/plan.json, read back with ``--plan``) holds
for every round and table the players' presses in the clock's own time (think
times, overtimes, pauses with their reasons: a challenge, a STOP, a pause that
goes on; a table that finishes early), the referee's actions (START round, a
manual GONG, the pauses he tags) and the faults.

The **day** runs with the real programs: the clocks are the real firmware on
ptys (``virtual-clocks``' own ``start_virtual_clocks`` pace and runner), set by
``hallclock configure``, logged by ``hallclock round start --wait`` (a process
of its own: a fault kills it with SIGKILL and starts it again on its log), the
referee's START, GONG and tags go through the console's own ``act``, and the
round's report and CSV are ``hallclock report --round``'s.

The **ground truth** is the plan's inputs played into the clock's own code
(``hallclock_fw``'s App and core, as ``views.model`` runs it), with the host's
frames (settings, the round's start, the GONG) at the times the clock logged
taking them: nothing here knows a clock rule or a time format.

With ``--transport mqtt`` the same day goes over the hall's Wi-Fi path: a
Mosquitto on ``hallclock broker-config``'s folder (DIR/broker, free localhost
ports), the clocks' own network link (the firmware's NetLink and MQTT client),
``configure`` and ``round start`` with ``--broker``, and a second laptop's
``hallclock view --plain`` whose lines are checked too; its faults are the
broker stopped and started again mid-round and that second laptop, and
``unplug`` is a clock's Wi-Fi gone for a minute (:class:`WifiPlug`).  Checked:

* the log: every event the clock's code gives for the plan, in order, with
  every field, and nothing else (``records lost`` counts what is missing);
* the report's CSV: each table's moves, time used, overtimes and pauses (with
  the referee's reasons) as the report's own figures give them for the truth;
  the report names every table (and its players with ``--pairings``);
* the views at checkpoints (``CHECKPOINTS`` a round, on the log as it stood
  then): the live view's row, the console's card and the projector's table
  line show the digits, move and pause the clock's code gives at the same
  device time; on MQTT the second laptop's line for each clock's newest timed
  record shows that record and the time left the clock's code gives then, and
  it showed every record of the log once.
"""
import csv
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

from hallclock_fw import settings as settings_mod
from hallclock_fw.events import BTN_GONG, BUTTON_NAMES
from hallclock_fw.hw.buttons import DEBOUNCE_MS

from ..errors import BadInput, HallclockError
from ..vboard.device import FdLine
from ..vboard.vdev.pump import WAIT_MS
from ..vboard.vdev.runner import RUNNING
from ..views.model import Clocks, Model, epoch_of

PLAN_VERSION = 1
CHECKPOINTS = 8  # view checkpoints a round
SHOW_VIEW_FAILURES = 5  # a view's failures printed a round (all are counted)
FAULTS = ("reboot", "unplug", "logger", "late")  # the default (docs/hall.md "Rehearse the day")
# the hall network's default
MQTT_FAULTS = ("reboot", "unplug", "logger", "broker", "late", "viewer")
KNOWN_FAULTS = ("reboot", "unplug", "logger", "late", "broker", "viewer")
ONLY = {"broker": "mqtt", "viewer": "mqtt"}  # a fault of one path alone
HALL = "rehearsal"  # the hall's name on the broker (--transport mqtt)
UNPLUG_MS = 60000  # a cable pulled for a minute of the clock's time
LINGER_S = 15.0  # every clock done: the logger's own --exit-on-end (it lingers <= 10 s)
REASONS = ("challenge", "stop", "dispute", "referee", "break")
ROUND_TIMEOUT_S = 600.0
CONNECT_S = 30.0  # a clock's or the view's way onto the broker, on a loaded laptop
VIEWER_END_S = 15.0  # the view's own --exit-on-end after the logger's, else Ctrl-C
CONFIGURE_WAIT_S = 10.0  # configure's --wait-s over MQTT
CATCH_UP_S = 60.0  # at most this long the hall's time waits for the host before a reboot
REBOOT_HOLD_S = 30.0  # the hall's time waits this long at most for a reboot's restore


class RehearsalError(HallclockError):
    exit_code = 1


class Interrupted(HallclockError):
    """The rehearsal stopped by Ctrl-C or SIGTERM: the CLI's interrupted exit."""
    exit_code = 130


# -- the programs it starts: none outlives it ----------------------------------------
_PR_SET_PDEATHSIG = 1
_CHILDREN = []  # every program the day started (each the leader of its own group)


def _prctl():
    """libc's prctl, looked up before any fork (None off Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def _die_with_parent(parent):
    """The child's last step before exec: SIGKILL when ``parent`` (the
    rehearsal's main thread, which forks every program) dies, even by SIGKILL."""
    def preexec():
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # it died before the prctl took hold
                os._exit(1)
    return preexec


def spawn(args, **kwargs):
    """A program of the day: its own process group (a fault or the end kills
    the group) and, on Linux, killed with the rehearsal however it ends."""
    proc = subprocess.Popen(args, start_new_session=True,
                            preexec_fn=_die_with_parent(os.getpid()), **kwargs)
    _CHILDREN.append(proc)
    return proc


def _killpg(pid, sig):
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_children(wait_s=3.0):
    """Every group the day started: SIGTERM, then SIGKILL to what is left
    after ``wait_s`` (a logger's records are fsync'd as they come)."""
    live = [p for p in _CHILDREN if p.poll() is None]
    for p in live:
        _killpg(p.pid, signal.SIGTERM)
    until = time.monotonic() + wait_s
    for p in live:
        try:
            p.wait(timeout=max(0.0, until - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in live:
        _killpg(p.pid, signal.SIGKILL)  # (the group's other members too)
        p.wait()
    _CHILDREN[:] = [p for p in _CHILDREN if p.poll() is None]


# -- the plan ------------------------------------------------------------------------
def parse_faults(text, transport="serial"):
    if text is None:
        return list(MQTT_FAULTS if transport == "mqtt" else FAULTS)
    if text == "none":
        return []
    out = [f.strip() for f in text.split(",") if f.strip()]
    bad = [f for f in out if f not in KNOWN_FAULTS]
    if bad or not out:
        raise BadInput(f"--faults {text!r}: give 'none' or a comma-separated list of "
                       f"{', '.join(KNOWN_FAULTS)}")
    check_faults(out, transport, f"--faults {text!r}")
    return out


def check_faults(faults, transport, what):
    wrong = [f for f in faults if ONLY.get(f, transport) != transport]
    if wrong:
        f = wrong[0]
        raise BadInput(f"{what}: '{f}' is a fault of --transport {ONLY[f]} (the hall network's "
                       f"broker and second laptop); this day is "
                       f"--transport {transport}")


def _lead_ms(speed):
    """Device ms the players wait before their first press: at least ``real_s``
    of real time at ``speed``, so configure and START come first."""
    return lambda real_s, least_ms: max(least_ms, int(speed * real_s * 1000))


def _game(rng, first_ms, stop_ms, limit_ms, end_early_ms=None):
    """One table's presses from ``first_ms`` (B starts A's first move) until
    ``stop_ms``: [(t_ms, action, arg)], and the planned reason of each pause
    (by its number, 1 first)."""
    acts = [(first_ms, "press", "B")]
    reasons = {}
    t = first_ms
    player = "A"
    other = {"A": "B", "B": "A"}
    stop = stop_ms if end_early_ms is None else end_early_ms
    while t < stop:
        roll = rng.random()
        if roll < 0.12:  # over the limit (10.2.6)
            t += limit_ms + rng.randint(1000, limit_ms // 3)
        elif roll < 0.30:  # a pause in the move
            t += rng.randint(5000, limit_ms // 3)
            acts.append((t, "press", "PAUSE"))
            kind = rng.choice(("challenge", "stop", "goon"))
            t += rng.randint(10000, 60000)
            n = len(reasons) + 1
            if kind == "challenge":  # the opponent's press: a fresh limit (9.1, 10.1)
                acts.append((t, "press", other[player]))
                reasons[n] = "challenge"
                t += rng.randint(5000, limit_ms * 2 // 3)
            elif kind == "stop":  # the paused player's own press ends the move (11.2)
                reasons[n] = "stop"
                acts.append((t, "press", player))
                player = other[player]
                continue
            else:  # PAUSE again: the time left as it stood (8.7.1)
                reasons[n] = rng.choice(("dispute", "referee", "break", None))
                acts.append((t, "press", "PAUSE"))
                t += rng.randint(3000, limit_ms // 3)
        else:
            t += rng.randint(8000, limit_ms * 9 // 10)
        acts.append((t, "press", player))
        player = other[player]
    acts.append((t + rng.randint(2000, 9000), "end", None))
    return acts, reasons


def _bg_game(rng, first_ms, stop_ms, delay_ms, end_early_ms=None):
    """One backgammon table's presses (as ``_game``): moves inside and over the
    delay, and pauses (6.1) that the opponent's press ends (the mover's time
    runs on) or the mover's (the opponent's time starts)."""
    acts = [(first_ms, "press", "B")]
    reasons = {}
    t = first_ms
    player = "A"
    other = {"A": "B", "B": "A"}
    stop = stop_ms if end_early_ms is None else end_early_ms
    while t < stop:
        roll = rng.random()
        if roll < 0.2:  # a long think: the bank runs after the delay
            t += delay_ms + rng.randint(5000, 40000)
        elif roll < 0.35:  # a pause in the move
            t += rng.randint(2000, delay_ms + 10000)
            acts.append((t, "press", "PAUSE"))
            t += rng.randint(10000, 60000)
            n = len(reasons) + 1
            reasons[n] = rng.choice(("dispute", "referee", None))
            if rng.random() < 0.5:  # the mover's press: the opponent's time starts
                acts.append((t, "press", player))
                player = other[player]
                continue
            acts.append((t, "press", other[player]))  # the mover's time runs on
            t += rng.randint(2000, delay_ms + 10000)
        else:
            t += rng.randint(2000, delay_ms + 10000)
        acts.append((t, "press", player))
        player = other[player]
    acts.append((t + rng.randint(2000, 9000), "end", None))
    return acts, reasons


# a core's snapshot (core/*.py snapshot): the fields a restore gives back as they
# were, and the times it may give back larger (last heard: the outage not counted)
SNAPSHOT_FIELDS = {"scrabble": ((0, 1, 3), (2,)), "backgammon": ((0, 1, 4, 5, 6, 7), (2, 3))}

# the modes rehearse plans (docs/hall.md "Rehearse the day"): mode -> (the game's
# presses, a move's typical length, the span of a round's play) from its settings
PLANNED = {
    "scrabble": (_game, lambda v: v["move_s"] * 1000, lambda v: v["round_min"] * 60000),
    # twice a bank: a player's bank pays only what is over the delay (about a third)
    "backgammon": (_bg_game, lambda v: max(v["delay_s"] * 1000, 10000),
                   lambda v: 2 * settings_mod.bank_ms(v)),
}


def make_plan(tables, rounds, mode, values, speed, faults, seed=1, transport="serial"):
    """The day's plan (see the module's docstring)."""
    if mode not in PLANNED:
        raise BadInput(f"--mode {mode}: rehearse plays {' and '.join(PLANNED)} rounds (table "
                       "clocks the laptop starts); a duplicate hall's countdown is not planned")
    from ..views.modes import hall_modes
    game, limit_of, span_of = PLANNED[mode]
    lead = _lead_ms(speed)
    limit = limit_of(values)
    round_ms = span_of(values)
    out = {"version": PLAN_VERSION, "mode": mode,
           "settings": settings_mod.format_text(mode, values), "speed": speed, "seed": seed,
           "faults": list(faults), "rounds": []}
    if transport != "serial":
        out["transport"] = transport
    rng = random.Random(seed)
    for r in range(1, rounds + 1):
        view_ms = lead(2.0, 20000)  # after configure: a press closes the settings (3.2)
        start_ms = view_ms + lead(0.8, 10000)  # the referee's START round
        first_ms = start_ms + lead(1.2, 20000)  # B starts A's first move (4.2)
        stop_ms = start_ms + round_ms + 4 * limit  # into the play-out (16.3)
        early = 1 if tables > 1 else None  # table-2 finishes early
        rnd = {"round": r, "view_ms": view_ms, "start_ms": start_ms,
               # a manual GONG, in a mode whose clocks give the hall's gongs
               "gong_ms": start_ms + round_ms // 3 if mode in hall_modes() else None,
               "tables": [], "faults": []}
        for i in range(tables):
            clock = f"table-{i + 1}"
            acts, reasons = game(rng, first_ms, stop_ms, limit,
                                  first_ms + max(round_ms // 2, 4 * limit)
                                  if i == early else None)
            acts.insert(0, (view_ms, "press", "A"))
            rnd["tables"].append({"clock": clock, "boot_ms": 0, "actions": acts,
                                  "reasons": {str(k): v for k, v in reasons.items() if v}})
        if "late" in faults and tables > 1:  # plugged in after START
            t = rnd["tables"][-1]
            t["boot_ms"] = start_ms + lead(0.3, 5000)
            t["actions"] = [(a - t["boot_ms"], k, v) for a, k, v in t["actions"]
                            if a - t["boot_ms"] > 1000 or k == "end"]
            rnd["faults"].append({"kind": "late", "clock": t["clock"], "at_ms": t["boot_ms"]})
        calm_ms = first_ms  # a reboot only after the cable's minute and its resends
        if "unplug" in faults:  # table-1's cable (MQTT: its Wi-Fi) out for a minute, in the game
            t = rnd["tables"][0]
            at = max(start_ms + round_ms // 4, first_ms + limit // 2)
            rnd["faults"].append({"kind": "unplug", "clock": t["clock"],
                                  "at_ms": at, "for_ms": UNPLUG_MS})
            calm_ms = at + UNPLUG_MS + lead(0.5, 10000)
        down = None  # (from, to): the logger away, and its restart's own time
        if "logger" in faults:  # the logger killed (SIGKILL) and started again on its log
            at = start_ms + round_ms * 2 // 3
            if early is not None:  # after table-2's end, if the others still play then:
                # the restarted logger never hears that table again, and must still end
                ended = rnd["tables"][early]["actions"][-1][0] + lead(0.3, 5000)
                at = max(at, ended) if ended < stop_ms else at
            rnd["faults"].append({"kind": "logger", "at_ms": at, "down_ms": lead(0.4, 5000)})
            down = (at - lead(0.5, 5000), at + lead(0.4, 5000) + lead(1.0, 10000))
        if "broker" in faults:  # the broker stopped between the GONG and the logger's fault
            at = start_ms + round_ms * 3 // 8
            off = lead(0.4, 15000)
            rnd["faults"].append({"kind": "broker", "at_ms": at, "down_ms": off})
            calm_ms = max(calm_ms, at + off + lead(0.5, 10000))
        if "viewer" in faults:  # a second laptop's view on the broker from before the round
            rnd["faults"].append({"kind": "viewer"})
        if "reboot" in faults:  # mid-move: a moment inside a move of table-1's
            # (never while the logger is away: what it had not stored would be lost)
            t = rnd["tables"][0]
            presses = [a for a, k, v in t["actions"] if k == "press" and a > calm_ms]
            moves = [(a, b) for a, b in zip(presses, presses[1:])
                     if down is None or b < down[0] or a > down[1]]
            if moves:
                a, b = moves[(len(moves) - 1) // 2]
                at = (a + b) // 2
                t["actions"] = sorted(t["actions"] + [(at, "reboot", None)],
                                      key=lambda a: a[0])
                rnd["faults"].append({"kind": "reboot", "clock": t["clock"], "at_ms": at})
        out["rounds"].append(rnd)
    return out


def save_plan(plan, path):
    from ..views.outfiles import write_file
    write_file(path, lambda f: json.dump(plan, f, indent=1, ensure_ascii=False),
               force=True, what="plan")


def load_plan(path):
    try:
        with open(path, encoding="utf-8") as f:
            plan = json.load(f)
    except OSError as exc:
        raise BadInput(f"--plan {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise BadInput(f"--plan {path}: not a plan (JSON: {exc})") from None
    if not isinstance(plan, dict) or plan.get("version") != PLAN_VERSION \
            or not isinstance(plan.get("rounds"), list):
        raise BadInput(f"--plan {path}: not a rehearsal plan of version {PLAN_VERSION} "
                       "(write one with 'hallclock rehearse --out DIR': DIR/plan.json)")
    if plan.get("mode") not in PLANNED:
        raise BadInput(f"--plan {path}: mode {plan.get('mode')!r}: rehearse plays "
                       f"{' and '.join(PLANNED)} rounds")
    from .. import scenario
    try:
        for rnd in plan["rounds"]:
            for t in rnd["tables"]:
                text = "".join(f"{a} {k}{'' if v is None else ' ' + str(v)}\n"
                               for a, k, v in t["actions"])
                scenario.parse_text(text, f"{path}: {t['clock']}")
    except (KeyError, TypeError, ValueError) as exc:
        raise BadInput(f"--plan {path}: a round or table lacks its fields ({exc})") from None
    return plan


# -- the ground truth: the plan's inputs through the clock's own code ----------------
class Truth:
    """One device session of a table: the events the clock's code gives for
    its inputs, and its face at given device times."""

    def __init__(self, mode, values):
        self.model = Model(mode, values)  # the firmware's App + core, emitting to a sink
        # a press is a 100 ms contact: by the next pass PAUSE is no longer held
        self.model.app.panel.buttons.held_now = lambda code: False
        self.events = list(self.model.queue)  # its boot
        self.model.queue = []
        self.t = 0
        self.faces = {}

    def _take(self):
        m = self.model
        for e in m.sink.events:
            self.events.append(m._as_record(e, m.app))
        del m.sink.events[:]

    def advance(self, t_ms, faces=()):
        """Every pass of the clock's loop due before ``t_ms``; the face at
        each of ``faces`` (device times) on the way."""
        m = self.model
        app = m.app
        wanted = sorted(f for f in faces if self.t <= f < t_ms)
        while True:
            due = app.core.next_deadline(self.t) if not app.ended else None
            nxt = due if due is not None and due < t_ms else None
            while wanted and (nxt is None or wanted[0] < nxt):
                f = wanted.pop(0)
                m.t_ms = max(self.t, 0)
                self.faces[f] = m.face(f)
            if nxt is None:
                break
            at = max(nxt, self.t)
            app.step(at)
            self._take()
            self.t = at if at > self.t else self.t + 1
        self.t = max(self.t, t_ms)

    def apply(self, t_ms, cmd, taken=None):
        """``cmd`` at ``t_ms``; ``taken``: the later pass that takes it (a press
        the buttons' debounce hands over after a host frame)."""
        m = self.model
        if cmd == ("end",):
            m.app.step(t_ms)
            m.app.end(t_ms)
        elif m.app.ended:
            Model._apply(m.app, cmd, t_ms)
        else:
            Model._apply(m.app, cmd, t_ms)
            m.app.step(t_ms if taken is None else taken)
        self._take()
        self.t = t_ms if taken is None else max(t_ms, taken)


def host_inputs(records, round_number, restore=None):
    """The host's frames a session took, at the device times it logged them;
    ``restore``: the values the host sent after the power loss before it
    (taken with the session's first record after its boot)."""
    out = []
    if restore is not None:
        after = [r for r in records if r.get("event") not in ("boot", "health")]
        if after:
            out.append((after[0]["t_ms"], ("S", restore["mode"], restore["settings"])
                        + tuple(restore["values"])))
    for r in records:
        ev, t = r.get("event"), r.get("t_ms")
        if ev == "settings":
            mode = r.get("mode")
            from ..views.model import settings_from_json
            out.append((t, ("K", mode, settings_mod.format_text(
                mode, settings_from_json(mode, r.get("settings") or {})))))
        elif ev == "round":
            out.append((t, ("N", r.get("round"), r.get("elapsed_ms"))))
        elif ev == "refused" and r.get("what") == "round":
            out.append((t, ("N", round_number, 0)))
        elif ev == "gong" and r.get("kind") == "manual":
            out.append((t, BTN_GONG))
    return out


def play_truth(mode, values, actions, inputs, faces=(), until=None):
    """Truth for one session: ``actions`` the plan's (t_ms, action, arg) in the
    session's own time, ``inputs`` the host's (t_ms, command); ``until``: the
    session's power loss (its own time), if it has one."""
    truth = Truth(mode, values)
    steps = []
    for t, kind, arg in actions:
        if kind == "press" and (until is None or t + DEBOUNCE_MS < until):
            steps.append((t, 1, BUTTON_NAMES.index(arg)))  # not one the power cut
        elif kind == "end":
            steps.append((t, 2, ("end",)))
    for t, cmd in inputs:
        # the host's frames are read in the pass before the buttons'; a restore first
        steps.append((t, -1 if isinstance(cmd, tuple) and cmd[0] == "S" else 0, cmd))
    # a press counts once its contact has been closed DEBOUNCE_MS (hw/buttons.py): a
    # host frame taken or a deadline due in between (the referee's GONG, the
    # ten-minute gong, a warning) comes before it, the press keeping the moment
    # its contact closed
    frames = sorted(t for t, cmd in inputs)
    late = {}
    for k, (t, order, cmd) in enumerate(steps):
        if order == 1:
            during = [f for f in frames if t <= f <= t + DEBOUNCE_MS]
            if during:
                late[k] = during[-1]
    steps = [(late.get(k, t), order, cmd, t) for k, (t, order, cmd) in enumerate(steps)]
    steps.sort(key=lambda s: (s[0], s[1]))
    for t, order, cmd, edge in steps:
        truth.advance(t, faces)
        if isinstance(cmd, tuple) and cmd[0] == "N" and any(
                e["event"] == "round" and e["t_ms"] == t and e.get("elapsed_ms") == cmd[2]
                for e in truth.events):
            continue  # the restore gave the round back itself: the same record (a
            # round frame the host sent besides, refused, is an input of its own)
        if truth.model.app.ended and not isinstance(cmd, tuple):
            continue  # a press after the session's end: the clock is off
        due = truth.model.app.core.next_deadline(t) if order == 1 else None
        if due is not None and due < edge + DEBOUNCE_MS:  # a gong or warning sounds first
            t = edge + DEBOUNCE_MS
            truth.advance(t, faces)
        if edge != t:
            truth.apply(edge, cmd, taken=t)
            for f in faces:  # a face from the press's moment on shows it, as the log does
                if edge <= f < t:
                    truth.model.t_ms = f
                    truth.faces[f] = truth.model.face(f)
            continue
        truth.apply(t, cmd)  # (a frame after the end is still answered: refused)
    if not truth.model.app.ended:
        truth.advance(truth.t + 1 if until is None else until, faces)
    for f in faces:  # after the end: the face stands
        if f not in truth.faces:
            truth.model.t_ms = truth.t
            truth.faces[f] = truth.model.face(f)
    return truth


# -- running a round -----------------------------------------------------------------
def hallclock_exe():
    return [sys.executable, "-m", "hallclock"]


class Day:
    """Runs the plan's rounds into ``out`` and checks them."""

    def __init__(self, plan, out, pairings=None, say=print, transport="serial"):
        self.plan = plan
        self.out = out
        self.pairings = pairings
        self.say = say
        self.transport = transport
        self.mode = plan["mode"]
        self.values = settings_mod.parse_text(self.mode, plan["settings"])
        self.speed = float(plan["speed"])
        self.failures = []  # (where, check, text)
        self.notes = []  # what the day showed that is not a failed check
        self.checkpoints = 0
        self.figures = {"reboots": 0, "restored": 0, "logger_restarts": 0, "lost": 0,
                        "late": 0, "records": 0, "compared": 0, "unplugged": 0,
                        "ctrl_c": 0, "doubled": 0, "broker_restarts": 0, "viewers": 0,
                        "viewer_rows": 0, "viewer_missed": 0}
        check_faults(plan.get("faults", []), transport, "the plan")
        self.hall = None  # the hall's broker (--transport mqtt), started with the first round
        self.stopping = None  # the signal that interrupts the day

    def fail(self, where, check, text):
        self.failures.append((where, check, text))

    # -- the programs ------------------------------------------------------------
    def _run(self, *args, env=None, timeout=120):
        cmd = hallclock_exe() + list(args)
        proc = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            _killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def _links(self, ports_file):
        """The logger's and configure's way to the clocks: the ports, or the broker."""
        if self.hall is None:
            return ["--ports-file", ports_file]
        return self.hall.tool_args()

    def _logger(self, number, ports_file, log, wait):
        args = hallclock_exe() + ["round", "start", "--round", str(number),
                                  *self._links(ports_file), "--out", log, "--exit-on-end"]
        if wait:
            args.append("--wait")
        errf = open(log + ".logger-stderr.txt", "a", encoding="utf-8")
        outf = open(log + ".logger-stdout.txt", "a", encoding="utf-8")
        proc = spawn(args, stdout=outf, stderr=errf)
        outf.close()
        errf.close()
        return proc

    def _console(self, log):
        return Console(log)

    def check_console(self, where, console, log, max_s=20.0):
        """The console's grid at the end, read from its server, against the
        grid of the same log made here: every table's card the same."""
        from . import referee
        tail = referee.RoundTail(log)
        mine, got, diff = {}, {}, []
        until = time.monotonic() + max_s
        keys = ("left", "move", "finished", "status", "player", "reboot", "round", "players")
        while True:
            mine = {r["clock"]: r for r in referee.grid(tail, time.time())["tables"]}
            answer = console.get("/api/grid")
            got = {r["clock"]: r for r in answer["tables"]} if answer else {}
            diff = [c for c in mine if c not in got or any(
                got[c].get(k) != mine[c].get(k) for k in keys)]
            if got and not diff:
                return
            if time.monotonic() >= until:
                break
            time.sleep(0.3)
        if not got:
            self.fail(where, "console", "its server's grid never answered")
        else:
            c = diff[0]
            self.fail(where, "console", f"{c}: its server's card {got.get(c)}; the log's "
                      f"{mine.get(c)}")

    def _stop(self, signum, _frame):
        """Ctrl-C or SIGTERM: every program started stopped, then out."""
        if self.stopping is not None:
            return  # (the first is being handled)
        self.stopping = signum
        raise KeyboardInterrupt

    def run(self):
        import threading
        handled = threading.current_thread() is threading.main_thread()
        if handled:
            before = {s: signal.signal(s, self._stop) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            return self._run_day()
        except KeyboardInterrupt:
            self.stopping = self.stopping or signal.SIGINT
            stop_children()
            name = signal.Signals(self.stopping).name
            raise Interrupted(f"rehearse: interrupted ({name}); every program it started "
                              f"is stopped; what the rounds logged is in {self.out}") from None
        finally:
            stop_children()  # (none is left running after the day, whatever happened)
            if handled:
                for s, h in before.items():
                    signal.signal(s, h)

    def _run_day(self):
        try:
            if self.transport == "mqtt":
                clocks = sorted({t["clock"] for r in self.plan["rounds"] for t in r["tables"]},
                                key=lambda c: (len(c), c))
                self.hall = HallBroker(os.path.join(self.out, "broker"), clocks, self._run)
            for rnd in self.plan["rounds"]:
                self.round(rnd)
        finally:
            if self.hall is not None:
                self.hall.close()
        return not self.failures

    def round(self, rnd):
        from ..link.transport import pty_pair, read_fd
        from ..vboard.device import DeviceThread, RealPace, make_runner, mark
        from ..views.roundreport import referee_log_of
        from .referee import links_file_of
        n = rnd["round"]
        where = f"round {n}"
        log = os.path.join(self.out, f"round{n}.jsonl")
        for p in (log, referee_log_of(log)):
            if os.path.exists(p) and os.path.getsize(p) > 0:
                raise BadInput(f"{p} already exists: rehearse writes new logs; "
                               "give an empty --out DIR")
        ports_file = os.path.join(self.out, f"round{n}.ports.txt")
        tables = rnd["tables"]
        hall = self.hall  # None: the clocks on ptys (serial)
        fds, paths, runners = [], [], []
        viewer = None
        if hall is not None and any(f["kind"] == "viewer" for f in rnd.get("faults", [])):
            viewer = hall.viewer(log[:-6] + ".view.txt")  # subscribed before any clock
            if viewer is None:
                self.fail(where, "view", "the second laptop's view never subscribed (see "
                          f"{log[:-6]}.view-stderr.txt)")
            else:
                self.figures["viewers"] += 1
        for i, t in enumerate(tables):
            sid = "%08x" % ((0x5e000000 + n * 0x100000 + i * 0x1000) & 0xFFFFFFFF)
            if hall is None:
                master, slave, path = pty_pair()
                fds += [master, slave]
            else:
                master, path = None, t["clock"]
            paths.append(path)
            runners.append((make_runner(self.mode, self.values, [tuple(a) for a in t["actions"]],
                                        clock=t["clock"], sid=sid), master))
        with open(ports_file, "w", encoding="utf-8") as f:
            f.write("".join(p + "\n" for p in paths))
        if hall is not None:  # every clock there from the start on the network first
            for i, t in enumerate(tables):
                if not t.get("boot_ms"):
                    runners[i] = (runners[i][0], hall.clock_link(t["clock"]))
            if not hall.connect([line for r, line in runners if line is not None]):
                self.fail(where, "broker", "the clocks could not all connect in "
                          f"{CONNECT_S:.0f} s")
        # the hall's time holds before the players' first press until configure has
        # run, and before START until the logger is up: a slow laptop delays the day,
        # it does not change it
        holds = [rnd["view_ms"] - 1, rnd["start_ms"] - 1] if rnd.get("view_ms") \
            else [rnd["start_ms"] - 1]
        # on the network the laptop's reconnects take real seconds, minutes of the
        # accelerated clocks: a planned reboot waits until the host has stored every
        # event of the clock (a reboot loses what is not acknowledged, as on a board)
        caught = [(a[0], i) for i, t in enumerate(tables) if hall is not None
                  and not t.get("boot_ms") for a in t["actions"] if a[1] == "reboot"]
        # ... and just after a reboot until the host has given the game back (its
        # power_loss and the clock's resume logged): a restore that comes after the
        # players' next press is the laptop's pace, not the day's
        reboot_holds = {f["at_ms"] + 1: f["clock"] for f in rnd.get("faults", [])
                        if f["kind"] == "reboot"}
        gate = Gate(self.speed, holds + [at - 1 for at, _i in caught] + list(reboot_holds),
                    sharp=reboot_holds)
        handled = {}  # clock -> its new session until the clock resumed, then True
        held_since = None
        now_ms = gate.now
        threads = [None] * len(tables)

        cables = {}

        def plug(i, at_mark):
            runner, master = runners[i]
            if hall is not None:  # on the network: switched on, connected, then its time runs
                line = master
                if line is None:
                    line = hall.clock_link(tables[i]["clock"])
                    if not hall.connect([line]):
                        self.fail(f"{where} {tables[i]['clock']}", "broker",
                                  f"the late clock could not connect in {CONNECT_S:.0f} s")
                    at_mark = mark()
                cables[tables[i]["clock"]] = WifiPlug(line)
            else:
                os.set_blocking(master, False)
                while read_fd(master)[0]:
                    pass  # a clock that was off heard nothing of what was sent before
                cables[tables[i]["clock"]] = line = Cable(master)
            pace = GatedPace(gate) if at_mark is None else RealPace(at_mark, self.speed)
            th = DeviceThread(runner, line, pace)
            th.start()
            threads[i] = th

        for i, t in enumerate(tables):
            if not t.get("boot_ms"):
                plug(i, None)
        proc = None
        referee = None
        try:
            ready = [a for i, a in enumerate(paths) if not tables[i].get("boot_ms")]
            sets = [f"--set={k}" for k in self.plan["settings"].split(";")]
            present = os.path.join(self.out, f"round{n}.present.txt")
            with open(present, "w", encoding="utf-8") as f:
                f.write("".join(p + "\n" for p in ready))
            if hall is None:
                res = self._run("configure", "--ports-file", present, "--mode", self.mode, *sets)
            else:
                # the hellos and answers over the broker, on a loaded laptop: 10 s each
                res = self._run("configure", *hall.tool_args(), "--mode", self.mode, *sets,
                                "--wait-s", str(CONFIGURE_WAIT_S),
                                *[x for i, t in enumerate(tables) if not t.get("boot_ms")
                                  for x in ("--clock", t["clock"])])
            with open(log[:-6] + ".configure.txt", "w", encoding="utf-8") as f:
                f.write(res.stdout + res.stderr)
            if res.returncode != 0:
                self.fail(where, "configure", (res.stdout + res.stderr).strip().splitlines()[-1])
            if rnd.get("view_ms"):
                gate.release()  # the settings are on the clocks: the players look
            proc = self._logger(n, ports_file, log, wait=True)

            referee = self._console(log)  # the referee's console: its own server
            if not referee.wait_up():
                self.fail(where, "console", "its server never answered (see "
                          f"{log}.console-stderr.txt)")
            events = [(rnd["start_ms"], "start", None)]
            if rnd.get("gong_ms") is not None:
                events.append((rnd["gong_ms"], "gong", None))
            for i, t in enumerate(tables):
                if t.get("boot_ms"):
                    events.append((t["boot_ms"], "plug", i))
            for at, i in caught:
                events.append((at, "caught", i))
            waited = {}
            for fault in rnd.get("faults", []):
                if fault["kind"] == "logger":
                    events.append((fault["at_ms"], "kill", fault))
                elif fault["kind"] == "unplug":
                    events.append((fault["at_ms"], "unplug", fault))
                    events.append((fault["at_ms"] + fault["for_ms"], "replug", fault))
                elif fault["kind"] == "broker" and hall is not None:
                    events.append((fault["at_ms"], "broker", fault))
            events.sort(key=lambda e: e[0])
            tags = {t["clock"]: t.get("reasons", {}) for t in tables}
            tagged = set()
            from ..link.logfile import JsonlTail
            tail = JsonlTail(log)
            pauses = {}  # clock -> [(session, seq)] in order
            began = time.monotonic()
            longest = max(a[0] + t.get("boot_ms", 0) for t in tables for a in t["actions"])
            limit_s = longest / 1000.0 / self.speed + ROUND_TIMEOUT_S
            restart_at = None
            broker_at = None  # when the stopped broker starts again (device ms)
            done_at = None
            while True:
                now = now_ms()
                while events and (events[0][0] <= now + 1  # (a hold stands 1 ms before)
                                  or gate.waiting(events[0][0])):
                    _at, kind, arg = events.pop(0)
                    if kind == "start":
                        if not os.path.exists(links_file_of(log)) and proc.poll() is None:
                            events.insert(0, (_at, kind, arg))  # the logger is not up yet
                            break
                        gate.release()
                        referee.act(self, where, {"action": "start", "round": n})
                    elif kind == "gong":
                        referee.act(self, where, {"action": "gong"})
                    elif kind in ("unplug", "replug"):
                        cable = cables.get(arg["clock"])
                        if cable is not None:
                            cable.pulled = kind == "unplug"
                            self.figures["unplugged"] += kind == "unplug"
                    elif kind == "plug":
                        plug(arg, mark())
                        self.figures["late"] += 1
                    elif kind == "kill":
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
                        restart_at = now + arg.get("down_ms", 0)
                        self.figures["logger_restarts"] += 1
                    elif kind == "caught":
                        until = waited.setdefault(arg, time.monotonic() + CATCH_UP_S)
                        if runners[arg][0].pending() and time.monotonic() < until:
                            events.insert(0, (_at, kind, arg))  # the host is not there yet
                            break
                        gate.release()
                    elif kind == "broker":
                        hall.broker.stop()  # SIGTERM: every client's connection ends
                        broker_at = now + arg.get("down_ms", 0)
                if broker_at is not None and now >= broker_at:
                    broker_at = None
                    if hall.restart():
                        self.figures["broker_restarts"] += 1
                    else:
                        self.fail(where, "broker", "Mosquitto did not start again (see "
                                  f"{hall.log.name})")
                if restart_at is not None and now >= restart_at:
                    proc = self._logger(n, ports_file, log, wait=False)
                    restart_at = None
                for rec in tail.read()[0]:
                    c = rec.get("clock")
                    if rec.get("event") == "power_loss" and c in reboot_holds.values():
                        handled[c] = True if rec.get("restore") is None else \
                            rec.get("next_session")
                    elif rec.get("event") == "resume" and rec.get("session") == handled.get(c):
                        handled[c] = True
                    if rec.get("event") == "pause":
                        lst = pauses.setdefault(rec.get("clock"), [])
                        key = (rec.get("session"), rec.get("seq"))
                        if key not in lst:
                            lst.append(key)
                for clock, lst in pauses.items():
                    for k, (sid, seq) in enumerate(lst, 1):
                        reason = tags.get(clock, {}).get(str(k))
                        if reason and (clock, sid, seq) not in tagged:
                            tagged.add((clock, sid, seq))
                            referee.act(self, where, {"action": "tag", "clock": clock,
                                                      "session": sid, "pause_seq": seq,
                                                      "reason": reason})
                hold = gate.holds[0] if gate.holds else None
                if hold in reboot_holds and now >= hold:
                    held_since = held_since or time.monotonic()
                    if handled.get(reboot_holds[hold]) is True or \
                            time.monotonic() - held_since > REBOOT_HOLD_S:
                        gate.release()  # (a restore never taken fails its own check)
                        handled.pop(reboot_holds[hold], None)
                        held_since = None
                if restart_at is None and broker_at is None and proc.poll() is not None \
                        and not events:
                    break
                if not events and restart_at is None and broker_at is None and all(
                        th is not None and not th.is_alive() for th in threads):
                    # every clock has ended and the host had every event: --exit-on-end
                    # must see it, even a logger restarted after a table had ended
                    done_at = done_at or time.monotonic()
                    if time.monotonic() - done_at > LINGER_S:
                        proc.send_signal(signal.SIGINT)
                        proc.wait(timeout=30)
                        self.figures["ctrl_c"] += 1
                        self.fail(where, "round start --exit-on-end", "the logger had not "
                                  f"ended {LINGER_S:.0f} s after every clock's end was stored "
                                  "(stopped with Ctrl-C)")
                        break
                if time.monotonic() - began > limit_s:
                    self.fail(where, "the round's end", "the logger had not ended after "
                              f"{limit_s:.0f} s: a clock's session never ended")
                    break
                time.sleep(0.02)
            if proc.returncode not in (0, None, -signal.SIGINT, 130):
                self.fail(where, "round start", f"exit {proc.returncode}: see "
                          f"{log}.logger-stderr.txt")
        finally:
            if self.stopping is not None:  # interrupted: no check waits on the programs
                stop_children(wait_s=3.0)
                viewer = None
            if viewer is not None:
                hall.end_viewer(viewer)
            if referee is not None and self.stopping is None:
                self.check_console(where, referee, log)
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            if referee is not None:
                referee.close()
            for th in threads:
                if th is not None:
                    th.halt = True
            for th in threads:
                if th is not None:
                    th.join(timeout=5)
            for i, th in enumerate(threads):
                if th is not None and th.error is not None:
                    self.fail(f"{where} {tables[i]['clock']}", "virtual clock",
                              f"it failed: {th.error!r}")
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.check_round(rnd, log)

    # -- the checks ------------------------------------------------------------------
    def check_round(self, rnd, log):
        from ..link.logfile import read_records
        n = rnd["round"]
        where = f"round {n}"
        records = read_records(log)
        self.figures["records"] += len(records)
        report_args = ["report", "--round", str(n), log, "--csv", log[:-6] + ".csv"]
        if self.pairings:
            report_args += ["--pairings", self.pairings]
        env = dict(os.environ, COLUMNS="80")
        res = self._run(*report_args, env=env)
        report_path = log[:-6] + ".report.txt"
        with open(report_path, "w", encoding="utf-8") as f:
            f.write(res.stdout)
        if res.returncode != 0:
            self.fail(where, "report", f"exit {res.returncode}: {res.stderr.strip()}")
        csv_rows = []
        if os.path.exists(log[:-6] + ".csv"):
            with open(log[:-6] + ".csv", encoding="utf-8") as f:
                csv_rows = list(csv.DictReader(f))
        truths = {}
        checks = self.checkpoint_times(records)
        asked = self.view_requests(records, checks)
        view_path = log[:-6] + ".view.txt"
        viewer = None
        if os.path.exists(view_path):  # the second laptop's view (--transport mqtt)
            viewer = Viewer(view_path, records, checks)
            for clock, sid, t in viewer.times():
                asked.setdefault(clock, {}).setdefault(sid, []).append(t)
        for t in rnd["tables"]:
            clock = t["clock"]
            mine = [r for r in records if r.get("clock") == clock]
            got = self.check_table(rnd, t, mine, asked.get(clock, {}))
            truths[clock] = got
            self.verdict(rnd, t, got, res.stdout, csv_rows)
        self.check_views(rnd, records, checks, truths, log, viewer)
        if viewer is not None:
            self.check_viewer_whole(where, viewer, records)
        self.figures["doubled"] += doubled(records)
        bad = [f for f in self.failures if f[0].startswith(where)]
        views = [f for f in bad if f[0].startswith(where + " checkpoint")]
        for w, check, text in views[:SHOW_VIEW_FAILURES]:
            self.say(f"{w}: {check}: FAILED: {text}")
        if len(views) > SHOW_VIEW_FAILURES:
            self.say(f"{where}: {len(views) - SHOW_VIEW_FAILURES} more views disagreed")
        self.say(f"round {n}: {len(rnd['tables'])} tables, "
                 f"{len(checks)} checkpoints: " + ("every check held" if not bad else
                                                   f"{len(bad)} checks FAILED"))

    def check_table(self, rnd, t, records, faces):
        """The log of one table against the truth; returns {session: Truth}."""
        n = rnd["round"]
        where = f"round {n} {t['clock']}"
        sessions = []
        for r in records:
            if r.get("event") == "boot":
                sessions.append([r])
            elif sessions and r.get("session") == sessions[-1][0].get("session"):
                sessions[-1].append(r)
            elif sessions:
                match = [s for s in sessions if s[0].get("session") == r.get("session")]
                (match[0] if match else sessions[-1]).append(r)
        if not sessions:
            self.fail(where, "log", "no record of this table's clock in the log")
            return {}
        actions = [tuple(a) for a in t["actions"]]
        reboots = [a[0] for a in actions if a[1] == "reboot"]
        bounds = [0] + reboots + [None]
        out = {}
        if len(sessions) != len(reboots) + 1:
            self.fail(where, "log", f"{len(sessions)} sessions in the log, the plan "
                      f"{len(reboots) + 1} (a reboot each)")
        restore = None
        before = None
        for k, recs in enumerate(sessions[:len(reboots) + 1]):
            lo, hi = bounds[k], bounds[k + 1]
            mine = [(a - lo, kind, arg) for a, kind, arg in actions
                    if a >= lo and (hi is None or a < hi) and kind != "reboot"]
            want = {f: f for f in faces.get(recs[0].get("session"), ())}
            truth = play_truth(self.mode, self.values, mine, host_inputs(recs, n, restore),
                               faces=list(want), until=None if hi is None else hi - lo)
            if restore is not None:
                self.check_restore(where, before, restore, recs, lo)
            lost = next((r for r in recs if r.get("event") == "power_loss"), None)
            restore = lost.get("restore") if lost is not None else None
            if hi is not None:
                self.figures["reboots"] += 1
                if restore is None:
                    self.fail(where, "restore", f"the clock rebooted at {hi} ms of its time "
                              "and the host sent no restore (round start restores by default)")
                before = (truth, hi - lo)
            out[recs[0].get("session")] = truth
            got = [r for r in recs if r.get("event") not in ("health", "power_loss", "gap")
                   and "t_ms" in r]
            seqs = [r.get("seq") for r in recs if r.get("seq") is not None]
            twice = sorted({q for q in seqs if seqs.count(q) > 1})
            if twice:  # a resend stored again (a reconnect, a restarted logger or broker)
                self.fail(where, "log", f"session {recs[0].get('session')}: the log has record "
                          f"#{twice[0]} twice" + (f" ({len(twice)} records)"
                                                  if len(twice) > 1 else ""))
            first = next((a for a, kind, arg in mine if kind == "press" and arg == "B"), None)
            took = next((r["t_ms"] for r in got if r.get("event") == "round"), None)
            if k == 0 and first is not None and (took is None or took > first):
                self.fail(where, "round start", "START reached the clock " + (
                    f"at {took} ms of its time" if took is not None else "never") +
                    f", its players' first move began at {first} ms: the laptop is slower "
                    "than --speed allows (give a lower --speed)")
            exp = truth.events
            if hi is not None:  # cut by the reboot: what was not acknowledged is lost
                exp = [e for e in exp if e["t_ms"] < hi - lo]
            i = 0
            from ..views.model import same
            self.figures["lost"] += sum(1 for e in exp if not any(same(e, g) for g in got))
            for e in exp:
                if i < len(got) and same(e, got[i]):
                    i += 1
                    continue
                self.fail(where, "log", f"session {recs[0].get('session')}: the clock's code "
                          f"gives {_short(e)}, the log has "
                          f"{_short(got[i]) if i < len(got) else 'nothing more'}")
                break
            else:
                if i < len(got):
                    self.fail(where, "log", f"session {recs[0].get('session')}: the log has "
                              f"{_short(got[i])}, which the plan does not give")
            self.figures["compared"] += len(exp)
        return out

    def check_restore(self, where, before, restore, recs, lo):
        """The game the host gave back is the game the clock's code had at
        the reboot: the same move, player and pause (the time left is the one
        last heard: the outage is not counted against the player)."""
        truth, at = before
        truth.advance(at)
        same, times = SNAPSHOT_FIELDS[self.mode]
        want = tuple(truth.model.app.core.snapshot(at))
        got = tuple(restore.get("values") or ())
        if len(got) != len(want) or any(want[i] != got[i] for i in same) or \
                any(got[i] < want[i] for i in times):
            self.fail(where, "restore", f"the host sent the snapshot {got}, the clock's "
                      f"code had {want} at the reboot")
        elif any(r.get("event") == "resume" for r in recs):
            self.figures["restored"] += 1
        else:
            self.fail(where, "restore", "the rebooted clock never resumed its game")

    def verdict(self, rnd, t, truths, report_text, csv_rows):
        from ..views import figures
        n = rnd["round"]
        clock = t["clock"]
        where = f"round {n} {clock}"
        records = []
        for sid, truth in truths.items():
            for seq, e in enumerate(truth.events, 1):
                records.append(dict(e, clock=clock, session=sid, seq=seq, round=n))
        games = figures.games_from_records(records) if records else []
        a = sum(g.totals.get("A", {}).get("total_ms", 0) for g in games)
        b = sum(g.totals.get("B", {}).get("total_ms", 0) for g in games)
        moves = sum(s["moves"] for g in games for s in g.totals.values())
        overtimes = sorted((str(m.move), m.player) for g in games for m in g.overtimes)
        pauses = sum(len(g.pause_list) for g in games)
        row = next((r for r in csv_rows if r["kind"] == "game" and r["table"] == clock), None)
        if row is None:
            self.fail(where, "report CSV", "no game row for this table")
        else:
            text = row["text"]
            for what, want in (("moves", f"; {moves} move"), ("A used", f"; A {a} ms;"),
                               ("B used", f"; B {b} ms;")):
                if want not in text:
                    self.fail(where, "report CSV", f"{what}: the plan gives '{want.strip('; ')}'"
                              f", the CSV says '{text}'")
            got_ot = sorted((r["move"], r["player"]) for r in csv_rows
                            if r["kind"] == "overtime" and r["table"] == clock)
            if got_ot != overtimes:
                self.fail(where, "report CSV", f"overtimes {got_ot}, the plan {overtimes}")
            got_p = [r["text"].split(";")[0] for r in csv_rows
                     if r["kind"] == "pause" and r["table"] == clock]
            want_p = [t.get("reasons", {}).get(str(k), None) or "not tagged"
                      for k in range(1, pauses + 1)]
            if got_p != want_p:
                self.fail(where, "report CSV", f"pauses {got_p}, the plan {want_p}")
        if clock not in report_text:
            self.fail(where, "report", "the round's report does not name the table")
        names = ""
        if self.pairings:
            from ..views.pairings import load
            label = load(self.pairings).label(clock, n)
            if label:
                names = f" ({label})"
                for part in label.split(" vs "):
                    if part.strip() and part.strip() not in report_text:
                        self.fail(where, "report", f"the report does not name {part.strip()}")
        bad = [f for f in self.failures if f[0] == where]
        reboots = sum(1 for a in t["actions"] if a[1] == "reboot")
        self.say(f"round {n} {clock}{names}: {moves} moves, {len(overtimes)} overtimes, "
                 f"{pauses} pauses" + (f", {reboots} reboot" if reboots else "") + ": "
                 + ("agreed" if not bad else "FAILED: " + bad[0][1] + ": " + bad[0][2]))

    # -- views at checkpoints ------------------------------------------------------
    def checkpoint_times(self, records):
        """Host epochs of the checkpoints: evenly through the round's records."""
        idx = [i for i, r in enumerate(records) if r.get("event") == "round"]
        first = idx[0] if idx else 0
        span = len(records) - first
        if span <= 0:
            return []
        picks = sorted({first + span * k // CHECKPOINTS for k in range(1, CHECKPOINTS)}
                       | {len(records) - 1})
        return [(p, epoch_of(records[p].get("host_time"))) for p in picks]

    def _clocks_at(self, records, upto):
        clocks = Clocks()
        for r in records[:upto + 1]:
            clocks.feed(r, epoch_of(r.get("host_time")))
        return clocks

    def view_requests(self, records, checks):
        """clock -> session -> device times the views will show at the checkpoints."""
        out = {}
        for p, now in checks:
            clocks = self._clocks_at(records, p)
            for c in clocks:
                if c.model is None or c.name == "referee":
                    continue
                t = c.device_now(now)
                out.setdefault(c.name, {}).setdefault(c.session, []).append(t)
        return out

    def check_views(self, rnd, records, checks, truths, log="rehearsal.jsonl", viewer=None):
        from . import display, referee
        from ..views.liveview import row_cells
        from ..views.modes import clock_text, view_for
        n = rnd["round"]
        for k, (p, now) in enumerate(checks, 1):
            where = f"round {n} checkpoint {k}"
            prefix = records[:p + 1]
            clocks = self._clocks_at(records, p)
            proj = display.face(clocks, None, now)
            ptables = {t["clock"]: t for t in proj.get("tables", [])}
            tail = referee.RoundTail(log, wall=lambda: now, source=_Prefix(prefix))
            grid = {row["clock"]: row for row in referee.grid(tail, now)["tables"]}
            agreed = True
            for c in clocks:
                if c.model is None or c.name not in truths:
                    continue
                truth = truths[c.name].get(c.session)
                t = c.device_now(now)
                if truth is None or t not in truth.faces:
                    continue
                heard = sum(1 for r in prefix if r.get("clock") == c.name
                            and r.get("session") == c.session and r.get("event") not in
                            ("health", "power_loss", "gap"))
                if heard != sum(1 for e in truth.events if e["t_ms"] <= t):
                    continue  # the clock's next event was not heard yet: not comparable
                want = truth.faces[t]
                wa, wb = want.displays[0].strip(), want.displays[1].strip()
                live = row_cells(c, c.face(now))
                seen = {"live view": (live["A"], live["B"], live["move"])}
                pt = ptables.get(c.name)
                if pt is not None:
                    seen["projector"] = (pt["displays"][0], pt["displays"][1], pt["move"])
                elif len(clocks.order) > 1:  # begun or not, every table is listed
                    self.fail(where, "projector", f"{c.name} is not among its tables")
                    agreed = False
                if c.name == proj.get("clock") and proj.get("view") == "round" \
                        and not proj.get("ended"):  # the round's time, the largest type
                    rnd_ = view_for(want.mode).round(want)
                    wround = clock_text(max(0, rnd_["left_ms"])) if rnd_ else None
                    if proj.get("digits") != wround:
                        self.fail(where, "projector", f"round time left {proj.get('digits')} "
                                  f"(from {c.name} at {t} ms); the clock's code: {wround}")
                        agreed = False
                card = grid.get(c.name)
                wmove = str(want.move) if want.move is not None else "–"
                for view, (va, vb, vm) in seen.items():
                    if (va, vb, vm) != (wa, wb, wmove):
                        self.fail(where, view, f"{c.name} at {t} ms shows A {va} B {vb} move "
                                  f"{vm}; the clock's code: A {wa} B {wb} move {wmove}")
                        agreed = False
                if card is None:
                    self.fail(where, "console", f"{c.name} has no card")
                    agreed = False
                else:
                    side = 1 if want.player == "B" else 0
                    wleft = want.displays[side].strip()
                    if (want.running or want.paused or want.move) and not card["finished"] \
                            and (card["left"] != wleft or card["move"] != want.move
                                 or card["paused"] != bool(want.paused)):
                        self.fail(where, "console", f"{c.name} at {t} ms: card shows "
                                  f"{card['left']} move {card['move']} paused {card['paused']};"
                                  f" the clock's code: {wleft} move {want.move} paused "
                                  f"{bool(want.paused)}")
                        agreed = False
                self.figures["compared"] += 1
            if viewer is not None:
                agreed = self.check_viewer(where, viewer, k - 1, prefix, truths) and agreed
            if k == len(checks):  # the round's end: each table's detail in the console
                agreed = self.check_details(rnd, where, tail, truths) and agreed
            if agreed:
                self.checkpoints += 1

    def check_viewer(self, where, viewer, k, prefix, truths):
        """The second laptop's row of each clock at checkpoint ``k``: the line
        it printed for the clock's newest record with a time (its row then)
        shows that record and the time left the clock's code gives then."""
        from ..views.liveview import event_text
        from ..views.modes import view_for
        agreed = True
        for clock, i in viewer.picks[k].items():
            r = prefix[i]
            truth = truths.get(clock, {}).get(r.get("session"))
            t = r.get("t_ms")
            if truth is None or t not in truth.faces:
                continue
            heard = sum(1 for x in prefix[:i + 1] if x.get("clock") == clock
                        and x.get("session") == r.get("session")
                        and x.get("event") not in ("health", "power_loss", "gap"))
            if heard != sum(1 for e in truth.events if e["t_ms"] <= t):
                continue  # another event of the same moment follows: not comparable
            want = truth.faces[t]
            wleft = view_for(want.mode).plain_left(want)
            shown = viewer.rows.get(viewer.key(r), [])
            self.figures["viewer_rows"] += 1
            if not shown:
                self.fail(where, "second laptop", f"{clock}: its view never showed "
                          f"#{r.get('seq')} ({event_text(r)}), which the log has")
            elif shown[0] != (event_text(r), wleft):
                self.fail(where, "second laptop", f"{clock} at {t} ms shows '{shown[0][0]}' "
                          f"[{shown[0][1]}]; the log's record '{event_text(r)}', the clock's "
                          f"code [{wleft}]")
            else:
                continue
            agreed = False
        return agreed

    def check_viewer_whole(self, where, viewer, records):
        """Every record of the clocks the log has, shown once by the view."""
        twice = sorted(k for k, v in viewer.rows.items() if len(v) > 1)
        if twice:
            self.fail(where, "second laptop", f"{len(twice)} records shown twice (the first: "
                      f"{twice[0][0]} #{twice[0][2]})")
        missed = [r for r in records if r.get("clock") in viewer.sessions_of
                  and r.get("event") not in ("power_loss", "gap")
                  and viewer.key(r) not in viewer.rows]
        self.figures["viewer_missed"] += len(missed)
        if missed:
            r = missed[0]
            self.fail(where, "second laptop", f"{len(missed)} records of the log never shown "
                      f"(the first: {r.get('clock')} #{r.get('seq')} {r.get('event')})")

    def check_details(self, rnd, where, tail, truths):
        """The console's detail of every table (hall/referee.detail): each
        move's time used as the report formats the truth's, and the pauses'
        reasons as the referee tagged them."""
        from . import referee
        from ..views import figures, report
        agreed = True
        plan = {t["clock"]: t for t in rnd["tables"]}
        for clock, sessions in truths.items():
            det = referee.detail(tail, clock)
            truth = sessions.get(det["session"]) if det else None
            if truth is None:
                self.fail(where, "console detail", f"{clock}: no detail of its last session")
                agreed = False
                continue
            recs = [dict(e, clock=clock, session=det["session"], seq=i, round=rnd["round"])
                    for i, e in enumerate(truth.events, 1)]
            game = figures.games_from_records(recs)[-1]
            want = [report.fmt_short(m.used) for m in game.moves]
            got = [m["used"] for m in det["moves"]]
            if got != want:
                self.fail(where, "console detail", f"{clock}: moves' time used {got}; the "
                          f"clock's code {want}")
                agreed = False
            if len(sessions) == 1:  # the referee's tags, in the order the pauses came
                reasons = plan[clock].get("reasons", {})
                want_r = [reasons.get(str(i)) for i in range(1, len(det["pauses"]) + 1)]
                got_r = [p["reason"] for p in det["pauses"]]
                if got_r != want_r:
                    self.fail(where, "console detail", f"{clock}: pause reasons {got_r}; the "
                              f"referee tagged {want_r}")
                    agreed = False
        return agreed

    def summary(self):
        rounds = len(self.plan["rounds"])
        tables = max((len(r["tables"]) for r in self.plan["rounds"]), default=0)
        f = self.figures
        from ..views.words import plural
        views = (f"every view agreed at {plural(self.checkpoints, 'checkpoint')}"
                 if not self.failures else plural(len(self.failures), "check") + " FAILED")
        if self.transport == "mqtt":  # the hall network's faults and its second laptop
            return (f"{tables} tables × {plural(rounds, 'round')} over MQTT: "
                    f"{plural(f['restored'], 'reboot')} restored, "
                    f"{plural(f['unplugged'], 'clock')} unplugged, "
                    f"{plural(f['broker_restarts'], 'broker restart')}, "
                    f"{plural(f['logger_restarts'], 'logger restart')}, "
                    f"{plural(f['late'], 'late clock')}, "
                    f"{plural(f['lost'], 'record')} lost, {f['doubled']} doubled, "
                    f"{plural(f['viewers'], 'second laptop')} viewing "
                    f"({plural(f['viewer_rows'], 'row')} checked, {f['viewer_missed']} missed), "
                    f"{views}")
        return (f"{tables} tables × {plural(rounds, 'round')}: "
                f"{plural(f['restored'], 'reboot')} restored, "
                f"{plural(f['unplugged'], 'clock')} unplugged, "
                f"{plural(f['logger_restarts'], 'logger restart')}, "
                f"{plural(f['late'], 'late clock')}, "
                f"{plural(f['lost'], 'record')} lost, {views}")


class Console:
    """The referee's console (``hallclock console --log``) as its own process:
    its server, its token, its actions (POST /api/action), its grid."""

    TOKEN = "rehearsal"

    def __init__(self, log):
        import socket
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        errf = open(log + ".console-stderr.txt", "a", encoding="utf-8")
        self.proc = spawn(
            hallclock_exe() + ["console", "--log", log, "--http-port", str(self.port),
                               "--token", self.TOKEN],
            stdout=subprocess.DEVNULL, stderr=errf)
        errf.close()

    def _call(self, path, body=None):
        import urllib.error
        import urllib.request
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=None if body is None else json.dumps(body).encode(),
            headers={"X-Hallclock-Token": self.TOKEN, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as exc:
            return exc.code, {}
        except (OSError, ValueError):
            return None, None

    def get(self, path):
        status, answer = self._call(path)
        return answer if status == 200 else None

    def wait_up(self, max_s=30.0):
        until = time.monotonic() + max_s
        while time.monotonic() < until and self.proc.poll() is None:
            if self.get("/api/grid") is not None:
                return True
            time.sleep(0.1)
        return False

    def act(self, day, where, body):
        status, answer = self._call("/api/action", body)
        if status != 200:
            day.fail(where, "console", f"{body.get('action')}: the console answered "
                     f"{status} {answer}")

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class HallBroker:
    """The hall network of ``--transport mqtt``: ``hallclock broker-config``'s
    folder (DIR/broker) for the day's clocks on free localhost ports, and
    Mosquitto on it (as ``hallclock broker`` runs it), stopped and started
    again on the same folder for the ``broker`` fault.  Mosquitto's own log
    (DIR/broker.log) says when a client has subscribed."""

    def __init__(self, folder, clocks, run):
        from ..net import broker
        self.log = open(folder + ".log", "ab")
        for attempt in range(3):  # a free port is free when picked: another may take it
            self.folder = folder if attempt == 0 else f"{folder}-{attempt}"
            self.port, self.local = broker.free_port(), broker.free_port()
            res = run("broker-config", "--hall", HALL, "--clocks", ",".join(clocks), "--out",
                      self.folder, "--broker-port", str(self.port), "--bind", "127.0.0.1",
                      "--local-port", str(self.local))
            if res.returncode != 0:
                raise RehearsalError("rehearse: broker-config failed: "
                                     + (res.stderr.strip().splitlines() or ["?"])[-1])
            # subscriptions logged (the second laptop's view is waited for); root's
            # Mosquitto stays root: a change of user would clear its death signal
            extra = ["log_type subscribe"]
            if os.geteuid() == 0:
                extra.append("user root")
            self.broker = broker.Broker(self.folder, extra=extra, log=self.log, popen=spawn)
            if self.start():
                break
            self.log.flush()
            if attempt == 2 or b"Address already in use" not in self._logged(self.began):
                raise RehearsalError(f"rehearse: Mosquitto did not start (see {self.log.name})")
        self.cred_file = os.path.join(self.folder, "credentials.json")
        self.creds = broker.load_credentials(self.cred_file)

    def _logged(self, offset):
        self.log.flush()
        with open(self.log.name, "rb") as f:
            f.seek(offset)
            return f.read()

    def start(self):
        """Mosquitto running (every listener bound): True, else False."""
        from ..errors import HallclockError as Failed
        self.log.flush()
        self.began = os.path.getsize(self.log.name)
        try:
            self.broker.start(timeout=60.0)
        except Failed:
            return False
        proc = self.broker.proc
        until = time.monotonic() + 60.0
        while time.monotonic() < until and proc.poll() is None:
            if b" running" in self._logged(self.began):
                return True
            time.sleep(0.02)
        return proc.poll() is None and b" running" in self._logged(self.began)

    def restart(self):
        self.broker.stop()
        return self.start()

    def tool_args(self):
        """The laptop's tools on the broker (configure, round start, view)."""
        return ["--broker", f"127.0.0.1:{self.local}", "--hall", HALL,
                "--credentials", self.cred_file]

    def clock_link(self, clock):
        """The firmware's own network link for a virtual clock (not yet connected)."""
        from ..net.mqtt import device_link
        return device_link(("127.0.0.1", self.port), HALL, clock, self.creds[clock])

    def connect(self, links):
        """Every link on the broker (the board switched on, on the Wi-Fi)."""
        from ..vboard.vdev.netpump import ticks_ms
        until = time.monotonic() + CONNECT_S
        while not all(link.connected() for link in links):
            if time.monotonic() > until:
                return False
            for link in links:
                link.service(ticks_ms())
            time.sleep(0.005)
        return True

    def viewer(self, out):
        """``hallclock view --plain`` (the second laptop) writing to ``out``,
        once Mosquitto says it has subscribed; None if it never did."""
        offset = os.path.getsize(self.log.name)
        errf = open(out[:-4] + "-stderr.txt", "a", encoding="utf-8")
        outf = open(out, "a", encoding="utf-8")
        proc = spawn(hallclock_exe() + ["view", *self.tool_args(), "--plain", "--exit-on-end"],
                     stdout=outf, stderr=errf)
        outf.close()
        errf.close()
        topic = f"/{HALL}/+/up".encode()
        until = time.monotonic() + CONNECT_S
        while time.monotonic() < until and proc.poll() is None:
            if any(b" viewer-" in ln and topic in ln
                   for ln in self._logged(offset).splitlines()):
                return proc
            time.sleep(0.05)
        self.end_viewer(proc, wait_s=0)
        return None

    def end_viewer(self, proc, wait_s=VIEWER_END_S):
        """The view ends itself once every clock has ended (--exit-on-end);
        else Ctrl-C, as its user would."""
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def close(self):
        self.broker.stop()
        self.log.close()


class Gate:
    """The hall's time for the virtual clocks: real time × speed until a
    little before each of ``holds`` (device ms), then real time (a clock's
    timers, its resend wait, still run while the laptop answers), standing
    still at the hold until ``release``."""

    ROOM_MS = 20000  # the most device time before a hold that runs at real time
    CREEP = 1.0  # the clocks' pace there

    def __init__(self, speed, holds, sharp=()):
        self.speed = speed
        self.holds = sorted(holds)
        self.sharp = set(sharp)  # holds the time reaches at full speed (no slowing)
        self.base = (0.0, time.monotonic())  # (device ms, real s) of the last release

    def _slow(self):
        """Where the time before the next hold slows down (device ms)."""
        ms, h = self.base[0], self.holds[0]
        if h in self.sharp:
            return h
        return max(ms, h - min(self.ROOM_MS, max(0, (h - ms) // 2)))

    def now(self):
        ms, real = self.base
        t = ms + (time.monotonic() - real) * 1000.0 * self.speed
        if not self.holds:
            return t
        slow = self._slow()
        if t <= slow:
            return t
        slowed = real + (slow - ms) / 1000.0 / self.speed  # the real moment it slowed
        return min(self.holds[0], slow + (time.monotonic() - slowed) * 1000.0 * self.CREEP)

    def waiting(self, at):
        """The time has slowed before the hold of the event at ``at`` (the
        hold is 1 ms before it): what it waits for may happen now."""
        return bool(self.holds) and self.holds[0] == at - 1 and self.now() >= self._slow()

    def release(self):
        if self.holds:
            t = self.now()
            self.holds.pop(0)
            self.base = (t, time.monotonic())


class GatedPace:
    """``RealPace`` on a :class:`Gate`'s time (vdev.pump: a pass when the
    device's next wake is due or host bytes arrive)."""

    def __init__(self, gate):
        self.gate = gate

    def hears_silence(self, status):
        return status != RUNNING

    def step(self, runner, status, data):
        now = int(self.gate.now())
        if status != RUNNING:
            if now > runner.ms:
                runner.ms = now
            return runner.step(), WAIT_MS
        target = runner.ms
        if data or now >= target:
            if now < target:
                runner.ms = now
            return runner.step(), 0
        return status, WAIT_MS


class Cable(FdLine):
    """A clock's USB cable, which the day can pull out (``pulled``): what the
    clock sends then is lost, and so is what the host sends it."""

    pulled = False

    def send(self, data):
        if not self.pulled:
            super().send(data)

    def receive(self):
        data = super().receive()
        return b"" if self.pulled else data


class WifiPlug:
    """A clock's Wi-Fi link, which the day can take away (``pulled``): its
    socket shut at once, its reconnects finding no network until it is back
    (the clock plays on and keeps its events, as on battery)."""

    def __init__(self, link):
        self.link = link
        self.opener = link.opener
        self._pulled = False
        link.opener = self.open

    def open(self, now):
        if self._pulled:
            return None  # NetLink: no Wi-Fi, retry with its backoff
        return self.opener(now)

    @property
    def pulled(self):
        return self._pulled

    @pulled.setter
    def pulled(self, value):
        self._pulled = value
        sock = self.link.client.sock
        if value and sock is not None:
            import socket
            try:  # (from the day's thread: the clock's own thread sees its link end)
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Viewer:
    """The second laptop's lines (``hallclock view --plain``: one a record,
    ``<clock> <topic> #<seq> t=<time> <text>  [<left>]``) beside the log."""

    LINE = re.compile(r"^(\S+) (\S+) #(\d+) t=(\S+) (.*)$")
    TIMED = ("turn", "resume", "dup_start", "press", "pause")  # the lines with a time left

    def __init__(self, path, records, checks):
        self.rows = {}  # (clock, session number, seq) -> [(text, left)], as shown
        number = {}
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = self.LINE.match(line.rstrip("\n"))
                if m is None:
                    continue  # a link's state
                clock, _topic, seq, _t, rest = m.groups()
                if rest.startswith("boot"):
                    number[clock] = number.get(clock, 0) + 1
                left = None
                if "  [" in rest:
                    rest, left = rest.split("  [", 1)
                    left = left.split("]", 1)[0]
                self.rows.setdefault((clock, number.get(clock, 0), int(seq)), []).append(
                    (rest, left))
        self.sessions_of = {}  # clock -> {session id: its number, in the order booted}
        for r in records:
            if r.get("event") == "boot":
                s = self.sessions_of.setdefault(r.get("clock"), {})
                s.setdefault(r.get("session"), len(s) + 1)
        # at each checkpoint: each clock's newest record with a time left (its index)
        self.picks = []
        for p, _now in checks:
            newest = {}
            for i, r in enumerate(records[:p + 1]):
                if r.get("event") in self.TIMED and isinstance(r.get("t_ms"), int):
                    newest[r.get("clock")] = i
            self.picks.append(newest)
        self.records = records

    def key(self, r):
        return (r.get("clock"), self.sessions_of.get(r.get("clock"), {}).get(r.get("session")),
                r.get("seq"))

    def times(self):
        """(clock, session, device ms) whose faces the checks need."""
        return [(self.records[i]["clock"], self.records[i].get("session"),
                 self.records[i]["t_ms"]) for pick in self.picks for i in pick.values()]


def doubled(records):
    """Records stored twice (the same clock, session and number)."""
    seen = set()
    n = 0
    for r in records:
        k = (r.get("clock"), r.get("session"), r.get("seq"))
        if r.get("seq") is not None:
            n += k in seen
            seen.add(k)
    return n


class _Prefix:
    """The console's record source: the log up to a checkpoint."""

    def __init__(self, records):
        self.records = records

    def read(self):
        recs, self.records = self.records, []
        return recs, False

    def exists(self):
        return True


def _short(rec):
    keep = {k: v for k, v in rec.items() if k not in ("clock", "session", "host_time", "seq")}
    return json.dumps(keep, ensure_ascii=False)
