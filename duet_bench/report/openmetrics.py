"""The OpenMetrics text report: what GitLab's merge-request metrics widget shows.

GitLab reads ``artifacts:reports:metrics`` as OpenMetrics text and compares each sample line's
value, *as a string*, with the target branch's. Values are written at full precision (the
shortest text that reads back as the same float): with 3 significant digits a narrow interval
read ``1.05 [1.05, 1.05]``, which says nothing, and a ratio is a new measurement in every
pipeline anyway. ``duet_metric_ratio`` has the ratio of every metric analysed (label
``metric``: wall, cpu, wall-runq), ``duet_interfered_iterations_ratio`` the share of iterations
another process delayed.

One family per quantity, every benchmark a sample labelled ``benchmark="..."``; the interval
bounds also carry ``confidence`` so the level stands next to every interval. A null number
(no interval, no successful run) is left out rather than written as NaN. Label values are
escaped per the OpenMetrics spec (backslash, double quote, newline); other control characters,
which line-based readers would take for line breaks, become U+FFFD.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from duet_bench.metrics import names
from duet_bench.report.escape import shown_text
from duet_bench.report.model import Report

_LABEL_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n"})
# C0/C1 controls except newline (escaped above), line/paragraph separators, lone surrogates.
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def label_value(text: object) -> str:
    """An OpenMetrics label value (without the quotes)."""
    return shown_text(_UNSAFE.sub("\ufffd", str(text))).translate(_LABEL_ESCAPES)


@dataclass(frozen=True, slots=True)
class _Family:
    name: str
    help: str
    unit: str | None = None


_RATIO = _Family("duet_ratio", "Geometric-mean ratio of iteration times, candidate/baseline.")
_CI_LOW = _Family("duet_ci_low", "Lower bound of the bootstrap confidence interval of duet_ratio.")
_CI_HIGH = _Family(
    "duet_ci_high", "Upper bound of the bootstrap confidence interval of duet_ratio."
)
_BASE = _Family("duet_baseline_median_seconds", "Median iteration time of the baseline.", "seconds")
_CAND = _Family(
    "duet_candidate_median_seconds", "Median iteration time of the candidate.", "seconds"
)
_VERDICT = _Family(
    "duet_verdict",
    "1 for the verdict of the benchmark: regression, improvement, no change or inconclusive.",
)
_METRIC_RATIO = _Family(
    "duet_metric_ratio",
    f"duet_ratio of each metric analysed ({', '.join(names())}); duet_ratio is the deciding one.",
)
_INTERFERED = _Family(
    "duet_interfered_iterations_ratio",
    "Share of iterations in which a side waited for a CPU for more than 1% of the iteration.",
)
_RUNS = _Family(
    "duet_incomplete_runs",
    "Only in an incomplete document (interrupted): runs done and runs planned.",
)
_FAMILIES = (_RATIO, _CI_LOW, _CI_HIGH, _BASE, _CAND, _VERDICT, _METRIC_RATIO, _INTERFERED, _RUNS)


def _seconds(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e9


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{label_value(v)}"' for k, v in labels.items()) + "}"


def render_openmetrics(report: Report) -> str:
    """The analysed document as OpenMetrics text, ending with ``# EOF``."""
    samples: dict[str, list[str]] = {f.name: [] for f in _FAMILIES}

    def add(family: _Family, value: float | None, **labels: str) -> None:
        if value is None:
            return
        # Nine significant digits: three printed an interval as 1.05 [1.05, 1.05]; all 17 carry
        # the last bits of numpy's arithmetic, which differ between CPUs, and no reader needs
        # them (a ratio to 1e-8, a time in seconds to the nanosecond below 1 s).
        samples[family.name].append(f"{family.name}{_labels(**labels)} {float(value):.9g}")

    for b in report.doc.benchmarks:
        a = b.analysis
        if a is None:  # not analysed: no number to give
            continue
        add(_RATIO, a.ratio, benchmark=b.name)
        level = {"confidence": f"{a.confidence:g}"} if a.confidence is not None else {}
        add(_CI_LOW, a.ci_low, benchmark=b.name, **level)
        add(_CI_HIGH, a.ci_high, benchmark=b.name, **level)
        for family, side in ((_BASE, a.baseline), (_CAND, a.candidate)):
            add(family, _seconds(None if side is None else side.median_ns), benchmark=b.name)
        for key in names():
            if (m := a.metrics.get(key)) is not None:
                add(_METRIC_RATIO, m.ratio, benchmark=b.name, metric=key)
        if a.interference is not None:
            add(_INTERFERED, a.interference.share, benchmark=b.name)
        if a.verdict is not None:
            samples[_VERDICT.name].append(
                f"{_VERDICT.name}{_labels(benchmark=b.name, verdict=a.verdict)} 1"
            )

    done = report.completeness
    if not done.complete:
        samples[_RUNS.name] += [
            f'{_RUNS.name}{{runs="done"}} {done.done}',
            f'{_RUNS.name}{{runs="planned"}} {done.planned}',
        ]
    out: list[str] = []
    for f in _FAMILIES:
        if not samples[f.name]:
            continue
        out.append(f"# TYPE {f.name} gauge")
        if f.unit:
            out.append(f"# UNIT {f.name} {f.unit}")
        out.append(f"# HELP {f.name} {f.help}")
        out += samples[f.name]
    out.append("# EOF")
    return "\n".join(out) + "\n"
