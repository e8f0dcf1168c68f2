"""Plots: rendered for real, then opened and looked at by numbers (size, not blank, valid SVG)."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from duet_bench.analysis import AnalysisSettings, analyze_document
from duet_bench.report.html import render_html
from duet_bench.report.model import report_of
from duet_bench.report.plots import (
    forest_figure,
    label,
    plan,
    slug,
    svg_plots,
    time_unit,
    write_plots,
)
from duet_bench.results import ResultsDocument, load
from tests.duet.test_report_formats import EVIL, broken_benchmark, synthetic_doc

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_SVG_NS = "{http://www.w3.org/2000/svg}"


def check_png(path: Path, *, min_width: int = 600, min_height: int = 300) -> None:
    """Opened as an image: big enough, not blank, drawn in more than a couple of colours."""
    from PIL import Image

    with Image.open(path) as image:
        image.load()
        rgb = np.asarray(image.convert("RGB"))
    height, width, _ = rgb.shape
    assert width >= min_width, (path, width)
    assert height >= min_height, (path, height)
    white = np.all(rgb >= 250, axis=2).mean()
    assert white < 0.97, f"{path.name} is almost blank ({white:.1%} white)"
    rgb32 = rgb.astype(np.uint32)
    colours = np.unique((rgb32[..., 0] << 16) | (rgb32[..., 1] << 8) | rgb32[..., 2])
    assert len(colours) > 50, f"{path.name} has only {len(colours)} colours"


def check_svg(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == f"{_SVG_NS}svg"
    assert len(list(root.iter(f"{_SVG_NS}path"))) > 20
    return root


@pytest.mark.slow
def test_plots_of_the_fixture(tmp_path: Path) -> None:
    doc = analyze_document(load(FIXTURES / "results-basic.json"), AnalysisSettings(reps=500))
    written = write_plots(doc, tmp_path / "plots")
    names = sorted(p.name for p in written)
    benches = ["noisy-io", "parse-json", "render-page", "sort-1M", "tiny", "with-a-failure"]
    expected = sorted(
        [f"ratios.{s}" for s in ("png", "svg")]
        + [
            f"{b}-{kind}.{s}"
            for b in benches
            for kind in ("iterations", "runs")
            for s in ("png", "svg")
        ]
    )
    assert names == expected
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == expected
    for p in written:
        if p.suffix == ".png":
            check_png(p)
        else:
            check_svg(p)


def test_iterations_over_time_when_start_times_are_recorded(tmp_path: Path) -> None:
    doc = synthetic_doc(["timed"], runs=5, iterations=15, starts=True)
    written = write_plots(doc, tmp_path)
    for p in written:
        check_png(p) if p.suffix == ".png" else check_svg(p)
    fig = plan(doc)[1][2]()
    axes = fig.get_axes()
    assert "s since the first start" in axes[1].get_xlabel()
    assert axes[0].get_ylabel() == "wall time per iteration (ms)"
    baseline = axes[0].get_lines()[0]
    x = np.asarray(baseline.get_xdata(), dtype=float)
    assert x[0] == pytest.approx(0.0, abs=1e-5)  # seconds since the first start
    title = axes[0].get_title(loc="left")
    found = re.search(r"wall time decided: ratio (\S+) \[(\S+), (\S+)\] 99% CI", title)
    assert found, title
    # As many digits as it takes to tell the point from its bounds (not "1.03 [1.03, 1.03]").
    assert len(set(found.groups())) == 3, title
    assert found.group(1).startswith("1.03"), title


def test_iterations_by_index_without_start_times() -> None:
    doc = synthetic_doc(["untimed"], runs=5, iterations=8, starts=False)
    fig = plan(doc)[1][2]()
    axes = fig.get_axes()
    assert "no start times recorded" in axes[1].get_xlabel()
    assert [t.get_text() for t in axes[1].get_xticklabels()] == ["0", "1", "2", "3", "4"]


def test_forest_plot_labels_and_size_grow_with_benchmarks() -> None:
    few = synthetic_doc([f"b{i}" for i in range(3)], runs=5, iterations=4)
    many = synthetic_doc([f"bench-{i}" for i in range(40)], runs=5, iterations=4)
    small, big = forest_figure(few), forest_figure(many)
    assert big.get_size_inches()[1] > 3 * small.get_size_inches()[1]
    ax = big.get_axes()[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"bench-{i}" for i in range(40)]
    assert ax.get_xlabel().startswith("ratio candidate/baseline in wall time (99% CI)")
    assert ax.get_xscale() == "log"
    legend = big.legends[0]
    texts = [t.get_text() for t in legend.get_texts()]
    assert "no-change band ±2.00%" in texts
    assert "1 = same speed" in texts
    for text in [*ax.get_yticklabels(), ax.xaxis.label, ax.title, *legend.get_texts()]:
        assert text.get_fontsize() >= 9, text.get_text()


def test_evil_names_stay_in_the_directory_and_render_as_text(tmp_path: Path) -> None:
    # (Collisions and the other awkward names are covered by the slug tests, without drawing.)
    names = [EVIL, "../../../tmp/escape", "..", "日本語ベンチ"]
    doc = synthetic_doc(names, runs=5, iterations=4)
    doc = analyze_document(doc.with_benchmark(broken_benchmark()), AnalysisSettings(reps=200))
    out = tmp_path / "plots"
    written = write_plots(doc, out)
    assert len(written) == 2 + 4 * len(names)  # the broken benchmark has only its forest row
    assert len({p.name for p in written}) == len(written)  # no two names share a file
    for p in written:
        assert p.parent == out
        assert p.exists()
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*\.(png|svg)", p.name), p.name
    assert sorted(tmp_path.iterdir()) == [out]
    check_png(out / "ratios.png")
    # mathtext is off: the label is the name's own characters (one line, escape replaced).
    ax = forest_figure(doc).get_axes()[0]
    first = ax.get_yticklabels()[0]
    assert first.get_text() == label(EVIL)
    assert "$\\frac{1}{0}$" in label(EVIL, limit=200)
    texts = [t.get_text() for t in ax.texts]
    assert "no successful run  no verdict" in texts


def test_html_embeds_the_plots_as_inline_svg(tmp_path: Path) -> None:
    doc = synthetic_doc([EVIL, "plain"], runs=5, iterations=6)
    written = write_plots(doc, tmp_path)
    svgs = svg_plots(doc, written)
    assert next(iter(svgs)) == "Ratio candidate/baseline of every benchmark"
    assert len(svgs) == 5
    page = render_html(report_of(doc), plots=svgs)
    assert page.count("<svg ") == 5
    assert "<script" not in page
    assert "<img" not in page
    assert "<!--" not in page
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "ids repeat across the inlined figures"


def test_duet_report_plot_option(tmp_path: Path) -> None:
    doc = synthetic_doc(["one"], runs=5, iterations=5)
    path = tmp_path / "results.json"
    from duet_bench.results import save

    save(doc, path)
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "report", str(path), "--format", "html", "--plot",
         str(tmp_path / "p"), "--output", str(tmp_path / "r.html")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == [
        "one-iterations.png", "one-iterations.svg", "one-runs.png", "one-runs.svg",
        "ratios.png", "ratios.svg",
    ]  # fmt: skip
    assert (tmp_path / "r.html").read_text(encoding="utf-8").count("<svg ") == 3
    # html without --plot still embeds the plots, drawn in a temporary directory.
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "report", str(path), "--format", "html"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("<svg ") == 3


def test_time_unit() -> None:
    assert time_unit(12.3e6) == (1e6, "ms")
    assert time_unit(456e3) == (1e3, "µs")
    assert time_unit(2.5e9) == (1e9, "s")
    assert time_unit(80) == (1.0, "ns")


@given(st.text(max_size=200))
def test_slug_is_a_safe_file_name(name: str) -> None:
    s = slug(name)
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", s), s
    assert len(s) <= 89
    assert s not in (".", "..")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("parse-json", "parse-json"), ("sort-1M", "sort-1M"), ("a_b.c", "a_b.c")],
)
def test_slug_keeps_clean_names(name: str, expected: str) -> None:
    assert slug(name) == expected


def test_slug_never_collides_on_different_names() -> None:
    names = ["a/b", "a-b", "a b", "a\\b", "a--b", "", ".", "..", "-a", "a-"]
    assert len({slug(n) for n in names}) == len(names)


def test_empty_document_still_draws_a_forest(tmp_path: Path) -> None:
    written = write_plots(ResultsDocument(benchmarks=()), tmp_path)
    assert [p.name for p in written] == ["ratios.png", "ratios.svg"]
    check_png(written[0], min_width=300, min_height=150)
