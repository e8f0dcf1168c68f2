"""Incomplete results (issue 25 item 8): an interrupted results file says so in every command
that gives a verdict, exits 3 unless --allow-incomplete, and a merge keeps it incomplete with
its never-started benchmarks listed. Real files, the real CLI in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from duet_bench import results
from duet_bench.results.completeness import completeness

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"
STOPPED = "interrupted by SIGTERM while measuring 'tiny'"


def interrupted(names: list[str] = ["tiny"], later: str = "later") -> dict[str, Any]:  # noqa: B006
    """The fixture as a SIGTERM'd `duet compare` leaves it: ``tiny`` planned for 10 runs with 3
    done, and ``later`` (5 runs) never started."""
    data = json.loads(FIXTURE.read_text())
    data["benchmarks"] = [b for b in data["benchmarks"] if b["name"] in names]
    for b in data["benchmarks"]:
        b["settings"] = {"runs": 10 if b["name"] == "tiny" else len(b["runs"])}
    data["config"] = {
        "command": "compare",
        "versions": {"baseline": {"commit": "a" * 40}, "candidate": {"commit": "b" * 40}},
    }
    data["state"] = {
        "complete": False,
        "stopped": STOPPED,
        "updated": "2026-01-01T00:00:00Z",
        "planned": [{"name": n, "runs": 10} for n in names] + [{"name": later, "runs": 5}],
    }
    return data


def duet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", *args], capture_output=True, text=True, check=False
    )


SENTENCE = f"interrupted after 3 of 15 runs ({STOPPED}); not started: later"


def test_the_one_sentence_counts_runs_and_benchmarks_never_started() -> None:
    c = completeness(results.from_dict(interrupted()))
    assert (c.complete, c.done, c.planned, c.not_started) == (False, 3, 15, ("later",))
    assert c.sentence == SENTENCE


def test_a_complete_or_stateless_document_has_no_sentence() -> None:
    data = json.loads(FIXTURE.read_text())
    assert completeness(results.from_dict(data)).sentence is None
    data["state"] = {"complete": True, "stopped": None}
    assert completeness(results.from_dict(data)).sentence is None


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "junit", "openmetrics", "json"])
def test_every_report_format_says_it_and_exits_3(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(interrupted()))
    done = duet("report", str(path), "--format", fmt)
    assert done.returncode == 3, done.stderr
    if fmt == "openmetrics":
        assert 'duet_incomplete_runs{runs="done"} 3' in done.stdout
        assert 'duet_incomplete_runs{runs="planned"} 15' in done.stdout
    elif fmt == "json":
        assert json.loads(done.stdout)["state"]["completeness"] == SENTENCE
    else:
        assert "interrupted after 3 of 15 runs" in done.stdout
        assert "not started: later" in done.stdout
    assert "the results are incomplete" in done.stderr
    assert "--allow-incomplete" in done.stderr
    allowed = duet("report", str(path), "--format", fmt, "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stderr


def test_analyze_says_it_and_exits_3_unless_allowed(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(interrupted()))
    done = duet("analyze", str(path))
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith(f"INCOMPLETE: {SENTENCE}")
    assert duet("analyze", str(path), "--allow-incomplete").returncode == 0


def test_comment_posts_the_sentence_and_exits_3(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(interrupted()))
    done = duet("comment", str(path), "--dry-run")
    assert done.returncode == 3, done.stderr
    assert "**Incomplete:** interrupted after 3 of 15 runs" in done.stdout
    assert duet("comment", str(path), "--dry-run", "--allow-incomplete").returncode == 0


def test_merging_an_interrupted_shard_keeps_it_incomplete_and_the_unmeasured_visible(
    tmp_path: Path,
) -> None:
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "m.json"
    a.write_text(json.dumps(interrupted()))
    whole = interrupted(["parse-json"], later="other")
    whole["state"] = {"complete": True, "stopped": None, "planned": [{"name": "parse-json"}]}
    b.write_text(json.dumps(whole))
    done = duet("merge", str(a), str(b), "--out", str(out))
    assert done.returncode == 3, done.stderr
    assert "not started: later" in done.stdout
    merged = results.load(out)
    assert merged.state["complete"] is False
    c = completeness(merged)
    assert c.not_started == ("later",)
    assert (c.done, c.planned) == (23, 35)
    assert duet("merge", str(a), str(b), "--out", str(out), "--allow-incomplete").returncode == 0
