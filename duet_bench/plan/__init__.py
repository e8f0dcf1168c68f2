"""The plan: what is measured (:mod:`duet_bench.plan.spec`: the sides, the benchmark and its
builder) and in which runs, which side on which core in each run, and the shards of a suite
(:mod:`duet_bench.plan.runs`).

Everything is imported from here: ``from duet_bench.plan import BenchmarkSpec``.
"""

from __future__ import annotations

from duet_bench.defaults import DEFAULT_PIDS_MAX
from duet_bench.plan.runs import (
    RunPlan,
    balanced_swaps,
    parse_shard,
    plan_runs,
    select_shard,
)
from duet_bench.plan.spec import (
    BenchmarkSettings,
    BenchmarkSpec,
    SideSpec,
    build,
    for_suite,
)

__all__ = [
    "DEFAULT_PIDS_MAX",
    "BenchmarkSettings",
    "BenchmarkSpec",
    "RunPlan",
    "SideSpec",
    "balanced_swaps",
    "build",
    "for_suite",
    "parse_shard",
    "plan_runs",
    "select_shard",
]
