"""Where the settings of a benchmark meet: built-in default < suite < benchmark < option.

One home for every setting duet measures and judges with:

* the **built-in defaults**, each written once here (the command-line options, the
  configuration's :class:`duet_bench.config.Defaults`, :class:`duet_bench.plan.BenchmarkSpec` and
  :class:`duet_bench.analysis.AnalysisSettings` take theirs from these constants);
* the **precedence**, :func:`resolve`: an option given explicitly on the command line wins over
  the benchmark's own key in the configuration, which wins over the suite key, which wins over
  the built-in default; every value keeps where it came from, for the messages;
* the **one spec builder**, :func:`build`, used by ``duet run``, ``duet compare`` (through
  :func:`for_suite`) and ``duet calibrate``, which also applies the runs rule
  (:func:`duet_bench.limits.runs_problem`, the only place it is written) naming where the
  value came from;
* the **recorded settings**: every benchmark of a results file keeps its resolved analysis
  settings (``settings.analysis``, :func:`record`), and ``duet analyze`` / ``duet report``
  re-analyse with them unless an option is given explicitly (:func:`for_record`), so a
  per-benchmark ``threshold`` of the configuration is not silently replaced by the default.

Light at import (the command line takes its option defaults from here before anything heavy
is loaded): :mod:`duet_bench.plan`, :mod:`duet_bench.analysis` and :mod:`duet_bench.config` import
this module for the defaults, so it imports them only where it builds their objects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from duet_bench.defaults import (
    ANALYSIS_KEYS,
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
    INTERVALS,
    RUN_KEYS,
)
from duet_bench.errors import ResultsError, UsageError
from duet_bench.limits import runs_problem
from duet_bench.metrics import DEFAULT_METRIC, METRIC_CHOICES

if TYPE_CHECKING:
    from duet_bench.analysis import AnalysisSettings
    from duet_bench.config import BenchmarkConfig, Config
    from duet_bench.plan import BenchmarkSpec, SideSpec
    from duet_bench.results import BenchmarkRecord

#: Every setting by field name, with its built-in default.
BUILTIN: Mapping[str, Any] = {
    "runs": DEFAULT_RUNS,
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

    def analysis(self) -> AnalysisSettings:
        """The analysis settings."""
        from duet_bench.analysis import AnalysisSettings

        return AnalysisSettings(**{k: self.values[k] for k in ANALYSIS_KEYS})


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


# --------------------------------------------------------------------------------------------
# The one spec builder


@dataclass(frozen=True, slots=True)
class BenchmarkSettings:
    """One benchmark ready to measure: its spec, the settings it is judged with, and where
    every value came from."""

    spec: BenchmarkSpec
    analysis: AnalysisSettings
    resolved: Resolved


def build(
    name: str, baseline: SideSpec, candidate: SideSpec, resolved: Resolved
) -> BenchmarkSettings:
    """The spec of one benchmark with the run settings of ``resolved``.

    Raises
    ------
    UsageError
        Fewer than :data:`MIN_RUNS` runs, naming where the number came from.
    """
    from duet_bench.plan import BenchmarkSpec

    problem = runs_problem(resolved["runs"])
    if problem:
        origin = resolved.origins["runs"]
        raise UsageError(
            f"{name}: runs {problem} (from {origin})",
            fix=f"set runs to 10 or more ({origin})",
        )
    spec = BenchmarkSpec(
        name=name,
        baseline=baseline,
        candidate=candidate,
        **{k: resolved[k] for k in RUN_KEYS},
    )
    return BenchmarkSettings(spec=spec, analysis=resolved.analysis(), resolved=resolved)


def for_suite(
    config: Config,
    *,
    baseline_dir: Path,
    candidate_dir: Path,
    select: str | None = None,
    explicit: Mapping[str, Any] | None = None,
) -> list[BenchmarkSettings]:
    """Every selected benchmark of ``config`` (in the order of the file) for the two version
    directories.

    Every side runs in its version's directory: a command or native program through the
    shell there, a python callable imported from there (the directory is on ``sys.path``) by
    the interpreter ``config.python`` resolved inside that directory, so each version uses its
    own environment.
    """
    dirs = {"baseline": baseline_dir.resolve(), "candidate": candidate_dir.resolve()}
    out = []
    for b in config.select(select):
        sides = {which: _side(config, b, directory) for which, directory in dirs.items()}
        resolved = resolve(explicit, config=config, benchmark=b)
        out.append(build(b.name, sides["baseline"], sides["candidate"], resolved))
    return out


def _side(config: Config, b: BenchmarkConfig, directory: Path) -> SideSpec:
    from duet_bench.plan import SideSpec

    if b.kind == "python":
        from duet_bench.config import DEFAULT_PYTHON

        # One fallback for every python benchmark, written or discovered by a suite.
        return SideSpec(
            kind="python",
            interpreter=str(directory / (config.python or DEFAULT_PYTHON)),
            callable=b.callable,
            setup=b.setup,
            sys_path=(str(directory),),
            cwd=str(directory),
            env=dict(b.env),
        )
    return SideSpec(
        kind=b.kind, command=b.command, cwd=str(directory), env=dict(b.env), output=b.output
    )


# --------------------------------------------------------------------------------------------
# Recorded with the results, reused when analysing again


def record(settings: AnalysisSettings) -> dict[str, Any]:
    """The analysis settings as a benchmark's results keep them (``settings.analysis``)."""
    return {k: getattr(settings, k) for k in ANALYSIS_KEYS}


