"""The host's end of the sealed frames on the hall network (the format and the
HMAC are the firmware's own: ``hallclock_fw.seal``; docs/protocol.md "Sealed
frames on the network").

:class:`ClockSeal` is one clock's pair of directions as a host sees it: it
opens what the clock published on its ``up`` topic (the tag under the clock's
key, a counter above the last one taken in that link session) and seals what
the host sends on the clock's ``down`` topic (the clock's current link session,
the host's wall clock in ms as the counter).  :func:`seal_all` seals the
referee's signal for ``all/down`` under the hall's key.  A message that fails
is counted in ``refused`` and never reaches a HostLink.
"""
import threading
import time

from hallclock_fw import protocol, seal

from ..errors import BadInput

_lock = threading.Lock()
_last_ms = [0]


def host_ms():
    """The counter of a host's sealed frame: wall-clock ms, strictly rising
    within this process (two frames in one ms get ms+1, ms+2)."""
    with _lock:
        now = time.time_ns() // 1_000_000
        if now <= _last_ms[0]:
            now = _last_ms[0] + 1
        _last_ms[0] = now
        return now


def _mac(creds, field, who):
    text = creds.get(field)
    if text is None:
        raise BadInput(f"the credentials of {who!r} have no {field!r}: they were written by "
                       "an older broker-config; write the hall's configuration again "
                       "(broker-config) and copy each clock's cfg onto its board")
    try:
        return seal.Mac(seal.key_bytes(text))
    except ValueError:
        raise BadInput(f"the credentials of {who!r}: {field!r} is not a key of 32 or more "
                       "hex digits") from None


def require_keys(entry, clock):
    """A clock's credentials entry with both its keys sound (else BadInput)."""
    _mac(entry, "key", clock)
    _mac(entry, "hall_key", clock)
    return entry


def clock_mac(creds, clock):
    return _mac(creds.get(clock, {}), "key", clock)


CHALLENGE_S = 1.0  # a link session not yet proven is challenged at most this often
CHALLENGE_GAP_S = 0.05  # ... and one clock's challenges at most this often in all
CANDIDATES = 8  # unproven link sessions remembered per clock (the newest)
# new link sessions a clock may open: a burst of SESSION_BURST, then one per
# SESSION_EVERY_S (a real clock reboots at most a few times a minute)
SESSION_BURST = 4
SESSION_EVERY_S = 15.0


