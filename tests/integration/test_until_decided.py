"""``duet run`` measuring until decided (docs/statistics.md, method 2b): real processes, real
barrier; the runs stop at the look that decides, or when the budget is spent."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_compare import duet as compare
from tests.integration.test_compare import project

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.measures]


def duet(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_clear_regression_stops_at_the_first_look(tmp_path: Path) -> None:
    """``sleep 0.03`` against ``sleep 0.01``: about 2.5 times slower. At the first look (5 runs)
    the repeated 99% interval is ``+-5.12 s / sqrt(5)`` in log units; it would reach down to
    1.02 only with a per-run standard deviation of the log ratio near 0.4, some 20 times what
    this pair shows on the loaded development VM (0.02-0.05): by chance, never (the rule's own
    error, a false verdict, is at most 1%, and here would need the interval to miss a ratio near
    2.5). Measured: 5 runs, 4-5 s of machine time."""
    out = tmp_path / "out"
    done = duet(
        "run", "--baseline", "sleep 0.01", "--candidate", "sleep 0.03", "--max-runs", "12",
        "--iterations", "5", "--warmup", "1", "--isolation", "affinity", "--out", str(out),
        "--quiet", "--reps", "500",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    doc = json.loads((out / "results.json").read_text())
    bench = doc["benchmarks"][0]
    assert len(bench["runs"]) == 5
    assert bench["settings"]["until_decided"]["max_runs"] == 12
    stopping = bench["analysis"]["stopping"]
    assert stopping["decided_after"] == 5
    assert [look["runs"] for look in stopping["looks"]] == [5]
    assert bench["analysis"]["verdict"] == "regression"
    assert bench["analysis"]["ci_low"] == stopping["looks"][-1]["ci_low"]
    assert "decided after 5 of up to 12 runs" in (out / "report.md").read_text()
    assert "decided after 5 of up to 12 runs" in done.stdout


def test_without_runs_the_default_design_measures_until_decided(tmp_path: Path) -> None:
    """No ``--runs``, ``--max-runs`` or ``--budget``: the default design (docs/statistics.md,
    method 2b), recorded in the results with its maximum of 80 runs and its budget of 10 min.
    The pair is the one of :func:`test_a_clear_regression_stops_at_the_first_look` (about 2.5
    times slower): decided at the first look, 5 runs; by chance, never (the bound at the first
    look of up to 80, ``+-5.12 s / sqrt(5)`` in log units, is as wide as at 12 and 40 to 1%).
    With ``--runs 10``: a fixed design, 10 runs and no looks. Measured: 20-60 s for both."""
    out = tmp_path / "out"
    done = duet(
        "run", "--baseline", "sleep 0.01", "--candidate", "sleep 0.03", "--iterations", "5",
        "--warmup", "1", "--isolation", "affinity", "--out", str(out), "--quiet", "--reps", "500",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    bench = json.loads((out / "results.json").read_text())["benchmarks"][0]
    assert bench["settings"]["until_decided"] == {
        "min_runs": 5,
        "max_runs": 80,
        "budget_s": 600.0,
        "shape": "pocock",
    }
    assert bench["settings"]["runs"] == 80
    assert len(bench["runs"]) == 5
    assert bench["analysis"]["stopping"]["decided_after"] == 5
    assert "decided after 5 of up to 80 runs" in done.stdout
    # --runs 10 keeps its meaning: a fixed design of 10 runs, no looks.
    fixed = tmp_path / "fixed"
    done = duet(
        "run", "--baseline", "sleep 0.01", "--candidate", "sleep 0.03", "--iterations", "2",
        "--warmup", "0", "--isolation", "affinity", "--out", str(fixed), "--quiet", "--reps",
        "500", "--runs", "10",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    bench = json.loads((fixed / "results.json").read_text())["benchmarks"][0]
    assert bench["settings"].get("until_decided") is None
    assert len(bench["runs"]) == 10
    assert "stopping" not in bench["analysis"]


def test_a_spent_budget_stops_the_runs(tmp_path: Path) -> None:
    """A budget of 1 s for runs that take about 0.3-0.5 s each: no run starts that would end
    after it, so the benchmark stops after 1-3 runs, before the first look, undecided. Exact up
    to the machine's speed: a run would have to take under 0.2 s for a fifth one to fit."""
    out = tmp_path / "out"
    done = duet(
        "run", "--baseline", "sleep 0.02", "--candidate", "sleep 0.02", "--budget", "1s",
        "--iterations", "5", "--warmup", "1", "--isolation", "affinity", "--out", str(out),
        "--quiet", "--reps", "500", "--fail-on", "never",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    bench = json.loads((out / "results.json").read_text())["benchmarks"][0]
    assert 1 <= len(bench["runs"]) < 5
    assert bench["analysis"]["stopping"]["decided_after"] is None
    assert bench["analysis"]["verdict"] is None
    assert "budget spent" in bench["note"]
    # One benchmark has the budget to itself: the note does not speak of a suite sharing it.
    assert re.search(r"(of|after) the 1\.0+ s budget", bench["note"]), bench["note"]
    assert "suite" not in bench["note"], bench["note"]


def test_runs_and_max_runs_together_are_a_usage_error(tmp_path: Path) -> None:
    done = duet(
        "run", "--baseline", "true", "--candidate", "true", "--runs", "10", "--max-runs", "20",
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 2
    assert "give one or the other" in done.stderr


def test_compare_measures_until_decided(tmp_path: Path) -> None:
    """``duet compare base HEAD --max-runs 10`` on a project whose HEAD is about 30% slower (the
    repository of tests/integration/test_compare.py): decided at the first look, 5 runs. The
    repeated 99% interval there would reach below 1.02 only with a per-run s.d. of the log
    ratio near 0.1, ten times what this CPU-bound pair shows even on the loaded VM: never by
    chance."""
    repo = project(tmp_path)
    out = tmp_path / "out"
    done = compare(repo.path, "base", "HEAD", "--out", str(out), "--max-runs", "10")
    assert done.returncode == 1, done.stdout + done.stderr
    b = json.loads((out / "results.json").read_text())["benchmarks"][0]
    assert b["settings"]["until_decided"]["max_runs"] == 10
    assert len(b["runs"]) == 5
    assert b["analysis"]["stopping"]["decided_after"] == 5
    assert b["analysis"]["verdict"] == "regression"
    assert "decided after 5 of up to 10 runs" in (out / "report.md").read_text()


def test_continue_extends_an_undecided_measurement(tmp_path: Path) -> None:
    """An A/A of ``sleep 0.01`` at threshold 0.1% and at most 5 runs ends undecided (the
    interval cannot fit in +-0.1% with sleep's per-run noise of about 1%, and a false
    regression or improvement is at most 1 in 10,000 by the rule at --confidence 0.9999: then the
    test would fail, with that probability at most; tests/budget.toml). ``--continue`` with
    ``--max-runs 7`` keeps the 5 runs, measures 1-2 more and recomputes every look with the
    bounds of 7 runs."""
    out = tmp_path / "out"
    common = ["run", "--baseline", "sleep 0.01", "--candidate", "sleep 0.01", "--iterations",
              "5", "--warmup", "1", "--isolation", "affinity", "--quiet", "--reps", "500",
              "--threshold", "0.001", "--confidence", "0.9999", "--fail-on", "never",
              # One metric for both analyses: auto may choose another one with 7 runs than with
              # 5, and then the first look's interval is of other numbers (it failed so once).
              "--metric", "wall"]  # fmt: skip
    done = duet(*common, "--max-runs", "5", "--out", str(out))
    assert done.returncode == 0, done.stderr
    first = json.loads((out / "results.json").read_text())["benchmarks"][0]
    assert len(first["runs"]) == 5
    assert first["analysis"]["stopping"]["decided_after"] is None
    assert first["analysis"]["stopping"]["stopped"] == "max runs reached"
    done = duet(*common, "--max-runs", "7", "--continue", str(out))
    assert done.returncode == 0, done.stderr
    b = json.loads((out / "results.json").read_text())["benchmarks"][0]
    assert b["runs"][:5] == first["runs"]
    assert 6 <= len(b["runs"]) <= 7
    assert b["settings"]["until_decided"]["max_runs"] == 7
    looks = b["analysis"]["stopping"]["looks"]
    assert [look["runs"] for look in looks] == list(range(5, len(b["runs"]) + 1))
    # The bounds of 7 looks are wider than those of 5: the first look's interval grew.
    assert looks[0]["ci_low"] <= first["analysis"]["stopping"]["looks"][0]["ci_low"]
    # The same rule only: a smaller maximum, or a fixed design, is refused.
    done = duet(*common, "--max-runs", "6", "--continue", str(out))
    assert done.returncode == 2
    assert "cannot be continued" in done.stderr
    fixed = tmp_path / "fixed"
    assert duet(*common, "--runs", "5", "--out", str(fixed)).returncode == 0
    done = duet(*common, "--max-runs", "7", "--continue", str(fixed))
    assert done.returncode == 2
    assert "fixed design of 5 runs" in done.stderr


def test_compare_continue_extends_the_undecided_benchmarks(tmp_path: Path) -> None:
    """HEAD against itself at threshold 0.1% and at most 5 runs: undecided (as in
    :func:`test_continue_extends_an_undecided_measurement`; a false verdict, at most 1 in 10,000
    at --confidence 0.9999, would fail the test). ``--continue`` with ``--max-runs 7`` measures
    the same benchmark further; another pair of commits is refused."""
    repo = project(tmp_path)
    out = tmp_path / "out"
    common = ["--no-plots", "--threshold", "0.001", "--confidence", "0.9999", "--fail-on", "never"]
    done = compare(repo.path, "HEAD", "HEAD", "--out", str(out), "--max-runs", "5", *common)
    assert done.returncode == 0, done.stdout + done.stderr
    first = json.loads((out / "results.json").read_text())["benchmarks"][0]
    assert first["analysis"]["stopping"]["decided_after"] is None
    done = compare(repo.path, "HEAD", "HEAD", "--continue", str(out), "--max-runs", "7", *common)
    assert done.returncode == 0, done.stdout + done.stderr
    b = json.loads((out / "results.json").read_text())["benchmarks"][0]
    assert b["runs"][:5] == first["runs"]
    assert 6 <= len(b["runs"]) <= 7
    assert len(b["analysis"]["stopping"]["looks"]) == len(b["runs"]) - 4
    done = compare(repo.path, "base", "HEAD", "--continue", str(out), "--max-runs", "9", *common)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "continue with the BASE and HEAD it measured" in done.stderr
