"""The configuration as data: the suite's :class:`Defaults`, each :class:`BenchmarkConfig`, each
``[[suite]]`` entry (:class:`Suite`, read by an adapter) and the validated :class:`Config`.

Each record checks its values on construction with the same range rules the file validation
uses (:func:`range_problem`), so a configuration built in code is held to the file's rules.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypedDict, TypeVar

from duet_bench import limits
from duet_bench.defaults import (
    BENCHMARK_KEYS,
    CROSSOVERS,
    DEFAULT_CONFIDENCE,
    DEFAULT_CROSSOVER,
    DEFAULT_ISOLATION,
    DEFAULT_ITERATIONS,
    DEFAULT_MAX_FAILURES,
    DEFAULT_METHOD,
    DEFAULT_PIDS_MAX,
    DEFAULT_RUNS,
    DEFAULT_THRESHOLD,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WARMUP,
    ISOLATIONS,
    METHODS,
    UNSET,
    Crossover,
    Isolation,
    Kind,
    Method,
    Unset,
)
from duet_bench.errors import ConfigError
from duet_bench.metrics import DEFAULT_METRIC, METRIC_CHOICES, MetricChoice

#: The interpreter of python benchmarks, relative to each version's directory, when the
#: configuration does not say (the layout ``python -m venv .venv`` gives).
DEFAULT_PYTHON = ".venv/bin/python"


#: The keys ``duet calibrate --write`` sets.
RECOMMENDATION_KEYS = (
    "runs",
    "iterations",
    "warmup",
    "method",
    "metric",
    "crossover",
    "min_runs",
    "max_runs",
)


#: The recommended settings whose values are words; the others are integers.
WORD_RECOMMENDATIONS = ("method", "metric", "crossover")


@dataclass(frozen=True, slots=True)
class RecommendedSettings:
    """What ``duet calibrate --write`` sets in a table of the configuration (the keys of
    :data:`RECOMMENDATION_KEYS`; tomlkit writes them, :mod:`duet_bench.config.writer`). None
    leaves the key as the file has it."""

    runs: int | None = None
    iterations: int | None = None
    warmup: int | None = None
    method: Method | None = None
    metric: MetricChoice | None = None
    crossover: Crossover | None = None
    #: Measuring until decided, when calibration's simulation reached its target.
    min_runs: int | None = None
    max_runs: int | None = None

    def __post_init__(self) -> None:
        _check_fields(self, RECOMMENDATION_KEYS)

    def to_toml(self) -> dict[str, int | str]:
        """The keys to set and their values, in :data:`RECOMMENDATION_KEYS`' order."""
        words: tuple[tuple[str, str | None], ...] = (
            ("method", self.method),
            ("metric", self.metric),
            ("crossover", self.crossover),
        )
        numbers: tuple[tuple[str, int | None], ...] = (
            ("runs", self.runs),
            ("iterations", self.iterations),
            ("warmup", self.warmup),
            ("min_runs", self.min_runs),
            ("max_runs", self.max_runs),
        )
        given = {k: v for k, v in (*words, *numbers) if v is not None}
        return {k: given[k] for k in RECOMMENDATION_KEYS if k in given}


Form: TypeAlias = Literal["duet", "pyproject"]


def range_problem(name: str, value: Any) -> str | None:
    """Why ``value`` is out of range for the setting ``name`` (a field name), or None.

    One place for the rules, shared by the file validation (which adds the file, table and
    key) and the dataclasses' own checks (which guard programmatic construction).
    """
    if name == "runs":
        return limits.runs_problem(value)
    if name in ("min_runs", "max_runs") and value < 3:
        return f"must be at least 3 (the first look needs an interval), got {value}"
    if name == "budget_s" and not (value > 0 and math.isfinite(value)):
        return f"must be a positive, finite duration, got {value}"
    if name == "iterations" and value < 1:
        return f"must be at least 1, got {value}"
    if name in ("warmup", "max_failures") and value < 0:
        return f"must be 0 or more, got {value}"
    if name == "confidence" and not 0 < value < 1:
        return f"must be strictly between 0 and 1, got {value}"
    if name == "threshold" and not (value >= 0 and math.isfinite(value)):
        return f"must be a finite number, 0 or more, got {value}"
    if name == "timeout_s" and not (value > 0 and math.isfinite(value)):
        return f"must be a positive, finite number of seconds, got {value}"
    if name == "memory_limit_bytes" and value is not None and value <= 0:
        return f"must be a positive size, got {value}"
    if name == "pids_max" and value is not None:
        return limits.pids_problem(value)
    if name == "isolation" and value not in ISOLATIONS:
        return f"must be one of {', '.join(ISOLATIONS)}, got {value!r}"
    if name == "method" and value not in METHODS:
        return f"must be one of {', '.join(METHODS)}, got {value!r}"
    if name == "crossover" and value not in CROSSOVERS:
        return f"must be one of {', '.join(CROSSOVERS)}, got {value!r}"
    if name == "metric" and value not in METRIC_CHOICES:
        return f"must be one of {', '.join(METRIC_CHOICES)}, got {value!r}"
    return limits.problem(name, value)  # the upper bounds, shared with the options


