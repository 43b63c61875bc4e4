# Mutation testing (not part of make test): cosmic-ray over the rule cores,
# the wire modules and the host's logging path; docs/testing.md, "Mutation
# testing". MODULES=protocol,link runs only those; SURVIVORS=1 runs only the
# last session's survivors again (after new tests). Report: build/mutate/report.md
.PHONY: mutate
mutate: $(STAMP) $(NODE_STAMP)
	nice -n 10 $(PY) mk/mutate.py $(if $(MODULES),--only $(MODULES)) $(if $(SURVIVORS),--survivors)
