"""One benchmark being measured in a session (:class:`Measuring`): its plan, its record written
after every run (through the session's :class:`~duet_bench.results.write.ResultsWriter`), and its
runs measured all at once (a fixed design) or one at a time (a round of
:mod:`duet_bench.session.until_decided`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from duet_bench.analysis import analyze_benchmark, running_estimate
from duet_bench.plan import BenchmarkSpec, RunPlan, plan_runs
from duet_bench.progress import Progress
from duet_bench.results import BenchmarkRecord, RunRecord
from duet_bench.results.write import ResultsWriter
from duet_bench.runner import RunnerContext, calibrate_inner_loops, measure_benchmark
from duet_bench.units import differing_name
from duet_bench.untrusted import for_terminal

if TYPE_CHECKING:
    from duet_bench.session.options import SessionOptions

__all__ = [
    "STDERR_LINES_SHOWN",
    "Measuring",
    "failure_details",
    "warn",
]

log = logging.getLogger("duet_bench.session.measure")

#: How many lines of a failed side's stderr are shown on the terminal (all of its tail is in the
#: results file).
STDERR_LINES_SHOWN = 5


def warn(message: str) -> None:
    log.warning("%s", for_terminal(message))  # may hold a side's stderr


def failure_details(run: RunRecord) -> list[str]:
    """What a failed run shows on the terminal: its cause, then the last lines of the failing
    side's stderr (without the worker's own line, which repeats the cause)."""
    out = [f"  {run.reason or run.status}"]
    side_name = (run.reason or "").partition(": ")[0]
    if side_name not in ("baseline", "candidate"):
        return out
    tail = run.side(side_name).stderr_tail  # type: ignore[arg-type]  # checked just above
    lines = [
        line
        for line in (tail or "").splitlines()
        if line.strip() and not line.startswith("duet_worker: ")
    ]
    if lines:
        shown = lines[-STDERR_LINES_SHOWN:]
        count = "line" if len(shown) == 1 else f"{len(shown)} lines"
        out.append(f"  {side_name} stderr (last {count}):")
        out += [f"    {line}" for line in shown]
    else:
        out.append(f"  {side_name} stderr: empty")
    return out


class _Now(tuple[RunPlan, ...]):
    """Every planned run of a benchmark, as the runner reads ``len`` and ``[0]`` (the run that
    fails "before its first iteration" is the first planned), iterating over those of this
    round only."""

    now: tuple[RunPlan, ...]

    def __new__(cls, plans: tuple[RunPlan, ...], now: tuple[RunPlan, ...]) -> _Now:
        self = super().__new__(cls, plans)
        self.now = now
        return self

    def __iter__(self) -> Iterator[RunPlan]:
        return iter(self.now)


class Measuring:
    """One benchmark from its first run to its analysis: :meth:`run_all` (a fixed design, the
    runner's loop) or :meth:`run_one` once per round, then :meth:`finish`."""

    def __init__(
        self,
        bench: BenchmarkSpec,
        ctx: RunnerContext,
        pair: tuple[int, int],
        options: SessionOptions,
        progress: Progress,
        writer: ResultsWriter,
    ) -> None:
        self.bench, self.ctx, self.options, self.progress = bench, ctx, options, progress
        plans = plan_runs(bench, pair, seed=options.seed)
        earlier = options.earlier.get(bench.name)
        self.inner_loops = (
            calibrate_inner_loops(bench, ctx, cpu=plans[0].cpus["baseline"])
            if earlier is None
            # Continued: the runs already measured fixed how many calls an iteration makes.
            else earlier.settings.inner_loops or 1
        )
        self.analysis_settings = options.per_benchmark.get(bench.name, options.analysis)
        settings = replace(
            bench.recorded(),
            seed=options.seed,
            inner_loops=self.inner_loops,
            # What duet analyze and duet report analyse with again, unless told otherwise.
            analysis=self.analysis_settings.to_record(),
        )
        #: The benchmark's record as it grows, written after every run by ``writer``, which
        #: holds the document of the whole session.
        self.record = BenchmarkRecord(
            name=bench.name,
            runs=() if earlier is None else earlier.runs,
            kind=bench.kind,
            method=bench.method,
            versions={
                "baseline": bench.baseline.describe(),
                "candidate": bench.candidate.describe(),
            },
            settings=settings,
        )
        if earlier is not None:
            # The plan is the earlier one (same seed), its first runs already measured; a
            # benchmark decided already (a suite continued) gets none.
            stopping = earlier.analysis.stopping if earlier.analysis is not None else None
            decided = stopping is not None and stopping.decided_after is not None
            plans = () if decided else plans[len(earlier.runs) :]
        self.plans = plans
        self.todo = list(plans)
        self.failures = 0
        #: Why the runs stopped before the plan's end (failures, the budget), or None.
        self.stopped: str | None = None
        self.writer = writer

    @property
    def done(self) -> bool:
        """No run left to measure: the plan's end, or stopped."""
        return not self.todo or self.stopped is not None

    def run_all(self) -> None:
        """Every planned run, in the runner's loop (which stops at too many failures)."""
        self._measure(self.plans, self.options.max_failures)
        self.todo = []

    def run_one(self) -> None:
        """The next planned run (a round); too many failures end the benchmark's runs as the
        runner's loop would."""
        plan = self.todo.pop(0)
        self._measure((plan,), None)
        run = self.record.runs[-1]
        if run.ok or self.stopped is not None:
            return
        self.failures += 1
        limit = self.options.max_failures
        if limit is not None and self.failures > limit:
            done = len(self.plans) - len(self.todo)
            self.stop(
                f"stopped after run {done} of {len(self.plans)}: {self.failures} "
                f"{'run' if self.failures == 1 else 'runs'} failed, more than --max-failures "
                f"{limit}"
            )

    def _measure(self, now: tuple[RunPlan, ...], max_failures: int | None) -> None:
        measure_benchmark(
            self.bench,
            _Now(self.plans, now),
            self.ctx,
            on_run=self._on_run,
            max_failures=max_failures,
            inner_loops=self.inner_loops,
            on_stop=lambda why: self.stop(why.removeprefix(f"{self.bench.name}: ")),
        )

    def _on_run(self, run: RunRecord) -> None:
        self.record = replace(self.record, runs=(*self.record.runs, run))
        self.writer.save(self.record)
        title = f"{differing_name(self.bench.name)} run {run.index + 1}/{self.bench.runs}"
        progress = self.progress
        if run.ok:
            so_far = running_estimate(self.record, self.analysis_settings.metric)
            progress.step(f"{title} ok" + (f" · {so_far}" if so_far else ""))
            return
        # The cause, once: the side's exit status and the end of its stderr.
        details = failure_details(run)
        progress.step(f"{title} FAILED", details=details)
        if not self.options.progress:
            warn("\n".join([f"{title} failed:", *details]))

    def stop(self, why: str, *, warn_user: bool = True) -> None:
        """End the benchmark's runs: ``why`` becomes its note, saved, and is said."""
        self.stopped = why
        self.record = replace(self.record, note=why)
        self.writer.save(self.record)
        if self.options.progress:
            self.progress.note(f"duet: {self.bench.name}: {why}")
        elif warn_user:
            warn(f"{self.bench.name}: {why}")  # logged as "duet: WARNING: ..."

    def say(self, text: str) -> None:
        """A progress note about this benchmark (not with --quiet)."""
        if self.options.progress:
            self.progress.note(f"duet: {self.bench.name}: {text}")

    def look(self) -> tuple[str | None, str] | None:
        """The verdict and the sentence when the rule has decided (docs/statistics.md, method
        2b), else None."""
        analysis = analyze_benchmark(self.record, self.analysis_settings)
        stopping = analysis.stopping
        if stopping is not None and stopping.decided_after is not None:
            return analysis.verdict, stopping.sentence()
        return None

    def finish(self) -> None:
        """The benchmark analysed, and written."""
        analysis = analyze_benchmark(self.record, self.analysis_settings).to_block()
        self.record = replace(self.record, analysis=analysis)
        self.writer.save(self.record)
