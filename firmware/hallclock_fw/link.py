"""The device's end of the link: numbers events, keeps every event the host
has not acknowledged in a ring allocated once at start, sends and resends
them, and reads the host's frames.  Whatever the link does, it never blocks
the clock: at most ``_BURST`` frames go out per poll (hellos and gap frames
included), and line noise is dropped and counted.

Every command the host sends (``C``, ``S``, ``K``, ``N``) is kept, in the
order it arrived, in a small queue allocated once; the app drains it each
pass with ``next_command``.
"""
from array import array

from micropython import const

from . import protocol
from .core.timing import ticks_add, ticks_diff
from .events import EV_BOOT, EV_HEALTH, EV_SETTINGS, LONG

CAPACITY = const(128)  # events kept through a host outage (docs/protocol.md "Ring capacity")
_F = const(6)  # ints per event: t_ms, code, v0..v3 (its seq is its place: seq % cap)
_BURST = const(2)  # frames sent a pass at most: their garbage is collected between passes
BURST_GAP_MS = const(20)  # wake this soon again while frames wait to be sent
RESEND_MS = const(1500)  # resend what is unacknowledged after this long without progress
# ... at most; once an ack's round trip is measured, after a few round trips
_RTO_MIN_MS = const(100)  # never sooner (a host's fsync under load takes tens of ms)
HELLO_MS = const(5000)  # re-introduce ourselves this often while the host is silent
# the round-trip timing in one int array (``rtt``): one interned name for the four
_SRTT = const(0)  # smoothed round trip, ms (0: none measured yet)
_TIMED = const(1)  # the event being timed (0: none)
_TIMED_AT = const(2)  # when it was first sent
_SENT_MAX = const(3)  # the newest event sent at least once
_QUEUE = const(16)  # host commands kept between two passes of the loop


def _zeros(n):
    """An array of ``n`` zero ints in one allocation (``bytes(4 * n)`` first
    would need a second block as large at the same moment)."""
    ring = array("i", range(n))  # the length is known: one allocation
    for i in range(n):
        ring[i] = 0
    return ring


_RESERVED = []  # the ring reserve() allocated, until a DeviceLink takes it


def reserve(capacity=CAPACITY):
    """Allocate the event ring now, before other imports fragment the heap
    (hw/device.py calls it when it is imported, docs/micropython.md); the
    first DeviceLink of that capacity takes it."""
    if not _RESERVED:
        _RESERVED.append(_zeros(_F * capacity))


