"""The plan a benchmark's results record (its ``settings`` in the file): how it was measured
and the analysis settings it was judged with, typed. :func:`duet_bench.results.read.from_dict`
builds it once from the file, :meth:`RecordedPlan.to_dict` writes it back; every reader uses
its attributes.

Every field is optional: a file written by an older duet lacks some, and a few writers record
only part of the plan (``duet compare`` of unmeasured benchmarks records only ``analysis``).
A field that is absent is None, and is not written back. Keys this duet does not know are kept
as they were read (``unknown``), so a file rewritten by ``duet analyze`` loses nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final


class Absent(enum.Enum):
    """A limit the file does not record (null there means *no limit*)."""

    ABSENT = "absent"


#: ``memory_limit_bytes`` and ``pids_max`` are null when there was no limit; absent they are this.
ABSENT: Final = Absent.ABSENT


def _present(pairs: tuple[tuple[str, object], ...]) -> dict[str, object]:
    return {k: v for k, v in pairs if v is not None}


@dataclass(frozen=True, slots=True)
class RecordedAnalysis:
    """``settings.analysis``: the settings a benchmark was judged with
    (:meth:`duet_bench.analysis.model.AnalysisSettings.to_record` writes all of them)."""

    confidence: float | None = None
    threshold: float | None = None
    reps: int | None = None
    seed: int | None = None
    interval: str | None = None
    winsorize: bool | None = None
    metric: str | None = None
    #: Keys this duet does not know, as read.
    unknown: Mapping[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            **_present(
                (
                    ("confidence", self.confidence),
                    ("threshold", self.threshold),
                    ("reps", self.reps),
                    ("seed", self.seed),
                    ("interval", self.interval),
                    ("winsorize", self.winsorize),
                    ("metric", self.metric),
                )
            ),
            **self.unknown,
        }


@dataclass(frozen=True, slots=True)
class RecordedDesign:
    """``settings.until_decided``: the design of a benchmark measured until decided
    (:meth:`duet_bench.analysis.stopping.UntilDecided.recorded` writes it)."""

    min_runs: int | None = None
    max_runs: int | None = None
    #: Null in the file when there was no time budget.
    budget_s: float | None = None
    shape: str | None = None
    unknown: Mapping[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            **_present((("min_runs", self.min_runs), ("max_runs", self.max_runs))),
            "budget_s": self.budget_s,
            **_present((("shape", self.shape),)),
            **self.unknown,
        }


@dataclass(frozen=True, slots=True)
class RecordedPlan:
    """A benchmark's ``settings``: the plan it was measured with (the spec's part written by
    :meth:`duet_bench.plan.spec.BenchmarkSpec.recorded`), the session's ``seed`` and
    ``inner_loops``, and ``analysis``."""

    runs: int | None = None
    iterations: int | None = None
    warmup: int | None = None
    timeout_s: float | None = None
    memory_limit_bytes: int | Absent | None = ABSENT
    pids_max: int | Absent | None = ABSENT
    method: str | None = None
    crossover: str | None = None
    until_decided: RecordedDesign | None = None
    seed: int | None = None
    #: Calls of the measured function per iteration (a python benchmark; 1 for the others).
    inner_loops: int | None = None
    #: ``duet calibrate``'s interleaved blocks, when their ``inner_loops`` differed: each one's.
    inner_loops_by_block: tuple[int | None, ...] | None = None
    analysis: RecordedAnalysis | None = None
    #: Keys this duet does not know, as read.
    unknown: Mapping[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """The JSON object of the file (empty when nothing is recorded)."""
        limits = {
            k: v
            for k, v in (
                ("memory_limit_bytes", self.memory_limit_bytes),
                ("pids_max", self.pids_max),
            )
            if v is not ABSENT
        }
        return {
            **_present(
                (
                    ("runs", self.runs),
                    ("iterations", self.iterations),
                    ("warmup", self.warmup),
                    ("timeout_s", self.timeout_s),
                )
            ),
            **limits,
            **_present(
                (
                    ("method", self.method),
                    ("crossover", self.crossover),
                    (
                        "until_decided",
                        None if self.until_decided is None else self.until_decided.to_dict(),
                    ),
                    ("seed", self.seed),
                    ("inner_loops", self.inner_loops),
                    (
                        "inner_loops_by_block",
                        None
                        if self.inner_loops_by_block is None
                        else list(self.inner_loops_by_block),
                    ),
                    ("analysis", None if self.analysis is None else self.analysis.to_dict()),
                )
            ),
            **self.unknown,
        }
