"""``duet bisect`` resumed with a larger ``--step-max-runs`` continues an undecided step under
the same rule (docs/bisect.md, "Resuming"; docs/statistics.md, "Continuing an undecided
measurement"): real repository, builds, barrier and cgroups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_bisect import bisect, history

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.measures]

#: Unchanged work must stay undecided: at threshold 0.05% "no change" needs the 99.99% repeated
#: interval (c = 13.5) inside +-0.05%, a per-run s.d. of the log ratio under 0.01% at 7 runs,
#: some 20 times below what this C loop shows; a false regression or improvement is at most
#: 1e-4 by the rule whatever the stopping time, the continued measurement included (it is the
#: one that had planned 7 runs from the start).
STRICT = ["--threshold", "0.0005", "--confidence", "0.9999"]


def test_a_larger_step_max_runs_continues_the_undecided_step(tmp_path: Path) -> None:
    """GOOD and two commits that change no built file: the first step (BAD against GOOD) ends
    undecided after 5 of up to 5 runs, and the search stops (exit 3). Run again with the same
    --out and ``--step-max-runs 7``: the step's round file is continued, not measured anew: its
    5 runs kept, 1-2 more, every look recomputed with the bounds of 7 runs."""
    repo = history(tmp_path, {}, commits=2)
    out = tmp_path / "out"
    done, summary = bisect(repo, out, "good", "HEAD", "--step-max-runs", "5", *STRICT)
    assert done.returncode == 3, done.stdout + done.stderr
    assert summary is not None
    [step] = summary["steps"]
    assert step["runs"] == 5
    assert step["decided_after"] is None
    [round_file] = step["files"]
    [first] = json.loads((out / round_file).read_text())["benchmarks"]
    assert first["analysis"]["stopping"]["stopped"] == "max runs reached"

    done, summary = bisect(repo, out, "good", "HEAD", "--step-max-runs", "7", *STRICT)
    assert done.returncode == 3, done.stdout + done.stderr
    assert summary is not None
    [step] = summary["steps"]
    assert step["files"] == [round_file]
    assert f"continuing {Path(round_file).name}: undecided after 5 runs" in done.stderr
    [b] = json.loads((out / round_file).read_text())["benchmarks"]
    assert b["runs"][:5] == first["runs"]
    assert 6 <= len(b["runs"]) <= 7
    assert step["runs"] == len(b["runs"])
    assert b["settings"]["until_decided"]["max_runs"] == 7
    looks = b["analysis"]["stopping"]["looks"]
    assert [look["runs"] for look in looks] == list(range(5, len(b["runs"]) + 1))
    assert not list((out / "steps").glob("*.stale.json"))
