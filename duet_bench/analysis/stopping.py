"""Measuring until decided (docs/statistics.md, method 2b): the default design, unless
``--runs`` or ``runs`` asks for a fixed one (:class:`UntilDecided`), the verdict at every look
(:func:`looks_of`), and what the analysis and the reports keep of it (:class:`Stopping`).

Not the *sequential method* (``--method sequential``, one side after the other): this is about
when to stop measuring. The intervals are the repeated confidence intervals of
:mod:`duet_stats.stopping`, with simultaneous coverage: the verdict at whatever look the
measurement stopped is wrong with probability at most ``1 - confidence``. The verdict words and
their conditions are those of a fixed design (:func:`duet_bench.analysis.verdict.verdict`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from duet_bench import units
from duet_bench.analysis.verdict import Verdict, verdict
from duet_bench.defaults import DEFAULT_BUDGET_S, DEFAULT_MAX_RUNS, DEFAULT_MIN_RUNS
from duet_bench.errors import UsageError
from duet_bench.results import BenchmarkRecord, RecordedDesign, RecordedPlan
from duet_bench.results import analysis as stored
from duet_stats.stopping import stopping_bounds, stopping_intervals

__all__ = [
    "BUILT_IN",
    "DEFAULT_BUDGET_S",
    "DEFAULT_MAX_RUNS",
    "DEFAULT_MIN_RUNS",
    "Look",
    "Stopping",
    "UntilDecided",
    "looks_of",
    "stopping_of",
    "until_decided",
]

#: The origin :func:`duet_bench.settings.resolve` gives a setting nobody set.
BUILT_IN: Final = "the built-in default"
#: The boundary's shape (docs/statistics.md: chosen by the study).
SHAPE: Final = "pocock"


@dataclass(frozen=True, slots=True)
class UntilDecided:
    """Measure a benchmark until its verdict is decided: a look after every run from
    ``min_runs`` to ``max_runs``, and no run started once ``budget_s`` seconds of machine time
    are spent (None: no time limit)."""

    min_runs: int = DEFAULT_MIN_RUNS
    max_runs: int = DEFAULT_MAX_RUNS
    budget_s: float | None = None

    def __post_init__(self) -> None:
        if self.min_runs < 3:
            raise UsageError(
                f"--min-runs must be at least 3, got {self.min_runs}",
                fix="give --min-runs 5 (the default): the method gives no interval below 5 runs",
            )
        if self.max_runs < self.min_runs:
            raise UsageError(
                f"--max-runs {self.max_runs} is below --min-runs {self.min_runs}",
                fix=f"give --max-runs {self.min_runs} or more (the default is"
                f" {DEFAULT_MAX_RUNS}), or a lower --min-runs",
            )
        if self.budget_s is not None and not self.budget_s > 0:
            raise UsageError(
                f"--budget must be a positive duration, got {self.budget_s} s",
                fix="give e.g. --budget 10m",
            )

    def to_record(self) -> RecordedDesign:
        """What a benchmark's ``settings.until_decided`` keeps."""
        return RecordedDesign(
            min_runs=self.min_runs, max_runs=self.max_runs, budget_s=self.budget_s, shape=SHAPE
        )

    @staticmethod
    def from_plan(plan: RecordedPlan) -> UntilDecided | None:
        """The design a benchmark's recorded plan names, or None (a fixed design)."""
        m = plan.until_decided
        if m is None:
            return None
        lo, hi, budget = m.min_runs, m.max_runs, m.budget_s
        if lo is None or hi is None or not 3 <= lo <= hi:
            return None
        return UntilDecided(
            min_runs=lo,
            max_runs=hi,
            budget_s=float(budget) if budget is not None and budget > 0 else None,
        )


