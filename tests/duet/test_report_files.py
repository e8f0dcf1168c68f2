"""The report files beside a results.json (duet_bench.report.files.write_reports)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from duet_bench import results
from duet_bench.defaults import Format
from duet_bench.report.files import PLOTS_NOT_DRAWN, write_reports, write_text_reports
from duet_bench.report.model import report_of

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


def test_without_matplotlib_report_md_says_so_once_and_stderr_stays_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 31: a compare on the core install printed a 198-column warning on every run; the
    report now says it once, on its last line, and nothing is logged."""
    # None in sys.modules is Python's own "cannot be imported" (find_spec returns None).
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    doc = results.load(FIXTURE)
    with caplog.at_level("INFO"):
        written = write_reports(report_of(doc), tmp_path, plots=True)
    assert {p.name for p in written} == {"report.md", "junit.xml", "metrics.txt"}
    report = (tmp_path / "report.md").read_text()
    assert report.count("matplotlib") == 1
    assert report.rstrip("\n").endswith(PLOTS_NOT_DRAWN)
    assert not caplog.records
    assert not (tmp_path / "plots").exists()


def test_plots_not_wanted_say_nothing(tmp_path: Path) -> None:
    write_reports(report_of(results.load(FIXTURE)), tmp_path, plots=False)
    assert "matplotlib" not in (tmp_path / "report.md").read_text()


def test_one_report_built_once_writes_the_files_and_the_terminal_text(tmp_path: Path) -> None:
    """``duet run`` builds the Report once for the files and the terminal: report.md,
    junit.xml and metrics.txt are ``render``'s markdown, junit and openmetrics of it."""
    from duet_bench.report import render

    report = report_of(results.load(FIXTURE))
    write_reports(report, tmp_path, plots=False)
    formats: dict[str, Format] = {
        "report.md": "markdown", "junit.xml": "junit", "metrics.txt": "openmetrics"
    }  # fmt: skip
    for name, fmt in formats.items():
        assert (tmp_path / name).read_text() == render(report, fmt), name


def test_the_text_reports_alone_are_what_write_reports_writes_without_plots(
    tmp_path: Path,
) -> None:
    """``duet run`` draws no plots: it writes the three text reports alone, the same bytes as
    ``write_reports(..., plots=False)``, and no ``plots/``."""
    from duet_bench.report.model import report_of

    report = report_of(results.load(FIXTURE))
    alone = write_text_reports(report, tmp_path / "alone")
    write_reports(report, tmp_path / "all", plots=False)
    assert [p.name for p in alone] == ["report.md", "junit.xml", "metrics.txt"]
    for path in alone:
        assert path.read_bytes() == (tmp_path / "all" / path.name).read_bytes()
    assert not (tmp_path / "alone" / "plots").exists()
