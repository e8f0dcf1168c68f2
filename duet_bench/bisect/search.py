"""The search of ``duet bisect`` (``docs/bisect.md`` gives the rules and why).

``commits[0]`` is GOOD, ``commits[-1]`` BAD. Every probe compares a commit with a reference
(GOOD, or the last commit named) by a duet comparison: a regression beyond the threshold is
"slower", no change or an improvement "not slower", and an inconclusive verdict gets more runs
(:class:`duet_bench.bisect.comparisons.Comparer`) until it is decided or the cap is reached; then
the search stops and says what would decide it. :func:`search` is the algorithm alone, over any
``compare`` function.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from duet_bench import units
from duet_bench.bisect.comparisons import Comparison
from duet_bench.bisect.history import Commit
from duet_stats.ratio import MIN_BOOTSTRAP_RUNS

Outcome: TypeAlias = Literal["single", "spread", "not slower", "undecided"]
Purpose: TypeAlias = Literal["GOOD..BAD", "search", "against parent", "rest"]

#: The named commit must carry at least this share of GOOD..BAD's log ratio to be "the" commit;
#: below it the search goes on after it for the commits that carry the rest.
SPREAD_SHARE = 0.75
#: At most this many commits are named; beyond, the change is called gradual.
MAX_CULPRITS = 4


@dataclass(frozen=True, slots=True)
class Step:
    number: int
    purpose: Purpose
    #: Indices into the commits (0 is GOOD).
    baseline: int
    candidate: int
    comparison: Comparison
    #: The search window (last index known not slower, first known slower) after this step.
    window: tuple[int, int] | None = None

    @property
    def outcome(self) -> str:
        if not self.comparison.decided:
            return "undecided"
        return "slower" if self.comparison.slower else "not slower"

    def to_dict(self, commits: Sequence[Commit]) -> dict[str, Any]:
        return {
            "number": self.number,
            "purpose": self.purpose,
            "baseline": {"index": self.baseline, "commit": commits[self.baseline].sha},
            "candidate": {"index": self.candidate, "commit": commits[self.candidate].sha},
            "outcome": self.outcome,
            "window": list(self.window) if self.window else None,
            **{
                k: v
                for k, v in self.comparison.to_dict().items()
                if k not in ("baseline", "candidate")
            },
        }


@dataclass(frozen=True, slots=True)
class Culprit:
    index: int
    commit: Commit
    #: The commit against its first parent.
    against_parent: Comparison
    #: Its log ratio over GOOD..BAD's.
    share: float

    def to_dict(self) -> dict[str, Any]:
        c = self.against_parent
        return {
            "index": self.index,
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "merge": self.commit.merge,
            "ratio": c.ratio,
            "ci_low": c.ci_low,
            "ci_high": c.ci_high,
            "verdict": c.verdict,
            "share": self.share,
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    outcome: Outcome
    steps: tuple[Step, ...]
    culprits: tuple[Culprit, ...]
    total: Comparison | None
    #: What was found, in a sentence or two; ``advice``: what would help when undecided.
    message: str
    advice: str | None = None
    #: When undecided: the indices the regression is known to lie between (exclusive, inclusive).
    window: tuple[int, int] | None = None


class _Undecided(Exception):
    def __init__(self, step: Step, window: tuple[int, int] | None) -> None:
        self.step = step
        self.window = window


def _sh(commits: Sequence[Commit], i: int) -> str:
    return "GOOD" if i == 0 else ("BAD" if i == len(commits) - 1 else commits[i].sha[:12])


def search(
    commits: Sequence[Commit],
    compare: Callable[[Commit, Commit], Comparison],
    *,
    spread_share: float = SPREAD_SHARE,
    max_culprits: int = MAX_CULPRITS,
    max_runs: int | None = None,
    on_step: Callable[[Step, Sequence[Commit]], None] = lambda step, commits: None,
    on_leave: Callable[[Commit], None] = lambda commit: None,
) -> SearchResult:
    """Find the commit(s) of ``commits[1:]`` that made ``commits[-1]`` slower than
    ``commits[0]``. A pair compared twice (the search's last step is often the named commit
    against its parent) is one step.

    ``on_leave`` gets a compared commit as soon as it left the window: its worktree and build
    can go (the search holds on to the reference, BAD and the window's ends, the lower of which
    may turn out to be the parent of the commit named). While the search looks for one commit,
    none it let go of is compared again; when it goes on after a commit it named (a slowdown
    spread over several), a probe of the new window may be one it let go of (compared again,
    it is let go of again later)."""
    steps: list[Step] = []
    done: dict[tuple[str, str], Step] = {}
    bad = len(commits) - 1
    compared: set[int] = set()

    def keep_only(live: Iterable[int]) -> None:
        for i in sorted(compared - set(live)):
            compared.discard(i)
            on_leave(commits[i])

    def probe(
        purpose: Purpose, base: int, cand: int, window: tuple[int, int] | None = None
    ) -> Step:
        pair = (commits[base].sha, commits[cand].sha)
        before = done.get(pair)
        comparison = (
            before.comparison if before is not None else compare(commits[base], commits[cand])
        )
        compared.update((base, cand))
        if comparison.decided and purpose == "search" and window is not None:
            lo, hi = window
            window = (lo, cand) if comparison.slower else (cand, hi)
        if before is not None:  # compared already (for another purpose): not a new step
            return Step(before.number, purpose, base, cand, comparison, window)
        step = Step(len(steps) + 1, purpose, base, cand, comparison, window)
        steps.append(step)
        done[pair] = step
        on_step(step, commits)
        if not comparison.decided:
            raise _Undecided(step, window or (base, cand))
        return step

    culprits: list[Culprit] = []
    total: Comparison | None = None
    try:
        total = probe("GOOD..BAD", 0, bad).comparison
        if not total.slower:
            return SearchResult(
                "not slower",
                tuple(steps),
                (),
                total,
                f"BAD is not slower than GOOD: {_figure(total)} ({total.verdict}); nothing "
                "to search",
            )
        ref, rest = 0, total
        while True:
            lo, hi = ref, bad
            while hi - lo > 1:
                mid = (lo + hi) // 2
                step = probe("search", ref, mid, (lo, hi))
                assert step.window is not None
                lo, hi = step.window
                keep_only({ref, bad, *range(lo, hi + 1)})
            parent = probe("against parent", hi - 1, hi).comparison
            share = parent.log_ratio / total.log_ratio if total.log_ratio > 0 else 0.0
            culprits.append(Culprit(hi, commits[hi], parent, share))
            carried = sum(c.share for c in culprits)
            if not parent.slower or carried >= spread_share or hi == bad:
                break
            if len(culprits) >= max_culprits:
                break
            keep_only(range(hi, bad + 1))  # the search goes on after the commit named
            rest = probe("rest", hi, bad).comparison
            if not rest.slower:
                break
            ref = hi
    except _Undecided as stop:
        return _undecided(commits, tuple(steps), tuple(culprits), total, stop, max_runs)
    return _found(commits, tuple(steps), tuple(culprits), total, rest, spread_share, max_culprits)


def _figure(c: Comparison) -> str:
    return f"ratio {units.ratio(c.ratio)} {units.interval(c.ci_low, c.ci_high)}"


def _name(commits: Sequence[Commit], c: Culprit) -> str:
    kind = " (a merge: what it brought in, as a whole)" if c.commit.merge else ""
    return f'{c.commit.short} "{c.commit.subject}" (commit {c.index} of {len(commits) - 1}){kind}'


def _found(
    commits: Sequence[Commit],
    steps: tuple[Step, ...],
    culprits: tuple[Culprit, ...],
    total: Comparison,
    rest: Comparison,
    spread_share: float,
    max_culprits: int,
) -> SearchResult:
    first = culprits[0]
    carried = sum(c.share for c in culprits)
    if len(culprits) == 1 and first.against_parent.slower and first.share >= spread_share:
        return SearchResult(
            "single",
            steps,
            culprits,
            total,
            f"{_name(commits, first)} made it slower: {_figure(first.against_parent)} against "
            f"its parent, {units.share(first.share)} of GOOD..BAD ({_figure(total)})",
        )
    lines = [
        f"the slowdown of GOOD..BAD ({_figure(total)}) is spread over several commits; "
        f"no one commit carries {units.share(spread_share)} of it:"
    ]
    for c in culprits:
        lines.append(
            f"  {_name(commits, c)}: {_figure(c.against_parent)} against its parent "
            f"({c.against_parent.verdict}), {units.share(c.share)}"
        )
    last = culprits[-1]
    if not last.against_parent.slower:
        lines.append(
            f"  {last.commit.short} is the first commit slower than its reference beyond the "
            "threshold, but not against its parent: the change built up in steps each below "
            "the threshold"
        )
    elif len(culprits) >= max_culprits and carried < spread_share:
        lines.append(f"  the search stopped after {len(culprits)} commits: the change is gradual")
    elif carried < spread_share:
        after = (
            f" (BAD against {last.commit.short}: {_figure(rest)}, {rest.verdict})"
            if rest.baseline == last.commit.sha
            else ""
        )
        lines.append(
            f"  the other {units.share(1 - carried)} is carried by no one commit beyond the "
            f"threshold{after}: commits each below it, or noise"
        )
    return SearchResult("spread", steps, culprits, total, "\n".join(lines))


def _undecided(
    commits: Sequence[Commit],
    steps: tuple[Step, ...],
    culprits: tuple[Culprit, ...],
    total: Comparison | None,
    stop: _Undecided,
    max_runs: int | None,
) -> SearchResult:
    s = stop.step
    c = s.comparison
    what = (
        f"step {s.number} ({_sh(commits, s.candidate)} against {_sh(commits, s.baseline)}) "
        f"stayed {c.verdict or 'without a verdict'} after {c.runs} runs ({_figure(c)})"
    )
    where = ""
    if stop.window is not None:
        lo, hi = stop.window
        where = (
            f"; the regression is after {_sh(commits, lo)} and at or before "
            f"{_sh(commits, hi)} ({hi - lo} commits)"
        )
    found = ""
    if culprits:
        found = "; named so far: " + ", ".join(
            f"{x.commit.short} ({_figure(x.against_parent)}, {units.share(x.share)})"
            for x in culprits
        )
    advice = []
    if c.until_decided_max_runs is not None:
        # Measured until decided: the step is not topped up; a larger maximum is a new
        # measurement of each step (its round files are kept beside, as .stale.json).
        advice.append(
            f"--step-max-runs {max(2 * c.until_decided_max_runs, c.runs_needed or 0)} or a "
            f"larger --step-budget (the step stopped undecided after {c.runs} of up to "
            f"{c.until_decided_max_runs} runs; every step is then measured anew)"
        )
    elif c.verdict is None and c.runs < MIN_BOOTSTRAP_RUNS:
        advice.append(
            f"--max-runs {MIN_BOOTSTRAP_RUNS} or more (an interval needs {MIN_BOOTSTRAP_RUNS} "
            "successful runs; run the same command again with the same --out: what was "
            "measured is reused)"
        )
    if (
        c.until_decided_max_runs is None
        and c.runs_needed is not None
        and (max_runs is None or c.runs_needed > max_runs)
    ):
        advice.append(
            f"--max-runs {c.runs_needed} (the planning says about {c.runs_needed} runs decide "
            "it; run the same command again with the same --out: what was measured is reused)"
        )
    advice += [
        "more --iterations per run or a quieter machine (duet doctor)",
        "a larger --threshold if a change this small does not matter",
    ]
    return SearchResult(
        "undecided",
        steps,
        culprits,
        total,
        f"the search cannot continue: {what}{where}{found}",
        advice="; ".join(advice),
        window=stop.window,
    )


def describe_step(step: Step, commits: Sequence[Commit]) -> str:
    """The progress line of one step."""

    c = step.comparison
    n = len(commits) - 1
    what = {
        "GOOD..BAD": "BAD against GOOD",
        "search": f"commit {step.candidate}/{n} {_sh(commits, step.candidate)} against "
        f"{_sh(commits, step.baseline)}",
        "against parent": f"commit {step.candidate}/{n} {_sh(commits, step.candidate)} against "
        "its parent",
        "rest": f"BAD against commit {step.baseline}/{n} {_sh(commits, step.baseline)}",
    }[step.purpose]
    then = ""
    if step.window is not None and step.purpose == "search" and c.decided:
        lo, hi = step.window
        left = hi - lo - 1
        then = f" -> between {lo} and {hi}" + (
            f" (~{math.ceil(math.log2(left + 1))} more)" if left else ""
        )
    runs = f"{c.runs} runs"
    if c.until_decided_max_runs is not None:
        runs = (
            f"decided after {c.decided_after} of up to {c.until_decided_max_runs} runs"
            if c.decided_after is not None
            else f"undecided after {c.runs} of up to {c.until_decided_max_runs} runs"
        )
    return (
        f"step {step.number}: {what}: {_figure(c)} {c.verdict or 'no verdict'}, {runs}"
        f" -> {step.outcome}{then}"
    )
