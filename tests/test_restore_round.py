"""A restore after a power loss brings the hall's round back, even when START
was pressed on the rebooted clock before the restore came (docs/protocol.md,
*Power loss and restore*; ČAS 4.1: the basic time is measured from the
referee's one start signal, and runs on through the outage; 6.1: the end
signal is given once; 16.3: the play-out goes on from the step it had
reached).  The virtual clock and the host's own link with ``log --restore``
(``HostLink(restore=True)``), joined in memory; the host's model of the
clock (``hallclock.views.model``, the firmware's code replaying the log) must show
what the clock shows."""
from hallclock.link.hostlink import HostLink
from hallclock.link.logfile import LogWriter, read_records
from hallclock.views.model import Clocks, restore_for
from hallclock.vboard.vdev.runner import Runner, session_after
from hallclock_fw.core.timing import ticks_diff
from hallclock_fw.settings import parse

# a 1-minute round, 8 s per move: the end gong comes at 60 s, in move 9 (A's)
PAIRS = ["move_s=8", "warn_s=", "round_min=1", "round_warn_min=0"]
REBOOT = 61000  # the play-out: (a), the round in progress is finished
BACK = 200  # START pressed on the rebooted clock this long after the power came back
FIRST = "00000001"
NEXT = session_after(FIRST)


def _actions(start_after_reboot):
    acts = [(0, "press", "START"), (1000, "press", "B")]
    acts += [(1000 + 7000 * k, "press", "AB"[(k - 1) % 2]) for k in range(1, 9)]
    acts.append((REBOOT, "reboot", None))
    if start_after_reboot:
        acts.append((REBOOT + BACK, "press", "START"))
    return acts


class Table:
    """The clock and ``log --restore``; the restore frame is held back until
    the clock has taken START in its new session (the host's answer is late)."""

    def __init__(self, tmp_path, start_after_reboot):
        self.runner = Runner("scrabble", parse("scrabble", PAIRS), _actions(start_after_reboot),
                             clock="table-1")
        self.path = str(tmp_path / "log.jsonl")
        self.writer = LogWriter(self.path)
        self.held = []
        self.to_device = []
        self.host = HostLink(self.writer, self.to_device.append, restore=restore_for)
        self.hold = start_after_reboot
        self.before = None  # the displays when the power went

    def run_to(self, ms):
        r = self.runner
        while r.ms < ms:
            if self.before is None and r.ai < len(r.actions) and \
                    r.actions[r.ai][1] == "reboot" and r.actions[r.ai][0] <= r.ms:
                self.before = self.texts()
            r.step()
            self.host.feed(r.take_output())
            for frame in self.to_device:
                if frame.startswith(b"S ") and self.hold:
                    self.held.append(frame)
                else:
                    r.feed(frame)
            del self.to_device[:]
            if self.hold and self.gongs(NEXT):  # START taken: the restore arrives now
                self.hold = False
                for frame in self.held:
                    r.feed(frame)

    def texts(self):
        d = self.runner.displays
        return (d[0].text, d[1].text)

    def records(self, session=None, event=None):
        self.writer.flush()
        return [r for r in read_records(self.path)
                if (session is None or r.get("session") == session)
                and (event is None or r["event"] == event)]

    def names(self, session):
        """The session's events by the rules (its health reports left out:
        tests/test_health.py)."""
        return [r["event"] for r in self.records(session) if r["event"] != "health"]

    def gongs(self, session):
        return [(r["t_ms"], r["kind"]) for r in self.records(session, "gong")]

    def model_face(self):
        clocks = Clocks()
        for rec in self.records():
            clocks.feed(rec, None)
        c = clocks.get("table-1")
        r = self.runner
        t = ticks_diff(r.clock.now, r.app.t0)  # the last pass, in the session's t_ms
        return c.model.face(t).displays, c.model.mismatches


def test_the_play_out_comes_back_after_a_reboot(tmp_path):
    t = Table(tmp_path, start_after_reboot=False)
    t.run_to(REBOOT + 3000)
    assert t.before[1] == "P-  1"  # B waits: (a) the round in progress is finished
    assert t.names(NEXT)[:4] == ["boot", "resume", "round", "playout"]
    assert t.texts()[1] == "P-  1"
    assert t.model_face() == (t.texts(), [])


def test_a_start_pressed_before_the_restore_does_not_begin_a_new_round(tmp_path):
    t = Table(tmp_path, start_after_reboot=True)
    t.run_to(REBOOT + 3000)
    new = t.names(NEXT)
    # the START gong sounded (it cannot be taken back); then the restore was taken
    assert new[:5] == ["boot", "gong", "resume", "round", "playout"], new
    rnd = t.records(NEXT, "round")[0]
    assert rnd["elapsed_ms"] > 60000  # the hall's round, past its end (4.1)
    assert t.records(NEXT, "playout")[0]["step"] == "finish_round"  # 16.3 (a) goes on
    assert t.texts()[1] == t.before[1] == "P-  1"
    assert t.model_face() == (t.texts(), [])
    # 6.1: the end gong was given before the outage; the START pressed on the
    # rebooted clock does not bring another one a round's time later
    t.run_to(REBOOT + BACK + 70000)
    assert t.gongs(NEXT) == [(BACK, "start")]
    assert t.texts()[1] == "P-  1"
    assert t.model_face() == (t.texts(), [])


def test_a_press_whose_contact_closed_before_the_restore_is_timed_from_the_restore(tmp_path):
    """PAUSE's contact closes 6 ms before the restore is taken and is handed
    over by the debounce (12 ms) after it: the restored move cannot end or
    pause before it began, so the press is timed at the restore, and the
    player keeps at most the move's 8 s (ČAS 16.8, 5.1.3; before, 8.006 s: '0:09')."""
    acts = [(0, "press", "START"), (1000, "press", "B"), (1020, "reboot", None),
            (1220, "press", "PAUSE")]
    t = Table(tmp_path, start_after_reboot=False)
    t.runner = Runner("scrabble", parse("scrabble", PAIRS), acts, clock="table-1")
    t.hold = True  # the restore waits until PAUSE's contact has closed
    r = t.runner
    while r.ms <= 1220:  # up to the pass at the contact's edge; the next is due at 1232
        t.run_to(r.ms + 1)
    assert t.held and not t.records(NEXT, "resume")
    for frame in t.held:
        r.feed(frame)
    t.hold = False
    for ms in (1224, 1226):  # the frame wakes the loop: two passes read its 89 bytes
        r.ms = ms  # (64 a pass), both before the debounce's at 1232
        r.step()
    t.host.feed(r.take_output())
    t.run_to(3000)
    resume = t.records(NEXT, "resume")[0]
    pause = t.records(NEXT, "pause")[0]
    assert resume["t_ms"] == 1226 - 1020 and resume["limit_ms"] == 8000, resume
    assert pause["t_ms"] == resume["t_ms"], (resume, pause)
    assert t.texts()[0].strip() == "0:08", t.texts()
    assert t.model_face() == (t.texts(), [])
