"""The typed options of the commands that measure two versions: ``duet run``
(:class:`RunOptions`, what it measures in :class:`Sides`), ``duet compare``
(:class:`CompareCommandOptions`) and ``duet bisect`` (:class:`BisectCommandOptions`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from click.core import ParameterSource

from duet_bench import defaults
from duet_bench.errors import UsageError
from duet_bench.options.common import (
    AnalysisGiven,
    MachineGiven,
    OutGiven,
    PlanGiven,
    explicit_settings,
)
from duet_bench.plan import SideSpec, parse_shard
from duet_bench.settings import Given
from duet_bench.untrusted import name_too_long

if TYPE_CHECKING:
    import click

    from duet_bench.bisect import BisectOptions
    from duet_bench.compare import CompareOptions
    from duet_bench.defaults import FailOn, Format
    from duet_bench.plan import SideSpec
    from duet_bench.report.bisect import Format as BisectFormat


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
    #: ``--out``, resolved: results.json and the directory of the reports beside it.
    out: OutGiven
    fmt: Format
    fail_on: FailOn
    #: ``--min-runs``, ``--max-runs``, ``--budget`` (seconds), None where not given.
    min_runs: int | None = None
    max_runs: int | None = None
    budget_s: float | None = None
    #: Whether ``--runs`` was given on the command line (else its default is not a choice).
    runs_given: bool = True
    #: ``--continue DIR``: the measurement until decided this one extends.
    continue_from: str | None = None

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
        if p["name"] and (too_long := name_too_long(p["name"])) is not None:
            raise UsageError(f"--name {too_long}", fix="give a shorter --name")
        return cls(
            sides=sides,
            name=p["name"] or sides.name(),
            plan=PlanGiven.from_click(ctx),
            machine=MachineGiven.from_click(ctx),
            analysis=AnalysisGiven.from_click(ctx),
            # --continue DIR writes there unless --out says otherwise.
            out=OutGiven.of(
                p["out"]
                if p["continue_from"] is None
                or ctx.get_parameter_source("out") == ParameterSource.COMMANDLINE
                else p["continue_from"]
            ),
            fmt=p["fmt"],
            fail_on=p["fail_on"],
            min_runs=p["min_runs"],
            max_runs=p["max_runs"],
            budget_s=p["budget"],
            runs_given=ctx.get_parameter_source("runs") == ParameterSource.COMMANDLINE,
            continue_from=p["continue_from"],
        )

    def settings(self) -> Given:
        """Every setting (:func:`duet_bench.settings.resolve`): without a configuration every
        value is an option's, given or its default."""
        a = self.analysis
        return Given.of(
            confidence=a.confidence,
            threshold=a.threshold,
            reps=a.reps,
            seed=a.seed,
            interval=a.interval,
            winsorize=a.winsorize,
            metric=a.metric,
            # Not given, the default of --runs must not count as a choice of a fixed design
            # (docs/statistics.md, method 2b): resolve gives it as the built-in default.
            runs=self.plan.runs if self.runs_given else None,
            min_runs=self.min_runs,
            max_runs=self.max_runs,
            budget_s=self.budget_s,
            iterations=self.plan.iterations,
            warmup=self.plan.warmup,
            method=self.plan.method,
            crossover=self.plan.crossover,
            max_failures=self.machine.max_failures,
            timeout_s=self.machine.timeout_s,
            memory_limit_bytes=self.plan.memory_limit_bytes,
            pids_max=self.plan.pids_max,
            isolation=self.machine.isolation,
        )


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

        p = ctx.params
        given_out = ctx.get_parameter_source("out") == ParameterSource.COMMANDLINE
        comparison = CompareOptions(
            base=p["base"],
            head=p["head"],
            # --continue DIR writes there unless --out says otherwise.
            out_dir=Path(
                p["out"] if p["continue_from"] is None or given_out else p["continue_from"]
            ),
            repo=Path(p["repo"]),
            config=p["config"],
            bench=p["bench"],
            shard=parse_shard(p["shard"]) if p["shard"] else None,
            rebuild=p["rebuild"],
            keep_worktrees=p["keep_worktrees"],
            explicit=explicit_settings(ctx),
            machine=MachineGiven.from_click(ctx).options,
            plots=not p["no_plots"],
            continue_from=Path(p["continue_from"]) if p["continue_from"] else None,
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
            step_min_runs=p["step_min_runs"],
            step_max_runs=p["step_max_runs"],
            step_budget_s=p["step_budget"],
            spread_share=p["spread_share"],
            rebuild=p["rebuild"],
            keep_worktrees=p["keep_worktrees"],
            # bisect's own --max-runs is its search's, not measuring until decided.
            given=explicit.without(*defaults.STOPPING_KEYS),
            machine=MachineGiven.from_click(ctx).options,
        )
        return cls(search=search, fmt=p["fmt"])
