"""What several commands' options share, typed once at the CLI boundary: the groups that
:mod:`duet_bench.commands.options` declares once (:class:`AnalysisGiven` for
``analysis_options``, :class:`PlanGiven` for ``run_options``, :class:`MachineGiven` for
``machine_options``), and :func:`explicit_settings`, what the command line gave, for a suite's
precedence.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from duet_bench import defaults, settings
from duet_bench.isolation import RunAs
from duet_bench.settings import Given

if TYPE_CHECKING:
    from duet_bench.analysis import AnalysisSettings
    from duet_bench.defaults import Crossover, Interval, Isolation, Method
    from duet_bench.metrics import MetricChoice
    from duet_bench.session import MachineOptions, SessionOptions


#: The file each command that writes results writes inside ``--out``.
RESULTS = "results.json"
#: What ends a results file's name (the deprecated file form of ``--out``).
FILE_SUFFIXES = (".json", ".json.gz")


def is_file_form(out: str) -> bool:
    """Whether ``out`` is the deprecated file form (a name ending in .json or .json.gz)."""
    return out.endswith(FILE_SUFFIXES)


def results_path(out: str, *, name: str = RESULTS) -> Path:
    """The results file the command writes for ``--out out``: ``out/results.json``, or ``out``
    itself in the deprecated file form, after a warning on stderr naming the directory form."""
    if not is_file_form(out):
        return Path(out) / name
    directory = os.path.dirname(out) or "."
    instead = f"--out {directory}" + (f" (it writes {name} there)")
    click.echo(
        f"duet: warning: --out {out}: a results file for --out is deprecated and will be "
        f"refused in a later version; --out names a directory: {instead}",
        err=True,
    )
    return Path(out)


@dataclass(frozen=True, slots=True)
class OutGiven:
    """``--out`` resolved where the options are parsed: the results file the command writes,
    and the directory its reports go to beside it (None in the deprecated file form, which
    writes the results file alone)."""

    results: Path
    reports_dir: Path | None

    @classmethod
    def of(cls, out: str) -> OutGiven:
        """``--out out`` (:func:`results_path`, which warns of the file form)."""
        results = results_path(out)
        return cls(results=results, reports_dir=None if is_file_form(out) else results.parent)


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

    def settings(self) -> AnalysisSettings:
        """The analysis settings these give (every one given or its default)."""
        from duet_bench.analysis import AnalysisSettings

        return AnalysisSettings(
            confidence=self.confidence,
            threshold=self.threshold,
            reps=self.reps,
            seed=self.seed,
            interval=self.interval,
            winsorize=self.winsorize,
            metric=self.metric,
        )


@dataclass(frozen=True, slots=True)
class MachineGiven:
    """The machine options (``--cores`` ... ``--wait-timeout``) and ``--quiet``: where and how
    the two sides run (``options``, the one :class:`duet_bench.session.MachineOptions`), and
    what makes a run fail."""

    options: MachineOptions
    isolation: Isolation
    timeout_s: float
    max_failures: int | None

    @classmethod
    def from_click(cls, ctx: click.Context) -> MachineGiven:
        """The machine options of ``ctx`` (``--user``, or the user who ran sudo, read from the
        environment here)."""
        from duet_bench.session import MachineOptions

        p = ctx.params
        return cls(
            options=MachineOptions(
                cores=p["cores"],
                share_network=p["share_network"],
                plan_seed=p["plan_seed"],
                progress=not p["quiet"],
                run_as=RunAs.from_environment(p["user"], os.environ),
                wait=p["wait"],
                keep_env=tuple(p["keep_env"]),
                wait_timeout=p["wait_timeout"],
            ),
            isolation=p["isolation"],
            timeout_s=p["timeout"],
            max_failures=p["max_failures"],
        )

    @property
    def quiet(self) -> bool:
        """``--quiet``: no progress on stderr."""
        return not self.options.progress

    def session(self, analysis: AnalysisSettings, command: str, out: Path) -> SessionOptions:
        """The :class:`duet_bench.session.SessionOptions` of a command without a configuration
        (``run``, ``calibrate``) that writes the results file ``out``: every value is an
        option's."""
        from duet_bench.session import session_options

        return session_options(
            out,
            self.options,
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
    #: ``--pids-limit``; None: ``none``, no limit.
    pids_max: int | None
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
            pids_max=p["pids_limit"],
            method=p["method"],
            crossover=p["crossover"],
        )


def explicit_settings(ctx: click.Context) -> Given:
    """Every setting (:data:`duet_bench.settings.BUILTIN`, by field name) the command has as an
    option and that was given on the command line; ``reps`` and ``seed`` always (the
    configuration cannot set them, and the results file says which were used)."""
    names = [
        name
        for name in settings.BUILTIN
        if (param := defaults.FILE_KEYS.get(name, name)) in ctx.params
        and (
            name in ("reps", "seed")
            or ctx.get_parameter_source(param) == ParameterSource.COMMANDLINE
        )
    ]
    return Given.of(**{name: ctx.params[defaults.FILE_KEYS.get(name, name)] for name in names})
