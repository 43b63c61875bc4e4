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

from hallclock_fw import seal

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


class ClockSeal:
    """One clock's sealed link on the host.  ``mac`` None: a viewer (no key):
    messages are opened by their shape only and nothing can be sent."""

    def __init__(self, mac):
        self.mac = mac
        self.seen = {}  # link session -> the highest counter taken
        self.sid = "none"  # the clock's current link session (the newest message's)
        self.refused = 0  # messages dropped (bad tag or shape, a replay)

    def open_up(self, payload):
        """The frame (bytes, with its newline) of a message on the clock's
        ``up``, or None (refused and counted)."""
        got = seal.open_sealed(self.mac, b"U", payload)
        if got is None:
            self.refused += 1
            return None
        frame, sid, ctr = got
        if ctr == 0:  # the last will, sealed once at connect time: a mark, not a frame
            if frame.startswith(b"L*"):
                return frame
            self.refused += 1
            return None
        last = self.seen.get(sid)
        if last is not None and ctr <= last:
            self.refused += 1  # a replay
            return None
        self.seen[sid] = ctr
        if last is None:
            self.sid = sid  # a new boot of the clock's link
        return frame

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