def for_record(record: BenchmarkRecord, explicit: Mapping[str, Any]) -> AnalysisSettings:
    """The settings to analyse ``record`` again with: the options given explicitly, else the
    settings it was analysed with when measured (``settings.analysis``), else (a file written
    before duet recorded them) the metric its analysis asked for, else the built-in defaults.

    Raises
    ------
    ResultsError
        The recorded settings are not valid settings.
    """
    from duet_bench.analysis import AnalysisSettings, recorded_metric

    stored = record.settings.get("analysis")
    values: dict[str, Any] = {k: BUILTIN[k] for k in ANALYSIS_KEYS}
    if isinstance(stored, Mapping):
        values.update({k: stored[k] for k in ANALYSIS_KEYS if k in stored})
    elif (metric := recorded_metric(record)) is not None:
        values["metric"] = metric
    values.update({k: v for k, v in explicit.items() if k in ANALYSIS_KEYS})
    try:
        problem = _recorded_problem(values)
        if problem:
            raise ValueError(problem)
        return AnalysisSettings(**values)
    except (TypeError, ValueError) as e:
        raise ResultsError(
            f"benchmark {record.name!r}: the analysis settings recorded with it "
            f"(settings.analysis) are not valid: {e}",
            fix="give the settings explicitly (--confidence, --threshold, ...), or remove "
            "settings.analysis from the file to use the defaults",
        ) from None


def _recorded_problem(values: Mapping[str, Any]) -> str | None:
    """Types AnalysisSettings does not check itself (a JSON file may hold anything)."""
    numbers: Sequence[str] = ("confidence", "threshold")
    for k in numbers:
        v = values[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"{k} must be a finite number, got {v!r}"
    for k in ("reps", "seed"):
        if isinstance(values[k], bool) or not isinstance(values[k], int):
            return f"{k} must be an integer, got {values[k]!r}"
    if not isinstance(values["winsorize"], bool):
        return f"winsorize must be true or false, got {values['winsorize']!r}"
    if values["interval"] not in INTERVALS:
        return f"interval must be one of {', '.join(INTERVALS)}, got {values['interval']!r}"
    if values["metric"] not in METRIC_CHOICES:
        return f"metric must be one of {', '.join(METRIC_CHOICES)}, got {values['metric']!r}"
    return None
