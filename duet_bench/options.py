"""Each command's options, typed once at the CLI boundary: one frozen dataclass per command
(:class:`RunOptions`, :class:`AnalyzeOptions`, :class:`ReportOptions`,
:class:`CompareCommandOptions`, :class:`BisectCommandOptions`), built and checked once
from click's values by its ``from_click`` and passed down whole, and the groups of options
several commands share (:class:`AnalysisGiven`, :class:`PlanGiven`, :class:`MachineGiven`:
what :func:`duet_bench.commands.options.analysis_options`, ``run_options`` and
``machine_options`` declare).

The ranges and choices (``--confidence`` in (0, 1), ``--metric`` one of the metric choices, the
bounds of :data:`duet_bench.limits.LIMITS`) are checked by the click types of
:mod:`duet_bench.commands.options`, the one check of the command line: click says which option
and why, and exits 2. What click cannot check, a combination of options, is checked here (a
:class:`duet_bench.errors.UsageError`). The library keeps its own invariants
(:class:`duet_bench.analysis.AnalysisSettings`, the configuration's checks) for the values that
do not come from here.

Only the standard library, click, :mod:`duet_bench.defaults` and :mod:`duet_bench.errors` at
module level. The commands import it when they run, not at module level: its seven dataclasses
cost about 7 ms to create, which ``duet --help`` need not pay.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from click.core import ParameterSource

from duet_bench import defaults, settings
from duet_bench.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    import click

    from duet_bench.analysis import AnalysisSettings
    from duet_bench.bisect import BisectOptions
    from duet_bench.compare import CompareOptions
    from duet_bench.defaults import Crossover, FailOn, Format, Interval, Isolation, Method
    from duet_bench.metrics import MetricChoice
    from duet_bench.plan import SideSpec
    from duet_bench.report.bisect import Format as BisectFormat
    from duet_bench.session import MachineOptions, SessionOptions


@dataclass(frozen=True, slots=True)
class AnalysisGiven:
    """The analysis options (``--confidence`` ... ``--metric``), and which of them the command
    line gave (the others are their defaults)."""

    confidence: float
    threshold: float
    reps: int
    seed: int
    interval: Interval
    winsorize: bool
    metric: MetricChoice
    #: The names (:data:`duet_bench.defaults.ANALYSIS_KEYS`) given on the command line.
    explicit: frozenset[str] = frozenset()

    @classmethod
    def from_click(cls, ctx: click.Context) -> AnalysisGiven:
        p = ctx.params
        return cls(
            confidence=p["confidence"],
            threshold=p["threshold"],
            reps=p["reps"],
            seed=p["seed"],
            interval=p["interval"],
            winsorize=p["winsorize"],
            metric=p["metric"],
            explicit=frozenset(
                k
                for k in defaults.ANALYSIS_KEYS
                if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE
            ),
        )

    def values(self) -> dict[str, Any]:
        """Every analysis setting by its name, given or default."""
        return {k: getattr(self, k) for k in defaults.ANALYSIS_KEYS}

    def explicit_values(self) -> dict[str, Any]:
        """The settings given on the command line, by name: they override the recorded ones."""
        return {k: getattr(self, k) for k in defaults.ANALYSIS_KEYS if k in self.explicit}


@dataclass(frozen=True, slots=True)
class MachineGiven:
    """The machine options (``--cores`` ... ``--wait-timeout``) and ``--quiet``: where and how
    the two sides run, and what makes a run fail."""

    cores: tuple[int, int] | None
    isolation: Isolation
    timeout_s: float
    share_network: bool
    max_failures: int | None
    user: str | None
    keep_env: tuple[str, ...]
    plan_seed: int
    wait: bool
    wait_timeout_s: float | None
    quiet: bool

    @classmethod
    def from_click(cls, ctx: click.Context) -> MachineGiven:
        return cls.from_values(ctx.params)

    @classmethod
    def from_values(cls, p: Mapping[str, Any]) -> MachineGiven:
        """From click's values by parameter name (a command that still passes them as a
        mapping: ``calibrate``)."""
        return cls(
            cores=p["cores"],
            isolation=p["isolation"],
            timeout_s=p["timeout"],
            share_network=p.get("share_network", False),
            max_failures=p["max_failures"],
            user=p["user"],
            keep_env=tuple(p.get("keep_env", ())),
            plan_seed=p["plan_seed"],
            wait=p["wait"],
            wait_timeout_s=p["wait_timeout"],
            quiet=p["quiet"],
        )

    def machine(self) -> MachineOptions:
        """The :class:`duet_bench.session.MachineOptions` these give (``--user``, or the user
        who ran sudo, read from the environment here)."""
        from duet_bench.isolation import RunAs
        from duet_bench.session import MachineOptions

        return MachineOptions(
            cores=self.cores,
            share_network=self.share_network,
            plan_seed=self.plan_seed,
            progress=not self.quiet,
            run_as=RunAs.from_environment(self.user, os.environ),
            wait=self.wait,
            keep_env=self.keep_env,
            wait_timeout=self.wait_timeout_s,
        )

    def session(self, analysis: AnalysisSettings, command: str, out: Path) -> SessionOptions:
        """The :class:`duet_bench.session.SessionOptions` of a command without a configuration
        (``run``, ``calibrate``) that writes the results file ``out``: every value is an
        option's."""
        from duet_bench.session import session_options

        return session_options(
            out,
            self.machine(),
            isolation=self.isolation,
            max_failures=self.max_failures,
            analysis=analysis,
            config={"command": command, "argv": sys.argv[1:]},
        )


