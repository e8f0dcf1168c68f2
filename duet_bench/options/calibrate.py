"""The typed options of ``duet calibrate`` (:class:`CalibrateOptions`): what the A/A measures
(:class:`AASource`), its plan, the machine, the analysis and what the command writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from click.core import ParameterSource

from duet_bench.errors import UsageError
from duet_bench.options.common import AnalysisGiven, MachineGiven
from duet_bench.plan import SideSpec
from duet_bench.settings import Given

if TYPE_CHECKING:
    import click

    from duet_bench.analysis import AnalysisSettings
    from duet_bench.defaults import Crossover, Format
    from duet_bench.plan import SideSpec

#: The options whose value goes into the A/A's spec only when the command line gave them (a
#: configuration's value, or the default, otherwise).
WHEN_GIVEN = ("timeout", "crossover")


@dataclass(frozen=True, slots=True)
class AASource:
    """What ``duet calibrate`` measures on both sides: a benchmark of the configuration
    (``--bench``, ``--config``), a command (``--command``, ``--native``) or a python callable
    (``--python``, ``--callable``, ``--setup``), in ``--dir``; or nothing, calibrating from an
    A/A measured earlier (``--results``, where ``--bench`` names only the table ``--write``
    sets)."""

    bench: str | None
    command: str | None
    native: bool
    python: str | None
    callable: str | None
    setup: str | None
    directory: str | None
    from_results: str | None
    config_path: str | None

    def __post_init__(self) -> None:
        named = {"bench": self.bench, "command": self.command, "python": self.python}
        sources = [name for name, value in named.items() if value]
        if self.from_results:
            # No measuring: --bench then only names the configuration table for --write.
            if self.command or self.python:
                raise UsageError(
                    "--results calibrates from a file: it cannot be combined with --command or "
                    "--python (they say what to measure)",
                    fix="drop --command/--python, or drop --results to measure anew",
                )
        elif len(sources) != 1:
            raise UsageError(
                "give exactly one of --bench NAME, --command CMD, --python INTERP --callable "
                "MODULE:FUNCTION (or --results FILE to calibrate from an earlier A/A)"
                + (f" (got {', '.join('--' + s for s in sources)})" if sources else ""),
                fix="e.g. duet calibrate --command 'sleep 0.01'",
            )
        if self.python and not self.callable:
            raise UsageError(
                "--python needs --callable MODULE:FUNCTION", fix="e.g. --callable mypkg.bench:run"
            )
        if self.callable and not self.python:
            raise UsageError(
                "--callable needs --python INTERP", fix="e.g. --python .venv/bin/python"
            )

    def side(self) -> SideSpec:
        """The side both sides run, for ``--command`` or ``--python`` (a ``--bench`` side comes
        from the configuration)."""
        from pathlib import Path

        cwd = self.directory
        if self.python:
            return SideSpec(
                kind="python",
                interpreter=self.python,
                callable=self.callable,
                setup=self.setup,
                sys_path=(str(Path(cwd).resolve()),) if cwd else (),
                cwd=cwd,
            )
        return SideSpec(kind="native" if self.native else "command", command=self.command, cwd=cwd)

    def name(self) -> str:
        """The benchmark's name for ``--command`` or ``--python``: the callable, or the command
        whole (the name is stored; the reports shorten it for display)."""
        if self.python:
            return str(self.callable)
        return " ".join(str(self.command).split())


@dataclass(frozen=True, slots=True)
class CalibrateOptions:
    """``duet calibrate``: what it measures, the plan of the A/A, the machine, the analysis
    and what it writes."""

    source: AASource
    runs: int
    iterations: int
    warmup: int
    crossover: Crossover
    compare_designs: bool
    machine: MachineGiven
    analysis: AnalysisSettings
    #: The options of :data:`WHEN_GIVEN` the command line gave.
    explicit: frozenset[str]
    out: str
    fmt: Format
    plot_dir: str | None
    write: bool

    def __post_init__(self) -> None:
        if self.analysis.threshold <= 0:
            raise UsageError("--threshold must be above 0 for a calibration (the change to detect)")

    @classmethod
    def from_click(cls, ctx: click.Context) -> CalibrateOptions:

        p = ctx.params
        source = AASource(
            bench=p["bench"],
            command=p["command"],
            native=p["native"],
            python=p["python"],
            callable=p["callable_"],
            setup=p["setup"],
            directory=p["directory"],
            from_results=p["from_results"],
            config_path=p["config_path"],
        )
        return cls(
            source=source,
            runs=p["runs"],
            iterations=p["iterations"],
            warmup=p["warmup"],
            crossover=p["crossover"],
            compare_designs=p["compare_designs"],
            machine=MachineGiven.from_click(ctx),
            analysis=AnalysisGiven.from_click(ctx).settings(),
            explicit=frozenset(
                k for k in WHEN_GIVEN if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE
            ),
            out=p["out"],
            fmt=p["fmt"],
            plot_dir=p["plot_dir"],
            write=p["write"],
        )

    def settings(self) -> Given:
        """The settings of the A/A's spec, by field name (:func:`duet_bench.plan.build`,
        ``for_suite``). A calibration's runs, iterations and warm-up are its own options (it
        needs more than a comparison), so they win over the configuration whether given or
        not; the timeout and the crossover only when given."""
        given = Given.of(
            runs=self.runs, iterations=self.iterations, warmup=self.warmup, method="duet"
        )
        if "timeout" in self.explicit:
            given = given.adding(timeout_s=self.machine.timeout_s)
        if "crossover" in self.explicit:
            given = given.adding(crossover=self.crossover)
        return given
