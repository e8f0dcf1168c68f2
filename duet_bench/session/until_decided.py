"""Measuring a suite until decided, round by round (docs/statistics.md, method 2b, "A suite"):
every round gives each benchmark still in the rotation one more run; a benchmark leaves it when
its rule has decided, at its ``max_runs``, when its runs fail beyond ``--max-failures``, or when
its next run would not end within the machine time the suite shares (:class:`Budget`): then it
is undecided, and its note says so with the runs it got."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from duet_bench import units
from duet_bench.plan import BenchmarkSpec
from duet_bench.session.benchmark import Measuring

__all__ = ["Budget", "measure_in_rounds"]


class Budget:
    """The machine time (``--budget``) the benchmarks measured until decided share: the
    session's clock from the first round on. A benchmark's next run starts only when, at the
    mean time its runs have taken so far (run and look), it would end within the budget; its
    first run starts while any of the budget is left."""

    def __init__(self, total_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.total_s = total_s
        self.clock = clock
        self.started = clock()

    @staticmethod
    def of(benchmarks: Sequence[BenchmarkSpec]) -> Budget | None:
        """The budget of the suite (the largest any of its benchmarks has), or None."""
        budgets = [
            b.until_decided.budget_s
            for b in benchmarks
            if b.until_decided is not None and b.until_decided.budget_s
        ]
        return Budget(max(budgets)) if budgets else None

    def spent_s(self) -> float:
        return self.clock() - self.started

    def fits(self, per_run_s: float | None) -> bool:
        """Whether a run that takes ``per_run_s`` (None: not known yet) ends within it."""
        spent = self.spent_s()
        if per_run_s is None:
            return spent < self.total_s
        return spent + per_run_s <= self.total_s


def measure_in_rounds(
    measurings: Sequence[Measuring],
    budget: Budget | None,
    at: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Round by round until every benchmark has left the rotation (the module's docstring);
    ``at`` is told which benchmark is being measured (where an interruption stopped it).

    Each benchmark's looks are its rule's own: one after each of its runs from its
    ``min_runs`` on, whatever the others did, so its error rate is the rule's."""
    rotation = [m for m in measurings if not m.done]
    took: dict[str, list[float]] = {m.bench.name: [] for m in rotation}
    while rotation:
        for m in list(rotation):
            name = m.bench.name
            design = m.bench.until_decided
            own = took[name]
            per_run = sum(own) / len(own) if own else None
            if (
                budget is not None
                and design is not None
                and design.budget_s
                and not budget.fits(per_run)
            ):
                done = len(m.recorder.record.runs)
                total = units.clock(budget.total_s * 1e9)
                m.stop(
                    f"budget spent: its next run would end after the {total} "
                    f"the suite's undecided benchmarks share ({done} "
                    f"{'run' if done == 1 else 'runs'} measured)",
                    warn_user=False,
                )
                rotation.remove(m)
                continue
            at(name)
            started = clock()
            m.run_one()
            decided = None if m.stopped is not None else m.look()
            own.append(clock() - started)
            if decided is not None:
                verdict, sentence = decided
                m.say(f"{verdict}, {sentence}")
            if decided is not None or m.done:
                rotation.remove(m)
