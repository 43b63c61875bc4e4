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
from .events import EV_BOOT, EV_SETTINGS, LONG

CAPACITY = const(512)  # events kept (a whole 40-minute game: see docs/protocol.md)
_F = const(7)  # ints per event: seq, t_ms, code, v0..v3
_BURST = const(4)  # frames sent per poll at most (events, hellos, gap frames)
BURST_GAP_MS = const(20)  # wake this soon again while frames wait to be sent
RESEND_MS = const(1500)  # resend what is unacknowledged after this long without progress
HELLO_MS = const(5000)  # re-introduce ourselves this often while the host is silent
QUEUE = const(16)  # host commands kept between two passes of the loop
TEXTS = const(4)  # settings texts kept for boot/settings events not yet sent
NO_CMD = const(-1)
CMD_RESTORE = const(99)  # S: tokens in DeviceLink.payload
CMD_SETTINGS = const(98)  # K: tokens in DeviceLink.payload
CMD_ROUND = const(97)  # N: DeviceLink.arg0 = round, arg1 = elapsed_ms


class DeviceLink:
    def __init__(self, uart, sid, clock, mode, settings_text, version, now, capacity=CAPACITY):
        self.uart = uart
        self.sid = sid
        self.clock = clock
        self.mode = mode  # the hello's mode (changes when settings are taken)
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
        self.host_seen = False
        self.hello_owed = True  # a hello goes out in the next send, within the budget
        self.gap_owed = False  # a G frame goes out in the next send
        # the command queue: QUEUE entries of (code, arg0, arg1) and a payload slot
        self.q = array("i", bytes(4 * 3 * QUEUE))
        self.q_tokens = [None] * QUEUE
        self.q_head = 0  # next entry to hand out
        self.q_len = 0
        self.dropped = 0  # commands dropped because the queue was full
        self.arg0 = 0  # of the command next_command returned last
        self.arg1 = 0
        self.payload = None
        # settings texts carried by boot (generation 0) and settings events
        self.texts = [None] * TEXTS
        self.text_gen = array("i", [-1] * TEXTS)
        self.gen = 0
        self.texts[0] = mode + ":" + settings_text
        self.text_gen[0] = 0

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

    def new_settings(self, mode, settings_text):
        """Settings taken (K, or S with other settings): the hello names the new
        mode from now on.  Returns the text generation the ``settings`` event
        carries in v0 (its text is kept for the last TEXTS generations)."""
        self.mode = mode
        self.settings_text = settings_text
        self.gen += 1
        slot = self.gen % TEXTS
        self.texts[slot] = mode + ":" + settings_text
        self.text_gen[slot] = self.gen
        return self.gen

    def _text(self, gen):
        slot = gen % TEXTS
        if self.text_gen[slot] == gen:
            return self.texts[slot]
        return "?"  # overwritten by TEXTS later settings before the host stored it

    def all_acked(self):
        return self.acked >= self.seq

    def next_deadline(self, now):
        """When the loop should poll the link again (None: only on input)."""
        if self.next_send <= self.seq or self.hello_owed or self.gap_owed:
            return ticks_add(now, BURST_GAP_MS)
        if self.seq > self.acked:
            return ticks_add(self.progress, RESEND_MS)
        return None

    def _send(self, seq):
        r = self.ring
        i = (seq % self.cap) * _F
        text = None
        code = r[i + 2]
        if code == EV_BOOT or code == EV_SETTINGS:
            text = self._text(r[i + 3])
        self.uart.write(protocol.event(self.sid, seq, r[i + 1], code, r[i + 3],
                                       r[i + 4], r[i + 5], r[i + 6], text))

    # -- the loop's part ---------------------------------------------------
    def poll(self, now):
        """Read what the host sent and send what is due; returns how many
        commands wait in the queue (``next_command``)."""
        self.receive(now)
        self.send(now)
        return self.q_len

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
        """The oldest queued command (a button code, CMD_*), or NO_CMD.  Its
        values are in ``arg0``/``arg1`` (N) or ``payload`` (S, K tokens)."""
        if not self.q_len:
            return NO_CMD
        h = self.q_head
        i = h * 3
        q = self.q
        self.arg0 = q[i + 1]
        self.arg1 = q[i + 2]
        self.payload = self.q_tokens[h]
        self.q_tokens[h] = None
        self.q_head = (h + 1) % QUEUE
        self.q_len -= 1
        return q[i]

    def _queue(self, code, a0, a1, tokens):
        if self.q_len >= QUEUE:
            self.dropped += 1
            self.bad += 1
            return
        k = (self.q_head + self.q_len) % QUEUE
        i = k * 3
        q = self.q
        q[i] = code
        q[i + 1] = a0
        q[i + 2] = a1
        self.q_tokens[k] = tokens
        self.q_len += 1

    def send(self, now):
        """Send what is due, at most _BURST frames: an owed hello first, an
        owed gap frame, new events, and resends after RESEND_MS."""
        if self.seq > self.acked and ticks_diff(now, self.progress) >= RESEND_MS:
            self.next_send = self.acked + 1  # nothing acknowledged for a while: go back
            self.progress = now
            if not self.host_seen or ticks_diff(now, self.last_hello) >= HELLO_MS:
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
        while self.next_send <= self.seq and sent < _BURST:
            self._send(self.next_send)
            self.next_send += 1
            sent += 1

    def _feed(self, n, now):
        rx = self.rx
        chunk = self.chunk
        for k in range(n):
            b = chunk[k]
            if b == 10:  # newline
                if not self.rx_skip and self.rxn:
                    self._line(bytes(rx[:self.rxn]), now)
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
            return
        kind = tokens[0]
        self.host_seen = True
        if kind == "A" or kind == "R":
            if tokens[1] != self.sid:
                self.hello_owed = True  # the host is talking to an earlier session
                return
            seq = protocol.to_int(tokens[2])
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
                    self.gap_owed = True
                    seq = self.first
                if seq <= self.seq:
                    self.next_send = seq
                self.progress = now
        elif kind == "W":
            self.hello_owed = True
            self.progress = ticks_add(now, -RESEND_MS)  # and resend at once
        elif kind == "C":
            code = protocol.to_int(tokens[1])
            if 0 <= code <= 4:
                self._queue(code | (LONG if tokens[2] == "1" else 0), 0, 0, None)
            else:
                self.bad += 1
        elif kind == "S":
            self._queue(CMD_RESTORE, 0, 0, tokens)
        elif kind == "K":
            self._queue(CMD_SETTINGS, 0, 0, tokens)
        elif kind == "N":
            self._queue(CMD_ROUND, protocol.to_int(tokens[1]), protocol.to_int(tokens[2]),
                        None)
        else:
            self.bad += 1  # a device frame echoed back, or one not meant for us
