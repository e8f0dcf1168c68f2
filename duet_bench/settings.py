"""Where the settings of a benchmark meet: built-in default < suite < benchmark < option.

The **precedence**, :func:`resolve`: an option given explicitly on the command line wins over the
benchmark's own key in the configuration, which wins over the suite key, which wins over the
built-in default (:mod:`duet_bench.defaults`, each written once there; :data:`BUILTIN` lists them
by field name); every value keeps where it came from, for the messages.

What is built from the result lives with what it builds: the spec of a benchmark
(:func:`duet_bench.plan.build`, :func:`duet_bench.plan.for_suite`) and its analysis settings
(:meth:`duet_bench.analysis.AnalysisSettings.from_values`, recorded with the results by
:meth:`~duet_bench.analysis.AnalysisSettings.to_record` and read back by
:meth:`~duet_bench.analysis.AnalysisSettings.from_record`).

Light at import: the command line takes its option defaults from here before anything heavy is
loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from duet_bench.defaults import (
    BENCHMARK_KEYS,
    DEFAULT_CONFIDENCE,
    DEFAULT_CROSSOVER,
    DEFAULT_INTERVAL,
    DEFAULT_ISOLATION,
    DEFAULT_ITERATIONS,
    DEFAULT_MAX_FAILURES,
    DEFAULT_METHOD,
    DEFAULT_REPS,
    DEFAULT_RUNS,
    DEFAULT_SEED,
    DEFAULT_THRESHOLD,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WARMUP,
    DEFAULT_WINSORIZE,
    FILE_KEYS,
)
from duet_bench.metrics import DEFAULT_METRIC

if TYPE_CHECKING:
    from duet_bench.config import BenchmarkConfig, Config

#: Every setting by field name, with its built-in default.
BUILTIN: Mapping[str, Any] = {
    "runs": DEFAULT_RUNS,
    # Unset: a fixed design of ``runs``; docs/statistics.md, method 2b.
    "min_runs": None,
    "max_runs": None,
    "budget_s": None,
    "iterations": DEFAULT_ITERATIONS,
    "warmup": DEFAULT_WARMUP,
    "timeout_s": DEFAULT_TIMEOUT_S,
    "memory_limit_bytes": None,
    "method": DEFAULT_METHOD,
    "crossover": DEFAULT_CROSSOVER,
    "isolation": DEFAULT_ISOLATION,
    "max_failures": DEFAULT_MAX_FAILURES,
    "confidence": DEFAULT_CONFIDENCE,
    "threshold": DEFAULT_THRESHOLD,
    "metric": DEFAULT_METRIC,
    "reps": DEFAULT_REPS,
    "seed": DEFAULT_SEED,
    "interval": DEFAULT_INTERVAL,
    "winsorize": DEFAULT_WINSORIZE,
}

Origin: TypeAlias = str


def option_name(name: str) -> str:
    """The command-line option of the setting ``name`` (a field name)."""
    return "--" + FILE_KEYS.get(name, name).replace("_", "-")


# --------------------------------------------------------------------------------------------
# Precedence


@dataclass(frozen=True, slots=True)
class Resolved:
    """Every setting of one benchmark (or of the suite) after precedence, and where each value
    came from (``--runs``, ``duet.toml: benchmark 'parse', runs``, ``duet.toml: runs`` or
    ``the built-in default``)."""

    values: Mapping[str, Any]
    origins: Mapping[str, Origin]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def resolve(
    explicit: Mapping[str, Any] | None = None,
    *,
    config: Config | None = None,
    benchmark: BenchmarkConfig | None = None,
) -> Resolved:
    """The settings of ``benchmark`` of ``config`` (the suite's without a benchmark; only the
    built-in defaults and ``explicit`` without a configuration).

    ``explicit`` holds the options given explicitly on the command line, by field name
    (``timeout_s``, ``memory_limit_bytes``). ``memory_limit_bytes: None`` wins like any value
    (``--memory-limit none`` lifts a limit); for the other settings None cannot be a value and
    means "not given".
    """
    given = dict(explicit or {})
    unknown = set(given) - set(BUILTIN)
    if unknown:
        raise ValueError(f"unknown setting(s) {sorted(unknown)}; known: {sorted(BUILTIN)}")
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    for name, default in BUILTIN.items():
        if name in given and (given[name] is not None or name == "memory_limit_bytes"):
            values[name], origins[name] = given[name], option_name(name)
            continue
        key = FILE_KEYS.get(name, name)
        own = getattr(benchmark, name) if benchmark is not None and name in BENCHMARK_KEYS else None
        if own is not None:
            assert config is not None
            assert benchmark is not None
            values[name] = own
            origins[name] = f"{config.path}: benchmark {benchmark.name!r}, {key}"
        elif config is not None and hasattr(config.defaults, name):
            # The suite's value, which is the built-in default unless the file set it.
            values[name] = getattr(config.defaults, name)
            from_file = name in config.given or values[name] != default
            origins[name] = f"{config.path}: {key}" if from_file else "the built-in default"
        else:
            values[name], origins[name] = default, "the built-in default"
    return Resolved(values=values, origins=origins)
