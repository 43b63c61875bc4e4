"""ČAS 16.3 on the device: after the end gong the waiting player's display
shows which play-out step is on (the real drivers, on the virtual device)."""
from hallclock.vdev.runner import Runner
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
