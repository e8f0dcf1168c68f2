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
from typing import TYPE_CHECKING

from click.core import ParameterSource

from duet_bench import defaults, settings
from duet_bench.isolation import RunAs
from duet_bench.settings import Given

if TYPE_CHECKING:
    from pathlib import Path

    import click

    from duet_bench.analysis import AnalysisSettings
    from duet_bench.defaults import Crossover, Interval, Isolation, Method
    from duet_bench.metrics import MetricChoice
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
