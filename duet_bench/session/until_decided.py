"""Measuring until decided in a session (docs/statistics.md, method 2b): the plans that stop
when the verdict is decided (:class:`UntilDecidedPlans`, :func:`stop_rule`) and the machine time
the benchmarks share (:class:`Budget`). The runner goes through the plans as through any."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from duet_bench import units
from duet_bench.analysis import analyze_benchmark
from duet_bench.plan import BenchmarkSpec, RunPlan
from duet_bench.results import BenchmarkRecord

if TYPE_CHECKING:
    from duet_bench.analysis import AnalysisSettings

__all__ = ["Budget", "Recording", "UntilDecidedPlans", "stop_rule"]


class Recording(Protocol):
    """What :func:`stop_rule` needs of the session's recorder: the record so far, and saving
    it after a change."""

    record: BenchmarkRecord

    def save(self) -> None: ...


class Budget:
    """The machine time the benchmarks measured until decided share (``--budget``): each gets
    what is left divided by the benchmarks still to measure, so that what a decided benchmark
    did not use goes to the others."""

    def __init__(self, total_s: float, names: Sequence[str]) -> None:
        self.total_s = total_s
        self.left = list(names)
        self.spent_s = 0.0
        self.started: float | None = None

    @staticmethod
    def of(benchmarks: Sequence[BenchmarkSpec]) -> Budget | None:
        """The budget of the suite (the largest any of its benchmarks has), or None."""
        with_budget = [
            b for b in benchmarks if b.until_decided is not None and b.until_decided.budget_s
        ]
        if not with_budget:
            return None
        total = max(float(b.until_decided.budget_s or 0) for b in with_budget if b.until_decided)
        return Budget(total, [b.name for b in with_budget])

    def allowance_s(self, bench: BenchmarkSpec) -> float | None:
        """This benchmark's share of what is left, or None when it has no budget."""
        if bench.name not in self.left:
            return None
        if self.started is None:
            self.started = time.monotonic()
        return max(0.0, self.total_s - self.spent_s) / len(self.left)

    def done(self, bench: BenchmarkSpec) -> None:
        if bench.name in self.left and self.started is not None:
            self.spent_s += time.monotonic() - self.started
            self.started = None
            self.left.remove(bench.name)


class UntilDecidedPlans(tuple[RunPlan, ...]):
    """The planned runs of a benchmark measured until decided: iterating asks ``go_on`` before
    every run after the first, and ends when it says no. The runner goes through them as
    through any plan; ``len`` stays the most runs planned."""

    go_on: Callable[[], bool]

    def __new__(cls, plans: tuple[RunPlan, ...], go_on: Callable[[], bool]) -> UntilDecidedPlans:
        self = super().__new__(cls, plans)
        self.go_on = go_on
        return self

    def __iter__(self) -> Iterator[RunPlan]:
        for i, plan in enumerate(tuple.__iter__(self)):
            if i and not self.go_on():
                return
            yield plan


def stop_rule(
    bench: BenchmarkSpec,
    recorder: Recording,
    settings: AnalysisSettings,
    budget: Budget | None,
    say: Callable[[str], None],
) -> Callable[[], bool]:
    """Whether to start another run: not once the verdict is decided (docs/statistics.md,
    method 2b), nor when the run would not end within the benchmark's share of the budget."""
    started = time.monotonic()
    # Continued: the earlier runs are in the record but not in this session's time.
    first = len(recorder.record.runs)
    allowance = None if budget is None else budget.allowance_s(bench)

    def go_on() -> bool:
        record = recorder.record
        analysis = analyze_benchmark(record, settings)
        stopping = analysis.stopping
        if stopping is not None and stopping.decided_after is not None:
            say(f"{analysis.verdict}, {stopping.sentence()}")
            return False
        if allowance is not None:
            elapsed = time.monotonic() - started
            per_run = elapsed / max(1, len(record.runs) - first)
            if elapsed + per_run > allowance:
                why = (
                    f"budget spent: the next run would end after its share of the budget "
                    f"({units.clock(allowance * 1e9)}, {len(record.runs)} runs measured)"
                )
                recorder.record = replace(record, note=why)
                recorder.save()
                say(why)
                return False
        return True

    return go_on
