"""Mode name -> clock core: the firmware's registry of modes, with the
catalogue rows of settings.ROWS (the modes' order, settings and checks).
Adding a mode: write its core (the interface below), add its row to
settings.ROWS and its loader to CORES here (docs/design.md, "Adding a mode").

The interface every core has (``core.scrabble.ScrabbleClock`` is the model):

- ``Core(settings, emit)``; ``emit(code, now, v0, v1, v2, v3)`` gets events.
- ``button(code, now)``, ``tick(now)``, ``next_deadline(now)``: inputs and time.
- ``left_ms(now)``, ``refresh(panel, now)``, ``running()``, ``paused()``,
  ``overtime()``: what the displays show; ``player``: whose press ends the
  running time (``events.NULL``: no player's, the duplicate countdown).
- ``fresh()``: no move has started and nothing was restored (a new game).
- ``over()``: the game is over (new settings may be taken).
- ``snapshot(now, hall_now=None) -> tuple of ints``: everything needed to
  resume the game on a fresh clock (at most ``protocol.MAX_VALUES`` values;
  each core documents its own).  The host computes it by replaying a log into
  the firmware's own core, and sends it in the restore frame ``S``.
- ``restore(values, now) -> bool``: resume from a snapshot; taken only while
  ``fresh()``, so a repeated or late ``S`` changes nothing; True when taken.
- ``round``: the core's ``core.round.Round`` (the hall's round gongs), or
  None in a mode without them (the app then only logs the host's round).
  The app hands the host's round frame ``N`` to ``round.join``, with the
  core's ``move`` (the move in progress, 0 before the first).
"""


def _scrabble():
    from .core.scrabble import ScrabbleClock
    return ScrabbleClock


def _duplicate():
    from .core.duplicate import DuplicateTimer
    return DuplicateTimer


def _backgammon():
    from .core.backgammon import BackgammonClock
    return BackgammonClock


# mode -> a function that imports its core class (lazily: a board loads only
# the core of its own mode)
CORES = {"scrabble": _scrabble, "duplicate": _duplicate, "backgammon": _backgammon}


def make_core(mode, settings, emit):
    load = CORES.get(mode)
    if load is None:
        raise ValueError("unknown mode %r" % mode)
    return load()(settings, emit)