class DeviceLink:
    def __init__(self, uart, sid, clock, mode, settings_text, version, now, capacity=CAPACITY):
        self.uart = uart
        # frames a pass at most: the link's own figure where it has one (netlink.py)
        self.burst = getattr(uart, "burst", _BURST)
        self.sid = sid
        self.clock = clock
        self.mode = mode  # the hello's mode (the app changes it when settings are taken)
        self.settings_text = settings_text  # ... and the text of a ``settings`` event
        self.boot_text = mode + ":" + settings_text
        self.version = version
        self.cap = capacity
        if _RESERVED and len(_RESERVED[0]) == _F * capacity:
            self.ring = _RESERVED.pop()
        else:
            self.ring = _zeros(_F * capacity)
        self.seq = 0  # last event numbered
        self.acked = 0  # the host has stored every event up to this one
        self.first = 1  # oldest event still held
        self.next_send = 1  # next event to (re)send
        self.progress = now  # last time the host acknowledged something new
        # the resend timer follows the round trip, never of a resent event (which sending?)
        self.rto = RESEND_MS
        self.rtt = array("i", (0, 0, now, 0))  # _SRTT, _TIMED, _TIMED_AT, _SENT_MAX
        self.heard = now  # last time a sound frame came from the host
        self.probe = 0  # host away: resend only up to this event (0: everything)
        self.last_hello = now
        self.rx = bytearray(protocol.MAX_LINE + 2)
        self.rxn = 0
        self.rx_skip = False  # inside an overlong line: drop until newline
        self.chunk = bytearray(64)
        self.bad = 0  # frames from the host that were dropped
        self.lost = 0  # events overwritten before the host stored them
        self.host_seen = False
        self.hello_owed = True  # a hello goes out in the next send, within the budget
        self.gap_owed = False  # a G frame goes out in the next send
        # the command queue: a button code (int) or the tokens of S, K, N
        self.q = [None] * _QUEUE
        self.q_head = 0  # next entry to hand out
        self.q_len = 0
        self.maintenance = False  # the host asked for the console (M frame)
        self.info_owed = False  # the host asked who we are in full (I frame)
        self.health_seq = 0  # the last health event and its text (the only one
        self.health_text = None  # kept: an older one is resent with its ints alone)

    # -- events ------------------------------------------------------------
    def emit(self, t_ms, code, v0, v1, v2, v3):
        self.seq += 1
        if self.seq - self.first >= self.cap:  # ring full: the oldest is overwritten
            if self.acked < self.first:
                self.lost += 1  # ... before the host stored it
            if self.rtt[_TIMED] == self.first:  # its ack would be a later event's: no round trip
                self.rtt[_TIMED] = 0
            self.first += 1
            if self.acked < self.first - 1:
                self.acked = self.first - 1
            if self.next_send < self.first:
                self.next_send = self.first
        i = (self.seq % self.cap) * _F
        r = self.ring
        r[i] = t_ms
        r[i + 1] = code
        r[i + 2] = v0
        r[i + 3] = v1
        r[i + 4] = v2
        r[i + 5] = v3

    def all_acked(self):
        return self.acked >= self.seq

    def next_deadline(self, now):
        """When the loop should poll the link again (None: only on input)."""
        if (self.next_send <= self.seq and not self.probe) or self.hello_owed \
                or self.gap_owed:
            return ticks_add(now, BURST_GAP_MS)
        if self.seq > self.acked:
            return ticks_add(self.progress, self.rto)
        return None

    def _send(self, seq, now):
        r = self.ring
        i = (seq % self.cap) * _F
        text = None
        code = r[i + 1]
        if code == EV_BOOT:
            text = self.boot_text
        elif code == EV_SETTINGS:  # the settings as they stand (docs/protocol.md)
            text = self.mode + ":" + self.settings_text
        elif code == EV_HEALTH and seq == self.health_seq:
            text = self.health_text
        rtt = self.rtt
        if seq > rtt[_SENT_MAX]:  # a first sending: time it if none is timed
            if rtt[_SENT_MAX] <= self.acked:  # none owed before: the wait starts at this sending
                self.progress = now
                self.heard = now  # ... and so does the host's silence (probe)
            rtt[_SENT_MAX] = seq
            if not rtt[_TIMED]:
                rtt[_TIMED] = seq
                rtt[_TIMED_AT] = now
        self.uart.write(protocol.event(self.sid, seq, r[i], code, r[i + 2],
                                       r[i + 3], r[i + 4], r[i + 5], text))

    # -- the loop's part ---------------------------------------------------
    def receive(self, now):
        """Read what the host sent (one chunk); commands join the queue.
        Returns how many commands wait."""
        uart = self.uart
        if uart.any():
            n = uart.readinto(self.chunk)
            if n:
                self._feed(n, now)
        return self.q_len

    def next_command(self):
        """The oldest queued command, or None: a button code (``C``), or the
        tokens (list of str) of an ``S``, ``K`` or ``N`` frame."""
        if not self.q_len:
            return None
        h = self.q_head
        cmd = self.q[h]
        self.q[h] = None
        self.q_head = (h + 1) % _QUEUE
        self.q_len -= 1
        return cmd

    def _queue(self, cmd):
        if self.q_len >= _QUEUE:
            self.bad += 1  # cannot happen at 64 bytes read per pass; counted if it does
            return
        self.q[(self.q_head + self.q_len) % _QUEUE] = cmd
        self.q_len += 1

    def send(self, now):
        """Send what is due, at most ``burst`` frames: an owed hello first, an
        owed gap frame, the oldest owed event after the resend wait, new events."""
        oldest = 0
        if self.rtt[_SENT_MAX] > self.acked and ticks_diff(now, self.progress) >= self.rto:
            oldest = self.acked + 1  # alone: a slow host is not fed its window again
            self.progress = now
            self.rtt[_TIMED] = 0
            # each timeout in a row waits twice as long, up to RESEND_MS (a host away)
            self.rto = self.rto * 2 if self.rto < RESEND_MS // 2 else RESEND_MS
            # host silent for HELLO_MS: new events wait behind the probe (a restarted host says W)
            if ticks_diff(now, self.heard) >= HELLO_MS:
                self.next_send = self.probe = oldest
                if ticks_diff(now, self.last_hello) >= HELLO_MS:
                    self.hello_owed = True
            if not self.host_seen:
                self.hello_owed = True
        sent = 0
        if self.hello_owed:
            self.hello_owed = False
            self.last_hello = now
            self.uart.write(protocol.hello(self.sid, self.clock, self.mode, self.version))
            sent += 1
        if self.gap_owed:
            self.gap_owed = False
            self.uart.write(protocol.gap(self.sid, self.first))
            sent += 1
        if oldest and self.next_send > oldest:
            if sent < self.burst:
                self._send(oldest, now)
                sent += 1
            else:  # no room in this pass (a gap frame): from it, in the next ones
                self.next_send = oldest
        last = self.probe if self.probe else self.seq
        while self.next_send <= last and sent < self.burst:
            self._send(self.next_send, now)
            self.next_send += 1
            sent += 1

    def _rto(self):
        """The resend timer: three smoothed round trips of an ack (which waits
        for the host's fsync), within its bounds."""
        rto = 3 * self.rtt[_SRTT]
        self.rto = _RTO_MIN_MS if rto < _RTO_MIN_MS else (RESEND_MS if rto > RESEND_MS else rto)

    def _feed(self, n, now):
        rx = self.rx
        chunk = self.chunk
        for k in range(n):
            b = chunk[k]
            if b == 10:  # newline
                if not self.rx_skip and self.rxn:
                    self._line(bytes(memoryview(rx)[:self.rxn]), now)  # one copy
                elif self.rx_skip:
                    self.bad += 1
                self.rxn = 0
                self.rx_skip = False
            elif self.rxn >= protocol.MAX_LINE:
                self.rx_skip = True  # overlong: the whole line is dropped
            else:
                rx[self.rxn] = b
                self.rxn += 1

    def _line(self, line, now):
        tokens = protocol.check(protocol.unframe(line))
        if tokens is None:
            self.bad += 1
            if self.rtt[_SENT_MAX] > self.acked and self.next_send > self.acked + 1:
                # most likely an ack or an R, damaged: go back now, not after the resend wait
                self.next_send = self.acked + 1
                self.rtt[_TIMED] = 0
            return
        kind = tokens[0]
        self.host_seen = True
        self.heard = now
        self.probe = 0
        if kind == "A" or kind == "R":
            if tokens[1] != self.sid:
                self.hello_owed = True  # the host is talking to an earlier session
                return
            seq = protocol.to_int(tokens[2])
            if kind == "A":
                rtt = self.rtt
                if not rtt[_SRTT] and ticks_diff(now, self.last_hello) < RESEND_MS:
                    # none timed yet (noise can keep it so): the host answers a hello at once
                    rtt[_SRTT] = ticks_diff(now, self.last_hello) + 1
                    self._rto()
                if seq > self.seq:
                    seq = self.seq
                if seq > self.acked:
                    self.acked = seq
                    self.progress = now
                    if rtt[_TIMED] and seq >= rtt[_TIMED]:
                        rtt[_TIMED] = 0
                        ms = ticks_diff(now, rtt[_TIMED_AT]) + 1  # (0: none measured)
                        srtt = rtt[_SRTT]
                        rtt[_SRTT] = ms if not srtt else srtt + (ms - srtt) // 4
                    if rtt[_SRTT]:  # (progress also ends the timeouts' doubling)
                        self._rto()
                if self.next_send <= self.acked:
                    self.next_send = self.acked + 1
            else:
                if seq < self.first:
                    self.gap_owed = True
                    seq = self.first
                if seq <= self.seq:
                    self.next_send = seq  # the host says what it misses: from there, now
                self.progress = now
                self.rtt[_TIMED] = 0
        elif kind == "W":
            self.hello_owed = True
            if self.next_send > self.acked + 1:  # and everything owed again, at once
                self.next_send = self.acked + 1
                self.rtt[_TIMED] = 0
        elif kind == "C":
            code = protocol.to_int(tokens[1])
            if 0 <= code <= 4:
                self._queue(code | (LONG if tokens[2] == "1" else 0))
            else:
                self.bad += 1
        elif kind == "S" or kind == "K" or kind == "N":
            self._queue(tokens)
        elif kind == "I":
            self.info_owed = True  # the loop answers with a health event (hw/device.py)
        elif kind == "M":
            self.maintenance = True  # the loop hands the console back (hw/device.py)
        else:
            self.bad += 1  # a device frame echoed back, or one not meant for us
