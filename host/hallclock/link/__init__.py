"""The link and the log: the serial ports (transport), the host's end of the
frame protocol for one stream (hostlink: check, store once, acknowledge
what is stored, ask for what is missing, restore), the logger that polls
every port into one log (logger), and the JSON Lines log file itself
(logfile: appended and fsync'd, read back, tailed as it grows).  Below
everything but errors and catalog: it knows frames and records, no view."""