@dataclass(frozen=True, slots=True)
class PlanGiven:
    """The plan options of ``run_options`` (``--runs`` ... ``--crossover``)."""

    runs: int
    iterations: int
    warmup: int
    memory_limit_bytes: int | None
    method: Method
    crossover: Crossover

    @classmethod
    def from_click(cls, ctx: click.Context) -> PlanGiven:
        p = ctx.params
        return cls(
            runs=p["runs"],
            iterations=p["iterations"],
            warmup=p["warmup"],
            memory_limit_bytes=p["memory_limit"],
            method=p["method"],
            crossover=p["crossover"],
        )


@dataclass(frozen=True, slots=True)
class Sides:
    """What ``duet run`` measures: two commands (``--baseline``, ``--candidate``, ``--native``)
    or a python benchmark (``--python-baseline``, ``--python-candidate``, ``--callable``,
    ``--setup``), each side in its directory (``--baseline-dir``, ``--candidate-dir``)."""

    baseline: str | None
    candidate: str | None
    native: bool
    python_baseline: str | None
    python_candidate: str | None
    callable: str | None
    setup: str | None
    baseline_dir: str | None
    candidate_dir: str | None

    def __post_init__(self) -> None:
        if self.python:
            if not (self.python_baseline and self.python_candidate and self.callable):
                raise UsageError(
                    "a python benchmark needs --python-baseline, --python-candidate and --callable",
                    fix="give all three, e.g. --python-baseline old/.venv/bin/python "
                    "--python-candidate new/.venv/bin/python --callable mypkg.bench:run",
                )
            if self.baseline or self.candidate:
                raise UsageError(
                    "give either --baseline/--candidate commands or a python benchmark, not both"
                )
        elif not (self.baseline and self.candidate):
            raise UsageError(
                "nothing to measure: give --baseline CMD and --candidate CMD",
                fix="duet run --baseline './old' --candidate './new'",
            )

    @property
    def python(self) -> bool:
        """Whether the options name a python benchmark rather than two commands."""
        return bool(self.python_baseline or self.python_candidate or self.callable)

    def name(self) -> str:
        """The benchmark's name when ``--name`` is not given: the callable, or the common
        command (both when they differ), stored whole (results, JUnit, metric labels must stay
        unique and greppable; reports shorten it for display only)."""
        if self.python:
            return str(self.callable)
        b, c = str(self.baseline).strip(), str(self.candidate).strip()
        return " ".join((b if b == c else f"{b} vs {c}").split())

    def side(self, which: str) -> SideSpec:
        """The ``baseline`` or ``candidate`` side."""
        from pathlib import Path

        from duet_bench.plan import SideSpec

        cwd = self.baseline_dir if which == "baseline" else self.candidate_dir
        if self.python:
            return SideSpec(
                kind="python",
                interpreter=self.python_baseline if which == "baseline" else self.python_candidate,
                callable=self.callable,
                setup=self.setup,
                sys_path=(str(Path(cwd).resolve()),) if cwd else (),
                cwd=cwd,
            )
        command = self.baseline if which == "baseline" else self.candidate
        return SideSpec(kind="native" if self.native else "command", command=command, cwd=cwd)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """``duet run``: what it measures, the plan, the machine, the analysis and the output."""

    sides: Sides
    name: str
    plan: PlanGiven
    machine: MachineGiven
    analysis: AnalysisGiven
    out: str
    fmt: Format
    fail_on: FailOn

    @classmethod
    def from_click(cls, ctx: click.Context) -> RunOptions:
        p = ctx.params
        sides = Sides(
            baseline=p["baseline"],
            candidate=p["candidate"],
            native=p["native"],
            python_baseline=p["python_baseline"],
            python_candidate=p["python_candidate"],
            callable=p["callable_"],
            setup=p["setup"],
            baseline_dir=p["baseline_dir"],
            candidate_dir=p["candidate_dir"],
        )
        return cls(
            sides=sides,
            name=p["name"] or sides.name(),
            plan=PlanGiven.from_click(ctx),
            machine=MachineGiven.from_click(ctx),
            analysis=AnalysisGiven.from_click(ctx),
            out=p["out"],
            fmt=p["fmt"],
            fail_on=p["fail_on"],
        )

    def settings(self) -> dict[str, Any]:
        """Every setting by its field name (:func:`duet_bench.settings.resolve`): without a
        configuration every value is an option's, given or its default."""
        return {
            **self.analysis.values(),
            "runs": self.plan.runs,
            "iterations": self.plan.iterations,
            "warmup": self.plan.warmup,
            "method": self.plan.method,
            "crossover": self.plan.crossover,
            "max_failures": self.machine.max_failures,
            "timeout_s": self.machine.timeout_s,
            "memory_limit_bytes": self.plan.memory_limit_bytes,
            "isolation": self.machine.isolation,
        }


