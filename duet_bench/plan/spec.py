"""What one benchmark measures: the two sides (:class:`SideSpec`), the benchmark with its run
settings (:class:`BenchmarkSpec`), and the one builder of both (:func:`build`, :func:`for_suite`)
that ``duet run``, ``duet compare``, ``duet calibrate`` and ``duet bisect`` use.

The builder takes the settings after precedence (:func:`duet_bench.settings.resolve`) and applies
the runs rule (:func:`duet_bench.limits.runs_problem`) naming where the value came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from duet_bench.config import DEFAULT_PYTHON
from duet_bench.defaults import (
    CROSSOVERS,
    DEFAULT_CROSSOVER,
    DEFAULT_ITERATIONS,
    DEFAULT_MAX_RUNS,
    DEFAULT_METHOD,
    DEFAULT_PIDS_MAX,
    DEFAULT_RUNS,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WARMUP,
    Crossover,
    Kind,
    Method,
)
from duet_bench.errors import UsageError
from duet_bench.limits import runs_problem
from duet_bench.results.plan import RecordedPlan
from duet_bench.settings import Given, Resolved, resolve

if TYPE_CHECKING:
    from duet_bench.analysis import AnalysisSettings
    from duet_bench.analysis.stopping import UntilDecided
    from duet_bench.config import BenchmarkConfig, Config


@dataclass(frozen=True, slots=True)
class SideSpec:
    """What one side executes.

    ``command`` kind: ``command`` is a shell command run every iteration.
    ``python`` kind: ``interpreter`` runs the worker, which calls ``callable`` (``module:function``)
    with optional ``setup``; ``sys_path`` is prepended to the module search path.
    ``native`` kind: ``command`` starts the user's program, which links a barrier client and
    runs its own iteration loop.
    ``output`` (suite adapters, ``command`` kind): the benchmark tool's output format the worker
    reads each iteration's sample from (``duet_bench/harness/duet_outputs.py``), None for the
    process time.
    """

    kind: Kind
    command: str | None = None
    interpreter: str | None = None
    callable: str | None = None
    setup: str | None = None
    sys_path: tuple[str, ...] = ()
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    output: str | None = None

    def __post_init__(self) -> None:
        if self.kind in ("command", "native") and not self.command:
            raise UsageError(f"a {self.kind} benchmark needs a command")
        if self.kind == "python" and not (self.interpreter and self.callable):
            raise UsageError("a python benchmark needs an interpreter and a callable")
        if self.callable is not None and ":" not in self.callable:
            raise UsageError(
                f"callable {self.callable!r} is not of the form module:function",
                fix="write it as package.module:function",
            )

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind}
        for key in ("command", "interpreter", "callable", "setup", "cwd", "output"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class BenchmarkSpec:
    """One benchmark with its settings (:func:`build` makes them from the
    defaults, the configuration and the options)."""

    name: str
    baseline: SideSpec
    candidate: SideSpec
    runs: int = DEFAULT_RUNS
    iterations: int = DEFAULT_ITERATIONS
    warmup: int = DEFAULT_WARMUP
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_limit_bytes: int | None = None
    #: ``pids.max`` of each side's cgroup; None: no limit.
    pids_max: int | None = DEFAULT_PIDS_MAX
    method: Method = DEFAULT_METHOD
    #: Ignored by the sequential method (one side at a time, nothing to cross).
    crossover: Crossover = DEFAULT_CROSSOVER
    #: Measure until the verdict is decided (docs/statistics.md, method 2b); ``runs`` is then
    #: its ``max_runs``. None: a fixed design of ``runs``.
    until_decided: UntilDecided | None = None

    def __post_init__(self) -> None:
        if not self.name or any(c in self.name for c in "\n\r\0"):
            raise UsageError(f"benchmark name {self.name!r} is empty or has control characters")
        # Programmatic construction only: the options and the configuration are checked
        # before, with messages that name where the value came from.
        problem = runs_problem(self.runs)
        if problem:
            raise UsageError(f"benchmark {self.name!r}: runs {problem}", fix="use 10 runs or more")
        if self.iterations < 1:
            raise UsageError(f"benchmark {self.name!r}: iterations must be at least 1")
        if self.warmup < 0:
            raise UsageError(f"benchmark {self.name!r}: warmup must be 0 or more")
        if not self.timeout_s > 0:
            raise UsageError(f"benchmark {self.name!r}: timeout_s must be positive")
        if self.baseline.kind != self.candidate.kind:
            raise UsageError("both sides of a benchmark must be of the same kind")
        if self.crossover not in CROSSOVERS:
            raise UsageError(
                f"benchmark {self.name!r}: crossover must be iteration or run, "
                f"got {self.crossover!r}"
            )

    @property
    def kind(self) -> Kind:
        return self.baseline.kind

    def recorded(self) -> RecordedPlan:
        """The plan as a benchmark's results record it (the session adds ``seed``,
        ``inner_loops`` and ``analysis``)."""
        return RecordedPlan(
            runs=self.runs,
            iterations=self.iterations,
            warmup=self.warmup,
            timeout_s=self.timeout_s,
            memory_limit_bytes=self.memory_limit_bytes,
            pids_max=self.pids_max,
            method=self.method,
            crossover=self.crossover,
            until_decided=None if self.until_decided is None else self.until_decided.to_record(),
        )


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
        Fewer than :data:`duet_bench.defaults.MIN_RUNS` runs, naming where the number came from.
    """
    from duet_bench.analysis.stopping import until_decided

    v = resolved.values
    design = until_decided(v.min_runs, v.max_runs, v.budget_s, resolved.origins)
    if design is not None:
        problem = runs_problem(design.max_runs)
        if problem:
            origin = resolved.origins["max_runs"]
            raise UsageError(
                f"{name}: max runs {problem} (from {origin})",
                fix=f"set max runs as said ({origin}), or leave it out: the default is"
                f" {DEFAULT_MAX_RUNS}",
            )
    else:
        problem = runs_problem(v.runs)
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
        runs=v.runs if design is None else design.max_runs,
        iterations=v.iterations,
        warmup=v.warmup,
        timeout_s=v.timeout_s,
        memory_limit_bytes=v.memory_limit_bytes,
        pids_max=v.pids_max,
        method=v.method,
        crossover=v.crossover,
        until_decided=design,
    )
    return BenchmarkSettings(spec=spec, analysis=v.analysis(), resolved=resolved)


def for_suite(
    config: Config,
    *,
    baseline_dir: Path,
    candidate_dir: Path,
    select: str | None = None,
    explicit: Given | None = None,
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
    if b.kind == "python":
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
