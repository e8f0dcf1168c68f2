# The two commands in README.md: `make demo` and `make test`. Everything else is a step of those.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test install lint types pytest bench-stats bench-barrier clean

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

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache duet-results
