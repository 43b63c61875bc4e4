"""Pure clock rules: time comes in as integer ticks (ms); nothing here touches hardware."""
