"""Extra subcommands.  Each module here has ``register(sub)``, which adds its
parser to the ``hallclock`` subparsers and sets ``func`` to its handler
(``handler(args) -> exit status``).  The CLI finds the modules by itself, so
a new command is a new file here."""
