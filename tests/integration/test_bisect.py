"""``duet bisect`` end to end: real repositories of 33 commits built by the tests, a C program
built by the configuration's ``build`` command at every commit, real duet measurements (CPU
time, few runs and iterations: about 1-2 s per comparison on an idle machine)."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from duet_bench.bisect.comparisons import Comparison, more_runs
from duet_bench.bisect.history import Commit
from duet_bench.bisect.search import search
from tests.conftest import is_root
from tests.integration.gitrepo import GitRepo, make_repo

# A bisect runs several comparisons; its subprocess may take 900 s.
pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.timeout(1200)]

# ~8 ms of CPU-bound work per iteration at 8M steps (xorshift; the same loop as test_compare).
WORK_C = textwrap.dedent(
    """
    #include <stdint.h>
    #include <stdio.h>
    int main(void) {
        uint64_t x = 88172645463325252ULL, acc = 0;
        for (uint64_t i = 0; i < STEPS; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17; acc += x & 0xff;
        }
        printf("%llu\\n", (unsigned long long)acc);
        return 0;
    }
    """
)
BASE_STEPS = 8_000_000
ISOLATION = "cgroup" if is_root() else "affinity"


def config(builds: Path, isolation: str = ISOLATION) -> str:
    """The suite. A 10% threshold: a 15% or 30% step is beyond it, and an unchanged commit is
    "no change" with these few runs even on a shared machine (at 5% an unchanged commit stayed
    inconclusive at 0.996 [0.932, 1.07] after 24 runs in CI on a day the host slowed one vCPU
    at a time). Every build appends its
    commit to ``builds``, and the number of the repository's worktrees at that moment (the
    user's checkout included) to ``<builds>.worktrees``."""
    record = f"git rev-parse HEAD >> {builds} && git worktree list | wc -l >> {builds}.worktrees"
    return textwrap.dedent(
        f"""
        runs = 6
        iterations = 5
        warmup = 1
        threshold = 0.10
        metric = "cpu"
        isolation = "{isolation}"
        build = "cc -O2 -o work work.c && {record}"

        [[benchmark]]
        name = "xorshift"
        command = "./work"
        """
    )


COMMITS_AFTER_GOOD = 32


def history(
    tmp_path: Path,
    factors: dict[int, float],
    commits: int = COMMITS_AFTER_GOOD,
    isolation: str = ISOLATION,
) -> GitRepo:
    """GOOD, then ``commits`` commits; commit ``i`` (1-based after GOOD) multiplies the work by
    ``factors[i]`` when given, every other commit changes a file that is not built."""
    steps = BASE_STEPS
    repo = make_repo(
        tmp_path / "project",
        [
            {
                "work.c": WORK_C.replace("STEPS", str(steps)),
                "duet.toml": config(tmp_path / "builds.txt", isolation),
            }
        ],
    )
    repo.tag("good")
    for i in range(1, commits + 1):
        if i in factors:
            steps = round(steps * factors[i])
            repo.commit({"work.c": WORK_C.replace("STEPS", str(steps))}, f"slower by {factors[i]}")
        else:
            repo.commit({"NOTES": f"note {i}\n"}, f"note {i}")
    return repo


def bisect(
    repo: GitRepo, out: Path, *args: str, timeout: float = 900
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "duet_bench",
            "bisect",
            *args,
            "--out",
            str(out),
            "--quiet",
            "--reps",
            "2000",
        ],
        cwd=repo.path,
        # The worktrees go under the test's directory, not the user's cache.
        env={**os.environ, "XDG_CACHE_HOME": str(out.parent / "xdg-cache")},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    summary = out / "bisect.json"
    return done, json.loads(summary.read_text()) if summary.exists() else None


