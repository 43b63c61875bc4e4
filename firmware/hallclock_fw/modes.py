"""Mode name -> clock core.  Adding a mode: write its core (the interface
below), add its settings to settings.SPEC, add it here.

The interface every core has (``core.scrabble.ScrabbleClock`` is the model):

- ``Core(settings, emit)``; ``emit(code, now, v0, v1, v2, v3)`` gets events.
- ``button(code, now)``, ``tick(now)``, ``next_deadline(now)``: inputs and time.
- ``left_ms(now)``, ``refresh(panel, now)``, ``running()``, ``paused()``,
  ``overtime()``: what the displays show.
- ``fresh()``: no move has started and nothing was restored (a new game).
- ``over()``: the game is over (new settings may be taken).
- ``snapshot(now, hall_now=None) -> tuple of ints``: everything needed to
  resume the game on a fresh clock (at most ``protocol.MAX_VALUES`` values;
  each core documents its own).  The host computes it by replaying a log into
  the firmware's own core, and sends it in the restore frame ``S``.
- ``restore(values, now) -> bool``: resume from a snapshot; taken only while
  ``fresh()``, so a repeated or late ``S`` changes nothing; True when taken.
- ``join_round(number, elapsed_ms, now) -> bool``: the host's round frame
  ``N``: round ``number`` started ``elapsed_ms`` ago; logs ``round``; False
  if this clock's round has started already.
"""


def make_core(mode, settings, emit):
    if mode == "scrabble":
        from .core.scrabble import ScrabbleClock
        return ScrabbleClock(settings, emit)
    if mode == "duplicate":
        from .core.duplicate import DuplicateTimer
        return DuplicateTimer(settings, emit)
    if mode == "backgammon":
        from .core.backgammon import BackgammonClock
        return BackgammonClock(settings, emit)
    raise ValueError("unknown mode %r" % mode)


def settings_view(mode, settings):
    """What the two displays show (ms) while new settings wait for the
    players to check them (ČAS 3.2): the move limit and the round's basic time
    (Scrabble), the move's countdown and its first announcement (duplicate),
    the bank and the delay (backgammon)."""
    if mode == "scrabble":
        return settings["move_s"] * 1000, settings["round_min"] * 60000
    if mode == "duplicate":
        ann = settings["announce_s"]
        return settings["move_s"] * 1000, (ann[0] if ann else 0) * 1000
    from .settings import bank_ms
    return bank_ms(settings), settings["delay_s"] * 1000
