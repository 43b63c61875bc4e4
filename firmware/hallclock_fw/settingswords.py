"""The words of settings.py's errors (``SettingsError``'s codes, its
``_E_*`` consts): what ``hallclock --set`` and a bad hallclock.cfg say.  Loaded
only to show an error, so the clock's heap holds none of these strings while
it runs (docs/micropython.md "The heap model")."""
WORDS = {
    1: "%s: %r is not a whole number",
    2: "%s: %r is not a score like 3-5",
    3: "%s: %r is not one of %s",
    4: "%s: unknown kind %s",
    5: "unknown mode %r (modes: %s)",
    6: "%r is not KEY=VALUE",
    7: "%s is not a setting of mode %s (settings: %s)",
    8: "%s must be at least %d, not %d",
    9: "%s must be at most %d, not %d",
    10: "%s: %d is not between 1 and %s-1 (%d)",
    11: "%s: %d is given twice",
    12: "round_warn_min (%d) must be less than round_min (%d)",
    13: "score: %s has %d points, but a %d-point match is over at %d (each score must be 0 to %d)",
    14: "the bank would be %d s; at most %d s (24 h) per player",
}
