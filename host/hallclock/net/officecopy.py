"""``hallclock office``: the tournament office's copy of every hall's log
(docs/network.md "Several halls"), kept from what each hall's logger ships
(hallclock.net.ship): ``DIR/<hall>.jsonl``, appended and fsync'd, one
writer (its ``.lock``), each record once; only what is on disk is
acknowledged to the hall.  The office never speaks to a clock: its login
may write nothing but the halls' ``office/ack``.
"""
import json
import os
import sys
import time

from ..errors import BadInput, shown
from ..link.locks import LogLock
from ..link.logfile import LogWriter, parse_line, read_records
from .broker import check_name, load_credentials
from .mqtt import BrokerClient
from . import ship

CURSORS_SUFFIX = ".cursors.json"
CURSOR_EVERY_S = 0.5  # the halls' offsets are written this often at most (a loss costs a resend)


def _key(rec):
    return (rec["clock"], rec.get("session"), rec["seq"], rec["event"])


class HallCopy:
    """One hall's copy: ``take(payload)`` a batch, ``flush()`` stores what
    was taken (one write, one fsync) and gives the acknowledgements due."""

    def __init__(self, folder, hall):
        self.hall = hall
        self.path = os.path.join(folder, hall + ".jsonl")
        self.writer = LogWriter(self.path)
        self.keys = {_key(r) for r in read_records(self.path)}
        self.cursor_path = os.path.join(folder, hall + CURSORS_SUFFIX)
        self.stored = self._load_cursors()  # log id -> bytes of it held on disk
        self.taken = dict(self.stored)  # ... held, counting what waits for the fsync
        self.due = {}  # log id -> gap: acknowledgements to send after the next flush
        self.saved_at = 0.0
        self.dirty = False
        self.records = 0  # records stored by this process
        self.repeats = 0  # records dropped: the copy had them
        self.bad = 0  # messages or lines that were not a batch or a record

    def _load_cursors(self):
        try:
            with open(self.cursor_path, encoding="utf-8") as f:
                cur = json.load(f)
        except (OSError, ValueError):
            return {}
        if not isinstance(cur, dict):
            return {}
        return {k: v for k, v in cur.items() if isinstance(k, str) and type(v) is int and v >= 0}

    def take(self, payload):
        got = ship.parse_batch(payload)
        if got is None:
            self.bad += 1
            return
        log, start, end, lines = got
        have = self.taken.get(log, 0)
        if start > have:
            self.due[log] = True  # one was lost: from ``have`` again
            return
        self.due.setdefault(log, False)
        if end <= have:
            return  # a repeat: we have it
        if not self.writer.accepting():
            return  # a full disk holds enough already; the hall sends it again
        for raw in lines.split(b"\n"):
            if not raw:
                continue
            rec, _why = parse_line(raw)
            if rec is None:
                self.bad += 1
                continue
            key = _key(rec)
            if key in self.keys:
                self.repeats += 1
                continue
            self.keys.add(key)
            self.writer.add(rec)
        self.taken[log] = end

    def flush(self):
        """Store what was taken; [(log, have, gap)] to acknowledge (nothing
        while records wait for the disk)."""
        self.records += self.writer.flush()
        if self.writer.held():
            return []
        if self.taken != self.stored:
            self.stored = dict(self.taken)
            self.dirty = True
        self._save()
        due = [(log, self.stored.get(log, 0), gap) for log, gap in self.due.items()]
        self.due.clear()
        return due

    def _save(self, force=False):
        now = time.monotonic()
        if not self.dirty or (not force and now - self.saved_at < CURSOR_EVERY_S):
            return
        tmp = self.cursor_path + ".new"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(self.stored, f)
                f.write("\n")
            os.replace(tmp, self.cursor_path)
        except OSError:
            return
        self.dirty = False
        self.saved_at = now

    def close(self):
        self._save(force=True)
        self.writer.close()


class Office:
    """The office's process: subscribed to every hall's ``office/log`` on the
    office's broker as the ``office`` login."""

    def __init__(self, address, credentials, out, tls=None, say=None):
        creds = load_credentials(credentials, "office")
        self.out = os.path.abspath(out)
        if not os.path.isdir(self.out):
            raise BadInput(f"--out {out}: no such folder; make it first (mkdir)")
        self.say = say or (lambda text: print(shown(text), file=sys.stderr, flush=True))
        # one office a folder: refused at once, not when a hall first speaks
        self.lock = LogLock(os.path.join(self.out, "office"))
        self.copies = {}
        self.net = BrokerClient(address, creds["office"], [ship.log_topic("+")], tls=tls,
                                inline=True)
        self.foreign = 0  # messages on a topic that names no hall

    def open(self):
        try:
            self.net.start()
        except BaseException:
            self.lock.release()
            raise
        return self

    def copy(self, hall):
        c = self.copies.get(hall)
        if c is None:
            c = self.copies[hall] = HallCopy(self.out, hall)
            self.say(f"office: hall {hall} -> {c.path}")
        return c

    def poll(self, timeout=0.05):
        self.net.wait(timeout)
        touched = set()
        for name, payload in self.net.messages():
            hall = ship.hall_of(name)
            try:
                check_name("hall name", hall or "")
            except BadInput:
                self.foreign += 1
                continue
            self.copy(hall).take(payload)
            touched.add(hall)
        for hall, c in self.copies.items():
            if hall not in touched and not c.writer.held():
                continue
            for log, have, gap in c.flush():
                self.net.publish(ship.ack_topic(hall), ship.ack(log, have, gap))
        return bool(touched)

    def run(self, stop=None):
        try:
            while stop is None or not stop():
                self.poll(0.05)
        finally:
            self.close()

    def stats(self):
        parts = []
        for hall, c in sorted(self.copies.items()):
            parts.append(f"{hall}: {c.records} records stored, {c.repeats} repeats dropped"
                         + (f", {c.bad} bad dropped" if c.bad else ""))
        return "; ".join(parts) or "no hall heard"

    def close(self):
        if self.net.rfd >= 0:
            self.net.stop()
        for c in self.copies.values():
            c.close()
        self.lock.release()
