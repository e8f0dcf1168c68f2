"""The lines of ``duet calibrate``'s text report on the core designs: the core difference seen
from inside crossover runs, and with ``--compare-designs`` the table of the three designs and
the one recommended."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duet_bench.report.layout import wrap

if TYPE_CHECKING:
    from duet_bench.calibrate import Calibration
    from duet_bench.calibrate.designs import DesignFigures

__all__ = ["contrast_text", "design_lines"]


def contrast_text(cal: Calibration) -> str | None:
    """The within-run core contrast in words, or None without crossover."""
    from duet_bench.report.calibration import pct
    from duet_bench.units import change, interval, percent

    c = cal.core_contrast
    if c is None:
        return None
    text = f"the second CPU of the pair runs {change(c.ratio)} against the first"
    if c.ci_low is not None and c.ci_high is not None:
        text += f" {interval(c.ci_low, c.ci_high)} {percent(cal.confidence)} CI"
    text += f", from inside {c.runs} runs"
    if c.significant:
        text += ": the cores differ; crossing over at every iteration cancels it in each run"
        if c.share_of_within_run_variance is not None:
            text += f" ({pct(c.share_of_within_run_variance, 2)} of the within-run variance)"
    elif c.significant is False:
        text += ": no detectable difference between the cores"
    return text


def _row(f: DesignFigures, eq: float | None, cost: float | None) -> list[str]:
    from duet_bench.calibrate.designs import DESIGN_NAMES
    from duet_bench.report.calibration import pct
    from duet_bench.units import change, sig

    core = "-"
    if f.core_ratio is not None:
        core = f"{change(f.core_ratio)}"
    plan = (
        f"{f.runs_needed} x {f.iterations_needed}"
        if f.runs_needed is not None and f.iterations_needed is not None
        else "n/a"
    )
    return [
        DESIGN_NAMES[f.design],
        pct(f.width),
        f"{sig(cost)}x" if cost is not None else "n/a",
        pct(eq),
        sig(f.impact_factor) if f.impact_factor is not None else "n/a",
        plan,
        core,
    ]


def design_lines(cal: Calibration) -> list[str]:
    """The designs compared, as a table, and the choice with its reason; nothing without
    ``--compare-designs``."""
    from duet_bench.metrics import METRIC_NAMES

    d = cal.designs
    if d is None:
        return []
    c = d.choice
    header = [
        "design",
        "A/A width",
        "cost/run",
        "at equal time",
        "impact",
        "runs x iter.",
        "2nd CPU",
    ]
    rows = [header] + [
        _row(f, c.equal_time_widths.get(f.design), c.costs.get(f.design)) for f in d.figures
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    runs = ", ".join(sorted({f"{f.runs} x {f.iterations}" for f in d.figures}))
    out = [
        "",
        wrap(
            f"Designs compared on {METRIC_NAMES[d.metric]}, measured interleaved (runs x "
            f"iterations analysed: {runs}; percentile intervals; 'at equal time' is the width "
            "times the square root of the cost of a run):",
            0,
        ),
    ]
    out += ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
            for r in rows]  # fmt: skip
    from duet_bench.calibrate.designs import DESIGN_NAMES

    out.append(wrap(f"Design: {DESIGN_NAMES[c.design]}. {c.reason[0].upper()}{c.reason[1:]}.", 0))
    return out