def until_decided(
    lo: int | None, hi: int | None, budget: float | None, origins: Mapping[str, str]
) -> UntilDecided | None:
    """The design of a benchmark's resolved stopping settings (``min_runs`` ``lo``,
    ``max_runs`` ``hi``, ``budget_s`` ``budget``; ``origins`` says where each came from).

    - ``max_runs`` or ``budget_s`` set: until decided (the other from its default).
    - ``runs`` set (command line or configuration) and neither of them: a fixed design of
      ``runs``; ``--runs`` on the command line keeps its meaning over the configuration's
      stopping keys too, and beside ``--min-runs``, ``--max-runs`` or ``--budget`` it is a
      usage error.
    - Nothing set: the default design, until decided with :data:`DEFAULT_MIN_RUNS` (or
      ``min_runs``), :data:`DEFAULT_MAX_RUNS` and :data:`DEFAULT_BUDGET_S` (docs/statistics.md,
      method 2b)."""
    runs_from = origins.get("runs", BUILT_IN)
    if hi is None and budget is None:
        if runs_from == BUILT_IN:
            return UntilDecided(
                min_runs=DEFAULT_MIN_RUNS if lo is None else int(lo),
                max_runs=DEFAULT_MAX_RUNS,
                budget_s=DEFAULT_BUDGET_S,
            )
        if lo is not None and origins.get("min_runs", "").startswith("--"):
            raise UsageError(
                f"--min-runs needs --max-runs or --budget here: runs (from {runs_from}) asks for "
                "a fixed design, which has no first look",
                fix=f"add --max-runs {DEFAULT_MAX_RUNS} or --budget 10m, or drop --min-runs",
            )
        return None
    stopping_given = any(
        origins.get(k, "").startswith("--") for k in ("min_runs", "max_runs", "budget_s")
    )
    if runs_from.startswith("--"):
        if stopping_given:
            raise UsageError(
                "--runs asks for a fixed number of runs, --min-runs/--max-runs/--budget for "
                "measuring until decided: give one or the other",
                fix="drop --runs to measure until decided, or drop --min-runs, --max-runs and "
                "--budget for a fixed design",
            )
        return None
    return UntilDecided(
        min_runs=DEFAULT_MIN_RUNS if lo is None else int(lo),
        max_runs=DEFAULT_MAX_RUNS if hi is None else int(hi),
        budget_s=None if budget is None else float(budget),
    )


def check_continuation(
    earlier: BenchmarkRecord,
    *,
    plan: RecordedPlan,
    versions: Mapping[str, object],
    design: UntilDecided | None,
    source: str,
) -> None:
    """Refuse to continue ``earlier`` (``--continue``) unless the new measurement (its recorded
    ``plan``) is the same rule with a maximum at least as large: the same commands, plan and
    analysis settings, the same first look, and ``earlier`` undecided. Then the continued
    measurement is the one that had planned the larger maximum from the start
    (docs/statistics.md, "Continuing an undecided measurement"), and its verdict keeps its
    level."""
    old = UntilDecided.from_plan(earlier.settings)
    name = earlier.name
    if old is None:
        raise UsageError(
            f"{source}: {name!r} was measured with a fixed design of "
            f"{earlier.settings.runs} runs: more runs read together with them would be a "
            "second look at the same test, which its error rate does not allow",
            fix="measure again without --runs (or with --max-runs or --budget), which stops "
            "when decided",
        )
    if design is None:
        raise UsageError(
            "--continue extends a measurement until decided, and runs (--runs or the "
            "configuration's) asks for a fixed design",
            fix="drop --runs; with runs in the configuration, add --max-runs "
            f"{max(old.max_runs * 2, old.max_runs + 10)}",
        )
    stopping = earlier.analysis.stopping if earlier.analysis is not None else None
    if stopping is not None and stopping.decided_after is not None:
        said = earlier.analysis.verdict if earlier.analysis is not None else None
        raise UsageError(
            f"{source}: {name!r} is decided already ({said} after {stopping.decided_after} "
            "runs): there is nothing to continue",
            fix="read its report; a new question needs a new measurement",
        )
    problems = []
    if design.min_runs != old.min_runs:
        problems.append(f"--min-runs {design.min_runs} (it had {old.min_runs})")
    if design.max_runs < old.max_runs or design.max_runs <= len(earlier.runs):
        problems.append(
            f"--max-runs {design.max_runs} (it had {old.max_runs} and measured "
            f"{len(earlier.runs)} runs: give more)"
        )
    was = earlier.settings
    pairs: list[tuple[str, object, object]] = [
        ("iterations", plan.iterations, was.iterations),
        ("warmup", plan.warmup, was.warmup),
        ("method", plan.method, was.method),
        ("crossover", plan.crossover, was.crossover),
        ("seed", plan.seed, was.seed),
    ]
    if was.analysis is not None and plan.analysis is not None:
        new_a, old_a = plan.analysis, was.analysis
        pairs += [
            ("confidence", new_a.confidence, old_a.confidence),
            ("threshold", new_a.threshold, old_a.threshold),
            ("metric", new_a.metric, old_a.metric),
            ("winsorize", new_a.winsorize, old_a.winsorize),
        ]
    problems += [f"{key} {now!r} (it had {had!r})" for key, now, had in pairs if now != had]
    if dict(earlier.versions) != dict(versions):
        problems.append("other commands than the ones it measured")
    if problems:
        raise UsageError(
            f"{source}: {name!r} cannot be continued with " + "; ".join(problems) + ": the "
            "continued measurement must be the same rule with a larger maximum",
            fix="give the settings it was measured with (its results.json, settings) and a "
            "larger --max-runs",
        )


