# The two commands in README.md: `make demo` and `make test`. Everything else is a step of those.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test install lint types pytest bench-stats bench-barrier bench-overhead accuracy accuracy-quick metric-study metric-study-quick soak clean

$(STAMP): pyproject.toml scripts/bootstrap.sh
	PYTHON=$(PYTHON) VENV=$(VENV) sh scripts/bootstrap.sh
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/duet demo

test: $(STAMP) lint types pytest

lint: $(STAMP)
	$(BIN)/ruff check duet stats tests benchmarks
	$(BIN)/ruff format --check duet stats tests benchmarks

types: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest

bench-stats: $(STAMP)
	$(BIN)/python benchmarks/bench_stats.py

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
