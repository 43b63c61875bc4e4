"""ČAS 16.3 on the device: after the end gong the waiting player's display
shows which play-out step is on (the real drivers, on the virtual device)."""
from hallclock.vboard.vdev.runner import Runner
from hallclock_fw.settings import parse

# a 2-minute round (ten-minute gong 1 minute before the end) with 10 s moves
ACTIONS = [(0, "press", "START"), (1000, "press", "B")]
t, who = 1000, "A"
for _ in range(20):
    t += 10000
    ACTIONS.append((t, "press", who))
    who = "B" if who == "A" else "A"
ACTIONS.append((t + 5000, "end", None))


def run_to(r, ms):
    """Run the device loop until its clock reaches ``ms`` (passes before ``ms`` have run)."""
    while r.ms < ms:
        r.step()
        r.take_output()


def test_waiting_display_shows_the_playout_step():
    r = Runner("scrabble", parse("scrabble", ["round_min=2", "round_warn_min=1"]), ACTIONS)
    a, b = r.displays
    run_to(r, 30000)          # move 3 (A) runs: B's display shows the next limit
    assert b.text == " 2:00"
    run_to(r, 120500)         # end gong at 120 s during move 12 (B's): it ends the round
    assert r.app.core.move == 12
    assert a.text == "P-  1"   # A waits: (a) finish the round
    assert b.text == " 1:51"  # B's move (from 111 s) still counts down
    run_to(r, 125000)         # move 13 (A): (b) one more normal move each
    assert b.text == "P-  2"
    run_to(r, 135000)         # move 14 (B)
    assert a.text == "P-  2"
    run_to(r, 145000)         # move 15 (A): (c) each a last move, without drawing
    assert b.text == "P-  3"
    run_to(r, 155000)         # move 16 (B)
    assert a.text == "P-  3"
    run_to(r, 165000)         # move 16 ended: the play-out is over
    assert r.app.core.move == 17
    assert b.text == "P- --"

def test_no_playout_display_before_the_end_gong():
    r = Runner("scrabble", parse("scrabble", []), ACTIONS)
    run_to(r, 200000)
    assert "P" not in r.displays[0].text + r.displays[1].text


def test_overtime_is_shown_counting_up_until_the_press():
    # 10.2.6: after the long final signal the mover's display shows the overtime
    acts = [(0, "press", "START"), (1000, "press", "B"), (130000, "press", "A"),
            (140000, "end", None)]
    r = Runner("scrabble", parse("scrabble", []), acts, record=True)
    a, b = r.displays
    run_to(r, 91500)
    assert a.text == " 0:30" and b.text == " 2:00"
    run_to(r, 121001)  # the pass at the expiry has run
    assert a.text == " 0:00"
    run_to(r, 126200)
    assert a.text == "-0:05"
    # the long final signal: the buzzer on for 2 s from the expiry
    assert (ticks_of(r, 121000), 2500) in r.buzzer.changes
    assert (ticks_of(r, 123000), 0) in r.buzzer.changes
    run_to(r, 130500)         # A pressed: B's move, A's display back to the limit
    assert a.text == " 2:00" and b.text == " 2:00"


def ticks_of(r, ms):
    from hallclock_fw.core.timing import ticks_add
    return ticks_add(r.start, ms)
