# hallclock — every install step lives here, so a fresh machine needs only `make`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NODE_STAMP := tools/mpvm/node_modules/.installed

.PHONY: setup demo test bench firmware clean help

help:
	@echo "make demo    set up, then play the sample game on a virtual clock and print the report"
	@echo "make test    set up, then run every test"
	@echo "make bench   benchmarks -> bench/results.json"
	@echo "make firmware  the .mpy build of the firmware (build/firmware)"
	@echo "make deploy PORT=...   copy the build onto a board running MicroPython, reset it"
	@echo "make flash PORT=... FIRMWARE=...   write a MicroPython image onto the ESP32"
	@echo "make console PORT=...  the board's REPL"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

$(NODE_STAMP): tools/mpvm/package.json tools/mpvm/package-lock.json
	npm ci --prefix tools/mpvm --no-audit --no-fund --loglevel=error
	touch $@

setup: $(STAMP) $(NODE_STAMP)

# the demo sets up all the README's tour uses (the MicroPython VM too)
demo: setup
	$(BIN)/hallclock demo

# Four workers (pytest-xdist) on two cores: most of a test's time is spent
# waiting (real-time clocks, brokers, subprocesses), so two more workers fill
# it; the tests share no port, file or broker, and take the tests one or two
# at a time, the slowest files first (docs/testing.md "Parallel workers").
# The ten slowest are listed at the end.  TEST_WORKERS=0 runs them in one
# process; PYTEST_ARGS adds options.
TEST_WORKERS ?= 4
TEST_DIST ?= $(if $(filter 0,$(TEST_WORKERS)),,--dist load --maxschedchunk 2)
PYTEST_ARGS ?=
# Compiled modules kept in build/pycache even where the environment says
# PYTHONDONTWRITEBYTECODE: else every worker and each of the hundreds of
# `hallclock` runs compiles the package again, and pytest rewrites every test file
TEST_ENV ?= env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(CURDIR)/build/pycache
test: setup browser-setup
	$(TEST_ENV) $(PY) -m pytest -q -n $(TEST_WORKERS) $(TEST_DIST) --durations=10 $(PYTEST_ARGS)

# Each area keeps its own targets in mk/ (hardware, firmware checks, benchmarks).
-include mk/*.mk

clean:
	rm -rf $(VENV) tools/mpvm/node_modules build hallclock-demo