def test_one_regressing_commit_is_found_in_about_log2_n_comparisons(tmp_path: Path) -> None:
    repo = history(tmp_path, {21: 1.3})
    culprit = repo.rev_parse("HEAD~11")
    out = tmp_path / "out"
    done, summary = bisect(repo, out, "good", "HEAD", "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert summary is not None
    assert json.loads(done.stdout)["outcome"] == "single"
    assert summary["outcome"] == "single", summary["message"]
    [named] = summary["culprits"]
    assert named["commit"] == culprit
    assert named["index"] == 21
    assert named["verdict"] == "regression"
    assert 1.2 < named["ratio"] < 1.4
    assert named["ci_low"] > 1.0
    assert summary["comparisons"] <= math.ceil(math.log2(COMMITS_AFTER_GOOD)) + 2
    # The path: GOOD..BAD first, then the search, ending on the commit against its parent.
    purposes = [s["purpose"] for s in summary["steps"]]
    assert purposes[0] == "GOOD..BAD"
    assert "search" in purposes
    # Every comparison is a results file on disk, and every commit was built once.
    for step in summary["steps"]:
        for name in step["files"]:
            assert (out / name).is_file()
    compared = {s["baseline"]["commit"] for s in summary["steps"]} | {
        s["candidate"]["commit"] for s in summary["steps"]
    }
    builds = (tmp_path / "builds.txt").read_text()
    assert sorted(builds.split()) == sorted(compared)  # GOOD is in every search step
    logs = sorted(p.name for p in (out / "logs").glob("build-????????????.log"))
    assert logs == sorted(f"build-{sha[:12]}.log" for sha in compared)
    assert (out / "report.md").read_text().count("| ") > 5
    # A commit's worktree is released once the search leaves it: at most GOOD, BAD, the
    # window's two ends and the commit being built existed at any build (beside the user's
    # checkout), where keeping them would have piled up every commit compared; none is left.
    at_builds = [int(n) - 1 for n in (tmp_path / "builds.txt.worktrees").read_text().split()]
    assert len(at_builds) == len(compared)
    assert max(at_builds) <= 5 < len(compared), at_builds
    assert repo.git("worktree", "list").count("\n") == 0  # only the user's checkout

    # Run again with the same --out: everything is read back, nothing is measured.
    again, summary2 = bisect(repo, out, "good", "HEAD")
    assert again.returncode == 1, again.stdout + again.stderr
    assert summary2 is not None
    assert summary2["culprits"] == summary["culprits"]
    assert "read back" in again.stderr
    assert (tmp_path / "builds.txt").read_text() == builds  # nothing measured, nothing built
    assert culprit[:12] in again.stdout


def test_a_regression_split_over_two_commits_is_reported_as_spread(tmp_path: Path) -> None:
    repo = history(tmp_path, {10: 1.15, 24: 1.15})
    first, second = repo.rev_parse("HEAD~22"), repo.rev_parse("HEAD~8")
    done, summary = bisect(repo, tmp_path / "out", "good", "HEAD")
    assert done.returncode == 1, done.stdout + done.stderr
    assert summary is not None
    assert summary["outcome"] == "spread", summary["message"]
    assert [c["commit"] for c in summary["culprits"]] == [first, second]
    for c in summary["culprits"]:
        assert c["verdict"] == "regression"
        assert 0.3 < c["share"] < 0.7
    assert "spread over several commits" in done.stdout
    assert first[:12] in done.stdout
    assert second[:12] in done.stdout


def test_bad_not_slower_than_good_is_a_result_not_a_search(tmp_path: Path) -> None:
    # The configuration's isolation is the suite's, as in duet compare: bisect used the
    # option's default (auto: cgroups, when root) unless --isolation was given.
    # BAD does half GOOD's work: "not slower" is then decided by a 2x improvement, not by an
    # A/A verdict (whose chance of a false regression a bootstrap over few runs cannot bound
    # tightly, tests/aa.py).
    repo = history(tmp_path, {2: 0.5}, commits=4, isolation="affinity")
    done, summary = bisect(repo, tmp_path / "out", "good", "HEAD")
    assert done.returncode == 0, done.stdout + done.stderr
    assert summary is not None
    assert summary["outcome"] == "not slower"
    assert summary["comparisons"] == 1
    assert "BAD is not slower than GOOD" in done.stdout
    [step] = summary["steps"]
    [round_file] = step["files"]
    measured = json.loads((tmp_path / "out" / round_file).read_text())
    assert measured["environment"]["isolation"] == "affinity-only"
    # Not slower because BAD was measured doing half the work: a duet whose two sides ran the
    # same version would also say "not slower", for the wrong reason.
    [analysed] = measured["benchmarks"]
    assert analysed["analysis"]["ratio"] < 0.75, analysed["analysis"]
    assert analysed["analysis"]["verdict"] == "improvement", analysed["analysis"]


def test_good_not_an_ancestor_of_bad_is_a_usage_error(tmp_path: Path) -> None:
    repo = history(tmp_path, {}, commits=4)
    repo.switch("good", detach=True)
    repo.commit({"SIDE": "x\n"}, "on a side branch")
    repo.branch("side")
    done, summary = bisect(repo, tmp_path / "out", "side", "main")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is not an ancestor of BAD" in done.stderr
    assert "merge-base" in done.stderr
    assert summary is None
    # The other way round too: BAD older than GOOD.
    reversed_, _ = bisect(repo, tmp_path / "out", "main", "good")
    assert reversed_.returncode == 2
    assert "not an ancestor" in reversed_.stderr


def test_a_benchmark_that_does_not_exist_is_named_with_the_closest(tmp_path: Path) -> None:
    repo = history(tmp_path, {}, commits=4)
    done, summary = bisect(repo, tmp_path / "out", "good", "HEAD", "--benchmark", "xorshfit")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no benchmark named 'xorshfit'" in done.stderr
    assert "'xorshift'" in done.stderr
    assert summary is None


def test_an_undecided_step_gets_more_runs_up_to_the_cap_then_resumes(tmp_path: Path) -> None:
    """Two runs give no interval (5 are needed): each comparison is inconclusive until more
    runs are measured. With a cap of 4 the search stops after its first step and says what
    would help; run again with a higher cap and the same --out, it reads back the rounds
    measured and goes on."""
    repo = history(tmp_path, {5: 1.3}, commits=8)
    out = tmp_path / "out"
    capped, summary = bisect(repo, out, "good", "HEAD", "--runs", "2", "--max-runs", "4")
    assert capped.returncode == 3, capped.stdout + capped.stderr
    assert summary is not None
    assert summary["outcome"] == "undecided"
    [step] = summary["steps"]
    assert step["runs"] == 4
    assert step["verdict"] is None
    assert step["files"] == [
        f"steps/{step['baseline']['commit'][:12]}-{step['candidate']['commit'][:12]}.r{i}.json"
        for i in (1, 2)
    ]
    assert "the search cannot continue" in capped.stdout
    assert "--max-runs 5 or more" in capped.stdout

    done, summary = bisect(repo, out, "good", "HEAD", "--runs", "2", "--max-runs", "6")
    assert summary is not None
    # What the search then finds is a measured verdict, not this test's subject: the exit code
    # says the outcome, whichever it is.
    exits = {"single": 1, "spread": 1, "undecided": 3}
    assert done.returncode == exits[summary["outcome"]], done.stdout + done.stderr
    first = summary["steps"][0]
    assert first["runs"] == 6
    assert len(first["files"]) == 3
    assert first["rounds_reused"] == 2
    assert re.search(r"no verdict after 4 runs \(ratio [0-9.]+\): 2 more runs", done.stderr)


def test_every_step_measured_until_decided_says_after_how_many_runs(tmp_path: Path) -> None:
    """``--step-max-runs 12``: each step is one round that stops at its first decided look
    (docs/statistics.md, method 2b), never topped up, and its record says after how many runs
    it decided. Commit 3 of 4 makes the work 1.3x; every other step compares unchanged work.

    How often it fails by chance: the rule's simultaneous 99% intervals bound a wrong verdict
    at 1% per step (about 4 steps), but that bound is for a change at the edge of the band;
    here the truth is 1.0 or 1.3 against a 10% threshold, so a wrong verdict needs the mean log
    ratio of 5 or more runs off by about 0.1, more than 10 standard errors at the per-run
    s.d. of at most 2% these CPU-time runs show on a shared machine: below 1e-6. Undecided
    after 12 runs (the test fails) needs a per-run s.d. above about 6.5% (Pocock c = 5.08 for
    5-12 looks at 99%: the half-width 5.08 s / sqrt(12) must stay below about 0.095)."""
    repo = history(tmp_path, {3: 1.3}, commits=4)
    out = tmp_path / "out"
    done, summary = bisect(repo, out, "good", "HEAD", "--step-max-runs", "12")
    assert done.returncode == 1, done.stdout + done.stderr
    assert summary is not None
    assert summary["outcome"] == "single", summary["message"]
    assert summary["culprits"][0]["commit"] == repo.rev_parse("HEAD~1")
    assert summary["until_decided"]["min_runs"] == 5
    assert summary["until_decided"]["max_runs"] == 12
    assert summary["max_runs"] == 12
    for step in summary["steps"]:
        assert step["until_decided_max_runs"] == 12
        assert 5 <= step["decided_after"] == step["runs"] <= 12, step
        [round_file] = step["files"]  # one round: no top-up
        [measured] = json.loads((out / round_file).read_text())["benchmarks"]
        assert measured["settings"]["until_decided"]["max_runs"] == 12
        assert measured["analysis"]["stopping"]["decided_after"] == step["decided_after"]
    assert re.search(r"decided after \d+ of up to 12 runs", done.stderr)
    # The same --out and options: read back, nothing measured again.
    again, summary2 = bisect(repo, out, "good", "HEAD", "--step-max-runs", "12")
    assert again.returncode == 1, again.stdout + again.stderr
    assert summary2 is not None
    assert [s["decided_after"] for s in summary2["steps"]] == [
        s["decided_after"] for s in summary["steps"]
    ]
    assert "read back" in again.stderr


def test_fixed_runs_and_steps_until_decided_together_are_a_usage_error(tmp_path: Path) -> None:
    repo = history(tmp_path, {}, commits=2)
    done, summary = bisect(
        repo, tmp_path / "out", "good", "HEAD", "--runs", "6", "--step-budget", "1m"
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "give one or the other" in done.stderr
    assert "--step-" in done.stderr
    assert summary is None


@pytest.mark.parametrize(
    ("have", "needed", "max_runs", "add"),
    [
        (2, None, 4, 2),  # no interval yet: as many again
        (6, 10, 24, 4),  # up to the planning
        (6, 9, 24, 4),  # an even number keeps the cores balanced
        (6, 7, 24, 2),  # at least 2
        (6, 9, 9, 3),  # capped
        (24, 30, 24, 0),  # the cap is reached
        # The planning is beyond the cap: believed from half the cap on, before that doubled
        # (6 runs of an unchanged commit once asked for 33 against a cap of 24 in CI).
        (6, 33, 24, 6),
        (12, 33, 24, 0),
        (5, 50, 20, 6),
        (10, 50, 20, 0),
    ],
)
def test_the_rounds_of_an_undecided_comparison(
    have: int, needed: int | None, max_runs: int, add: int
) -> None:
    assert more_runs(have, needed, max_runs) == add


def test_good_reached_only_through_a_merged_branch_is_a_usage_error(tmp_path: Path) -> None:
    """bisect walks BAD's first-parent line: a GOOD on a branch merged into it is not on it."""
    repo = make_repo(
        tmp_path / "project", [{"duet.toml": config(tmp_path / "builds.txt"), "work.c": WORK_C}]
    )
    repo.branch("topic")
    repo.switch("topic")
    repo.commit({"TOPIC": "x\n"}, "on the topic branch")
    repo.tag("topic-tip")
    repo.switch("main")
    repo.commit({"MAIN": "y\n"}, "on main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge topic", "topic")
    done, _ = bisect(repo, tmp_path / "out", "topic-tip", "main")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "only through a merged branch" in done.stderr
    assert "git log --first-parent main" in done.stderr


def test_an_interrupted_bisect_keeps_its_steps_and_resumes(tmp_path: Path) -> None:
    repo = history(tmp_path, {5: 1.3}, commits=8)
    out = tmp_path / "out"
    argv = [
        sys.executable,
        "-m",
        "duet_bench",
        "bisect",
        "good",
        "HEAD",
        "--out",
        str(out),
        "--quiet",
    ]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}
    with subprocess.Popen(
        [*argv, "--reps", "2000"], cwd=repo.path, env=env, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("duet: step 2:"):
                break
        proc.send_signal(signal.SIGINT)
        proc.stderr.read()
        assert proc.wait(timeout=120) == 128 + signal.SIGINT
    stopped = json.loads((out / "bisect.json").read_text())
    assert stopped["stopped"] == "interrupted by SIGINT"
    assert len(stopped["steps"]) >= 2
    assert repo.git("worktree", "list").count("\n") == 0  # only the user's checkout

    done, summary = bisect(repo, out, "good", "HEAD")
    assert done.returncode == 1, done.stdout + done.stderr
    assert summary is not None
    assert summary["stopped"] is None
    assert summary["culprits"][0]["commit"] == repo.rev_parse("HEAD~3")
    assert done.stderr.count("read back") >= 2


# The search alone (duet_bench.bisect.search.search is pure over its comparison function), on a
# model of a history: commit i multiplies the time by factors[i], every comparison returns the true
# ratio with a +-0.5% interval and the verdict duet_bench.analysis.verdict gives it. It covers what
# the measured tests above cannot afford: every position of the regressing commit, gradual
# changes, the limit on named commits.


def model(
    factors: dict[int, float], n: int = COMMITS_AFTER_GOOD, threshold: float = 0.05
) -> tuple[list[Commit], Callable[[Commit, Commit], Comparison], list[tuple[int, int]]]:
    from duet_bench.analysis import verdict

    commits = [Commit(f"{i:040x}", f"commit {i}", merge=False) for i in range(n + 1)]
    level = [math.prod(factors.get(j, 1.0) for j in range(1, i + 1)) for i in range(n + 1)]
    calls: list[tuple[int, int]] = []

    def compare(a: Commit, b: Commit) -> Comparison:
        i, j = commits.index(a), commits.index(b)
        calls.append((i, j))
        r = level[j] / level[i]
        low, high = r * 0.995, r * 1.005
        return Comparison(
            a.sha,
            b.sha,
            r,
            low,
            high,
            verdict(ratio=r, ci_low=low, ci_high=high, threshold=threshold),
            "cpu",
            6,
            None,
            (),
            0,
            None,
        )

    return commits, compare, calls


@pytest.mark.parametrize("n", [1, 2, 7, 32, 33])
def test_search_names_one_commit_at_any_position_in_ceil_log2_n_plus_2(n: int) -> None:
    for culprit in range(1, n + 1):
        commits, compare, calls = model({culprit: 1.3}, n)
        result = search(commits, compare)
        assert result.outcome == "single", (n, culprit, result.message)
        assert [c.index for c in result.culprits] == [culprit]
        assert len(result.steps) == len(set(calls))
        assert len(result.steps) <= math.ceil(math.log2(n)) + 2, (n, culprit)


def test_search_calls_a_change_in_steps_each_below_the_threshold_gradual() -> None:
    commits, compare, _ = model(dict.fromkeys(range(1, 33), 1.02))
    result = search(commits, compare)
    assert result.outcome == "spread"
    [first] = result.culprits
    assert first.against_parent.verdict == "no change"
    assert "built up in steps each below the threshold" in result.message


def test_search_names_at_most_max_culprits_commits() -> None:
    commits, compare, _ = model(dict.fromkeys((3, 9, 15, 21, 27, 30), 1.1))
    result = search(commits, compare, max_culprits=4)
    assert result.outcome == "spread"
    assert [c.index for c in result.culprits] == [3, 9, 15, 21]
    assert "the search stopped after 4 commits" in result.message


def test_search_of_a_commit_carrying_half_and_commits_below_the_threshold() -> None:
    # One 15% commit and eight 1% ones after it: the 15% commit carries about 64%; BAD against
    # it is slower than the threshold (8 x 1%), but the commit that crosses the threshold is
    # not slower than its parent.
    factors = {12: 1.15, **dict.fromkeys(range(20, 28), 1.01)}
    commits, compare, _ = model(factors)
    result = search(commits, compare)
    assert result.outcome == "spread"
    big, small = result.culprits
    assert big.index == 12
    assert big.against_parent.verdict == "regression"
    assert 0.55 < big.share < 0.75
    assert 20 <= small.index <= 27
    assert small.against_parent.verdict == "no change"
    assert "built up in steps each below the threshold" in result.message


class Holding:
    """The worktrees ``duet bisect`` would hold along a search of the model: a commit is held
    from its comparison until the search lets go of it (``on_leave``)."""

    def __init__(self, commits: list[Commit], compare: Callable[[Commit, Commit], Comparison]):
        self.commits = commits
        self._compare = compare
        self.held: set[int] = set()
        self.left: set[int] = set()
        #: Comparisons of a commit let go of (``duet bisect`` builds it again).
        self.again = 0
        self.peak = 0

    def compare(self, a: Commit, b: Commit) -> Comparison:
        pair = {self.commits.index(a), self.commits.index(b)}
        self.again += len(pair & self.left)
        self.left -= pair
        self.held |= pair
        self.peak = max(self.peak, len(self.held))
        return self._compare(a, b)

    def leave(self, commit: Commit) -> None:
        i = self.commits.index(commit)
        assert i in self.held, f"{i} let go of without being held"
        self.held.discard(i)
        self.left.add(i)


@pytest.mark.parametrize("n", [2, 7, 32, 33])
def test_search_lets_go_of_the_commits_that_leave_the_window(n: int) -> None:
    """What lets ``duet bisect`` release worktrees as it goes: at most five commits are held at
    once (GOOD or the last commit named, BAD, the window's ends, the commit probed), however
    long the history, and one let go of is never compared again while the search looks for
    one commit; only when it goes on after a commit it named (a slowdown spread over several)
    may it probe again a commit it let go of."""
    for culprit in range(1, n + 1):
        commits, compare, calls = model({culprit: 1.3}, n)
        holding = Holding(commits, compare)
        result = search(commits, holding.compare, on_leave=holding.leave)
        assert result.outcome == "single", (culprit, result.message)
        assert holding.again == 0, culprit
        assert holding.peak <= 5, (culprit, holding.peak)
        compared = {i for pair in calls for i in pair}
        assert compared == holding.held | holding.left
        if n >= 32:
            assert len(compared) > 5  # keeping every commit compared would have held more
    for first, second in [(1, n), (n // 3, n // 2), (2, n - 1)]:
        commits, compare, _ = model({first: 1.15, second: 1.15}, n)
        holding = Holding(commits, compare)
        result = search(commits, holding.compare, on_leave=holding.leave)
        assert holding.peak <= 5, (first, second, holding.peak)


def _resolved(**values: Any) -> Any:
    from duet_bench.settings import Resolved, Settings

    return Resolved(values=Settings(**values), origins=dict.fromkeys(values, "duet.toml"))


def test_step_design_from_the_options_or_the_configuration() -> None:
    from duet_bench.analysis.stopping import UntilDecided
    from duet_bench.bisect.run import BisectOptions, step_design
    from duet_bench.errors import UsageError
    from duet_bench.settings import Given

    base = BisectOptions(good="good", bad="HEAD", out_dir=Path("out"))
    # runs in the configuration and nothing else: fixed-design steps, as before.
    assert step_design(base, _resolved(runs=10)) is None
    # Nothing of runs, max_runs, budget anywhere: the default design of duet compare, its
    # budget each step's; --step-min-runs moves its first look.
    assert step_design(base, _resolved()) == UntilDecided(min_runs=5, max_runs=80, budget_s=600.0)
    assert step_design(replace(base, step_min_runs=7), _resolved()) == UntilDecided(
        min_runs=7, max_runs=80, budget_s=600.0
    )
    # The options; --step-budget alone takes the default maximum.
    assert step_design(replace(base, step_budget_s=60.0), _resolved(runs=10)) == UntilDecided(
        budget_s=60.0
    )
    assert step_design(
        replace(base, step_max_runs=12, step_min_runs=6), _resolved(runs=10)
    ) == UntilDecided(min_runs=6, max_runs=12)
    # The configuration's, as duet compare reads them; an option wins key by key.
    assert step_design(base, _resolved(runs=10, max_runs=20)) == UntilDecided(max_runs=20)
    assert step_design(
        replace(base, step_min_runs=8), _resolved(runs=10, max_runs=20)
    ) == UntilDecided(min_runs=8, max_runs=20)
    assert step_design(
        replace(base, step_max_runs=12), _resolved(runs=10, max_runs=20, budget_s=300.0)
    ) == UntilDecided(max_runs=12, budget_s=300.0)
    # --runs or bisect's own --max-runs keep fixed-design steps over the configuration's...
    assert step_design(replace(base, given=Given.of(runs=6)), _resolved(max_runs=20)) is None
    assert step_design(replace(base, max_runs=24), _resolved(max_runs=20)) is None
    # ...and beside a --step-* option are a usage error, as is --step-min-runs alone.
    for wrong in (
        replace(base, given=Given.of(runs=6), step_max_runs=12),
        replace(base, max_runs=24, step_budget_s=60.0),
        replace(base, step_min_runs=6),
    ):
        with pytest.raises(UsageError):
            step_design(wrong, _resolved(runs=10))
