"""A pytest-benchmark suite configured as a ``[[suite]]`` and measured by ``duet compare`` on a
real git repository: the registry finds the adapter by name, discovery runs in each version,
the slowed test is a regression, the added test is new and the removed one missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adapters.suites import ISOLATION, check_regression_found, compare, project

# A compare whose subprocess may take its 1800 s.
pytestmark = [
    pytest.mark.usefixtures("no_leftovers"),
    pytest.mark.slow,
    pytest.mark.timeout(2000),
]

WORKLOAD = """\
ROUNDS = {rounds}


def checksum(data):
    total = 0
    for _ in range(ROUNDS):
        for x in data:
            total = (total * 31 + x) & 0xFFFFFFFF
    return total
"""

BENCH = """\
import workload

DATA = list(range(2000))


def test_steady(benchmark):
    benchmark(sum, DATA)


def test_slowed(benchmark):
    benchmark(workload.checksum, DATA)


def test_{extra}(benchmark):
    benchmark(sorted, DATA)
"""


def _config() -> str:
    import sys

    # The versions' interpreter: ours, where pytest (and pytest-benchmark) are installed.
    return (
        f'runs = 10\niterations = 10\nwarmup = 1\nisolation = "{ISOLATION}"\n'
        f'metric = "cpu"\npython = {json.dumps(sys.executable)}\n\n'
        '[[suite]]\nadapter = "pytest-benchmark"\nname = "pb"\npath = "benchmarks"\n'
    )


def test_a_pytest_benchmark_suite_through_duet_compare(tmp_path: Path) -> None:
    base = {
        "duet.toml": _config(),
        "benchmarks/workload.py": WORKLOAD.format(rounds=10),
        "benchmarks/bench_work.py": BENCH.format(extra="removed"),
        "benchmarks/pytest.ini": "[pytest]\npython_files = bench_*.py\n",
    }
    head = {
        "benchmarks/workload.py": WORKLOAD.format(rounds=13),
        "benchmarks/bench_work.py": BENCH.format(extra="added"),
    }
    repo = project(tmp_path, base, head)
    done, doc = compare(repo, "base", "HEAD", tmp_path / "out")
    # Node ids as `python -m pytest` takes them in the version's directory.
    names = {
        "steady": "benchmarks/bench_work.py::test_steady",
        "slowed": "benchmarks/bench_work.py::test_slowed",
        "added": "benchmarks/bench_work.py::test_added",
        "removed": "benchmarks/bench_work.py::test_removed",
    }
    check_regression_found(done, doc, "pb", names)
