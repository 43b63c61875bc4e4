"""The virtual device: the real firmware App and drivers on fake pins, time and
UART (fakes, runner), the one pump that joins it to a line under a pace
(pump), its network line (netpump) and its scenario file (scenariofile).
Everything in this package is MicroPython-compatible, because the same code
also runs inside the MicroPython VMs (``--interpreter micropython``,
``micropython-unix``); unixhw runs only on the unix port."""