def _check_fields(record: object, names: Sequence[str]) -> None:
    for name in names:
        value = getattr(record, name)
        if value is not None and value is not UNSET:
            problem = range_problem(name, value)
            if problem:
                raise ValueError(f"{type(record).__name__}.{name} {problem}")


class BenchmarkFields(TypedDict, total=False):
    """The benchmark settings a table of the file gives, each under its field name of
    :class:`BenchmarkConfig` (``timeout`` is ``timeout_s``): what a ``[[suite]]`` entry gives to
    every benchmark it finds (:attr:`Suite.settings`), and what a ``[[benchmark]]`` table and
    the suite-wide keys are built from. Only the keys the file gives are present."""

    runs: int
    min_runs: int
    max_runs: int
    budget_s: float
    iterations: int
    warmup: int
    timeout_s: float
    memory_limit_bytes: int
    #: None: ``pids_limit = "none"``, no limit.
    pids_max: int | None
    threshold: float
    confidence: float
    method: Method
    crossover: Crossover
    metric: MetricChoice


@dataclass(frozen=True, slots=True)
class Defaults:
    """The suite-wide settings; every benchmark uses them unless it overrides one."""

    runs: int = DEFAULT_RUNS
    #: Measuring until decided (docs/statistics.md, method 2b); None: a fixed design of ``runs``.
    min_runs: int | None = None
    max_runs: int | None = None
    budget_s: float | None = None
    iterations: int = DEFAULT_ITERATIONS
    warmup: int = DEFAULT_WARMUP
    confidence: float = DEFAULT_CONFIDENCE
    threshold: float = DEFAULT_THRESHOLD
    isolation: Isolation = DEFAULT_ISOLATION
    memory_limit_bytes: int | None = None
    #: None: no limit (``pids_limit = "none"``).
    pids_max: int | None = DEFAULT_PIDS_MAX
    timeout_s: float = DEFAULT_TIMEOUT_S
    method: Method = DEFAULT_METHOD
    crossover: Crossover = DEFAULT_CROSSOVER
    max_failures: int = DEFAULT_MAX_FAILURES
    metric: MetricChoice = DEFAULT_METRIC

    def __post_init__(self) -> None:
        _check_fields(self, [f.name for f in fields(self)])


@dataclass(frozen=True, slots=True)
class BenchmarkConfig:
    """One benchmark as configured; the overrides are None where the suite default applies
    (``pids_max`` is UNSET there: its None is a value, no limit).

    ``command`` holds the shell command of a ``command`` benchmark or the program line of a
    ``native`` one (both run through the shell in the version's directory); ``callable`` and
    ``setup`` are ``module:function`` names of a ``python`` benchmark.
    """

    name: str
    kind: Kind
    command: str | None = None
    callable: str | None = None
    setup: str | None = None
    runs: int | None = None
    min_runs: int | None = None
    max_runs: int | None = None
    budget_s: float | None = None
    iterations: int | None = None
    warmup: int | None = None
    timeout_s: float | None = None
    memory_limit_bytes: int | None = None
    #: None is a value here, no limit (``pids_limit = "none"``): not given, it is UNSET.
    pids_max: int | Unset | None = UNSET
    threshold: float | None = None
    confidence: float | None = None
    method: Method | None = None
    crossover: Crossover | None = None
    metric: MetricChoice | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    #: Suite adapters: the benchmark tool's output the sample is read from
    #: (``duet_bench/adapters/``).
    output: str | None = None

    def __post_init__(self) -> None:
        if self.kind in ("command", "native") and not self.command:
            raise ValueError(f"benchmark {self.name!r}: a {self.kind} benchmark needs a command")
        if self.kind == "python" and not self.callable:
            raise ValueError(f"benchmark {self.name!r}: a python benchmark needs a callable")
        _check_fields(self, BENCHMARK_KEYS)


@dataclass(frozen=True, slots=True)
class AdapterOptions:
    """An adapter's own options of a suite entry (``min_time``, ``benchtime``, ...): each adapter
    has its record deriving from this one (``GoOptions``, ...), with None for an option the
    entry does not give, and parses the entry's keys into it (its ``options`` parsers,
    :func:`duet_bench.config.suites.parse_suites`). This base record is an adapter's without
    options."""


