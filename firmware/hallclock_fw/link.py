"""The device's end of the link: numbers events, keeps every event the host
has not acknowledged in a ring allocated once at start, sends and resends
them, and reads the host's frames.  Whatever the link does, it never blocks
the clock: at most ``_BURST`` frames go out per poll, and line noise is
dropped and counted.
"""
from array import array

from micropython import const

from . import protocol
from .core.timing import ticks_add, ticks_diff
from .events import EV_BOOT, LONG

CAPACITY = const(512)  # events kept (a whole 40-minute game: see docs/protocol.md)
_F = const(7)  # ints per event: seq, t_ms, code, v0..v3
_BURST = const(4)  # frames sent per poll at most
BURST_GAP_MS = const(20)  # wake this soon again while frames wait to be sent
RESEND_MS = const(1500)  # resend what is unacknowledged after this long without progress
HELLO_MS = const(5000)  # re-introduce ourselves this often while the host is silent
NO_CMD = const(-1)
CMD_RESTORE = const(99)


class DeviceLink:
    def __init__(self, uart, sid, clock, mode, settings_text, version, now, capacity=CAPACITY):
        self.uart = uart
        self.sid = sid
        self.clock = clock
        self.mode = mode
        self.settings_text = settings_text
        self.version = version
        self.cap = capacity
        self.ring = array("i", bytes(4 * _F * capacity))
        self.seq = 0  # last event numbered
        self.acked = 0  # the host has stored every event up to this one
        self.first = 1  # oldest event still held
        self.next_send = 1  # next event to (re)send
        self.progress = now  # last time the host acknowledged something new
        self.last_hello = now
        self.rx = bytearray(protocol.MAX_LINE + 2)
        self.rxn = 0
        self.rx_skip = False  # inside an overlong line: drop until newline
        self.chunk = bytearray(64)
        self.bad = 0  # frames from the host that were dropped
        self.lost = 0  # events overwritten before the host stored them
        self.restore = None  # tokens of the last S frame
        self.host_seen = False
        self.maintenance = False  # the host asked for the console (M frame)
        self._hello()

    # -- events ------------------------------------------------------------
    def emit(self, t_ms, code, v0, v1, v2, v3):
        self.seq += 1
        if self.seq - self.first >= self.cap:  # ring full: the oldest is overwritten
            if self.acked < self.first:
                self.lost += 1  # ... before the host stored it
            self.first += 1
            if self.acked < self.first - 1:
                self.acked = self.first - 1
            if self.next_send < self.first:
                self.next_send = self.first
        i = (self.seq % self.cap) * _F
        r = self.ring
        r[i] = self.seq
        r[i + 1] = t_ms
        r[i + 2] = code
        r[i + 3] = v0
        r[i + 4] = v1
        r[i + 5] = v2
        r[i + 6] = v3

    def all_acked(self):
        return self.acked >= self.seq

    def next_deadline(self, now):
        """When the loop should poll the link again (None: only on input)."""
        if self.next_send <= self.seq:
            return ticks_add(now, BURST_GAP_MS)
        if self.seq > self.acked:
            return ticks_add(self.progress, RESEND_MS)
        return None

    def _send(self, seq):
        r = self.ring
        i = (seq % self.cap) * _F
        text = None
        if r[i + 2] == EV_BOOT:
            text = self.mode + ":" + self.settings_text
        self.uart.write(protocol.event(self.sid, seq, r[i + 1], r[i + 2], r[i + 3],
                                       r[i + 4], r[i + 5], r[i + 6], text))

    def _hello(self):
        self.uart.write(protocol.hello(self.sid, self.clock, self.mode, self.version))

    # -- the loop's part ---------------------------------------------------
    def poll(self, now):
        """Read what the host sent, send what is due.  Returns a button code
        the host asked for (``C`` frame), CMD_RESTORE, or NO_CMD."""
        cmd = self.receive(now)
        self.send(now)
        return cmd

    def receive(self, now):
        """Read what the host sent (a command, CMD_RESTORE or NO_CMD)."""
        uart = self.uart
        if uart.any():
            n = uart.readinto(self.chunk)
            if n:
                return self._feed(n, now)
        return NO_CMD

    def send(self, now):
        """Send what is due: new events, and resends after RESEND_MS."""
        if self.seq > self.acked and ticks_diff(now, self.progress) >= RESEND_MS:
            self.next_send = self.acked + 1  # nothing acknowledged for a while: go back
            self.progress = now
            if not self.host_seen or ticks_diff(now, self.last_hello) >= HELLO_MS:
                self.last_hello = now
                self._hello()
        sent = 0
        while self.next_send <= self.seq and sent < _BURST:
            self._send(self.next_send)
            self.next_send += 1
            sent += 1

    def _feed(self, n, now):
        cmd = NO_CMD
        rx = self.rx
        for k in range(n):
            b = self.chunk[k]
            if b == 10:  # newline
                if not self.rx_skip and self.rxn:
                    c = self._line(bytes(rx[:self.rxn]), now)
                    if c != NO_CMD:
                        cmd = c
                elif self.rx_skip:
                    self.bad += 1
                self.rxn = 0
                self.rx_skip = False
            elif self.rxn >= protocol.MAX_LINE:
                self.rx_skip = True
            else:
                rx[self.rxn] = b
                self.rxn += 1
        return cmd

    def _line(self, line, now):
        tokens = protocol.check(protocol.unframe(line))
        if tokens is None:
            self.bad += 1
            return NO_CMD
        kind = tokens[0]
        self.host_seen = True
        if kind == "A" or kind == "R":
            if tokens[1] != self.sid:
                self._hello()  # the host is talking to an earlier session
                return NO_CMD
            seq = int(tokens[2])
            if kind == "A":
                if seq > self.seq:
                    seq = self.seq
                if seq > self.acked:
                    self.acked = seq
                    self.progress = now
                if self.next_send <= self.acked:
                    self.next_send = self.acked + 1
            else:
                if seq < self.first:
                    self.uart.write(protocol.gap(self.sid, self.first))
                    seq = self.first
                if seq <= self.seq:
                    self.next_send = seq
                self.progress = now
        elif kind == "W":
            self._hello()
            self.progress = ticks_add(now, -RESEND_MS)  # and resend at once
        elif kind == "C":
            code = int(tokens[1])
            if 0 <= code <= 4:
                return code | (LONG if tokens[2] == "1" else 0)
            self.bad += 1
        elif kind == "S":
            self.restore = tokens
            return CMD_RESTORE
        elif kind == "M":
            self.maintenance = True  # the loop hands the console back (hw/device.py)
        else:
            self.bad += 1  # a device frame echoed back, or one not meant for us
        return NO_CMD
