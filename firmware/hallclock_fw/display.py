"""What a 4-digit clock display shows, as digit codes (pure, allocation-free).

Codes 0-9 are digits, ``MINUS`` a dash, ``BLANK`` nothing, ``_LETTER_P`` a P
(the play-out step: ``P- 1`` .. ``P- 3``, ``P---`` when it is over).  Time shows as
M:SS (or MM:SS) rounded up, so 0:00 appears only when the time is out; from
100 minutes on as HH:MM.  Overtime shows as -M:SS, counting up.
"""
from micropython import const

MINUS = const(10)
BLANK = const(11)
_LETTER_P = const(12)
# every code as a character (the fakes' text; set-up's labels use the letters,
# codes 13 on; hw/tm1637.py SEGMENTS has a pattern for each, in this order)
CHARS = "0123456789- PAbCdEFGHLnorStUyich"


def shown_s(ms):
    """Whole seconds shown for ``ms`` (up for time left, down for overtime)."""
    if ms >= 0:
        return (ms + 999) // 1000
    return -((-ms) // 1000)


def render(ms, buf):
    """Fill ``buf`` (4 digit codes) for ``ms``; returns True if the colon is lit."""
    s = shown_s(ms)
    if s < 0:
        s = -s
        if s > 599:
            s = 599
        buf[0] = MINUS
        buf[1] = s // 60
        buf[2] = (s % 60) // 10
        buf[3] = s % 10
        return True
    if s >= 6000:  # 100 minutes or more: hours and minutes
        m = s // 60
        if m > 5999:
            m = 5999
        h = m // 60
        buf[0] = h // 10 if h >= 10 else BLANK
        buf[1] = h % 10
        buf[2] = (m % 60) // 10
        buf[3] = m % 10
        return True
    m = s // 60
    buf[0] = m // 10 if m >= 10 else BLANK
    buf[1] = m % 10
    buf[2] = (s % 60) // 10
    buf[3] = s % 10
    return True


def render_playout(step, buf):
    """Fill ``buf`` with the play-out step (0-2: ``P- 1``..``P- 3``; 3: ``P---``)."""
    buf[0] = _LETTER_P
    buf[1] = MINUS
    if step >= 3:
        buf[2] = MINUS
        buf[3] = MINUS
    else:
        buf[2] = BLANK
        buf[3] = step + 1


def next_change(ms):
    """Ms until what ``render`` shows changes, counting down (ms >= 0) or up."""
    if ms > 0:
        r = ms % 1000
        return r if r else 1000
    return 1000 - ((-ms) % 1000)
