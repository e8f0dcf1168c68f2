"""The plan: crossover at every iteration, or a balanced, randomized side assignment per run;
sequential order; shards."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duet_bench.defaults import Crossover
from duet_bench.errors import UsageError
from duet_bench.plan import (
    BenchmarkSpec,
    SideSpec,
    parse_shard,
    plan_runs,
    select_shard,
)


def spec(runs: int = 10, name: str = "b", crossover: Crossover = "run") -> BenchmarkSpec:
    side = SideSpec(kind="command", command="true")
    return BenchmarkSpec(name=name, baseline=side, candidate=side, runs=runs, crossover=crossover)


@given(runs=st.integers(2, 60), seed=st.integers(0, 1000))
def test_crossover_plans_iteration_k_of_run_r_on_pair_r_plus_k(runs: int, seed: int) -> None:
    """docs/statistics.md, method 1b: iteration k of run r runs the baseline on pair[(r + k) %
    2]."""
    pair = (3, 1)
    plans = plan_runs(spec(runs, crossover="iteration"), pair, seed=seed)
    for r, p in enumerate(plans):
        assert p.crossover
        for k in range(5):
            baseline = p.cpus_of("baseline")[k % 2]
            candidate = p.cpus_of("candidate")[k % 2]
            assert baseline == pair[(r + k) % 2]
            assert candidate == pair[(r + k + 1) % 2]
    # The sequential method has nothing to cross: one side at a time, on one CPU.
    for p in plan_runs(spec(runs, crossover="iteration"), pair, seed=seed, method="sequential"):
        assert not p.crossover
        assert p.cpus_of("baseline") == (p.cpus["baseline"],)


def test_crossover_run_keeps_the_cpus_of_a_run() -> None:
    for p in plan_runs(spec(10, crossover="run"), (0, 1), seed=0):
        assert not p.crossover
        assert p.cpus_of("baseline") == (p.cpus["baseline"],)
        assert p.cpus_of("candidate") == (p.cpus["candidate"],)


@given(runs=st.integers(2, 60), seed=st.integers(0, 1000))
def test_sides_alternate_balanced(runs: int, seed: int) -> None:
    plans = plan_runs(spec(runs), (0, 1), seed=seed)
    assert [p.index for p in plans] == list(range(runs))
    on_first = sum(1 for p in plans if p.cpus["baseline"] == 0)
    assert abs(on_first - runs / 2) <= 0.5
    for p in plans:
        assert p.cpus["baseline"] != p.cpus["candidate"]
        assert p.order is None


def test_plan_is_reproducible_and_randomized() -> None:
    one = plan_runs(spec(20), (2, 5), seed=1)
    assert one == plan_runs(spec(20), (2, 5), seed=1)
    assert [p.swapped for p in one] != [p.swapped for p in plan_runs(spec(20), (2, 5), seed=2)]
    # Not a fixed alternation either: a randomized order.
    assert [p.swapped for p in one] != [i % 2 == 1 for i in range(20)]


def test_sequential_runs_one_core_random_order() -> None:
    plans = plan_runs(spec(40), (0, 1), seed=3, method="sequential")
    for p in plans:
        assert p.cpus["baseline"] == p.cpus["candidate"]
        assert p.order is not None
        assert sorted(p.order) == ["baseline", "candidate"]
    firsts = [p.order[0] for p in plans if p.order]
    assert 5 < firsts.count("baseline") < 35
    assert sum(1 for p in plans if p.cpus["baseline"] == 0) == 20


def test_bad_pair_and_settings() -> None:
    with pytest.raises(UsageError, match="two different CPUs"):
        plan_runs(spec(), (1, 1), seed=0)
    with pytest.raises(UsageError, match="at least 2"):
        spec(runs=1)
    with pytest.raises(UsageError, match="module:function"):
        SideSpec(kind="python", interpreter="python3", callable="nocolon")


@given(names=st.sets(st.text(min_size=1, max_size=8), min_size=0, max_size=30), n=st.integers(1, 7))
def test_shards_partition_the_suite(names: set[str], n: int) -> None:
    shards = [select_shard(list(names), (i, n)) for i in range(1, n + 1)]
    flat = [x for s in shards for x in s]
    assert sorted(flat) == sorted(names)
    assert len(flat) == len(set(flat))
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1


def test_parse_shard() -> None:
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "x/4", "3"):
        with pytest.raises(UsageError):
            parse_shard(bad)
