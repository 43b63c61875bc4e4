"""hallclock host: the CLI, the serial link and logger, the virtual device, reports."""
__version__ = "0.1.0"
