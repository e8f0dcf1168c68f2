"""What a side that hit its limit of processes is told: the limit, and how to raise it (the fork
bomb itself, with real cgroups: tests/system/test_faults.py)."""

from __future__ import annotations

import pytest

from duet_bench import results
from duet_bench.errors import BenchmarkFailed
from duet_bench.runner.outcome import pids_reason
from duet_bench.session import raise_if_broken
from tests.duet.test_results import minimal


def test_the_pids_limit_reason_names_the_limit_and_the_fix() -> None:
    assert pids_reason(256) == (
        "reached the limit of 256 processes (pids.max): a fork bomb? (a benchmark that needs "
        "more processes raises it: --pids-limit N, or pids_limit = N)"
    )
    # With --pids-limit none a cgroup above the side's refused the fork: no "None processes".
    assert "None" not in pids_reason(None)
    assert "above the side's" in pids_reason(None)


def test_a_benchmark_stopped_by_its_pids_limit_is_told_to_raise_it() -> None:
    data = minimal()
    data["benchmarks"][0]["runs"][0].update(
        status="pids-limit", reason=f"candidate: {pids_reason(256)}"
    )
    with pytest.raises(BenchmarkFailed) as caught:
        raise_if_broken(results.from_dict(data), max_failures=0)
    assert caught.value.fix is not None
    assert caught.value.fix.endswith("if the benchmark is right, raise --pids-limit")
