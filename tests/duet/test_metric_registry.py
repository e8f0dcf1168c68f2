"""duet_bench.metrics, the one registry of metrics: a metric registered here, in the test only,
reaches the analysis, the choice of the deciding metric, the calibration and every report of a
real results file, with no other file changed (docs/architecture.md, "What a new metric
touches"). No verdict is asserted: only that the metric is derived, estimated and shown."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duet_bench import metrics
from duet_bench.analysis import AnalysisSettings, analyze_document
from duet_bench.calibrate import calibrate_metrics
from duet_bench.metrics import Metric, Recorded
from duet_bench.report import render, report_of
from duet_bench.report.plot_benchmark import metric_series
from duet_bench.report.rows import row
from duet_bench.results import ResultsDocument, load

ROOT = Path(__file__).resolve().parents[2]
#: Measured on the 2-vCPU VM beside a busy process (benchmarks/results/metric/): the candidate
#: does 5% more work; CPU time and run-queue delay recorded every iteration, 10 runs of 30.
MEASURED = (
    ROOT / "benchmarks/results/metric/busy-20261125/raw/ratio__integer__busy__1.05x__rep0.json.gz"
)
#: The same work on both sides (A/A), measured the same way: what a calibration reads.
MEASURED_AA = ROOT / "benchmarks/results/metric/busy-20261125/raw/aa__integer__busy__rep0.json.gz"
#: Wall time only (duet-results/1): the test metric cannot be derived.
WALL_ONLY = ROOT / "tests/fixtures/results-basic.json"

LABEL = "CPU time plus run-queue delay"


def _busy(r: Recorded) -> tuple[np.ndarray, np.ndarray] | str:
    if r.cpu_ns is None or r.runq_ns is None:
        return "no per-iteration CPU time or run-queue delay recorded"
    return r.cpu_ns[0] + r.runq_ns[0], r.cpu_ns[1] + r.runq_ns[1]


#: The time a side held a CPU or waited for one; when it cannot be had, CPU time, then wall time.
BUSY = Metric("busy", LABEL, "ns", _busy, fallback="cpu")


@pytest.fixture
def busy(monkeypatch: pytest.MonkeyPatch) -> Metric:
    """The test metric, registered for this test only."""
    monkeypatch.setattr(metrics, "METRICS", (*metrics.METRICS, BUSY))
    return BUSY


def _analysed(path: Path, metric: str = "auto") -> ResultsDocument:
    return analyze_document(load(path), AnalysisSettings(reps=500, metric=metric))


def test_the_registry_gives_names_choices_and_labels() -> None:
    names = metrics.names()
    assert names[:3] == ("wall", "cpu", "wall-runq")
    assert len(set(names)) == len(names)
    assert "auto" not in names
    assert metrics.METRIC_CHOICES == metrics.choices() == ("auto", *names)
    assert dict(metrics.METRIC_NAMES) == {m.name: m.label for m in metrics.METRICS}
    # One metric every run has; every other falls back to a registered one, and each chain
    # ends there.
    assert [m.name for m in metrics.METRICS if m.fallback is None] == ["wall"]
    assert all(m.fallback in names for m in metrics.METRICS if m.fallback is not None)
    for name in names:
        assert metrics.instead_of(name, lambda _: False) == "wall"
    assert metrics.known("no-such-metric") == metrics.known(None) == "wall"


def _block(doc: ResultsDocument) -> dict[str, Any]:
    """The first benchmark's analysis block as results.json holds it."""
    block = doc.benchmarks[0].analysis
    assert block is not None
    return block.to_dict()


def test_a_registered_metric_is_derived_estimated_and_reported(busy: Metric) -> None:
    doc = _analysed(MEASURED)
    record = load(MEASURED).benchmarks[0]
    a = _block(doc)
    assert a["metric"] == "cpu"  # auto's policy does not know the new metric: it only adds it
    estimate = a["metrics"]["busy"]
    # Derived from the recorded figures: each side's median is that of CPU time + run-queue
    # delay of every analysed iteration (each delay capped at its iteration's wall time).
    runs = record.ok_runs()
    by_hand = [
        min(runq, wall) + cpu
        for r in runs
        for cpu, runq, wall in zip(
            r.baseline.iteration_cpu_ns or (),
            r.baseline.iteration_runq_ns or (),
            r.baseline.iterations_ns,
            strict=True,
        )
    ]
    assert estimate["baseline"]["median_ns"] == pytest.approx(float(np.median(by_hand)))
    assert estimate["ci_low"] <= estimate["ratio"] <= estimate["ci_high"]

    cell = next(c for c in row(doc.benchmarks[0]).others if c.key == "busy")
    assert cell.name == LABEL
    assert cell.summary() in render(report_of(doc), "text", width=1000)  # "also analysed: ..."
    assert cell.summary() in render(report_of(doc), "markdown")  # the "other metrics" column
    assert f'duet_metric_ratio{{benchmark="duet",metric="busy"}} {estimate["ratio"]:.9g}' in render(
        report_of(doc), "openmetrics"
    )
    stored = json.loads(render(report_of(doc), "json"))["benchmarks"][0]["analysis"]
    assert stored["metrics"]["busy"] == estimate
    assert "busy" in metric_series(doc.benchmarks[0])  # the plots' panels


def test_a_registered_metric_can_decide(busy: Metric) -> None:
    doc = _analysed(MEASURED, metric="busy")
    a = _block(doc)
    assert a["metric"] == "busy"
    assert a["metric_reason"] == f"{LABEL}, as configured"
    assert a["ratio"] == a["metrics"]["busy"]["ratio"]
    assert f"Decided by {LABEL}, as configured" in render(report_of(doc), "text", width=1000)


def test_a_registered_metric_falls_back_along_the_registry(busy: Metric) -> None:
    # busy falls back to CPU time, which a duet-results/1 file lacks too: wall time decides.
    a = _block(_analysed(WALL_ONLY, metric="busy"))
    assert a["metric"] == "wall"
    assert a["metric_reason"] == (
        f"wall time: {LABEL} was asked for, but no per-iteration CPU time or run-queue delay "
        "recorded"
    )
    assert a["metrics"]["busy"] == {
        "missing": "no per-iteration CPU time or run-queue delay recorded"
    }


def test_a_registered_metric_is_calibrated(busy: Metric) -> None:
    record = load(MEASURED_AA).benchmarks[0]
    cal = calibrate_metrics(record, settings=AnalysisSettings(reps=500, metric="busy"))
    assert cal.metric == "busy"
    assert set(cal.widths_by_metric) == {"wall", "cpu", "wall-runq", "busy"}


def test_no_module_keeps_a_copy_of_the_registry() -> None:
    """A module that imports ``METRICS`` by name holds the registry as it was at its import: a
    metric registered later would not reach it. They read it through names(), get(),
    registered() and METRIC_NAMES."""
    holders = []
    for path in sorted((ROOT / "duet_bench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "duet_bench.metrics"
                and any(alias.name == "METRICS" for alias in node.names)
            ):
                holders.append(str(path.relative_to(ROOT)))
    assert holders == []
