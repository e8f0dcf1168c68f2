"""Where the settings of a benchmark meet: built-in default < suite < benchmark < option.

The **precedence**, :func:`resolve`: an option given explicitly on the command line wins over the
benchmark's own key in the configuration, which wins over the suite key, which wins over the
built-in default (:mod:`duet_bench.defaults`, each written once there; :data:`BUILTIN` lists them
by field name); every value keeps where it came from, for the messages.

What is built from the result lives with what it builds: the spec of a benchmark
(:func:`duet_bench.plan.build`, :func:`duet_bench.plan.for_suite`) and its analysis settings
(:meth:`Settings.analysis`, recorded with the results by
:meth:`~duet_bench.analysis.AnalysisSettings.to_record` and read back by
:meth:`~duet_bench.analysis.AnalysisSettings.from_record`).

Light at import: the command line takes its option defaults from here before anything heavy is
loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
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
    DEFAULT_PIDS_MAX,
    DEFAULT_REPS,
    DEFAULT_RUNS,
    DEFAULT_SEED,
    DEFAULT_THRESHOLD,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WARMUP,
    DEFAULT_WINSORIZE,
    FILE_KEYS,
    NO_LIMIT_KEYS,
    UNSET,
    Crossover,
    Interval,
    Isolation,
    Method,
)
from duet_bench.metrics import DEFAULT_METRIC, MetricChoice

if TYPE_CHECKING:
    from duet_bench.analysis import AnalysisSettings
    from duet_bench.config import BenchmarkConfig, Config


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting of one benchmark (or of the suite), by field name: what :func:`resolve`
    gives after precedence. The defaults are the built-in ones (:data:`BUILTIN`)."""

    runs: int = DEFAULT_RUNS
    # Unset: a fixed design of ``runs``; docs/statistics.md, method 2b.
    min_runs: int | None = None
    max_runs: int | None = None
    budget_s: float | None = None
    iterations: int = DEFAULT_ITERATIONS
    warmup: int = DEFAULT_WARMUP
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_limit_bytes: int | None = None
    #: ``pids.max`` of each side's cgroup; None: no limit.
    pids_max: int | None = DEFAULT_PIDS_MAX
    method: Method = DEFAULT_METHOD
    crossover: Crossover = DEFAULT_CROSSOVER
    isolation: Isolation = DEFAULT_ISOLATION
    max_failures: int | None = DEFAULT_MAX_FAILURES
    confidence: float = DEFAULT_CONFIDENCE
    threshold: float = DEFAULT_THRESHOLD
    metric: MetricChoice = DEFAULT_METRIC
    reps: int = DEFAULT_REPS
    seed: int = DEFAULT_SEED
    interval: Interval = DEFAULT_INTERVAL
    winsorize: bool = DEFAULT_WINSORIZE

    def analysis(self) -> AnalysisSettings:
        """The analysis settings among these (recorded with the results by
        :meth:`~duet_bench.analysis.AnalysisSettings.to_record`)."""
        from duet_bench.analysis.model import AnalysisSettings

        return AnalysisSettings(
            confidence=self.confidence,
            threshold=self.threshold,
            reps=self.reps,
            seed=self.seed,
            interval=self.interval,
            winsorize=self.winsorize,
            metric=self.metric,
        )


#: Every setting by field name, with its built-in default.
BUILTIN: Mapping[str, object] = {f.name: f.default for f in fields(Settings)}


@dataclass(frozen=True, slots=True)
class Given:
    """The settings given on the command line, which win over the configuration: ``names``
    says which of ``values`` were given (their origin is the option: ``--runs``); the others
    are not a choice. A given None is "not given", but for the limits of
    :data:`~duet_bench.defaults.NO_LIMIT_KEYS` (``--memory-limit none``, ``--pids-limit none``
    lift a limit)."""

    values: Settings = field(default_factory=Settings)
    names: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = self.names - set(BUILTIN)
        if unknown:
            raise ValueError(f"unknown setting(s) {sorted(unknown)}; known: {sorted(BUILTIN)}")

    @classmethod
    def of(cls, **values: Any) -> Given:
        """The settings ``values`` given, by field name (``Given.of(runs=12)``)."""
        unknown = set(values) - set(BUILTIN)
        if unknown:
            raise ValueError(f"unknown setting(s) {sorted(unknown)}; known: {sorted(BUILTIN)}")
        return cls(values=Settings(**values), names=frozenset(values))

    def adding(self, **values: Any) -> Given:
        """These settings with ``values`` given too."""
        return Given(values=replace(self.values, **values), names=self.names | frozenset(values))

    def without(self, *names: str) -> Given:
        """These settings with ``names`` not given."""
        return Given(values=self.values, names=self.names - frozenset(names))

    def record(self) -> dict[str, object]:
        """The given settings by field name, in the order of :data:`BUILTIN` (what a results
        file records as the options the command line changed)."""
        return {name: getattr(self.values, name) for name in BUILTIN if name in self.names}


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

    values: Settings
    origins: Mapping[str, Origin]


def resolve(
    explicit: Given | None = None,
    *,
    config: Config | None = None,
    benchmark: BenchmarkConfig | None = None,
) -> Resolved:
    """The settings of ``benchmark`` of ``config`` (the suite's without a benchmark; only the
    built-in defaults and ``explicit`` without a configuration).

    ``explicit`` holds the options given explicitly on the command line (:class:`Given`).
    ``memory_limit_bytes: None`` and ``pids_max: None`` win like any value (``--memory-limit
    none``, ``--pids-limit none`` lift a limit); for the other settings None cannot be a value
    and means "not given". In the configuration a benchmark's ``pids_limit = "none"`` lifts the
    limit too (its table's UNSET is "not given"); a benchmark cannot lift a suite's memory limit.
    """
    given = explicit or Given()
    chosen = {
        name: _chosen(name, default, given, config=config, benchmark=benchmark)
        for name, default in BUILTIN.items()
    }
    return Resolved(
        values=Settings(**{name: value for name, (value, _) in chosen.items()}),
        origins={name: origin for name, (_, origin) in chosen.items()},
    )


def _chosen(
    name: str,
    default: object,
    given: Given,
    *,
    config: Config | None,
    benchmark: BenchmarkConfig | None,
) -> tuple[Any, Origin]:
    """The value of the setting ``name`` after precedence, and where it came from."""
    value = getattr(given.values, name)
    if name in given.names and (value is not None or name in NO_LIMIT_KEYS):
        return value, option_name(name)
    key = FILE_KEYS.get(name, name)
    own = getattr(benchmark, name) if benchmark is not None and name in BENCHMARK_KEYS else UNSET
    # A benchmark's None is "not given", but its pids_max's, a value (no limit): UNSET is.
    if own is not UNSET and (own is not None or name == "pids_max"):
        assert config is not None
        assert benchmark is not None
        return own, f"{config.path}: benchmark {benchmark.name!r}, {key}"
    if config is not None and hasattr(config.defaults, name):
        # The suite's value, which is the built-in default unless the file set it.
        value = getattr(config.defaults, name)
        from_file = name in config.given or value != default
        return value, f"{config.path}: {key}" if from_file else "the built-in default"
    return default, "the built-in default"
