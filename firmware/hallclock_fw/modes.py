"""Mode name -> clock core.  Adding a mode: write its core (the interface of
core.scrabble.ScrabbleClock), add its settings to settings.SPEC, add it here."""


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
