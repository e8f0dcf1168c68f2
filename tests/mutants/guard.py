"""A pytest plugin for the runs of the mutation tier (``-p tests.mutants.guard``): it stops the
run before any test when ``duet_bench``, ``duet_stats`` or this very ``tests`` package is not
the copy's (``DUET_MUTANT_ROOT``), e.g. when the venv's editable install of the checkout came
first on ``sys.path``: the mutant would then not be tested at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GUARD_EXIT = 97  # tests.mutants.engine.GUARD_EXIT


def pytest_configure(config: pytest.Config) -> None:
    root = os.environ.get("DUET_MUTANT_ROOT")
    if not root:
        return
    import duet_bench
    import duet_stats
    import tests

    copy = Path(root).resolve()
    for module in (duet_bench, duet_stats, tests):
        where = Path(str(module.__file__)).resolve()
        if not where.is_relative_to(copy):
            pytest.exit(
                f"{module.__name__} was imported from {where}, not from the mutated copy {copy}: "
                "the mutant would not be tested; put the copy first on sys.path (PYTHONPATH) "
                "and run pytest from it",
                returncode=GUARD_EXIT,
            )
