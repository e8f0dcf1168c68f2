"""One table model for every report: the metric that decided comes first, with its own numbers,
and no renderer or plot shows one metric under another metric's interval.

The document is the fixture with CPU time and run-queue delay added: CPU time is 93% of the
wall time (so ``auto`` takes CPU time), and for parse-json the candidate's CPU time grows 4%
more than its wall time, so the two metrics give clearly different ratios and intervals.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duet_bench import metrics, results, units
from duet_bench.analysis import AnalysisSettings, analyze_document
from duet_bench.report import render
from duet_bench.report.model import report_of
from duet_bench.report.rows import rows
from duet_bench.report.text import render_text
from duet_bench.results import ResultsDocument

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "results-basic.json"


def cpu_document() -> ResultsDocument:
    data = json.loads(FIXTURE.read_text())
    rng = np.random.default_rng(7)
    for b in data["benchmarks"]:
        extra = 1.04 if b["name"] == "parse-json" else 1.0
        for r in b["runs"]:
            if r["status"] != "ok":
                continue
            for side, factor in (("baseline", 1.0), ("candidate", extra)):
                wall = np.asarray(r[side]["iterations_ns"], dtype=float)
                noise = rng.lognormal(0, 0.003, wall.size)
                r[side]["iteration_cpu_ns"] = [int(x) for x in wall * 0.93 * factor * noise]
                r[side]["iteration_runq_ns"] = [int(x) for x in wall * 0.02]
    data["config"] = {
        "command": "compare",
        "versions": {
            "baseline": {"ref": "main", "commit": "1a2b3c4d5e6f7a8b9c0d"},
            "candidate": {"ref": "topic", "commit": "9f8e7d6c5b4a39281706"},
        },
    }
    return analyze_document(results.from_dict(data), AnalysisSettings(reps=2000))


@pytest.fixture(scope="module")
def doc() -> ResultsDocument:
    return cpu_document()


def _parse(doc: ResultsDocument) -> Any:
    [b] = [b for b in doc.benchmarks if b.name == "parse-json"]
    return b


def test_the_row_carries_the_deciding_metric_first_and_the_others_beside(
    doc: ResultsDocument,
) -> None:
    [r] = [r for r in rows(doc) if r.name == "parse-json"]
    a = _stored(_parse(doc))
    assert r.decided is not None
    assert r.decided.key == "cpu"
    assert r.metric == "CPU time"
    assert r.why is not None
    assert r.why.startswith("CPU time: both sides CPU-bound")
    assert r.decided.ratio == a["ratio"]
    wall = next(c for c in r.others if c.key == "wall")
    assert wall.ratio == a["metrics"]["wall"]["ratio"]
    # The two metrics disagree by about 4%: the model keeps each with its own interval.
    assert wall.high is not None
    assert r.decided.low is not None
    assert wall.high < r.decided.low
    assert r.interference is not None


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_every_report_says_which_metric_decided_and_shows_the_others(
    doc: ResultsDocument, fmt: str
) -> None:
    out = render(report_of(doc), fmt)  # type: ignore[arg-type]
    assert "Decided by CPU time: both sides CPU-bound" in out
    a = _stored(_parse(doc))
    wall = a["metrics"]["wall"]
    digits = units.telling_digits(wall["ci_low"], wall["ratio"], wall["ci_high"])
    other = f"wall time {units.sig(wall['ratio'], digits)}"
    assert other in out, fmt
    assert "another process ran on the measuring CPUs" in out, fmt
    # The numbers of the table are CPU time's: its change, not wall time's.
    assert units.change(a["ratio"]) in out
    assert "+5.00%" not in out.split("other metrics")[0] if fmt == "markdown" else True


def test_the_iterations_plot_draws_the_deciding_metric_under_its_own_interval(
    doc: ResultsDocument,
) -> None:
    from duet_bench.report.plot_benchmark import iterations_figure

    b = _parse(doc)
    a = _stored(b)
    fig = iterations_figure(b)
    top, bottom = fig.get_axes()
    assert top.get_ylabel().startswith("CPU time per iteration")
    assert "CPU time decided" in top.get_title(loc="left")
    # The ratio of every pair is a ratio of CPU times.
    pairs = next(line for line in bottom.get_lines() if line.get_label() == "ratio of the pair")
    run0 = b.ok_runs()[0]
    cpu = np.asarray(run0.candidate.iteration_cpu_ns, float) / np.asarray(
        run0.baseline.iteration_cpu_ns, float
    )
    got = np.asarray(pairs.get_ydata(), dtype=float)
    assert got == pytest.approx(cpu[: got.size])
    # The band is the CPU-time interval.
    band = next(p for p in bottom.patches if "grand ratio" in p.get_label())
    assert _band_low(bottom, band) == pytest.approx(a["ci_low"], rel=1e-9)


def _stored(b: results.BenchmarkRecord) -> dict[str, Any]:
    """The benchmark's analysis as results.json stores it."""
    assert b.analysis is not None
    return b.analysis.to_dict()


