"""Measuring a suite until decided, round by round (docs/statistics.md, method 2b, "A suite"):
each benchmark is measured to its first look (``min_runs``), one after the other; then every
round gives each benchmark still in the rotation one more run. A benchmark leaves it when its
rule has decided, at its ``max_runs``, when its runs fail beyond ``--max-failures``, or when its
next run would not end within the machine time the suite shares (:class:`Budget`): then it is
undecided, and its note says so with the runs it got."""

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
    """Every benchmark to its first look, one after the other, then round by round until every
    one has left the rotation (the module's docstring); ``at`` is told which benchmark is being
    measured (where an interruption stopped it).

    A benchmark whose first look the budget left cannot pay (at the mean time of the runs so
    far) gets no run: runs short of ``min_runs`` give no verdict, and would only take the
    budget from the benchmarks after it. Each benchmark's looks are its rule's own: one after
    each of its runs from its ``min_runs`` on, whatever the others did, so its error rate is
    the rule's."""
    rounds = _Rounds(budget, at, clock, alone=len(measurings) == 1)
    rotation = []
    for m in measurings:
        if not m.done and rounds.first_look(m):
            rotation.append(m)
    while rotation:
        for m in list(rotation):
            if not rounds.step(m):
                rotation.remove(m)


class _Rounds:
    """The runs of the benchmarks measured until decided, each timed (run and look), and the
    budget they share."""

    def __init__(
        self,
        budget: Budget | None,
        at: Callable[[str], None],
        clock: Callable[[], float],
        *,
        alone: bool = False,
    ) -> None:
        self.budget, self.at, self.clock = budget, at, clock
        self.took: dict[str, list[float]] = {}
        #: How the notes name the budget: one benchmark has it to itself.
        self.whose = "budget" if alone else "the suite's undecided benchmarks share"

    def per_run_s(self, m: Measuring) -> float | None:
        """The mean time of a run of ``m`` so far (run and look), or of any benchmark's before
        its first; None before the first run of all."""
        own = self.took.get(m.bench.name)
        every = own or [t for times in self.took.values() for t in times]
        return sum(every) / len(every) if every else None

    def budgeted(self, m: Measuring) -> Budget | None:
        design = m.bench.until_decided
        return self.budget if design is not None and design.budget_s else None

    def first_look(self, m: Measuring) -> bool:
        """``m``'s runs up to its first look, if the budget left can pay them; whether it goes
        on in the rounds."""
        design = m.bench.until_decided
        short = max(0, (design.min_runs if design else 0) - len(m.record.runs))
        budget, per_run = self.budgeted(m), self.per_run_s(m)
        pays = budget is None or per_run is None or budget.fits(short * per_run)
        if short and budget is not None and per_run is not None and not pays:
            left = units.clock(max(0.0, budget.total_s - budget.spent_s()) * 1e9)
            self._spent(
                m,
                budget,
                f"budget spent before its first look: the {left} left of the {{total}} "
                f"{self.whose} would not pay its {short} runs (about "
                f"{units.clock(short * per_run * 1e9)}; {{runs}} measured)",
            )
            return False
        while short > 0:
            if not self.step(m):
                return False
            short -= 1
        return True

    def step(self, m: Measuring) -> bool:
        """One more run of ``m`` and its look; whether ``m`` stays in the rotation."""
        budget = self.budgeted(m)
        if budget is not None and not budget.fits(self.per_run_s(m)):
            self._spent(
                m,
                budget,
                "budget spent: its next run would end after the {total} "
                f"{self.whose} ({{runs}} measured)",
            )
            return False
        self.at(m.bench.name)
        started = self.clock()
        m.run_one()
        decided = None if m.stopped is not None else m.look()
        self.took.setdefault(m.bench.name, []).append(self.clock() - started)
        if decided is not None:
            verdict, sentence = decided
            m.say(f"{verdict}, {sentence}")
        return decided is None and not m.done

    @staticmethod
    def _spent(m: Measuring, budget: Budget, why: str) -> None:
        """``m`` stopped by the budget: ``why`` with the budget's ``{total}`` and the
        ``{runs}`` measured."""
        done = len(m.record.runs)
        total = units.clock(budget.total_s * 1e9)
        runs = f"{done} {'run' if done == 1 else 'runs'}"
        m.stop(why.format(total=total, runs=runs), warn_user=False)
