# The hall network under attack, timed (bench/netattack.py; docs/network.md).
.PHONY: bench-attack
bench-attack: $(STAMP) mqtt-setup
	$(PY) bench/netattack.py
