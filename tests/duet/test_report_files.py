"""The report files beside a results.json (duet_bench.report.files.write_reports)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from duet_bench import results
from duet_bench.report.files import PLOTS_NOT_DRAWN, write_reports

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
        written = write_reports(doc, tmp_path, plots=True)
    assert {p.name for p in written} == {"report.md", "junit.xml", "metrics.txt"}
    report = (tmp_path / "report.md").read_text()
    assert report.count("matplotlib") == 1
    assert report.rstrip("\n").endswith(PLOTS_NOT_DRAWN)
    assert not caplog.records
    assert not (tmp_path / "plots").exists()


def test_plots_not_wanted_say_nothing(tmp_path: Path) -> None:
    write_reports(results.load(FIXTURE), tmp_path, plots=False)
    assert "matplotlib" not in (tmp_path / "report.md").read_text()