@dataclass(frozen=True, slots=True)
class Look:
    """The verdict after ``runs`` successful runs, from the repeated interval."""

    runs: int
    ratio: float
    ci_low: float
    ci_high: float
    verdict: Verdict

    def to_block(self) -> stored.Look:
        return stored.Look(
            runs=self.runs,
            ratio=self.ratio,
            ci_low=self.ci_low,
            ci_high=self.ci_high,
            verdict=self.verdict,
        )


@dataclass(frozen=True, slots=True)
class Stopping:
    """How a measurement until decided went: the design, every look, where it stopped and why,
    and the machine time it took."""

    design: UntilDecided
    looks: tuple[Look, ...]
    #: The successful runs at the look that decided; None when it ended undecided.
    decided_after: int | None
    #: Why it stopped without a decision (``max runs reached``, ``budget spent``, ...), or None.
    stopped: str | None
    #: Machine time of the benchmark's runs, first start to last end (None: not recorded).
    elapsed_ns: int | None

    def sentence(self) -> str:
        """``decided after 6 of up to 40 runs (1 min 12 s)`` or ``not decided after 40 of up
        to 40 runs (8 min 3 s): max runs reached``."""
        took = f" ({units.clock(self.elapsed_ns)})" if self.elapsed_ns is not None else ""
        runs = self.looks[-1].runs if self.looks else 0
        if self.decided_after is not None:
            return f"decided after {self.decided_after} of up to {self.design.max_runs} runs{took}"
        why = f": {self.stopped}" if self.stopped else ""
        return f"not decided after {runs} of up to {self.design.max_runs} runs{took}{why}"

    def to_block(self) -> stored.StoppingBlock:
        return stored.StoppingBlock(
            min_runs=self.design.min_runs,
            max_runs=self.design.max_runs,
            budget_s=self.design.budget_s,
            shape=SHAPE,
            decided_after=self.decided_after,
            stopped=self.stopped,
            elapsed_ns=self.elapsed_ns,
            looks=tuple(look.to_block() for look in self.looks),
        )


def looks_of(
    log_run_ratios: np.ndarray[Any, Any],
    design: UntilDecided,
    *,
    confidence: float,
    threshold: float,
) -> tuple[Look, ...]:
    """The verdict at every look from ``design.min_runs`` to the runs given (at most
    ``design.max_runs``), read from the repeated intervals of :mod:`duet_stats.stopping` at
    ``confidence``, each verdict by ``threshold``."""
    if log_run_ratios.size < design.min_runs:
        return ()
    bounds = stopping_bounds(
        min_runs=design.min_runs,
        max_runs=design.max_runs,
        confidence=confidence,
        shape=SHAPE,
    )
    out = []
    for i in stopping_intervals(log_run_ratios, bounds):
        v = verdict(ratio=i.ratio, ci_low=i.ci_low, ci_high=i.ci_high, threshold=threshold)
        out.append(Look(runs=i.runs, ratio=i.ratio, ci_low=i.ci_low, ci_high=i.ci_high, verdict=v))
    return tuple(out)


def stopping_of(
    looks: tuple[Look, ...],
    design: UntilDecided,
    *,
    elapsed_ns: int | None,
    stopped: str | None,
) -> Stopping:
    """Where the measurement stopped: decided at its last look, or not (and why)."""
    last = looks[-1] if looks else None
    decided = last is not None and last.verdict != "inconclusive"
    if not decided and stopped is None:
        stopped = "max runs reached" if last is not None and last.runs >= design.max_runs else None
    return Stopping(
        design=design,
        looks=looks,
        decided_after=last.runs if decided and last is not None else None,
        stopped=None if decided else stopped,
        elapsed_ns=elapsed_ns,
    )
