"""The views and reports: the host's model of a clock (its records replayed
into the firmware's own core, also what a restore sends back), the mode
registry on the host side (modes), the live view of the logger, the
report of one log and the round's report, and their output files.
They read logs (the link) and the virtual board's fakes; never a port."""
