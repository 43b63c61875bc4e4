"""The one pump of every virtual clock: a ``Runner`` on a line under a pace.

- The **line** carries the Runner's UART bytes to the host and back: a pty or
  serial port (``hallclock.vboard.device.FdLine``, CPython) or the hall network
  (``netpump.NetLine``: the firmware's own NetLink and MQTT client).  A line
  has ``ready()`` (on the network yet), ``send(data)``, ``receive()`` (bytes,
  never blocks), ``wait(ms)`` (until host bytes come or ``ms`` pass),
  ``sent_all()`` and ``close()``.
- The **pace** says when the next pass happens.  :class:`SimPace`: simulated
  time, as fast as the machine allows while the host has every event, held
  while events wait for the host's acknowledgement (on a serial line no
  faster than real time, ``Runner.pace``, so the link's resend and hello
  timers fire at a board's rate), so logs are the same on every run and
  every interpreter.
  :class:`RealPace`: simulated ms = real ms since a mark ``t0`` × ``speed``,
  the mark shared by every clock of a virtual hall so their ``t_ms`` compare;
  a pass happens when the device's next wake is due or host bytes arrive
  (then at the current time, as a board woken by its UART).

After the scenario's ``end`` time runs at the real rate until the host has
every event (True); the pump gives up after ``silence_ms`` of real time
without a byte from the host while events wait for it (False; ``HostSilence``:
a quiet stretch of play with every event acknowledged is no silence; under
RealPace only once the game has ended: a clock on real time plays its game
whether a host listens or not).

MicroPython-compatible (integer ticks there, ``time.monotonic`` on CPython),
so the same pump runs a clock under CPython and inside the unix port.
"""
import time

from hallclock_fw import protocol

from .runner import DONE, HANDED_BACK, PACED, RUNNING, HostSilence

SILENCE_MS = 30000  # the contract: give up after 30 s without host contact
WAIT_MS = 20  # after the end: the longest wait for host bytes between passes
PACED_MS = 5  # paced (events wait): the longest wait for the host's ack
REAL_MAX_MS = 50  # real pace: the longest wait for a pass still due later

if hasattr(time, "ticks_ms"):  # MicroPython: wrapping integer ticks
    def mark():
        """A point in real time, for :func:`since`."""
        return time.ticks_ms()

    def since(t0):
        """Real ms since the mark ``t0``."""
        return time.ticks_diff(time.ticks_ms(), t0)
else:
    def mark():
        """A point in real time, for :func:`since`."""
        return time.monotonic()

    def since(t0):
        """Real ms since the mark ``t0`` (a float: sub-ms on CPython)."""
        return (time.monotonic() - t0) * 1000.0


class SimPace:
    """Simulated time (``simulate``, ``device`` and the tests' single clocks).

    ``hold_ms`` None (a serial line): no faster than real time while events
    wait for the host (``Runner.pace``), as on a board.  ``hold_ms`` a number
    (the hall network): after a pass that made new events, wait up to
    ``hold_ms`` real ms for their acknowledgement (read from the host's ``A``
    frames), then run on: a broker away for a minute must not slow a game to
    real time (the ring keeps its events), while a host that answers in time
    is heard at the same simulated moment on every run."""

    def __init__(self, hold_ms=None):
        self.origin = mark()
        self.last = 0  # real ms of the previous call
        self.hold_ms = hold_ms
        self.acked = 0  # the newest event the host's A frames covered
        self.seen = 0  # the newest event already waited for
        self.until = None  # real ms the wait for ``seen``'s ack ends

    def hears_silence(self, status):
        return True

    def step(self, runner, status, data):
        """At most one pass; (status, ms the pump may wait for host bytes)."""
        real = since(self.origin)
        if status != RUNNING:  # after the end: real time
            step = int(real - self.last)
            self.last = real
            return runner.advance(step if step > 0 else 1), WAIT_MS
        self.last = real
        if self.hold_ms is None:
            runner.pace(int(real))
            result = runner.step()
            if result == PACED:  # nothing to do before real time catches up
                return RUNNING, PACED_MS
            return result, 0
        if data:
            self.acked = acked_in(data, self.acked)
        seq = runner.last_seq()
        if seq < self.acked:
            self.acked = 0  # a new session (reboot): its numbers start again
        if seq != self.seen and seq > self.acked and runner.pending():
            if self.until is None:
                self.until = real + self.hold_ms
            if real < self.until:  # wait (real time) for this pass's events' ack
                return RUNNING, PACED_MS
        self.seen = seq
        self.until = None
        return runner.step(), 0


def acked_in(data, acked):
    """The newest seq the ``A`` frames in the host's bytes acknowledge."""
    start = 0
    while True:
        nl = data.find(b"\n", start)
        if nl < 0:
            return acked
        if data[start:start + 2] == b"A ":
            tokens = protocol.check(protocol.unframe(data[start:nl + 1]))
            if tokens is not None and int(tokens[2]) > acked:
                acked = int(tokens[2])
        start = nl + 1


class RealPace:
    """Simulated ms = (real ms since ``t0``, a :func:`mark`) × ``speed``."""

    def __init__(self, t0, speed=1.0):
        self.t0 = t0
        self.speed = speed

    def hears_silence(self, status):
        return status != RUNNING

    def step(self, runner, status, data):
        now = int(since(self.t0) * self.speed)
        if status != RUNNING:  # after the end
            if now > runner.ms:
                runner.ms = now
            return runner.step(), WAIT_MS
        target = runner.ms
        if data or now >= target:
            if now < target:
                runner.ms = now  # woken by the host: a pass now
            return runner.step(), 0
        # never skip a pass the device asked for: wait for it (or host bytes)
        wait = int((target - now) / self.speed) + 1
        return status, wait if wait < REAL_MAX_MS else REAL_MAX_MS


def pump(runner, line, pace=None, silence_ms=SILENCE_MS, connect_ms=None, stop=None,
         after_pass=None):
    """Run ``runner`` on ``line`` under ``pace`` (SimPace by default) until the
    host has every event (True) or was silent for ``silence_ms`` (False).  A
    host that takes the console (``M`` frame) ends it too (True): the clock
    has stopped.  ``stop()`` ends it early (False); ``after_pass()`` runs after
    every pass (tests inject faults there).  A line that is not ``ready()``
    (the network) is waited for first, at most ``connect_ms``: a virtual
    clock's game begins once it is on the network."""
    began = mark()
    limit = silence_ms if connect_ms is None else connect_ms
    while not line.ready():
        if since(began) > limit or (stop is not None and stop()):
            return False
        line.wait(WAIT_MS)
    if pace is None:
        pace = SimPace()
    silence = HostSilence(silence_ms)
    status = RUNNING
    while True:
        if stop is not None and stop():
            return False
        line.send(runner.take_output())
        data = line.receive()
        real = int(since(began))
        if data:
            runner.feed(data)
            silence.heard(real)
        if status == DONE or status == HANDED_BACK:
            if line.sent_all():
                return True
            line.wait(WAIT_MS)
            continue
        if silence.over(real, pace.hears_silence(status) and runner.pending()):
            return False
        status, wait = pace.step(runner, status, data)
        if after_pass is not None:
            after_pass()
        if wait and not data:
            line.wait(wait)
