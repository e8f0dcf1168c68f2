"""The text report of ``duet calibrate`` (what the A/A measured, what this machine can detect,
the recommendation and the exact configuration lines) and its JSON helper; at the end, the lines
on the core designs: the core difference seen from inside crossover runs, and with
``--compare-designs`` the table of the three designs and the one recommended."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duet_bench.calibrate.designs import DESIGN_NAMES
from duet_bench.calibrate.model import ConfigTarget
from duet_bench.metrics import METRIC_NAMES
from duet_bench.report.layout import wrap
from duet_bench.units import change, duration, interval, percent, sig

if TYPE_CHECKING:
    from duet_bench.calibrate import Calibration, Recommendation
    from duet_bench.calibrate.designs import DesignFigures
    from duet_bench.calibrate.until_decided import UntilDecidedAdvice

_LABEL = 17


def config_lines(
    rec: Recommendation,
    target: ConfigTarget | None,
    until_decided: UntilDecidedAdvice | None = None,
) -> list[str]:
    """The exact lines for the configuration file, with where they go (``min_runs`` and
    ``max_runs`` when the until-decided advice reached its target)."""
    if target is None:
        where = "duet.toml (top level, or the benchmark's [[benchmark]] table)"
    else:
        path, form = target.path, target.form
        prefix = "tool.duet." if form == "pyproject" else ""
        top = "[tool.duet]" if form == "pyproject" else "the top of the file"
        if target.suite is not None:
            where = (
                f"{path}, in the [[{prefix}suite]] table of suite {json.dumps(target.suite)} "
                "(every benchmark it finds)"
            )
        elif target.benchmark:
            where = (
                f"{path}, in the [[{prefix}benchmark]] table with name = "
                f"{json.dumps(target.benchmark)}"
            )
        else:
            where = f"{path}, {top} (suite defaults)"
    lines = [
        f"# {where}:",
        f"runs = {rec.runs}",
        f"iterations = {rec.iterations}",
        f"warmup = {rec.warmup}",
        f'method = "{rec.method}"',
        f'metric = "{rec.metric}"',
    ]
    if rec.crossover is not None:
        lines.append(f'crossover = "{rec.crossover}"')
    if until_decided is not None and until_decided.reachable:
        lines += [f"min_runs = {until_decided.min_runs}", f"max_runs = {until_decided.max_runs}"]
    return lines


# --------------------------------------------------------------------------------------------
# Text


def pct(x: float | None, digits: int = 3) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"

    return f"{sig(x * 100, digits)}%"


def _change(ratio: float) -> str:
    return change(ratio)


def _line(label: str, text: str) -> str:
    return f"{label:<{_LABEL}}" + wrap(text, _LABEL, first=_LABEL)


def render_text(
    cal: Calibration,
    context: dict[str, Any],
    *,
    config_target: ConfigTarget | None = None,
    written: str | None = None,
    plots: list[Path] | None = None,
) -> str:
    """The human report: aligned figures, each with what it means here, then the plan."""
    out = [*_head(cal, context), ""]
    out += _interval_lines(cal)
    out += _noise_lines(cal)
    out += _machine_lines(cal)
    out += design_lines(cal)
    if cal.warnings:
        out.append("")
        out.extend(wrap(f"warning: {warning}", 9) for warning in cal.warnings)
    out.append("")
    out += _recommendation_lines(cal, config_target, written)
    if plots:
        out.append("")
        out.append("plots: " + ", ".join(str(p) for p in plots if p.suffix == ".png"))
    return "\n".join(out) + "\n"


def _head(cal: Calibration, context: dict[str, Any]) -> list[str]:
    """What was analysed, on which machine, and the interference line."""
    head = (
        f"duet calibrate: A/A of {cal.benchmark!r}, {cal.runs} runs x {cal.iterations} "
        f"iterations analysed"
    )
    if cal.analysed_from:
        head += f" (the first {cal.analysed_from} measured iteration(s) of each run left out)"
    out = [wrap(head, 2)]
    if context.get("machine"):
        out.append(
            wrap(
                f"on {context['machine']}; load average before "
                f"{_loads(context.get('load_average_before'))}, after "
                f"{_loads(context.get('load_average_after'))}",
                2,
            )
        )
    if context.get("interference"):
        out.append(wrap(str(context["interference"]), 2))
    return out


def _interval_lines(cal: Calibration) -> list[str]:
    """The A/A ratio, its interval and verdict, and the sync and accuracy gains."""
    out: list[str] = []
    if cal.ci_low is not None and cal.ci_high is not None:
        verdict_text = (
            "contains 1, as it must"
            if cal.contains_one
            else "DOES NOT CONTAIN 1: the two sides are not equivalent here"
        )
        out.append(
            _line(
                "A/A ratio",
                f"{sig(cal.ratio)} {interval(cal.ci_low, cal.ci_high)} "
                f"{percent(cal.confidence)} CI, width {pct(cal.ci_width)}: {verdict_text}",
            )
        )
        out.append(
            _line(
                "A/A verdict",
                f"{cal.aa_verdict} at threshold {pct(cal.threshold)}"
                + (
                    " (a false positive: identical sides)"
                    if cal.aa_verdict in ("regression", "improvement")
                    else ""
                ),
            )
        )
    else:
        out.append(_line("A/A ratio", f"{sig(cal.ratio)} (too few runs for an interval)"))
    if cal.sync_gain is not None:
        out.append(
            _line(
                "sync gain",
                f"{sig(cal.sync_gain)}x: pairing each run with another run's data gives a "
                f"{pct(cal.shuffled_width)} wide interval instead of {pct(cal.ci_width)}",
            )
        )
    if cal.sequential is not None:
        s = cal.sequential
        out.append(
            _line(
                "accuracy gain",
                f"{sig(s.accuracy_gain) if s.accuracy_gain is not None else 'n/a'}x over the "
                f"sequential method (its interval: {pct(s.relative_width)} wide, ratio "
                f"{sig(s.ratio)} {interval(s.ci_low, s.ci_high)})",
            )
        )
    return out


def _noise_lines(cal: Calibration) -> list[str]:
    """Impact factors, variance components, the cost of a run and the warm-up."""
    parts = []
    for key, label in (
        ("baseline", "baseline"),
        ("candidate", "candidate"),
        ("log_ratio", "ratio"),
    ):
        entry = cal.impact_factor[key]
        if entry.plain is None:
            parts.append(f"{label} n/a")
        else:
            parts.append(f"{label} {sig(entry.plain)} (centred {sig(entry.transformed or 0)})")
    lr = cal.impact_factor["log_ratio"]
    if lr.plain is None:
        fit = f" ({lr.missing})"
    elif lr.additive:
        fit = (
            "; the additive model fits (centred near 1): the planning below holds"
            if lr.plain > 1.5
            else "; runs barely differ more than iterations do"
        )
    else:
        fit = "; the additive model does NOT fit: the plan below is approximate"
    out = [_line("impact factor", ", ".join(parts) + fit)]
    if cal.components is not None:
        c = cal.components
        out.append(
            _line(
                "variance (log)",
                f"within runs S_X² {sig(c.within_run_var)}, between runs S_A² "
                f"{sig(c.between_run_var)}, run effect var A {sig(c.run_effect_var)}",
            )
        )
    if cal.startup_ns is not None and cal.startup_iterations is not None:
        out.append(
            _line(
                "start-up cost",
                f"{duration(cal.startup_ns)} per run = {sig(cal.startup_iterations)} iterations "
                f"of {duration(cal.mean_iteration_ns)}",
            )
        )
    else:
        out.append(_line("iteration", duration(cal.mean_iteration_ns)))
    if cal.warmup is not None:
        w = cal.warmup
        if w.iterations:
            text = (
                f"{w.iterations} iteration(s): they ran {_change(w.slowdown)} against the "
                "steady state"
            )
        else:
            text = "none: the series is flat from the first iteration"
        if w.trending:
            text += "; still trending in the second half of the runs (runs too short to tell)"
        out.append(_line("warm-up", text))
    return out


def _machine_lines(cal: Calibration) -> list[str]:
    """Side asymmetry, start skew, and which method and metric measure better here."""
    out: list[str] = []
    if cal.side_asymmetry is not None:
        cpus, a = cal.side_asymmetry, cal.side_asymmetry.estimate
        if a.ci_low is not None:
            cpu_text = (
                f"CPU {cpus.cpu_b} runs {_change(a.ratio)} against CPU {cpus.cpu_a} "
                f"{interval(a.ci_low, a.ci_high)} {percent(cal.confidence)} CI"
            )
            if a.significant:
                cpu_text += (
                    ": the core matters; balanced alternation cancels it in the ratio but it "
                    "widens the interval"
                )
                if a.share_of_run_variance is not None:
                    cpu_text += f" ({pct(a.share_of_run_variance, 2)} of the run-to-run variance)"
            else:
                cpu_text += ": no detectable difference between the cores"
        else:
            cpu_text = f"{a.runs_a} vs {a.runs_b} runs per core: too few to tell"
        out.append(_line("side asymmetry", cpu_text))
    contrast = contrast_text(cal)
    if contrast is not None:
        out.append(_line("core contrast", contrast))
    if cal.start_skew_ns is not None:
        k = cal.start_skew_ns
        out.append(
            _line(
                "start skew",
                f"median {duration(k.median)}, p99 {duration(k.p99)} (p99 is "
                f"{pct(k.relative_p99, 2)} of an iteration), max {duration(k.max)}",
            )
        )
    out.append(_line("method", f"{cal.method_pays} pays here: {cal.method_reason}"))
    if cal.metric_reason:
        out.append(_line("metric", cal.metric_reason))
    widths = [
        f"{method} {name} {pct(width)}"
        for name, by_method in cal.widths_by_metric.items()
        for method, width in by_method.items()
        if width is not None
    ]
    if len(widths) > 1:
        out.append(_line("A/A widths", ", ".join(widths)))
    return out


def _recommendation_lines(
    cal: Calibration, config_target: ConfigTarget | None, written: str | None
) -> list[str]:
    """The plan, how it was reached, the widths by runs and the configuration lines."""
    rec = cal.recommended
    if rec is None:
        return ["No recommendation: too little data for the variance components."]
    conf = percent(cal.confidence)
    cost = (
        f", about {_long_duration(rec.machine_time_ns)} of machine time per benchmark"
        if rec.machine_time_ns is not None
        else ""
    )
    out = [
        wrap(
            f"Recommendation for a {pct(rec.threshold)} threshold at {conf} confidence: "
            f"metric {rec.metric}, method {rec.method}, {rec.runs} runs x ({rec.warmup} "
            "warm-up + "
            f"{rec.iterations}) iterations. Expected {conf} interval width "
            f"{pct(rec.expected_ci_width)}{cost}.",
            0,
        ),
        wrap(
            f"Iterations per run from Kalibera's formula 8: n* = {rec.optimal_iterations} "
            f"with w = {sig(rec.run_cost_iterations)} iterations of start-up and warm-up"
            + (
                f" (raised to the minimum of {rec.iterations})"
                if rec.iterations > rec.optimal_iterations
                else ""
            )
            + (
                f" (formula 8 asked for more, capped at {rec.max_iterations}: the run "
                "effect is small next to the iteration noise, and runs more than 10 times "
                "longer than the measured ones are not extrapolated to)"
                if rec.optimal_iterations >= rec.max_iterations
                else ""
            )
            + ". An unchanged benchmark then gets 'no change', and a change of the "
            "threshold's size is significant, each with about the confidence's probability.",
            0,
        ),
    ]
    if rec.method == "sequential":
        out.append(
            wrap(
                "Simultaneous runs measure worse than sequential ones on this machine: "
                "measure with `duet run --method sequential` / `duet compare --method "
                'sequential`, or method = "sequential" in the configuration.',
                0,
            )
        )
    if not rec.reachable:
        out.append(wrap("The threshold is out of reach at a practical number of runs.", 0))
    if cal.width_by_runs:
        table = ", ".join(f"{k} → {pct(v, 2)}" for k, v in sorted(cal.width_by_runs.items()))
        out.append(wrap(f"Interval width by runs (at {rec.iterations} iterations): {table}", 2))
    if cal.until_decided is not None:
        out.append(wrap(cal.until_decided.sentence(), 0))
    out.append("")
    lines = config_lines(rec, config_target, cal.until_decided)
    if written:
        out.append(f"Written to {written}:")
        lines = [ln for ln in lines if not ln.startswith("#")]
    else:
        out.append("Configuration lines:")
    out.extend(f"  {ln}" for ln in lines)
    return out


def _long_duration(ns: float) -> str:
    """A machine-time budget: seconds up to 100 s, then minutes, then hours."""
    seconds = ns / 1e9
    if seconds < 100:
        return duration(ns)
    if seconds < 6000:
        return f"{sig(seconds / 60)} min"
    return f"{sig(seconds / 3600)} h"


def _loads(value: Any) -> str:
    if isinstance(value, list) and value:
        return " ".join(f"{x:.2f}" for x in value)
    return "n/a"


def finite(value: Any) -> Any:
    """JSON has no infinity or NaN: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# The core designs


def contrast_text(cal: Calibration) -> str | None:
    """The within-run core contrast in words, or None without crossover."""
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

    out.append(wrap(f"Design: {DESIGN_NAMES[c.design]}. {c.reason[0].upper()}{c.reason[1:]}.", 0))
    return out
