# The hall display is tested in a real headless browser: Debian's chromium,
# driven by playwright (the PyPI package; never `playwright install`, the
# system chromium is used).  `make test` should depend on browser-setup.
CHROMIUM := /usr/bin/chromium

.PHONY: browser-setup

browser-setup: $(CHROMIUM)

$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver
