# Run on the board by `make deploy` (mpremote run): removes the firmware an
# earlier deploy left, so no stale module survives.  Keeps hallclock.cfg.
import os


def _rm(path):
    try:
        mode = os.stat(path)[0]
    except OSError:
        return
    if mode & 0x4000:
        for entry in os.ilistdir(path):
            _rm(path + "/" + entry[0])
        os.rmdir(path)
    else:
        os.remove(path)


for _p in ("hallclock_fw", "main.py", "boot.py"):
    _rm(_p)