Options = TypeVar("Options", bound=AdapterOptions)


def options_of(suite: Suite, kind: type[Options]) -> Options:
    """``suite``'s options as its adapter's record ``kind`` (the defaults when it gives none).

    Raises
    ------
    ValueError
        The suite holds another adapter's options (a suite built in code, not read).
    """
    options = suite.options
    if isinstance(options, kind):
        return options
    if type(options) is AdapterOptions:
        return kind()
    raise ValueError(
        f"suite {suite.name!r} ({suite.adapter}) holds {type(options).__name__}, "
        f"not {kind.__name__}"
    )


@dataclass(frozen=True, slots=True)
class Suite:
    """One suite entry, validated.

    ``path`` is relative to the version's directory: a test path (pytest-benchmark), a binary
    built by the ``build`` command (Google Benchmark), a package (``./pkg``, go), a bench target
    (cargo). ``filter`` is the benchmark tool's own selection syntax, applied at discovery.
    ``options`` holds the adapter's own keys, parsed into its record (:class:`AdapterOptions`,
    read with :func:`options_of`); ``settings`` the
    benchmark settings (``runs``, ``iterations``, ``threshold``, ...) every discovered benchmark
    gets, as field names of :class:`duet_bench.config.BenchmarkConfig`.
    """

    adapter: str
    name: str
    path: str
    filter: str | None = None
    options: AdapterOptions = field(default_factory=AdapterOptions)
    settings: BenchmarkFields = field(default_factory=lambda: BenchmarkFields())
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Config:
    """A validated configuration.

    ``python`` is the interpreter of python benchmarks relative to each version's directory
    (:data:`DEFAULT_PYTHON` when a python benchmark exists and the file does not say, else
    None). ``raw`` is the parsed duet table itself, JSON-ready, for the results file.
    ``given`` names the fields of ``defaults`` the file sets (the others are built-in
    defaults), so that a message can say where a value came from.
    """

    path: Path
    defaults: Defaults
    build: str | None
    python: str | None
    benchmarks: tuple[BenchmarkConfig, ...]
    raw: Mapping[str, Any]
    #: ``[[suite]]`` entries, expanded into benchmarks at each version (``duet_bench/adapters/``).
    suites: tuple[Suite, ...] = ()
    given: frozenset[str] = frozenset()

    def benchmark(self, name: str) -> BenchmarkConfig:
        """The benchmark called ``name``; a :class:`ConfigError` naming the closest one if none."""
        for b in self.benchmarks:
            if b.name == name:
                return b
        names = [b.name for b in self.benchmarks]
        close = difflib.get_close_matches(name, names, n=1)
        raise ConfigError(
            f"{self.path}: no benchmark named {name!r}; the benchmarks are: {', '.join(names)}",
            fix=f"did you mean {close[0]!r}?" if close else "use one of those names",
        )

    def select_one(self, pattern: str) -> BenchmarkConfig:
        """The one benchmark ``pattern`` selects, for the commands that follow one (bisect,
        calibrate): its exact name, else the only name the glob matches. A plain name that is
        no benchmark's gets the closest name (:meth:`benchmark`); a glob of several names is
        refused, naming them."""
        if any(b.name == pattern for b in self.benchmarks) or not any(c in pattern for c in "*?["):
            return self.benchmark(pattern)
        chosen = self.select(pattern)
        if len(chosen) > 1:
            raise ConfigError(
                f"{self.path}: {pattern!r} matches {len(chosen)} benchmarks "
                f"({', '.join(b.name for b in chosen)}); this command follows one",
                fix="give one name, or a glob that matches one",
            )
        return chosen[0]

    def select(self, pattern: str | None) -> tuple[BenchmarkConfig, ...]:
        """The benchmarks whose name matches the glob ``pattern`` (all of them for None), in
        the order of the file. A name equal to the pattern always matches, so a name holding
        glob characters (``parse[fast]``) can still be selected exactly."""
        if pattern is None:
            return self.benchmarks
        chosen = tuple(
            b for b in self.benchmarks if b.name == pattern or fnmatch.fnmatchcase(b.name, pattern)
        )
        if not chosen:
            names = ", ".join(b.name for b in self.benchmarks)
            raise ConfigError(
                f"{self.path}: no benchmark matches {pattern!r}; the benchmarks are: {names}",
                fix="give a name or a glob on the names (quoted for the shell), e.g. 'parse*'",
            )
        return chosen
