"""Whether a results document holds everything that was planned: the one place that says
"interrupted after N of M runs".

A document that ``duet run`` or ``duet compare`` did not finish (a signal, a failure, a full
disk) has ``state.complete`` false and ``state.stopped`` saying why. Planned runs are each
benchmark's ``settings["runs"]``; the benchmarks planned but never started are listed in
``state.planned`` (``{"name": ..., "runs": N}`` each, written before the first run), so they
count too. A document without ``state`` (written by hand, or by a duet before ``state``) is
taken as complete: nothing in it says otherwise.

Every command that gives a verdict (``analyze``, ``report``, ``comment``, ``merge``) says
:attr:`Completeness.sentence` wherever it gives it, and exits 3 on an incomplete document unless
``--allow-incomplete`` (docs/ci.md, docs/reliability.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from duet_bench.results.model import BenchmarkRecord, ResultsDocument

__all__ = ["Completeness", "completeness"]

#: Runs with this status were cut short by the interruption: they count as not done.
_CUT = "interrupted"


@dataclass(frozen=True, slots=True)
class Completeness:
    complete: bool
    #: Runs recorded and finished (ok or failed), over every benchmark.
    done: int
    #: Runs planned, over every benchmark, those never started included.
    planned: int
    #: Why it stopped (``state.stopped``), or None when the document does not say.
    stopped: str | None
    #: Benchmarks planned but with no run recorded, in plan order.
    not_started: tuple[str, ...]

    @property
    def sentence(self) -> str | None:
        """``"interrupted after 3 of 10 runs (why); not started: b, c"``, or None when
        complete."""
        if self.complete:
            return None
        out = f"interrupted after {self.done} of {self.planned} runs"
        out += f" ({self.stopped})" if self.stopped else " (the file does not say why)"
        if self.not_started:
            shown = ", ".join(self.not_started[:5])
            more = len(self.not_started) - 5
            out += f"; not started: {shown}" + (f" and {more} more" if more > 0 else "")
        return out


def _runs(value: Any, default: int) -> int:
    """A planned number of runs as read from a file: a non-negative integer, else ``default``."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return default


def _done(b: BenchmarkRecord) -> int:
    return sum(1 for r in b.runs if r.status != _CUT)


def completeness(doc: ResultsDocument) -> Completeness:
    """How much of what was planned ``doc`` holds."""
    state: Mapping[str, Any] = doc.state or {}
    complete = state.get("complete", True) is not False
    stopped = state.get("stopped")
    done = sum(_done(b) for b in doc.benchmarks)
    planned = sum(max(_runs(b.settings.runs, len(b.runs)), _done(b)) for b in doc.benchmarks)
    names = {b.name for b in doc.benchmarks}
    not_started = [b.name for b in doc.benchmarks if not b.runs and b.note is None]
    for entry in state.get("planned") or ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        if entry["name"] not in names:
            names.add(entry["name"])
            not_started.append(entry["name"])
            planned += _runs(entry.get("runs"), 0)
    return Completeness(
        complete=complete,
        done=done,
        planned=planned,
        stopped=stopped if isinstance(stopped, str) and stopped else None,
        not_started=tuple(not_started) if not complete else (),
    )
