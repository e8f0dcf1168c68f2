"""A suite measured until decided, round by round (docs/statistics.md, method 2b, "A suite"):
``duet compare`` on a real repository of two C benchmarks, real builds, barrier and cgroups.
A round gives every undecided benchmark one more run; a decided one leaves the rotation; the
shared budget ends it; an interruption keeps every run measured."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.gitrepo import GitRepo, make_repo
from tests.integration.test_compare import WORK_C, bench, config

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.measures]

#: An A/A benchmark must stay undecided: at threshold 0.05% "no change" needs the 99.99%
#: repeated interval (c = 13.5) inside +-0.05%, a per-run s.d. of the log ratio under 0.01% at 8
#: runs, some 20 times below what these C loops show; a false regression or improvement is at
#: most 1e-4 by the rule whatever the stopping time (tests/budget.toml).
STRICT = ["--threshold", "0.0005", "--confidence", "0.9999", "--fail-on", "never"]


def suite(tmp_path: Path, *, doubled: bool = True) -> GitRepo:
    """A repository whose ``base`` has two xorshift loops of 3M steps, benchmarks ``work``, and
    ``same`` and ``also`` (both ``./same``), and whose HEAD doubles ``work`` (when ``doubled``)
    and leaves ``same`` alone."""
    head_steps = 6_000_000 if doubled else 3_000_000
    build = "cc -O2 -o work work.c && cc -O2 -o same same.c"
    first = bench("work", "./work") + bench("same", "./same") + bench("also", "./same")
    files = {
        "work.c": WORK_C.replace("STEPS", "3000000"),
        "same.c": WORK_C.replace("STEPS", "3000000"),
        "duet.toml": config(first, build=build),
    }
    repo = make_repo(tmp_path / "project", [files])
    repo.tag("base", "HEAD")
    # An edit, also when the loop stays the same: HEAD is its own commit.
    changed = WORK_C.replace("STEPS", str(head_steps)) + "/* HEAD */\n"
    repo.commit({"work.c": changed}, "change work")
    return repo


def command(repo: Path, out: Path, *args: str) -> list[str]:
    return [
        sys.executable, "-m", "duet_bench", "compare", "base", "HEAD", "--out", str(out),
        "--quiet", "--reps", "500", "--no-plots", *STRICT, *args,
    ]  # fmt: skip


def compare(repo: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(repo, out, *args), cwd=repo, capture_output=True, text=True, timeout=400
    )


def benchmarks(out: Path) -> dict[str, Any]:
    """The benchmarks of the results file by name, in its order."""
    return {b["name"]: b for b in json.loads((out / "results.json").read_text())["benchmarks"]}


def first_start_ns(run: dict[str, Any]) -> int:
    """When a run's first measured iteration started (CLOCK_MONOTONIC, the same for every
    process of the machine)."""
    starts = run["baseline"]["iteration_start_ns"]
    assert starts, "the run recorded no iteration start"
    return int(starts[0])


def test_a_decided_benchmark_leaves_the_rotation_and_the_undecided_ones_go_on_in_rounds(
    tmp_path: Path,
) -> None:
    """``work`` twice as slow (decided at the first look: the 99.99% repeated interval at 5 runs
    is +-6.0 s.d. wide in log units and would reach ln 2 only with a per-run s.d. near 0.1,
    ten times what these loops show on the loaded VM), ``same`` and ``also`` A/A (undecided,
    see STRICT): each benchmark is measured to its first look (5 runs) in the suite's order,
    then rounds 6-8 give ``same`` and ``also`` one run each, in turn; ``work`` is done."""
    repo = suite(tmp_path)
    out = tmp_path / "out"
    done = compare(repo.path, out, "--min-runs", "5", "--max-runs", "8")
    assert done.returncode == 0, done.stdout + done.stderr  # --fail-on never
    got = benchmarks(out)
    assert sorted(got) == ["also", "same", "work"]
    work = got["work"]
    assert len(work["runs"]) == 5
    assert work["analysis"]["verdict"] == "regression"
    assert work["analysis"]["stopping"]["decided_after"] == 5
    undecided = [name for name in got if name != "work"]
    for name in undecided:
        b = got[name]
        assert len(b["runs"]) == 8
        assert b["analysis"]["stopping"]["decided_after"] is None
        assert b["analysis"]["stopping"]["stopped"] == "max runs reached"
        assert [look["runs"] for look in b["analysis"]["stopping"]["looks"]] == [5, 6, 7, 8]
    # The suite's order is the file's: the first looks one after the other, then the rounds.
    order = sorted((first_start_ns(r), name, r["index"]) for name in got for r in got[name]["runs"])
    expected = [(name, i) for name in got for i in range(5)]
    expected += [(name, i) for i in range(5, 8) for name in undecided]
    assert [(name, i) for _, name, i in order] == expected


def test_the_shared_budget_ends_the_rotation(tmp_path: Path) -> None:
    """Three A/A benchmarks (HEAD against itself, undecided by STRICT) share a budget of 15 s,
    with runs of about 0.6 s each, their looks included, on the loaded VM: each gets its 5 runs
    to the first look (about 9 s for the three), then they alternate until the next run of each
    would end after the budget, and all stop undecided with a note that says so and the runs
    each got. Exact up to the machine's speed: a run would have to take 0.12 s for 40 runs of
    each to fit; on a machine slower than 1 s a run, the last benchmark's first look does not
    fit in what is left, and then it has no run and its note says so."""
    repo = suite(tmp_path, doubled=False)
    out = tmp_path / "out"
    done = compare(repo.path, out, "--budget", "15s", "--max-runs", "40")
    assert done.returncode == 0, done.stdout + done.stderr
    got = benchmarks(out)
    counts = {name: len(b["runs"]) for name, b in got.items()}
    assert all(n < 40 for n in counts.values()), counts
    looked = [n for n in counts.values() if n >= 5]
    assert looked, counts
    assert max(looked) - min(looked) <= 1, counts  # turn by turn after the first looks
    for name, n in counts.items():
        b = got[name]
        assert b["analysis"]["verdict"] in (None, "inconclusive")
        runs = f"{n} {'run' if n == 1 else 'runs'} measured"
        if n >= 5:
            assert b["analysis"]["stopping"]["decided_after"] is None
            assert b["note"].startswith(
                "budget spent: its next run would end after the 15.0 s the suite's undecided"
            ), b["note"]
            assert f"({runs})" in b["note"]
            assert b["analysis"]["stopping"]["stopped"] == "budget spent"
        else:  # its first look did not fit in what was left: not measured
            assert n == 0, counts
            assert b["note"].startswith("budget spent before its first look: the "), b["note"]


def test_an_interruption_mid_round_keeps_every_run_measured(tmp_path: Path) -> None:
    """Ctrl-C once the rounds have begun (16 runs or more in the file: the three first looks
    and a run of the rounds): the results file keeps the runs of every benchmark as they were
    written, and says where it stopped."""
    repo = suite(tmp_path, doubled=False)
    out = tmp_path / "out"
    popen = subprocess.Popen(
        command(repo.path, out, "--max-runs", "40"),
        cwd=repo.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    seen: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and popen.poll() is None:
            try:
                seen = benchmarks(out)
            except (OSError, ValueError):
                seen = {}
            if sum(len(b["runs"]) for b in seen.values()) >= 16:
                break
            time.sleep(0.05)
        assert popen.poll() is None, "duet ended before the rounds"
        os.killpg(popen.pid, signal.SIGINT)  # Ctrl-C: the whole process group
        _, stderr = popen.communicate(timeout=120)
    finally:
        if popen.poll() is None:
            popen.kill()
            popen.communicate()
    assert popen.returncode == 130, stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["state"]["stopped"].startswith("interrupted by SIGINT while measuring"), doc["state"]
    got = {b["name"]: b for b in doc["benchmarks"]}
    assert set(got) == {"work", "same", "also"}
    for name, before in seen.items():
        # Nothing written before the signal is lost; the run in progress may have ended.
        assert got[name]["runs"][: len(before["runs"])] == before["runs"]
    assert all(r["status"] in ("ok", "interrupted") for b in got.values() for r in b["runs"])


def test_runs_failing_beyond_max_failures_end_a_benchmark_measured_until_decided(
    tmp_path: Path,
) -> None:
    """Every run of the candidate fails in its second iteration (the start works, so a run
    may be retried): measured until decided, as in a fixed design, the benchmark stops after
    the third failed run, more than --max-failures 2, and the command exits 3 (the runs of
    tests/integration/test_failures.py, one at a time here)."""
    out = tmp_path / "out"
    count = tmp_path / "count"
    second = f"echo x >> {count}; [ $(( $(wc -l < {count}) % 2 )) -eq 1 ] || exit 9"
    args = [
        sys.executable, "-m", "duet_bench", "run", "--baseline", "true", "--candidate", second,
        "--max-runs", "8", "--iterations", "3", "--warmup", "0", "--max-failures", "2",
        "--isolation", "affinity", "--out", str(out), "--quiet", "--reps", "500",
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=240)
    assert done.returncode == 3, done.stderr
    [b] = json.loads((out / "results.json").read_text())["benchmarks"]
    assert [r["status"] for r in b["runs"]] == ["failed"] * 3
    assert b["note"] == "stopped after run 3 of 8: 3 runs failed, more than --max-failures 2"
    assert "more than --max-failures 2" in done.stderr