class ClockSeal:
    """One clock's sealed link on the host.  ``mac`` None: a viewer (no key):
    messages are opened by their shape only and nothing can be sent.

    ``send(message)`` given (a host that may write the clock's ``down``: the
    logger, ``configure``): a link session is taken only once the clock has
    answered this process's challenge -- a ``W`` sealed for that session,
    after which the clock's messages echo a ``D`` counter sealed since this
    object was made, which no recording made before can carry -- and within
    the clock's budget of new sessions (docs/network.md "Replays and
    floods").  Without ``send`` (a viewer, which may not write) a new session
    is taken on its seal alone; it stores nothing and sends nothing."""

    def __init__(self, mac, send=None, clock=time.monotonic):
        self.mac = mac
        self.send = send if mac is not None else None
        self.time = clock
        self.since = host_ms()  # D counters from here on are this process's
        self.seen = {}  # link session -> the highest counter taken
        self.sid = "none"  # the clock's current link session (proven; the host seals for it)
        self.sid_bytes = b"none"
        self.proof = 0  # the echo that proved the current session
        self.retired = set()  # sessions this process took that a newer one replaced
        self.candidates = {}  # unproven session -> when it was last challenged
        self.challenged = -CHALLENGE_GAP_S
        self.budget = float(SESSION_BURST)
        self.budget_at = clock()
        self.refused = 0  # messages dropped, all reasons (bad tag or shape, a replay, ...)
        self.replays = 0  # ... of them: a counter already taken, or a retired session
        self.unproven = 0  # ... a session that has not answered our challenge
        self.over_budget = 0  # ... a new session beyond the clock's budget
        self.challenges = 0  # challenges sent

    def _drop(self, why=None):
        self.refused += 1
        if why is not None:
            setattr(self, why, getattr(self, why) + 1)
        return None

    def open_up(self, payload):
        """The frame (bytes, with its newline) of a message on the clock's
        ``up``, or None (refused and counted)."""
        if self.send is not None and self.budget < 1.0 and not self._may_be_current(payload) \
                and not self._refill():
            # a session new to us while the clock's budget is spent: dropped before
            # its seal is checked (a flood costs a search, not an HMAC)
            return self._drop("over_budget")
        got = seal.open_sealed(self.mac, b"U", payload)
        if got is None:
            return self._drop()
        frame, field, ctr = got
        sid, _, echo = field.partition(":")
        if not sid or not echo.isdigit() and echo != "":
            return self._drop()
        if ctr == 0:  # the last will, sealed once at connect time: a mark, not a frame
            if frame.startswith(b"L*") and (self.send is None or sid == self.sid):
                return frame
            return self._drop()
        last = self.seen.get(sid)
        if last is not None:
            if ctr <= last or (self.send is not None and sid != self.sid):
                return self._drop("replays")  # taken already, or an older boot's
            self.seen[sid] = ctr
            return frame
        if self.send is not None:
            if sid in self.retired:
                return self._drop("replays")
            proof = int(echo or 0)
            if proof < self.since or proof <= self.proof:
                self._challenge(sid)
                return self._drop("unproven")
            if not self._spend():
                return self._drop("over_budget")
            self.candidates.pop(sid, None)
            if self.sid != "none":
                self.retired.add(self.sid)
                del self.seen[self.sid]
            self.proof = proof
        self.seen[sid] = ctr
        self.sid = sid  # a new boot of the clock's link
        self.sid_bytes = sid.encode()
        return frame

    def _may_be_current(self, payload):
        """True if the message names the current link session (or its shape
        is not a sealed message's: the full check says what it is)."""
        t = payload.rfind(b"~")
        c = payload.rfind(b"~", 0, t)
        s = payload.rfind(b"~", 0, c)
        if s < 0:
            return True
        colon = payload.find(b":", s, c)
        end = colon if colon > 0 else c
        return payload[s + 1:end] == self.sid_bytes

    def _refill(self):
        """The clock's budget of new sessions, refilled: True if one is left."""
        now = self.time()
        self.budget = min(float(SESSION_BURST),
                          self.budget + (now - self.budget_at) / SESSION_EVERY_S)
        self.budget_at = now
        return self.budget >= 1.0

    def _spend(self):
        """One new session from the clock's budget (False: none left)."""
        if not self._refill():
            return False
        self.budget -= 1.0
        return True

    def _challenge(self, sid):
        """A ``W`` for an unproven session, sealed for it: the clock whose
        session it is takes it and says hello with our counter as its echo."""
        now = self.time()
        if now - self.challenged < CHALLENGE_GAP_S:
            return
        last = self.candidates.get(sid)
        if last is not None and now - last < CHALLENGE_S:
            return
        if last is None and len(self.candidates) >= CANDIDATES:
            del self.candidates[min(self.candidates, key=self.candidates.get)]
        self.candidates[sid] = now
        self.challenged = now
        self.challenges += 1
        self.send(seal.seal(self.mac, b"D", protocol.who(), sid, host_ms()))

    def seal_down(self, data):
        """The messages (a list) for ``data``: one or more frames from a HostLink."""
        if self.mac is None:
            return []
        out = []
        start = 0
        while start < len(data):
            nl = data.find(b"\n", start)
            end = len(data) if nl < 0 else nl + 1
            out.append(seal.seal(self.mac, b"D", data[start:end], self.sid, host_ms()))
            start = end
        return out


def seal_all(creds, frame, who="referee"):
    """The referee's ``frame`` as the message for ``all/down`` (hall key)."""
    return seal.seal(_mac(creds, "hall_key", who), b"A", frame, "all", host_ms())