def _band_low(ax: Any, band: Any) -> float:
    """The lower edge of an ``axhspan`` in data coordinates."""
    corners = band.get_transform().transform(band.get_path().vertices)
    return float(ax.transData.inverted().transform(corners)[:, 1].min())


def test_the_runs_plot_has_one_panel_per_metric_each_with_its_own_interval(
    doc: ResultsDocument,
) -> None:
    from duet_bench.report.plot_benchmark import runs_figure

    b = _parse(doc)
    a = _stored(b)
    fig = runs_figure(b)
    axes = fig.get_axes()
    titles = [ax.get_title(loc="left") for ax in axes]
    assert titles[0].startswith("CPU time (decided)")
    assert any(t.startswith("wall time (did not decide)") for t in titles)
    # The deciding metric first, then every other one in the registry's order.
    keys = ["cpu", *(k for k in metrics.names() if k != "cpu")]
    for ax, key in zip(axes, keys, strict=True):
        estimate = a if key == "cpu" else a["metrics"][key]
        [band] = ax.patches
        low = (
            ax.transData.inverted()
            .transform(band.get_transform().transform(band.get_path().vertices))[:, 1]
            .min()
        )
        assert low == pytest.approx(estimate["ci_low"], rel=1e-9), key
        # Every run's point lies near its own metric's ratio, not the other's interval.
        points = next(line for line in ax.get_lines() if line.get_marker() == "o")
        ys = np.asarray(points.get_ydata(), dtype=float)
        assert np.median(ys) == pytest.approx(estimate["ratio"], rel=0.01), key


@pytest.mark.parametrize("width", [80, 100, 200])
def test_the_text_report_fits_the_width(doc: ResultsDocument, width: int) -> None:
    out = render_text(report_of(doc), width=width)
    longest = max(len(line) for line in out.splitlines())
    assert longest <= width, [line for line in out.splitlines() if len(line) > width]
    header = next(line for line in out.splitlines() if line.startswith("benchmark"))
    assert ("ratio [99% CI]" in header) == (width >= 120)


def test_names_are_shortened_where_the_commands_differ() -> None:
    name = (
        "/tmp/ext/pp2.4.7/bin/python -c 'import pyparsing' vs "
        "/tmp/ext/pp3.0.0/bin/python -c 'import pyparsing'"
    )
    for width in (20, 30, 48, 60):
        short = units.differing_name(name, width)
        assert len(short) <= width, short
        assert "pp2.4.7" in short, short
        assert "pp3.0.0" in short, short
    # Other long names keep their start and end.
    assert units.differing_name("a" * 30 + "b" * 30, 20).startswith("a")
    assert units.differing_name("short", 20) == "short"


def test_numbers_carry_the_digits_that_tell_their_bounds_apart() -> None:
    assert units.telling_digits(1.0483, 1.0500, 1.0518) == 4
    assert units.interval(1.0483, 1.0518, 4) == "[1.048, 1.052]"
    assert units.telling_digits(0.9, 1.0, 1.1) == 3
    assert units.telling_digits(1.0, 1.0, 1.0) == 3  # equal values: nothing to tell apart
    assert units.telling_digits(1.0000001, 1.0000002, 1.0000003) == units.MAX_DIGITS
    assert units.change(1.04831, units.change_digits(1.04831, 1.04834, 1.05)) == "+4.831%"


def test_the_comment_opens_with_the_sentence_then_base_and_head(doc: ResultsDocument) -> None:
    out = render(report_of(doc), "markdown")
    lines = out.splitlines()
    assert lines[0].startswith("## duet: parse-json ")
    assert lines[0].endswith(" slower")
    assert re.match(r"1 of 6 benchmarks is slower: \*\*parse-json\*\* \+9", lines[2]), lines[2]
    assert lines[4] == "**BASE** `main` (1a2b3c4d5e6f) → **HEAD** `topic` (9f8e7d6c5b4a)"
    above, folded = out.split("<details>", 1)
    assert "| benchmark | BASE | HEAD | change | 99% interval | verdict |" in above
    # A failed run is above the fold, a winsorization note only in the fold.
    assert "run 4: timeout" in above
    assert "outliers left in" not in above
    assert "outliers left in" in folded
    # Inconclusive says what would decide it.
    hint = next(line for line in above.splitlines() if "**noisy-io** is inconclusive" in line)
    assert re.search(r"about \d+ runs in all \(\d+ more than the 6 measured, `--runs \d+`\)", hint)
    assert "`--fail-on inconclusive`" in hint
