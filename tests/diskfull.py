"""The host logger on a disk that fills up, run as its own process by
tests/test_full_disk.py (a file-size limit applies to the whole process).

    python tests/diskfull.py OUT SCRIPT_DIR (none | fsize:BYTES | filler:PATH)

Two virtual clocks (each on its own pty, as two boards on USB) play the
scripts in SCRIPT_DIR (table-1.txt, table-2.txt) into the real Logger writing
OUT.  The fault:

- ``fsize:BYTES``: RLIMIT_FSIZE, so writes past BYTES fail with EFBIG;
- ``filler:PATH``: OUT is on a small filesystem that PATH has filled (ENOSPC);
- ``none``: no fault (the reference log).

Once the disk has been full and every clock has been heard resending while
it was (a condition, not a wait), the space comes back: the limit is lifted,
or PATH is deleted.  The run ends when every clock has every event
acknowledged.  Prints one JSON line: what the writer and the logger saw.
"""
import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    out, scripts, fault = sys.argv[1], sys.argv[2], sys.argv[3]
    from hallclock import scenario
    from hallclock.link.logger import Logger
    from hallclock.link.transport import pty_pair
    from hallclock.vboard.device import DeviceThread, make_runner
    from hallclock_fw.settings import parse

    runners, fds, paths = [], [], []
    for i, name in enumerate(("table-1", "table-2")):
        actions = scenario.load(os.path.join(scripts, name + ".txt"))
        runners.append(make_runner("scrabble", parse("scrabble", []), actions, clock=name,
                                   sid="%08x" % (0xc0000001 + i)))
        master, slave, path = pty_pair()
        fds += [master, slave]
        paths.append(path)
    said = []
    logger = Logger(paths, out)
    logger.say = lambda text: (said.append(text), print(text, file=sys.stderr, flush=True))
    if fault.startswith("fsize:"):
        _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(fault[6:]), hard))
    state = {"full_seen": False, "dups_at_full": None, "space_back": False,
             "acks_while_full": [], "held_max": 0}
    # what each clock has been acknowledged: sent by the host while the disk is full
    sent = []
    for link in logger.links:
        orig = link.send

        def send(frame, orig=orig):
            w = logger.writer
            if w.full is not None and frame.startswith(b"A "):
                _a, sid, seq = frame.split(b"*")[0].decode().split(" ")
                on_disk = max([q for (_c, s), q in w.on_disk.items() if s == sid] or [0])
                sent.append((sid, int(seq), on_disk))
            orig(frame)
        link.send = send

    def on_poll():
        w = logger.writer
        state["held_max"] = max(state["held_max"], w.held())
        if w.full is not None and not state["full_seen"]:
            state["full_seen"] = True
            state["dups_at_full"] = [link.dups for link in logger.links]
        if state["full_seen"] and not state["space_back"] and w.full is not None:
            # every clock resent while the disk was full: give the space back.
            # A clock that had everything stored before the disk filled has
            # ended (nothing to resend): on a busy machine either clock may
            # be the one that fills the disk while the other has finished
            if all(link.dups > d or not dev.is_alive()
                   for link, d, dev in zip(logger.links, state["dups_at_full"], devices)):
                state["space_back"] = True
                if fault.startswith("fsize:"):
                    _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
                    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
                elif fault.startswith("filler:"):
                    os.remove(fault[7:])

    logger.open()
    devices = [DeviceThread(r, fds[2 * i], silence_s=60) for i, r in enumerate(runners)]
    for d in devices:
        d.start()
    started = time.monotonic()
    logger.run(stop=lambda: not any(d.is_alive() for d in devices), max_s=120, on_poll=on_poll)
    for d in devices:
        d.halt = True
        d.join(timeout=10)
    w = logger.writer
    print(json.dumps({
        "devices_done": [d.result for d in devices], "errors": [repr(d.error) for d in devices
                                                                 if d.error is not None],
        "full_count": w.full_count, "recovered": w.recovered, "held_now": w.held(),
        "held_max": state["held_max"], "space_back": state["space_back"],
        "acks_while_full": len(sent),
        "acks_beyond_disk": [a for a in sent if a[1] > a[2]],
        "said": said, "count": w.count, "seconds": round(time.monotonic() - started, 1)}))


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
