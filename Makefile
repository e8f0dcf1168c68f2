# The two commands in README.md: `make demo` and `make test`. Everything else is a step of those.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Two sizes of install (scripts/bootstrap.sh): the runtime alone for the demo, everything for
# the tests. The dev install contains the runtime, so its stamp satisfies the demo too.
RUNTIME := $(VENV)/.installed-runtime
STAMP   := $(VENV)/.installed

.PHONY: demo test install install-runtime lint types pytest guest-tier bench-stats bench-barrier bench-overhead demo-rate accuracy accuracy-quick metric-study metric-study-quick soak clean

$(STAMP): pyproject.toml scripts/bootstrap.sh tests/constraints.txt
	PYTHON=$(PYTHON) VENV=$(VENV) sh scripts/bootstrap.sh dev
	touch $(STAMP) $(RUNTIME)

$(RUNTIME): pyproject.toml scripts/bootstrap.sh
	PYTHON=$(PYTHON) VENV=$(VENV) sh scripts/bootstrap.sh runtime
	touch $(RUNTIME)

install: $(STAMP)

install-runtime: $(RUNTIME)

demo: $(RUNTIME)
	$(BIN)/duet demo

# The guest tier (scripts/guest/run-tier.sh) runs in the background from the start, through a
# gate (DUET_GUEST_GATE): it builds or finds its image, boots, installs and runs its short jobs
# while the bootstrap (the venv), lint, types and the tests that do not measure run (lint and
# types beside those tests, their output printed after them), then starts its system tests; it
# parks, stopped (between two jobs or mid-way through one), while the host's measuring tests run
# (the host waits for it to park first); the rest of its system tests follow them, beside the
# mutation tier's tests that do not measure, at nice 19: they take the CPU the guest (TCG, about
# 1.3 CPUs) leaves, and the guest, which ends last, is not slowed by them.
# Its log is printed at the end, which counts every skip by reason (scripts/test_summary.py).
RESULTS := duet-results
GATE := $(RESULTS)/guest-gate
# `make test` is what CI runs (.ci/run only calls it): nothing may skip silently. Every pytest
# skip fails unless tests/allowed_skips.py allows it (CI=true), the system tests may not skip for
# lack of root or a mounted cgroup hierarchy, and the guest tier may not skip at all.
# `make pytest` (or `make test CI= DUET_REQUIRE_SYSTEM_TESTS= DUET_REQUIRE_GUEST_TIER=`) is the
# lenient run for a machine that lacks what CI has.
test: export CI ?= true
test: export DUET_REQUIRE_SYSTEM_TESTS ?= 1
test: export DUET_REQUIRE_GUEST_TIER ?= 1
test:
	@mkdir -p $(RESULTS); rm -f $(GATE).*
	@PYTHON=$(PYTHON) DUET_GUEST_GATE=$(GATE) bash scripts/guest/run-tier.sh >$(RESULTS)/guest-tier.log 2>&1 & tier=$$!; \
	echo "guest tier: running in the background (pid $$tier, log $(RESULTS)/guest-tier.log)"; \
	rc=0; $(MAKE) --no-print-directory install || rc=$$?; \
	if [ $$rc = 0 ]; then \
		$(MAKE) --no-print-directory lint types >$(RESULTS)/static.log 2>&1 & static=$$!; \
		$(MAKE) --no-print-directory pytest-parallel || rc=$$?; \
		static_rc=0; wait $$static || static_rc=$$?; \
		echo "lint and types (run beside the tests that do not measure):"; cat $(RESULTS)/static.log; \
		[ $$static_rc = 0 ] || { echo "lint or types FAILED (exit $$static_rc): see above"; rc=$$static_rc; }; \
	fi; \
	touch $(GATE).hold; \
	if [ $$rc = 0 ]; then \
		while [ ! -e $(GATE).parked ] && kill -0 $$tier 2>/dev/null; do sleep 1; done; \
		$(MAKE) --no-print-directory pytest-measures || rc=$$?; \
	fi; \
	touch $(GATE).open; \
	[ $$rc != 0 ] || nice -n 19 $(MAKE) --no-print-directory pytest-mutants || rc=$$?; \
	[ $$rc = 0 ] || kill -TERM $$tier 2>/dev/null || true; \
	tier_rc=0; wait $$tier || tier_rc=$$?; \
	cat $(RESULTS)/guest-tier.log; \
	[ $$rc != 0 ] || rc=$$tier_rc; \
	$(MAKE) --no-print-directory test-summary || rc=$$?; exit $$rc

.PHONY: test-summary
test-summary:
	@$(PYTHON) scripts/test_summary.py $(RESULTS)/pytest-parallel.xml $(RESULTS)/pytest-measures.xml \
		$(RESULTS)/pytest-mutants.xml --guest $(RESULTS)/guest/system-tests.xml

lint: $(STAMP)
	$(BIN)/ruff check duet_bench duet_stats tests benchmarks
	$(BIN)/ruff format --check duet_bench duet_stats tests benchmarks
	$(BIN)/python scripts/check_size.py

types: $(STAMP)
	$(BIN)/mypy

# Three invocations (tests/README.md): the tests that do not measure in parallel, then those
# that measure (marker `measures`: real barriers, workers, cgroups, duet runs) one at a time, so
# that no test measures beside another, then the mutation tier's tests that do not measure
# (under `make test` beside the guest's last system tests, whose TCG leaves most of a CPU idle).
# The 25 slowest of each are printed.
MUTANTS := tests/mutants
.PHONY: pytest-parallel pytest-measures pytest-mutants
pytest:
	@rc=0; $(MAKE) --no-print-directory pytest-parallel || rc=$$?; \
	$(MAKE) --no-print-directory pytest-measures || rc=$$?; \
	$(MAKE) --no-print-directory pytest-mutants || rc=$$?; exit $$rc

pytest-parallel: $(STAMP)
	@mkdir -p $(RESULTS)
	$(BIN)/python -m pytest -m "not measures" -n 2 --durations=25 --ignore=$(MUTANTS) \
		--junitxml=$(RESULTS)/pytest-parallel.xml

pytest-mutants: $(STAMP)
	@mkdir -p $(RESULTS)
	$(BIN)/python -m pytest -m "not measures" $(MUTANTS) --durations=10 \
		--junitxml=$(RESULTS)/pytest-mutants.xml

pytest-measures: $(STAMP)
	@mkdir -p $(RESULTS)
	$(BIN)/python -m pytest -m measures --durations=25 \
		--junitxml=$(RESULTS)/pytest-measures.xml

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

# The mutation tier by hand (tests/README.md, "Mutants"): every hand-written mutant, then all
# the generated ones (about an hour on a busy 2-vCPU VM); MUTANTS_ARGS adds options, e.g.
# "--record" to write the score CI enforces. CI runs tests/mutants/test_mutants.py instead.
.PHONY: mutants
mutants: $(STAMP)
	@mkdir -p $(RESULTS)
	$(BIN)/python scripts/mutants.py --hand --generated full --json $(RESULTS)/mutants.jsonl $(MUTANTS_ARGS)

soak: $(STAMP)
	$(BIN)/python benchmarks/soak.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache duet-results
