"""The host's end of the link, for one serial stream (one device at a time,
or a device that reboots): checks frames, turns events into log records,
stores each exactly once, acknowledges only what is stored, asks for what is
missing.  Uses the firmware's own ``protocol`` module: one frame format."""
import time

from hallclock_fw import protocol, settings as settings_mod

from .logfile import host_time

RESEND_ASK_S = 0.5  # ask again for a missing event at most this often


class Session:
    def __init__(self, sid, clock, mode):
        self.sid = sid
        self.clock = clock
        self.mode = mode
        self.expected = 1
        self.asked = 0.0
        self.ended = False


class HostLink:
    def __init__(self, writer, send, name="port"):
        self.writer = writer
        self.send = send  # bytes -> None (to the device)
        self.name = name
        self.buf = bytearray()
        self.sessions = {}
        self.current = None  # the session that spoke last
        self.bad = 0  # lines dropped: noise, bad CRC, malformed
        self.dups = 0
        self.records = 0
        self.on_record = None  # callback(record) for live views

    # -- bytes in ------------------------------------------------------------
    def feed(self, data):
        self.buf.extend(data)
        acks = {}
        while True:
            nl = self.buf.find(b"\n")
            if nl < 0:
                if len(self.buf) > 4 * protocol.MAX_LINE:
                    del self.buf[:]  # a flood of noise without newlines
                    self.bad += 1
                break
            line = bytes(self.buf[:nl + 1])
            del self.buf[:nl + 1]
            self._line(line, acks)
        for sid in acks:
            s = self.sessions[sid]
            self.send(protocol.ack(sid, s.expected - 1))

    def _line(self, line, acks):
        tokens = protocol.check(protocol.unframe(line))
        if tokens is None:
            if line.strip():
                self.bad += 1
            return
        kind = tokens[0]
        if kind == "H":
            _h, sid, clock, mode, _version = tokens
            s = self.sessions.get(sid)
            if s is None:
                s = Session(sid, clock, mode)
                s.expected = self.writer.last_seq(clock, sid) + 1
                self.sessions[sid] = s
            self.current = s
            acks[sid] = True
        elif kind == "E":
            sid = tokens[1]
            s = self.sessions.get(sid)
            if s is None:
                self.send(protocol.who())
                return
            self.current = s
            acks[sid] = True
            seq = int(tokens[2])
            if seq < s.expected:
                self.dups += 1
                return
            if seq > s.expected:
                now = time.monotonic()
                if now - s.asked > RESEND_ASK_S:
                    s.asked = now
                    self.send(protocol.resend(sid, s.expected))
                return
            self._store(s, tokens)
        elif kind == "G":
            sid = tokens[1]
            s = self.sessions.get(sid)
            first = int(tokens[2])
            if s is not None and first > s.expected:
                self.writer.write({
                    "clock": s.clock, "seq": s.expected, "t_ms": None, "event": "gap",
                    "missing": [s.expected, first - 1], "session": sid,
                    "host_time": host_time()})
                s.expected = first
                acks[sid] = True
        else:
            self.bad += 1

    def _store(self, s, tokens):
        seq, t_ms, name, values, text = protocol.event_fields(tokens)
        record = {"clock": s.clock, "seq": seq, "t_ms": t_ms, "event": name}
        if name == "boot":
            mode, _, stext = (text or "").partition(":")
            record["mode"] = mode
            try:
                record["settings"] = settings_mod.to_json(
                    mode, settings_mod.parse_text(mode, stext))
            except ValueError:
                record["settings"] = {"raw": stext}
        record.update(values)
        record["session"] = s.sid
        record["host_time"] = host_time()
        self.writer.write(record)
        s.expected = seq + 1
        self.records += 1
        if name == "end":
            s.ended = True
        if self.on_record is not None:
            self.on_record(record)

    def ended(self):
        """True once some session's end is stored with everything before it."""
        return any(s.ended for s in self.sessions.values())
