"""Discovery at each version: the suite entries become benchmarks.

After both versions are built, every suite is discovered in BASE's directory and in HEAD's
(with HEAD's suite entries: the configuration is HEAD's for both versions). A benchmark found
in both is measured like any configured one; one found only in HEAD is *new* and one found
only in BASE is *missing*: both are reported with a note and no verdict, never measured
against something else.

An adapter with an ``operations`` method (:class:`Counted`: go) then chooses, in BASE's
directory, the operation count of every benchmark both versions have, which every iteration
of both sides runs.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from duet_bench.adapters.base import Checkout
from duet_bench.adapters.registry import get_adapter
from duet_bench.config import DEFAULT_PYTHON, BenchmarkConfig, Config
from duet_bench.config.model import Suite
from duet_bench.errors import ConfigError
from duet_bench.plan import select_shard
from duet_bench.results import BenchmarkRecord

if TYPE_CHECKING:
    from duet_bench.isolation.model import RunAs


@dataclass(frozen=True, slots=True)
class Expansion:
    """What discovery found: the benchmarks both versions have (HEAD's order), and the names
    only one of them has."""

    benchmarks: tuple[BenchmarkConfig, ...]
    new: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()


def checkout(
    config: Config, directory: Path, run_as: RunAs | None = None, keep_env: tuple[str, ...] = ()
) -> Checkout:
    python = config.python or DEFAULT_PYTHON
    return Checkout(
        directory=directory.resolve(),
        python=str(directory.resolve() / python),
        run_as=run_as,
        keep_env=keep_env,
    )


class Counted(Protocol):
    """An adapter that fixes the operation count of every iteration (go: ``-test.benchtime
    Nx``), chosen once per benchmark in the baseline's directory, the same on both sides: the
    process's CPU time of an iteration then measures the same work on both sides."""

    def operations(
        self, suite: Suite, checkout: Checkout, names: Sequence[str]
    ) -> Mapping[str, int]: ...

    def benchmark(
        self, suite: Suite, name: str, operations: int | None = None
    ) -> BenchmarkConfig: ...


def suite_benchmark(suite: Suite, name: str, operations: int | None = None) -> BenchmarkConfig:
    """The benchmark ``name`` of ``suite``, with the suite's settings and environment (and
    ``operations`` per iteration, for a :class:`Counted` adapter)."""
    adapter = get_adapter(suite.adapter)
    if operations is None:
        b = adapter.benchmark(suite, name)
    else:
        b = cast(Counted, adapter).benchmark(suite, name, operations)
    return replace(b, **suite.settings, env={**suite.env, **b.env})


def expand(
    config: Config,
    *,
    baseline_dir: Path,
    candidate_dir: Path,
    run_as: RunAs | None = None,
    keep_env: tuple[str, ...] = (),
) -> Expansion:
    """Discover every suite of ``config`` in both versions (BASE first, then HEAD: an adapter
    may build at discovery and pins what it built in the version's directory before the next
    version builds). Discovery runs as ``run_as``, as the builds do."""
    base = checkout(config, baseline_dir, run_as, keep_env)
    head = checkout(config, candidate_dir, run_as, keep_env)
    configured = {b.name for b in config.benchmarks}
    benchmarks: list[BenchmarkConfig] = []
    new: list[str] = []
    missing: list[str] = []
    for suite in config.suites:
        adapter = get_adapter(suite.adapter)
        in_base = adapter.discover(suite, base)
        in_head = adapter.discover(suite, head)
        if not in_head and not in_base:
            what = f" matching the filter {suite.filter!r}" if suite.filter else ""
            raise ConfigError(
                f"suite {suite.name!r} ({suite.adapter}, {suite.path}) has no benchmark"
                f"{what} in either version",
                fix="check the suite's path and filter (discovery runs in each version's "
                "directory after its build)",
            )
        base_set = set(in_base)
        counted = getattr(adapter, "operations", None)
        counts: Mapping[str, int] = {}
        if counted is not None:
            counts = counted(suite, base, [n for n in in_head if n in base_set])
        for name in in_head:
            full = f"{suite.name}/{name}"
            if full in configured:
                raise ConfigError(
                    f"suite {suite.name!r} found the benchmark {full!r}, which is also the name "
                    "of a [[benchmark]] of the configuration",
                    fix="rename the [[benchmark]] or give the suite another name",
                )
            if name in base_set:
                benchmarks.append(suite_benchmark(suite, name, counts.get(name)))
            else:
                new.append(full)
        head_set = set(in_head)
        missing += [f"{suite.name}/{n}" for n in in_base if n not in head_set]
    return Expansion(benchmarks=tuple(benchmarks), new=tuple(new), missing=tuple(missing))


def expand_config(
    config: Config,
    *,
    baseline_dir: Path,
    candidate_dir: Path,
    run_as: RunAs | None = None,
    keep_env: tuple[str, ...] = (),
) -> tuple[Config, Expansion]:
    """``config`` with the benchmarks its suites have in both versions added after its own,
    and what discovery found (discovered as ``run_as``)."""
    found = expand(
        config,
        baseline_dir=baseline_dir,
        candidate_dir=candidate_dir,
        run_as=run_as,
        keep_env=keep_env,
    )
    return replace(config, benchmarks=config.benchmarks + found.benchmarks), found


def unmeasured(
    found: Expansion, *, base: str, head: str, pattern: str | None, shard: tuple[int, int] | None
) -> list[BenchmarkRecord]:
    """The records of the benchmarks only one version has (no runs, a note, no verdict), those
    the ``--bench`` glob and the shard select."""

    def chosen(names: tuple[str, ...]) -> list[str]:
        picked = [n for n in names if pattern is None or matches(n, pattern)]
        return select_shard(picked, shard)

    records = [
        BenchmarkRecord(
            name=name,
            runs=(),
            note=f"new: only in the candidate ({head}), discovered by its suite; not measured",
        )
        for name in chosen(found.new)
    ]
    records += [
        BenchmarkRecord(
            name=name,
            runs=(),
            note=f"missing: only in the baseline ({base}), the candidate's suite no longer has "
            "it; not measured",
        )
        for name in chosen(found.missing)
    ]
    return records


def matches(name: str, pattern: str) -> bool:
    """``--bench``'s rule (:meth:`duet_bench.config.Config.select`)."""
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def select_names(config: Config, found: Expansion, pattern: str | None) -> list[str]:
    """The measured benchmarks ``--bench`` selects; none is not an error when the glob selects
    a new or missing benchmark (which is then reported)."""
    if pattern is not None and any(matches(n, pattern) for n in found.new + found.missing):
        return [b.name for b in config.benchmarks if matches(b.name, pattern)]
    return [b.name for b in config.select(pattern)]
