"""The virtual board's flash for hallclock.cfg, and what the Runner does
with it (read at boot, the saves of set-up and of the host's settings): imported only once a scenario saves
or cuts the power in a save, so a game that never does costs the unix
port's fixed heap nothing of it."""
from .fakes import PowerCut


class FakeFlash:
    """The board's filesystem for hallclock.cfg, as strict as the worse of
    the two an ESP32 may have: a file is written in blocks of ``BLOCK``
    bytes, a power cut keeps only the blocks written, and (as on FAT) a
    rename onto an existing file fails.  ``cut_after = N``: the power goes
    at the (N+1)th flash operation from now (opening a file for writing, a
    block, a rename, a removal), which then never happens."""

    BLOCK = 32

    def __init__(self):
        self.files = {}  # name -> text
        self.cut_after = None
        self.ops = 0  # flash operations done (the tests count a save's)

    def _op(self):
        if self.cut_after is not None:
            if self.cut_after <= 0:
                self.cut_after = None
                raise PowerCut()
            self.cut_after -= 1
        self.ops += 1

    def open(self, name, mode="r"):
        if "w" in mode:
            self._op()
            self.files[name] = ""
            return _FlashFile(self, name)
        if name not in self.files:
            raise OSError(2)  # ENOENT
        return _FlashReader(self.files[name])

    def rename(self, old, new):
        if old not in self.files:
            raise OSError(2)
        if new in self.files:
            raise OSError(17)  # EEXIST: FAT's rename does not replace
        self._op()
        self.files[new] = self.files.pop(old)

    def remove(self, name):
        if name not in self.files:
            raise OSError(2)
        self._op()
        del self.files[name]


class _FlashFile:
    def __init__(self, flash, name):
        self.flash = flash
        self.name = name

    def write(self, text):
        flash = self.flash
        block = flash.BLOCK
        for i in range(0, len(text), block):
            flash._op()
            flash.files[self.name] += text[i:i + block]
        return len(text)

    def close(self):
        pass


class _FlashReader:
    def __init__(self, text):
        self.text = text

    def read(self):
        return self.text

    def close(self):
        pass


def read_config(runner):
    """The board's hallclock.cfg: the one set-up saved, else the one the
    scenario's mode and settings make."""
    if runner.flash is not None and runner.flash.files:
        from hallclock_fw.hw import cfgsave
        return cfgsave.load(runner.flash.open)
    from hallclock_fw import settings as settings_mod
    lines = ["clock = " + runner.clock_name, "mode = " + runner.mode]
    text = settings_mod.format_text(runner.mode, runner.settings)
    lines.extend(p for p in text.split(";") if p)
    return "\n".join(lines) + "\n"


# firmware modules imported only for a while (set-up at the clock and its
# save): a reset drops them with the rest of RAM, even when a power cut came
# before the firmware dropped them itself
TRANSIENT = ("hallclock_fw.setup_mode", "hallclock_fw.hw.cfgsave", "hallclock_fw.hw.config",
             "hallclock_fw.names")


def forget_transient():
    from hallclock_fw.forget import forget
    for name in TRANSIENT:
        forget(name)


def save_settings(runner, mode, settings_text):
    """As the board's save (hw/esp32.py): hw/cfgsave.py imported for it and
    dropped again.  The board's file is the one the scenario's mode and
    settings make until the first save (a board ``deploy`` gave its file)."""
    from hallclock_fw.hw import cfgsave
    from hallclock_fw.forget import forget
    if runner.flash is None:
        runner.flash = FakeFlash()
    if not runner.flash.files:
        runner.flash.files[cfgsave.CFG_FILE] = read_config(runner)
    cfgsave.save_settings(runner.flash, mode, settings_text)
    forget("hallclock_fw.hw.cfgsave")  # as on the board: only for the save


def boot_config(runner):
    """At a boot after a save: the mode, settings and name the file gives."""
    from hallclock_fw.hw import config
    from hallclock_fw.forget import forget
    cfg = config.parse(runner.read_config(), runner.clock_name)
    for name in TRANSIENT[1:]:  # as hw/boot.py: the parser is boot-only
        forget(name)
    runner.mode, runner.settings, runner.clock_name = cfg.mode, cfg.settings, cfg.clock
