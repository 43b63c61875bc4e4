# Benchmarks: timing accuracy, firmware cost, press latency, host scale.
# Writes bench/results.json; docs/benchmarks.md explains every figure.
bench: $(STAMP) $(NODE_STAMP)
	$(PY) bench/run.py --out bench/results.json
