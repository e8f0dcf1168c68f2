# The two commands in README.md: `make demo` and `make test`. Everything else is a step of those.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Two sizes of install (scripts/bootstrap.sh): the runtime alone for the demo, everything for
# the tests. The dev install contains the runtime, so its stamp satisfies the demo too.
RUNTIME := $(VENV)/.installed-runtime
STAMP   := $(VENV)/.installed

.PHONY: demo test install install-runtime lint types pytest guest-tier bench-stats bench-barrier bench-overhead demo-rate accuracy accuracy-quick metric-study metric-study-quick soak clean

$(STAMP): pyproject.toml scripts/bootstrap.sh
	PYTHON=$(PYTHON) VENV=$(VENV) sh scripts/bootstrap.sh dev
	touch $(STAMP) $(RUNTIME)

$(RUNTIME): pyproject.toml scripts/bootstrap.sh
	PYTHON=$(PYTHON) VENV=$(VENV) sh scripts/bootstrap.sh runtime
	touch $(RUNTIME)

install: $(STAMP)

install-runtime: $(RUNTIME)

demo: $(RUNTIME)
	$(BIN)/duet demo

# The guest image (scripts/guest/run-tier.sh --image-only: host packages, then a cached image)
# builds in the background while lint, types and the host's tests run; the guest tier waits for
# it. The end of the log counts every skip by reason (scripts/test_summary.py).
RESULTS := duet-results
test: $(STAMP)
	@mkdir -p $(RESULTS)
	@bash scripts/guest/run-tier.sh --image-only >$(RESULTS)/guest-image.log 2>&1 & image=$$!; \
	echo "guest image: building in the background (pid $$image, log $(RESULTS)/guest-image.log)"; \
	rc=0; $(MAKE) --no-print-directory lint types pytest || rc=$$?; \
	image_rc=0; wait $$image || image_rc=$$?; \
	echo "guest image: exit $$image_rc; $$(tail -n 1 $(RESULTS)/guest-image.log)"; \
	[ $$image_rc = 0 ] || tail -n 20 $(RESULTS)/guest-image.log; \
	[ $$rc = 0 ] || { $(MAKE) --no-print-directory test-summary; exit $$rc; }; \
	[ $$image_rc = 0 ] || { $(MAKE) --no-print-directory test-summary; exit $$image_rc; }; \
	rc=0; $(MAKE) --no-print-directory guest-tier || rc=$$?; \
	$(MAKE) --no-print-directory test-summary; exit $$rc

.PHONY: test-summary
test-summary:
	@$(PYTHON) scripts/test_summary.py $(RESULTS)/pytest-parallel.xml $(RESULTS)/pytest-measures.xml \
		$(RESULTS)/guest/system-tests.xml

lint: $(STAMP)
	$(BIN)/ruff check duet_bench duet_stats tests benchmarks
	$(BIN)/ruff format --check duet_bench duet_stats tests benchmarks
	$(BIN)/python scripts/check_size.py

types: $(STAMP)
	$(BIN)/mypy

# Two invocations (tests/README.md): the tests that do not measure in parallel, then those that
# measure (marker `measures`: real barriers, workers, cgroups, duet runs) one at a time, so that
# no test measures beside another. The 25 slowest of each are printed.
pytest: $(STAMP)
	@mkdir -p $(RESULTS)
	@rc=0; \
	$(BIN)/python -m pytest -m "not measures" -n 2 --durations=25 \
		--junitxml=$(RESULTS)/pytest-parallel.xml || rc=$$?; \
	$(BIN)/python -m pytest -m measures --durations=25 \
		--junitxml=$(RESULTS)/pytest-measures.xml || rc=$$?; \
	exit $$rc

# The runner-like guest tier (docs/platforms.md): a QEMU guest with cgroup v2 under systemd and a
# sudo user runs duet from this checkout. Needs root; skips with the reason where it cannot boot
# (CI sets DUET_REQUIRE_GUEST_TIER=1: there a skip fails); DUET_GUEST_TIER=0 skips it. Prints how
# long each phase and the whole tier took.
guest-tier: $(STAMP)
	bash scripts/guest/run-tier.sh

# How often `duet demo` finds its 5% in each condition (20 demos, about 15 minutes; root).
demo-rate: $(STAMP)
	$(BIN)/python benchmarks/demo_rate.py

bench-stats: $(STAMP)
	$(BIN)/python benchmarks/bench_stats.py

# A/A coverage of the 99% interval by winsorization rule, synthetic then real data (docs/statistics.md).
.PHONY: bench-guards
bench-guards: $(STAMP)
	$(BIN)/python benchmarks/aa_guards.py
	$(BIN)/python benchmarks/aa_guards.py --real --iterations 3 5 10 20 30

bench-barrier: $(STAMP)
	$(BIN)/python benchmarks/bench_barrier.py

bench-overhead: $(STAMP)
	$(BIN)/python benchmarks/bench_overhead.py

# The accuracy study of docs/accuracy.md (about 13 hours at 100 ms; root for cgroups); quick: minutes.
accuracy: $(STAMP)
	$(BIN)/python benchmarks/accuracy.py

accuracy-quick: $(STAMP)
	$(BIN)/python benchmarks/accuracy.py --quick

# Wall time or CPU time, duet or sequential (issue 12; docs/accuracy.md): about 9 hours at
# R = 10 x I = 30 on a busy 2-vCPU VM (root for cgroups); quick: about 15 minutes.
metric-study: $(STAMP)
	$(BIN)/python benchmarks/metric_study.py

metric-study-quick: $(STAMP)
	$(BIN)/python benchmarks/metric_study.py --quick

soak: $(STAMP)
	$(BIN)/python benchmarks/soak.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache duet-results
