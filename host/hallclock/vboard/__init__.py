"""The virtual board and the VMs: the firmware's own App on fake hardware
(vdev, MicroPython-compatible: the scenario Runner, the fakes, the one
pump and its lines), run on the host (device: the pty line, the device
thread, simulate), inside the webassembly VM (wasm, on mpvm) or as its
own unix-port process (unixport).  It uses the link (a simulation logs
through the real logger); nothing here knows a view or the hall."""