def explicit_settings(ctx: click.Context) -> dict[str, Any]:
    """Every setting (:data:`duet_bench.settings.BUILTIN`, by field name) the command has as an
    option and that was given on the command line; ``reps`` and ``seed`` always (the
    configuration cannot set them, and the results file says which were used)."""
    out: dict[str, Any] = {}
    for name in settings.BUILTIN:
        param = defaults.FILE_KEYS.get(name, name)
        if param not in ctx.params:
            continue
        if name in ("reps", "seed") or (
            ctx.get_parameter_source(param) == ParameterSource.COMMANDLINE
        ):
            out[name] = ctx.params[param]
    return out


@dataclass(frozen=True, slots=True)
class CompareCommandOptions:
    """``duet compare``: the comparison (:class:`duet_bench.compare.CompareOptions`, the
    library's input) and what the command does with its results."""

    comparison: CompareOptions
    fmt: Format
    fail_on: FailOn
    #: ``--max-failures``, for a document that does not record the suite's own.
    max_failures: int | None
    allow_missing: bool

    @classmethod
    def from_click(cls, ctx: click.Context) -> CompareCommandOptions:
        from pathlib import Path

        from duet_bench.compare import CompareOptions
        from duet_bench.plan import parse_shard

        p = ctx.params
        comparison = CompareOptions(
            base=p["base"],
            head=p["head"],
            out_dir=Path(p["out"]),
            repo=Path(p["repo"]),
            config=p["config"],
            bench=p["bench"],
            shard=parse_shard(p["shard"]) if p["shard"] else None,
            rebuild=p["rebuild"],
            keep_worktrees=p["keep_worktrees"],
            explicit=explicit_settings(ctx),
            machine=MachineGiven.from_click(ctx).machine(),
            plots=not p["no_plots"],
        )
        return cls(
            comparison=comparison,
            fmt=p["fmt"],
            fail_on=p["fail_on"],
            max_failures=p["max_failures"],
            allow_missing=p["allow_missing"],
        )


@dataclass(frozen=True, slots=True)
class BisectCommandOptions:
    """``duet bisect``: the search (:class:`duet_bench.bisect.BisectOptions`, the library's
    input) and the format of its report."""

    search: BisectOptions
    fmt: BisectFormat

    @classmethod
    def from_click(cls, ctx: click.Context) -> BisectCommandOptions:
        from pathlib import Path

        from duet_bench.bisect import BisectOptions

        p = ctx.params
        explicit = explicit_settings(ctx)
        search = BisectOptions(
            good=p["good"],
            bad=p["bad"],
            out_dir=Path(p["out"]),
            repo=Path(p["repo"]),
            config=p["config"],
            benchmark=p["bench"],
            max_runs=p["max_runs"],
            spread_share=p["spread_share"],
            rebuild=p["rebuild"],
            keep_worktrees=p["keep_worktrees"],
            overrides={k: v for k, v in explicit.items() if k not in defaults.ANALYSIS_KEYS},
            analysis_overrides={k: v for k, v in explicit.items() if k in defaults.ANALYSIS_KEYS},
            machine=MachineGiven.from_click(ctx).machine(),
        )
        return cls(search=search, fmt=p["fmt"])


@dataclass(frozen=True, slots=True)
class AnalyzeOptions:
    """``duet analyze RESULTS``."""

    results: str
    fmt: Format
    fail_on: FailOn
    allow_incomplete: bool
    analysis: AnalysisGiven

    @classmethod
    def from_click(cls, ctx: click.Context) -> AnalyzeOptions:
        p = ctx.params
        return cls(
            results=p["results"],
            fmt=p["fmt"],
            fail_on=p["fail_on"],
            allow_incomplete=p["allow_incomplete"],
            analysis=AnalysisGiven.from_click(ctx),
        )


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """``duet report RESULTS``."""

    results: str
    fmt: Format
    plot_dir: str | None
    out: str | None
    #: The deprecated ``--output FILE``.
    output: str | None
    allow_incomplete: bool
    analysis: AnalysisGiven

    @classmethod
    def from_click(cls, ctx: click.Context) -> ReportOptions:
        p = ctx.params
        return cls(
            results=p["results"],
            fmt=p["fmt"],
            plot_dir=p["plot_dir"],
            out=p["out"],
            output=p["output"],
            allow_incomplete=p["allow_incomplete"],
            analysis=AnalysisGiven.from_click(ctx),
        )


__all__ = [
    "AnalysisGiven",
    "AnalyzeOptions",
    "BisectCommandOptions",
    "CompareCommandOptions",
    "MachineGiven",
    "PlanGiven",
    "ReportOptions",
    "RunOptions",
    "Sides",
]
