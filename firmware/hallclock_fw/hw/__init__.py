"""The hardware layer.  Drivers here get Pin/PWM objects and never import
``machine``; only ``esp32.py`` (which builds the real panel from ``board.py``)
does.  The virtual device builds the same drivers on fake pins."""
