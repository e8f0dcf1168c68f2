"""The analysis of a whole results document, what its verdicts are, which metric a benchmark
asked for before, and the running estimate of a benchmark still being measured."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from duet_bench import units
from duet_bench.analysis.benchmark import analyze_benchmark
from duet_bench.analysis.choice import choose_metric
from duet_bench.analysis.estimate import run_log_ratios
from duet_bench.analysis.interference import busy_share, interference
from duet_bench.analysis.model import AnalysisSettings, recorded_metric
from duet_bench.analysis.series import series_of
from duet_bench.analysis.verdict import Verdict
from duet_bench.metrics import METRIC_NAMES, MetricChoice, names
from duet_bench.results import BenchmarkRecord, ResultsDocument


def analyze_document(
    doc: ResultsDocument, settings: AnalysisSettings, *, keep_recorded_metric: bool = False
) -> ResultsDocument:
    """A copy of ``doc`` with every benchmark's ``analysis`` recomputed from raw samples.

    With ``keep_recorded_metric`` a benchmark analysed before keeps the metric it asked for
    (``duet.toml``'s ``metric``), unless it recorded none.
    """
    out = doc
    for b in doc.benchmarks:
        these = settings
        if keep_recorded_metric and (metric := recorded_metric(b)) is not None:
            these = replace(settings, metric=metric)
        out = out.with_benchmark(replace(b, analysis=analyze_benchmark(b, these).to_block()))
    return out


def verdicts_of(doc: ResultsDocument) -> list[Verdict | None]:
    """Every benchmark's recorded verdict, None where it has none (or an unknown word)."""
    return [None if b.analysis is None else b.analysis.verdict for b in doc.benchmarks]


def running_estimate(record: BenchmarkRecord, requested: MetricChoice) -> str | None:
    """``ratio 1.05 so far (CPU time)``: the point estimate of the runs measured so far, for the
    progress line; no bootstrap (that waits for the last run). None before the first good run."""
    ok = record.ok_runs()
    if not ok:
        return None
    series = series_of(ok, crossing=record.method != "sequential")
    metric, _ = choose_metric(
        requested,
        available={name: series.why_missing(name) for name in names()},
        busy_share=busy_share(series),
        interference=interference(series),
    )
    a, b = series.of(metric) or series.wall
    ratio = float(np.exp(np.mean(run_log_ratios(a, b, series.assignment))))
    return f"ratio {units.ratio(ratio)} so far ({METRIC_NAMES[metric]})"
