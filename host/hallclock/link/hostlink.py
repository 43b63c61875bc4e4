"""The host's end of the link, for one serial stream (one device at a time,
or a device that reboots): checks frames, turns events into log records,
stores each exactly once, acknowledges only what is stored, asks for what is
missing, notices a device that lost power, and can send the game back.
Uses the firmware's own ``protocol`` module: one frame format
(docs/protocol.md)."""
import sys
import time

from hallclock_fw import protocol, settings as settings_mod
from .. import hostframes
from .. import catalog

from ..errors import shown
from .logfile import host_time, read_records
from .health import health_fields

RESEND_ASK_S = 0.5  # ask again for the same missing event at most this often ...
RESEND_ASK_MIN_S = 0.05  # ... and, once the round trip of an ask is measured, 3 of them
WHO_ASK_S = 0.5  # ask an unknown session who it is at most this often
RESTORE_RETRY_S = 2.0  # send the restore again if the clock has not taken it
RESTORE_TRIES = 5


class Session:
    def __init__(self, sid, clock, mode):
        self.sid = sid
        self.clock = clock
        self.mode = mode
        self.expected = 1
        self.asked = 0.0
        self.asked_for = 0  # the event the last resend request asked for
        self.ask_rtt = 0.0  # smoothed time from a request to its event's arrival (0: none yet)
        self.ended = False
        self.restore = None  # the S frame to send (bytes) until the clock takes it
        self.restore_next = 0.0
        self.restore_tries = 0
        self.round = None  # the round this session's game belongs to (tag_round)


# -- running a round: the round tag ------------------------------------------
def tag_round(session, record):
    """From a session's ``round`` event on (the clock took the round number
    from the host), every record of that game carries ``round``.  A new
    session (a reboot) is a new game: untagged until it learns the round; so
    is the game a clock begins in the same session after its ``end``."""
    if record.get("event") == "round" and isinstance(record.get("round"), int):
        session.round = record["round"]
    if session.round is not None:
        record["round"] = session.round
        if record.get("event") == "end":
            session.round = None


