"""The composite action's helpers: ``::error::`` annotations and the job summary."""

from __future__ import annotations

import json
import os
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


def github(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``duet github ARGS`` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", "github", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GITHUB_ACTIONS": "", **env},
    )


def test_duet_github(tmp_path: Path, results_file: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("## duet: 1 regression\n")
    done = github("annotate", str(results_file))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("::error title=duet%3A regression::parse-json")
    assert github("annotate", str(results_file), "--limit", "0").stdout == (
        "::notice title=duet::1 more regression: see the job summary\n"
    )
    done = github("summary", str(report))
    assert (done.returncode, done.stdout) == (0, "## duet: 1 regression\n")
    # The --out directory is read as its results.json, as every command that reads results.
    done = github("outputs", str(results_file.parent))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["verdict=regression", "regressions=1"]


def test_duet_github_warns_and_exits_0_without_results(tmp_path: Path) -> None:
    """The action runs these steps whatever duet compare did: what is missing is a warning (for
    outputs on stderr, stdout going to $GITHUB_OUTPUT), and its last step fails the job."""
    missing = str(tmp_path / "none.json")
    broken = github("annotate", missing)
    assert broken.returncode == 0, broken.stderr
    assert broken.stdout.startswith("::warning title=duet::")
    outputs = github("outputs", missing)
    assert (outputs.returncode, outputs.stdout) == (0, "")
    assert outputs.stderr.startswith("::warning title=duet::")
    summary = github("summary", missing)
    assert summary.returncode == 0, summary.stderr
    assert "wrote no report" in summary.stdout
    assert github("lint", missing).returncode == 2
    assert github("annotate", missing, "--limit", "-1").returncode == 2


def test_the_module_entry_point_still_works_with_a_warning(
    tmp_path: Path, results_file: Path
) -> None:
    """`python -m duet_bench.ci.github`, what action.yml ran before `duet github`."""
    report = tmp_path / "report.md"
    report.write_text("## duet: 1 regression\n")

    def module(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "duet_bench.ci.github", *args],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "GITHUB_ACTIONS": "", **env},
        )

    done = module("annotate", str(results_file))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("::error title=duet%3A regression::parse-json")
    assert done.stderr == (
        "duet: warning: `python -m duet_bench.ci.github` is deprecated: run `duet github` with "
        "the same arguments\n"
    )
    done = module("summary", str(report), GITHUB_ACTIONS="true")
    assert (done.returncode, done.stdout) == (0, "## duet: 1 regression\n")
    assert done.stderr.startswith("::warning title=duet::`python -m duet_bench.ci.github` is ")
    assert module("annotate", str(tmp_path / "none.json")).stdout.startswith("::warning")
    assert module("annotate").returncode == 2
