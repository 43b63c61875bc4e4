"""A virtual device and the real host link in lock step, in one thread: the
device's bytes go straight into ``hostlink.HostLink`` (which stores the
records in a real log and answers with acks), and after every loop pass the
texts of the device's two displays are noted when they change.  Used by the
display property test and its longer run in ``make bench``."""
import os
import tempfile

from hallclock.link.hostlink import HostLink
from hallclock.link.logfile import LogWriter
from hallclock.vboard.vdev.runner import DONE, RUNNING, Runner
from hallclock_fw.core.timing import ticks_diff


class QuickWriter(LogWriter):
    """A real log writer without the fsync (a test's temporary file)."""

    def sync(self, fd):
        pass


class Lockstep:
    """``for t_ms, texts in run.changes(): ...`` -- records so far in ``run.records``."""

    def __init__(self, mode, settings, actions, start_ticks=0, period=None, seed=12345,
                 clock="prop-1", max_passes=2000000, restore=None, host_frames=()):
        self.runner = Runner(mode, settings, actions, clock=clock, start_ticks=start_ticks,
                             period=period, seed=seed)
        self.dir = tempfile.mkdtemp(prefix="lockstep-")
        self.writer = QuickWriter(os.path.join(self.dir, "log.jsonl"))
        self.link = HostLink(self.writer, self.runner.feed, "lockstep", restore=restore)
        self.records = []
        self.link.on_record = self.records.append
        self.max_passes = max_passes
        # frames the host sends of its own (K, N, C ...): [(scenario ms, bytes)]
        self.host_frames = sorted(host_frames, key=lambda f: f[0])

    def session(self):
        """The device's session id now (a reboot starts a new one)."""
        return self.runner.sid

    def texts(self):
        d = self.runner.displays
        return (d[0].text, d[1].text)

    def changes(self):
        """Run the scenario to its end; yields (t_ms, texts) after each pass
        that changed a display or brought records, once the host has stored
        that pass's events (``t_ms`` as the device's session counts it)."""
        r = self.runner
        status = RUNNING
        last = None
        heard = 0
        try:
            while status != DONE:
                was_running = status == RUNNING
                while self.host_frames and self.host_frames[0][0] <= r.ms:
                    r.feed(self.host_frames.pop(0)[1])
                status = r.step() if was_running else r.advance(1)
                self.link.feed(r.take_output())
                now = self.texts()
                # after the scenario's end the session is over: a display that
                # goes on counting while the last acks come is not the game;
                # a pass whose events are not all sent yet (a link sends a few
                # frames a pass: three events at boot, a press and new
                # settings) is compared once the rest has come
                if was_running and self.all_heard() and \
                        (now != last or len(self.records) != heard):
                    # a display changed, or records came (restores are checked there)
                    last = now
                    heard = len(self.records)
                    yield self.device_t_of_last_pass(), now
                if r.passes > self.max_passes:
                    raise RuntimeError("the virtual device did not finish")
        finally:
            self.writer.close()

    def all_heard(self):
        """The host has stored every event this session's clock has made."""
        made = self.runner.app.link.seq
        sid = self.session()
        for rec in reversed(self.records):
            if rec.get("session") == sid and "seq" in rec:
                return rec["seq"] >= made
        return made == 0

    def device_t_of_last_pass(self):
        # step() moved time on after the pass; the pass ran at runner.clock.now
        r = self.runner
        return ticks_diff(r.clock.now, r.app.t0)