class HostLink:
    def __init__(self, writer, send, name="port", restore=None, clock=time.monotonic,
                 table=None):
        self.writer = writer
        self.table = table  # the one clock this link is to (a hall topic), None: any
        self.send = send  # bytes -> None (to the device)
        self.name = name
        # send the game back after a power loss: ``restore(records, restored=,
        # say=)`` gives what (``hallclock.views.model.restore_for``), None: never
        self.restore = restore
        self.time = clock
        self.buf = bytearray()
        self.sessions = {}
        self.current = None  # the session that spoke last
        self.bad = 0  # lines dropped: noise, bad CRC, malformed
        self.dups = 0  # events received again that were already stored
        self.records = 0
        self.power_losses = 0
        self.asked_who = 0.0
        self.on_record = None  # callback(record) for live views, once stored
        self.acks = {}  # sid -> True: sessions to acknowledge after the next flush
        self.stored = []  # records queued since the last send_acks (for on_record)
        self.refused = {}  # sid -> protocol version this host does not know (not acked)
        self.say = lambda text: print("hallclock: " + shown(text), file=sys.stderr)

    # -- bytes in ------------------------------------------------------------
    def feed(self, data, flush=True):
        """Take bytes from the line.  Events become records queued in the
        writer; with ``flush`` they are stored (one write + fsync) and
        acknowledged at once.  A caller that serves several links passes
        ``flush=False``, calls ``writer.flush()`` once for all of them, then
        ``send_acks()`` on each: an ack never leaves before the fsync that
        covers it."""
        buf = self.buf
        buf.extend(data)
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            self._line(bytes(buf[start:nl + 1]), self.acks)
            start = nl + 1
        if start:
            del buf[:start]
        if len(buf) > protocol.MAX_LINE + 2:
            del buf[:-(protocol.MAX_LINE + 2)]  # noise without newlines
            self.bad += 1
        if flush:
            self.writer.flush()
            self.send_acks()
        self.poll()

    def send_acks(self):
        """One cumulative ack per session that spoke since the last call, and
        the stored records to the live view.  Call only once the writer has
        flushed what ``feed`` queued."""
        if self.acks:
            for sid in self.acks:
                s = self.sessions[sid]
                # only what is on disk: a full disk holds records back (logfile)
                self.send(hostframes.ack(sid, min(s.expected - 1,
                                                self.writer.durable_seq(s.clock, sid))))
            self.acks.clear()
        if self.stored:
            if self.on_record is not None:
                for record in self.stored:
                    self.on_record(record)
            del self.stored[:]

    def poll(self):
        """Timers: a restore the clock has not taken yet is sent again."""
        now = self.time()
        for s in self.sessions.values():
            if s.restore is not None and now >= s.restore_next:
                if s.restore_tries >= RESTORE_TRIES:
                    s.restore = None
                    continue
                s.restore_tries += 1
                s.restore_next = now + RESTORE_RETRY_S
                self.send(s.restore)

    def _line(self, line, acks):
        tokens = protocol.check(protocol.unframe(line))
        if tokens is None:
            if line.strip():
                self.bad += 1
                # a damaged line may have been the clock's last event: ask now,
                # not after the clock's resend timer (the request is cheap)
                s = self.current
                if s is not None and not s.ended:
                    self._ask(s)
            return
        kind = tokens[0]
        if kind == "H":
            sid, clock, mode = tokens[1], tokens[2], tokens[3]
            proto = tokens[5] if len(tokens) > 5 else "1"  # none: the first grammar
            if proto != protocol.PROTO:
                # a grammar this host does not know: never ack it (the clock keeps
                # every event), and say so once (docs/protocol.md, "Versions")
                if sid not in self.refused:
                    self.refused[sid] = proto
                    self.say("%s: clock %s speaks protocol %s, this hallclock knows %s; "
                             "its events are not logged: update hallclock (or the clock's "
                             "firmware) so they match" % (self.name, clock, proto,
                                                           protocol.PROTO))
                return
            s = self.sessions.get(sid)
            if s is None:
                s = Session(sid, clock, mode)
                s.expected = self.writer.last_seq(clock, sid) + 1
                s.ended = self.writer.has_end(clock, sid)
                s.round = self.writer.rounds.get((clock, sid))
                self.sessions[sid] = s
                self._new_session(s)
            self.current = s
            acks[sid] = True
        elif kind == "E":
            sid = tokens[1]
            s = self.sessions.get(sid)
            if s is None and sid in self.refused:
                return  # a session in a protocol this host does not know
            if s is None:  # we came in mid-session: who is this?
                now = self.time()
                if now - self.asked_who > WHO_ASK_S:
                    self.asked_who = now
                    self.send(protocol.who())
                return
            self.current = s
            acks[sid] = True
            if not self.writer.accepting():
                return  # the disk is full and the host holds enough: the clock keeps it
            seq = int(tokens[2])
            if seq < s.expected:
                self.dups += 1
                return
            if seq > s.expected:
                self._ask(s)
                return
            if seq == s.asked_for and s.asked:
                rtt = self.time() - s.asked
                s.ask_rtt = rtt if not s.ask_rtt else s.ask_rtt + (rtt - s.ask_rtt) / 4
                s.asked = 0.0
            self._store(s, tokens)
        elif kind == "G":
            sid = tokens[1]
            s = self.sessions.get(sid)
            first = int(tokens[2])
            if s is not None and first > s.expected:
                # the clock overwrote events before we stored them (ring full)
                self.writer.add({
                    "clock": s.clock, "seq": s.expected,
                    "t_ms": self.writer.last_t_ms(s.clock, sid), "event": "gap",
                    "missing": [s.expected, first - 1], "session": sid,
                    "host_time": host_time()})
                self.stored.append(self.writer.pending_records[-1])  # the live views hear of it
                s.expected = first
                acks[sid] = True
        else:
            self.bad += 1  # a host frame echoed back, or one not meant for us

    def _ask(self, s):
        """Ask the clock for ``s.expected`` onwards: a new hole at once; the
        same one again after three round trips of a request (at most
        RESEND_ASK_S)."""
        now = self.time()
        again = min(RESEND_ASK_S, max(RESEND_ASK_MIN_S, 3 * s.ask_rtt)) \
            if s.ask_rtt else RESEND_ASK_S
        if s.asked_for != s.expected or now - s.asked > again:
            s.asked = now
            s.asked_for = s.expected
            self.send(hostframes.resend(s.sid, s.expected))

    def _new_session(self, s):
        """A session we have not heard in this run: if the same clock's
        previous session in the log never ended, the clock lost power."""
        old = self.writer.latest.get(s.clock)
        if old is None or old == s.sid or self.writer.is_closed(s.clock, old):
            return
        last = self.writer.last_seq(s.clock, old)
        record = {
            "clock": s.clock, "seq": last + 1, "t_ms": self.writer.last_t_ms(s.clock, old),
            "event": "power_loss", "session": old, "last_seq": last,
            "next_session": s.sid}
        rnd = self.writer.rounds.get((s.clock, old))
        if rnd is not None:
            record["round"] = rnd  # the old game's record, in its round (tag_round)
        sent = None
        if self.restore and s.expected == 1:
            self.writer.flush()
            mine = [r for r in read_records(self.writer.path) if r.get("clock") == s.clock]
            before = [r for r in mine if r.get("event") == "power_loss"
                      and r.get("next_session") == old and isinstance(r.get("restore"), dict)]
            restored = None
            if before:
                got = before[-1]["restore"]
                restored = (got.get("mode"), got.get("settings"), got.get("values"))
            sent = self.restore([r for r in mine if r.get("session") == old],
                                restored=restored, say=self.say)
        if sent is not None:
            # the log says what the clock was sent (the model of the new
            # session replays it: hallclock.views.model)
            mode, stext, values = sent
            record["restore"] = {"mode": mode, "settings": stext, "values": values}
        record["host_time"] = host_time()
        self.writer.add(record)  # stored with the pass's records: one fsync (docs/network.md)
        self.stored.append(record)  # the live views hear of it
        self.power_losses += 1
        if sent is not None:
            s.restore = hostframes.restore(mode, stext, *values)
            # before the ack of the hello: the clock takes it before its first move
            self.poll()

    def _store(self, s, tokens):
        seq, t_ms, name, values, text = catalog.event_fields(tokens)
        record = {"clock": s.clock, "seq": seq, "t_ms": t_ms, "event": name}
        if name == "boot" or name == "settings":
            mode, _, stext = (text or "").partition(":")
            record["mode"] = mode
            try:
                record["settings"] = catalog.settings_json(
                    mode, settings_mod.parse_text(mode, stext))
            except ValueError:
                record["settings"] = {"raw": stext}
        record.update(values)
        if name == "health":  # the text's figures and versions (hallclock.link.health)
            record.update(health_fields(text))
        tag_round(s, record)
        record["session"] = s.sid
        record["host_time"] = host_time()
        self.writer.add(record)
        s.expected = seq + 1
        self.records += 1
        if name == "end":
            s.ended = True
        if s.restore is not None and name in ("resume", "turn", "press", "end"):
            s.restore = None  # taken (resume), or the game went on without it
        self.stored.append(record)

    def ended(self):
        """True once some session's end is stored with everything before it;
        a link to a named clock not heard in this run (a restarted logger):
        once the log holds the end of that clock's newest session."""
        if any(s.ended for s in self.sessions.values()):
            return True
        return not self.sessions and self.table is not None and \
            self.table in self.writer.games_over()[0]
