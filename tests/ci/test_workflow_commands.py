"""The composite action's helpers: ``::error::`` annotations and the job summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from duet_bench import results
from duet_bench.ci.github import (
    STEP_SUMMARY_LIMIT_BYTES,
    error_annotations,
    escape_data,
    escape_property,
    summary,
)


def _doc_with_regressions(analysed_doc: dict[str, Any], n: int, name: str = "bench") -> Any:
    data = json.loads(json.dumps(analysed_doc))
    template = data["benchmarks"][0]
    template["runs"] = template["runs"][:1]
    data["benchmarks"] = [dict(template, name=f"{name}-{i}") for i in range(n)]
    return results.from_dict(data)


def test_one_error_per_regression(analysed_doc: dict[str, Any]) -> None:
    lines = error_annotations(results.from_dict(analysed_doc))
    assert lines == [
        # GitHub turns %25 back into %.
        "::error title=duet%3A regression::parse-json: +5.00%25 (ratio 1.050 [1.048, 1.052] at "
        "99%25 confidence)"
    ]


def test_at_most_ten_errors_then_a_notice(analysed_doc: dict[str, Any]) -> None:
    lines = error_annotations(_doc_with_regressions(analysed_doc, 13))
    assert sum(line.startswith("::error ") for line in lines) == 10
    assert lines[-1] == "::notice title=duet::3 more regressions: see the job summary"


def test_a_name_cannot_start_a_workflow_command(analysed_doc: dict[str, Any]) -> None:
    doc = _doc_with_regressions(analysed_doc, 1, name="x\n::add-mask::y\r%0A")
    [line] = error_annotations(doc)
    assert "\n" not in line
    assert "\r" not in line
    assert "x%0A::add-mask::y%0D%250A" in line
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    assert escape_data("100%\n") == "100%25%0A"


def test_summary_fits_github_limit() -> None:
    report = "## duet: 1 regression\n\n" + "| row | with some text |\n" * 80_000
    out = summary(report)
    assert len(out.encode("utf-8")) <= STEP_SUMMARY_LIMIT_BYTES
    assert out.startswith("## duet: 1 regression")
    assert "limit of a job summary" in out
    assert summary("## duet: fine\n") == "## duet: fine\n"
    assert "wrote no report" in summary(None)


def test_module_entry_point(tmp_path: Path, results_file: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("## duet: 1 regression\n")
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench.ci.github", "annotate", str(results_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("::error title=duet%3A regression::parse-json")
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench.ci.github", "summary", str(report)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "## duet: 1 regression\n"
    broken = subprocess.run(
        [sys.executable, "-m", "duet_bench.ci.github", "annotate", str(tmp_path / "none.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert broken.stdout.startswith("::warning title=duet::")
