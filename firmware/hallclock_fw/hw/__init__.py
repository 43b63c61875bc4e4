"""The hardware layer.  Drivers here get Pin/PWM objects and never import
``machine``; only ``esp32.py`` and its once-or-rarely half ``esp32rare.py``
(which builds the real panel from ``board.py``) do, and ``wifi.py`` imports
``network``.  The virtual device builds the same drivers on fake pins."""
