"""The typed options of the commands that read a results file: ``duet analyze``
(:class:`AnalyzeOptions`) and ``duet report`` (:class:`ReportOptions`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from duet_bench.options.common import AnalysisGiven

if TYPE_CHECKING:
    import click

    from duet_bench.defaults import FailOn, Format


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
