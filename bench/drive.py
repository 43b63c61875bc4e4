"""Drive a virtual device (hallclock.vboard.vdev.runner.Runner) directly, no pty:
a host stand-in acknowledges every event it outputs.  Each event comes back
with the device time of the loop pass that wrote its frame and the gap since
the pass before (the loop period that pass closed)."""
from hallclock import hostframes
from hallclock.vboard.vdev.runner import DONE, RUNNING, Runner

from common import events


def run(actions, period=None, start_ticks=0, settings=None, seed=12345, max_passes=50000000):
    """Run a scenario to its end; returns (records, runner, passes) where each
    record is (seq, t_ms, name, fields, pass_ms, gap_ms): the pass that wrote
    the frame and its period; ``passes`` lists the device time of every pass."""
    from common import scrabble_settings
    runner = Runner("scrabble", settings or scrabble_settings(), actions,
                    sid="00000001", start_ticks=start_ticks, period=period,
                    seed=seed)
    out = []
    passes = []
    prev_ms = 0
    status = RUNNING
    while status != DONE:
        ms = runner.ms
        passes.append(ms)
        if status == RUNNING:
            status = runner.step()
        else:
            status = runner.advance(1)
        evs, sid = events(runner.take_output())
        for seq, t_ms, name, fields in evs:
            out.append((seq, t_ms, name, fields, ms, ms - prev_ms))
        if evs:
            runner.feed(hostframes.ack(sid, evs[-1][0]))
        prev_ms = ms
        if runner.passes > max_passes:
            raise RuntimeError("the virtual device did not finish")
    seen = set()
    uniq = []
    for r in out:  # a resent frame is the same event
        if r[0] not in seen:
            seen.add(r[0])
            uniq.append(r)
    return uniq, runner, passes
