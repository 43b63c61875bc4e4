# The hall network (docs/network.md): Mosquitto from Debian, the real broker the
# tests and benchmarks start on a free localhost port with a generated config
# (never the system service).  `make test` depends on it, so a fresh machine
# gets it.  `openssl` makes the TLS test's CA.
MOSQUITTO := /usr/sbin/mosquitto

.PHONY: mqtt-setup

mqtt-setup: $(MOSQUITTO)

$(MOSQUITTO):
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends mosquitto openssl
	@# Debian starts the system service on install where systemd runs; ours never need it.
	-@systemctl disable --now mosquitto >/dev/null 2>&1 || true

# the README's tour has a Wi-Fi hall, and `make demo` sets up all the tour uses
demo: mqtt-setup
test: mqtt-setup
bench: mqtt-setup
