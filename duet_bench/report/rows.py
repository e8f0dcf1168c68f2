"""The rows every tabular report shows, computed once from an analysed document."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from duet_bench import units
from duet_bench.metrics import INTERFERENCE_NOTICE_SHARE, METRIC_NAMES
from duet_bench.results import BenchmarkRecord, ResultsDocument
from duet_bench.results.analysis import AnalysisBlock, MetricBlock, SideSummary


@dataclass(frozen=True, slots=True)
class MetricCell:
    """One metric's estimate for one benchmark: the one that decided, or one shown beside it."""

    key: str
    #: ``CPU time``, ``wall time``, ``wall time less run-queue delay``.
    name: str
    ratio: float | None
    low: float | None
    high: float | None
    verdict: str
    baseline_ns: float | None = None
    candidate_ns: float | None = None
    #: Why the metric has no estimate (``no per-iteration CPU time recorded``), else None.
    missing: str | None = None

    @property
    def digits(self) -> int:
        """Significant digits that tell the point and the bounds apart."""
        return units.telling_digits(self.low, self.ratio, self.high)

    def ratio_text(self) -> str:
        return "n/a" if self.ratio is None else units.sig(self.ratio, self.digits)

    def interval_text(self) -> str:
        return units.interval(self.low, self.high, self.digits)

    def summary(self) -> str:
        """``CPU time 1.09 [1.07, 1.12] regression``, or ``CPU time: not recorded``."""
        if self.missing:
            return f"{self.name}: {self.missing}"
        text = f"{self.name} {self.ratio_text()}"
        interval = self.interval_text()
        if interval != "n/a":
            text += f" {interval}"
        return text + (f" {self.verdict}" if self.verdict in VERDICTS else "")


@dataclass(frozen=True, slots=True)
class Row:
    """One benchmark as every report shows it, built once from its analysis (:func:`row`): the
    metric that decided first, its numbers already formatted with the digits that tell its
    bounds apart, the other metrics, and the notes split into those a reader acts on and the
    details that go folded."""

    name: str
    runs: str
    baseline: str
    candidate: str
    ratio: str
    interval: str
    confidence: float | None
    change: str
    verdict: str
    #: The notes a reader needs, joined (``; ``): see :attr:`notes`.
    note: str | None
    #: The metric that decided ("CPU time", "wall time"), or "" for an analysis without one.
    metric: str = ""
    #: The other metrics, analysed too: ``wall time 1.06 [1.01, 1.12] regression``.
    other: str = ""
    #: One line when another process delayed the sides in enough iterations, else None.
    interference: str | None = None
    #: The interval as changes in percent: ``[+2.90%, +5.30%]`` (``n/a`` without one).
    change_interval: str = "n/a"
    #: The deciding metric's estimate (None without an analysis).
    decided: MetricCell | None = None
    #: Why that metric decided (``CPU time: both sides CPU-bound ...``), as the analysis says.
    why: str | None = None
    others: tuple[MetricCell, ...] = ()
    runs_used: int = 0
    runs_failed: int = 0
    #: ``run 4: timeout (...)``: every failed run, as the analysis lists them.
    failures: tuple[str, ...] = ()
    #: The analysis' estimate of the runs in all that would decide an inconclusive result.
    runs_needed: int | None = None
    threshold: float | None = None
    #: Notes a reader can act on or must know (a disagreement, too few runs, failed runs).
    notes: tuple[str, ...] = ()
    #: Notes about how the numbers were made that no reader acts on (winsorization): folded.
    details: tuple[str, ...] = ()
    #: Measured until decided: ``decided after 6 of up to 40 runs (1 min 12 s)``, else None.
    stopping: str | None = None
    #: :attr:`confidence` as the reports print it (``99%``), else "".
    confidence_text: str = ""
    #: :attr:`threshold` in percent with 3 significant digits (``5%``), else None.
    threshold_text: str | None = None

    @property
    def changed(self) -> bool:
        return self.verdict not in ("no change",)

    @property
    def needs_attention(self) -> bool:
        """What the comment shows above the fold: a change, no decision, or a failed run."""
        return self.changed or bool(self.failures)

    def decided_line(self) -> str | None:
        """``CPU time: both sides CPU-bound (...); also analysed: wall time 1.05 [...]``, and
        the interference: why this metric decided and what the others said; None when the
        analysis had one metric only and nothing disturbed it."""
        if not self.other and not self.interference:
            return None
        why = self.why or f"{self.metric} decided"
        parts = [why if why.startswith(self.metric) else f"{self.metric}: {why}"]
        if self.interference:
            # interference_line ends with ": CPU time decided", which the line says already.
            parts.append(self.interference.split(": ")[0])
        if self.other:
            parts.append(f"also analysed: {self.other}")
        return "; ".join(parts)

    def decide_hint(self) -> str | None:
        """For an inconclusive result, what would decide it, in plain words."""
        if self.verdict != "inconclusive":
            return None
        if self.stopping is not None:
            return (
                f"{self.stopping}; --continue with the results directory and a larger "
                "--max-runs lets the same rule go on (more runs read any other way would be a "
                "second look); to fail the job on an undecided result instead, use --fail-on "
                "inconclusive"
            )
        more = ""
        if self.runs_needed and self.runs_needed > self.runs_used:
            more = (
                f"about {self.runs_needed} runs in all ({self.runs_needed - self.runs_used} "
                f"more than the {self.runs_used} measured, --runs {self.runs_needed}) would "
                "decide it"
            )
        else:
            more = "more runs would narrow the interval until it decides"
        return (
            f"the interval includes both no change and a change beyond the threshold: {more}; "
            "to fail the job on an undecided result instead, use --fail-on inconclusive"
        )


#: The verdict words in the order the reports list them.
VERDICTS = ("regression", "improvement", "inconclusive", "no change")


def _typical_ns(side: SideSummary | None) -> float | None:
    """The side's typical iteration: the geometric mean of the paired data the ratio comes
    from (files analysed before duet-results/2 have only the median)."""
    return None if side is None else side.typical_ns


def _cell(key: str, m: MetricBlock | AnalysisBlock) -> MetricCell:
    missing = m.missing if isinstance(m, MetricBlock) else None
    return MetricCell(
        key=key,
        name=METRIC_NAMES.get(key, key),
        ratio=m.ratio,
        low=m.ci_low,
        high=m.ci_high,
        verdict=m.verdict or "no verdict",
        baseline_ns=_typical_ns(m.baseline),
        candidate_ns=_typical_ns(m.candidate),
        missing=missing or None,
    )


def row(b: BenchmarkRecord) -> Row:
    a = b.analysis or AnalysisBlock()
    analysed = b.analysis is not None
    used = a.runs_used or 0
    failed = a.runs_failed or 0
    key = a.metric
    decided = _cell(key or "", a) if analysed else None
    others = _others(a)
    lo, ratio, hi = a.ci_low, a.ratio, a.ci_high
    decimals = units.change_digits(lo, ratio, hi)
    failures = a.failures
    notes, details = _notes(a, failures)
    stopping = stopping_line(a)
    if stopping is not None and a.verdict != "inconclusive":
        notes = (stopping, *notes)
    return Row(
        name=b.name,
        runs=f"{used}" if not failed else f"{used} ({failed} failed)",
        baseline=units.duration(_typical_ns(a.baseline)),
        candidate=units.duration(_typical_ns(a.candidate)),
        ratio=decided.ratio_text() if decided else "n/a",
        interval=decided.interval_text() if decided else "n/a",
        confidence=a.confidence,
        change=units.change(ratio, decimals),
        verdict=decided.verdict if decided else "no verdict",
        note="; ".join(notes) or None,
        metric=METRIC_NAMES.get(key, "") if key is not None else "",
        other="; ".join(c.summary() for c in others if not c.missing),
        interference=interference_line(a),
        change_interval=_change_interval(lo, hi, decimals),
        decided=decided,
        why=a.metric_reason or None,
        others=others,
        runs_used=used,
        runs_failed=failed,
        failures=failures,
        runs_needed=a.runs_needed or None,
        threshold=a.threshold,
        notes=notes,
        details=details,
        stopping=stopping,
        confidence_text="" if a.confidence is None else units.percent(a.confidence),
        threshold_text=None if a.threshold is None else f"{units.sig(a.threshold * 100)}%",
    )


def stopping_line(a: AnalysisBlock) -> str | None:
    """``decided after 6 of up to 40 runs (1 min 12 s; repeated interval)`` for a benchmark
    measured until decided (docs/statistics.md, method 2b), else None."""
    s = a.stopping
    if s is None:
        return None
    took = [units.clock(s.elapsed_ns)] if s.elapsed_ns is not None else []
    # The interval shown is the rule's, not the bootstrap one: say so where it is read.
    how = "; ".join([*took, "repeated interval, which holds whatever the stopping time"])
    if s.decided_after is not None:
        return f"decided after {s.decided_after} of up to {s.max_runs} runs ({how})"
    runs = s.looks[-1].runs if s.looks else (a.runs_used or 0)
    why = f": {s.stopped}" if s.stopped else ""
    return f"not decided after {runs} of up to {s.max_runs} runs ({how}){why}"


def _change_interval(low: float | None, high: float | None, decimals: int = 2) -> str:
    if low is None or high is None:
        return "n/a"
    return f"[{units.change(low, decimals)}, {units.change(high, decimals)}]"


def _others(a: AnalysisBlock) -> tuple[MetricCell, ...]:
    """The metrics that did not decide, in :data:`METRIC_NAMES` order."""
    return tuple(
        _cell(key, m)
        for key in METRIC_NAMES
        if key != a.metric and (m := a.metrics.get(key)) is not None
    )


def interference_line(a: AnalysisBlock) -> str | None:
    """``another process ran on the measuring CPUs in 59% of iterations (1.2 s waiting): CPU
    time decided`` when the share reaches :data:`INTERFERENCE_NOTICE_SHARE`."""
    share = None if a.interference is None else a.interference.share
    if a.interference is None or share is None or share < INTERFERENCE_NOTICE_SHARE:
        return None
    text = f"another process ran on the measuring CPUs in {units.share(share)} of iterations"
    waited = a.interference.runq_ns
    if waited:
        text += f" ({units.duration(waited)} waiting for a CPU)"
    if a.metric is not None and a.metric in METRIC_NAMES:
        text += f": {METRIC_NAMES[a.metric]} decided"
    return text


#: Beginnings of analysis notes that say how the numbers were made, which no reader acts on:
#: they go to the folded details.
_DETAIL_NOTES = ("outliers left in", "runs had different iteration counts")
#: The runs-needed note of the analysis: :meth:`Row.decide_hint` says it in plain words.
_RUNS_NEEDED_NOTE = re.compile(r"^about \d+ runs in all .*would decide")


def _notes(a: AnalysisBlock, failures: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The analysis note split in its parts: (notes a reader needs, folded details). The
    disagreement of the metrics and the failed runs (the first two reasons) are notes."""
    notes: list[str] = []
    details: list[str] = []
    if a.note:
        kept = []
        for part in a.note.split("; "):
            if part.startswith(_DETAIL_NOTES):
                details.append(part)
            elif not _RUNS_NEEDED_NOTE.match(part):
                kept.append(part)
        if kept:
            notes.append("; ".join(kept))
    if a.disagreement is not None:
        notes.append(a.disagreement)
    if failures:
        shown = "; ".join(failures[:2]) + (
            f"; and {len(failures) - 2} more" if len(failures) > 2 else ""
        )
        notes.append(f"{len(failures)} failed run{'s' if len(failures) > 1 else ''}: {shown}")
    return tuple(notes), tuple(details)


def rows(doc: ResultsDocument) -> list[Row]:
    return [row(b) for b in doc.benchmarks]


def common_confidence(items: list[Row]) -> float | None:
    """The confidence level shared by every row, or None when they differ (then per cell)."""
    levels = {r.confidence for r in items if r.confidence is not None}
    return levels.pop() if len(levels) == 1 else None


def ratio_cell(r: Row, shared: float | None) -> str:
    if r.interval == "n/a":
        return r.ratio
    cell = f"{r.ratio} {r.interval}"
    if shared is None and r.confidence is not None:
        cell += f" {units.percent(r.confidence)}"
    return cell


def ratio_header(shared: float | None) -> str:
    return f"ratio [{units.percent(shared)} CI]" if shared is not None else "ratio [CI]"


def counts(items: list[Row]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in items:
        out[r.verdict] = out.get(r.verdict, 0) + 1
    return out


def is_unmeasured(r: Row) -> bool:
    """Every run of the benchmark failed: it has no verdict because it was not measured (a
    benchmark not measured on purpose, new or missing in one version, has no runs at all)."""
    return r.runs_used == 0 and r.runs_failed > 0


def headline(items: list[Row]) -> str:
    order = ["regression", "improvement", "inconclusive", "no change", "no verdict"]
    c = counts(items)
    parts = []
    for word in order:
        n = c.get(word, 0)
        if n:
            label = {
                "regression": "regression" if n == 1 else "regressions",
                "improvement": "improvement" if n == 1 else "improvements",
            }.get(word, word)
            parts.append(f"{n} {label}")
    return ", ".join(parts) if parts else "no benchmarks"


def title(items: list[Row]) -> str:
    """A title that says what happened: ``parse-json 5.00% slower``, ``2 of 6 benchmarks
    slower``, ``1 of 6 benchmarks undecided``, ``no change in 6 benchmarks``."""
    if not items:
        return "no benchmarks"
    total = len(items)
    c = counts(items)
    # Slower first: the one thing a reviewer must not miss; the sentence below has the rest.
    for verdict, word in (("regression", "slower"), ("improvement", "faster")):
        chosen = [r for r in items if r.verdict == verdict]
        if len(chosen) == 1:
            return f"{chosen[0].name} {chosen[0].change.lstrip('+-')} {word}"
        if chosen:
            return f"{len(chosen)} of {total} benchmarks {word}"
    broken = sum(1 for r in items if is_unmeasured(r))
    if broken:
        return f"{broken} of {total} benchmark{'s' if total > 1 else ''} failed"
    failed = sum(1 for r in items if r.failures)
    if c.get("inconclusive"):
        return f"{c['inconclusive']} of {total} benchmark{'s' if total > 1 else ''} undecided"
    if c.get("no verdict"):
        return f"no verdict for {c['no verdict']} of {total} benchmark{'s' if total > 1 else ''}"
    tail = f" ({failed} with failed runs)" if failed else ""
    return f"no change in {total} benchmark{'s' if total > 1 else ''}{tail}"


#: How many benchmarks the sentence names per verdict before "and N more".
NAMED_IN_SENTENCE = 3


def summary_sentence(items: list[Row], *, name: Callable[[str], str] = str) -> str:
    """What changed, how much and how sure, in one sentence for a reviewer:

    ``1 of 12 benchmarks is slower: parse +4.10% [+2.90%, +5.30%]; 11 unchanged (99% intervals)``.
    ``name`` formats a benchmark name for the place the sentence goes (markdown escapes it).
    """
    if not items:
        return "No benchmarks."
    total = len(items)
    c = counts(items)
    slower, faster = c.get("regression", 0), c.get("improvement", 0)
    broken = [r for r in items if is_unmeasured(r)]

    def named(verdict: str) -> str:
        chosen = [r for r in items if r.verdict == verdict]
        shown = [f"{name(r.name)} {r.change} {r.change_interval}" for r in chosen]
        text = ", ".join(shown[:NAMED_IN_SENTENCE])
        if len(shown) > NAMED_IN_SENTENCE:
            text += f" and {len(shown) - NAMED_IN_SENTENCE} more"
        return text

    def be(n: int) -> str:
        return "is" if n == 1 else "are"

    noun = "benchmark" if total == 1 else "benchmarks"
    parts = []
    if slower:
        parts.append(f"{slower} of {total} {noun} {be(slower)} slower: {named('regression')}")
    if faster:
        lead = f"{faster} faster" if slower else f"{faster} of {total} {noun} {be(faster)} faster"
        parts.append(f"{lead}: {named('improvement')}")
    if broken:
        # Failed benchmarks first: "no benchmark changed" would read as a pass.
        none = "; none was measured" if len(broken) == total else ""
        parts.insert(0, f"{len(broken)} of {total} {noun} failed{none}")
    measured = total - len(broken)
    if not slower and not faster and measured:
        parts.append(f"no benchmark of {measured} changed beyond the threshold")
    rest = [
        (c.get("no change", 0), "unchanged"),
        (c.get("inconclusive", 0), "inconclusive (the interval could not decide)"),
        (c.get("no verdict", 0) - len(broken), "without a verdict"),
    ]
    parts += [
        f"{n} {word}"
        for n, word in rest
        if n > 0 and (slower or faster or broken or word != "unchanged")
    ]
    failed = sum(1 for r in items if r.failures and not is_unmeasured(r))
    if failed:
        parts.append(f"{failed} with failed runs")
    shared = common_confidence(items)
    sure = (
        f" ({units.percent(shared)} intervals)" if shared is not None and (slower or faster) else ""
    )
    sentence = "; ".join(parts) + sure
    return sentence[0].upper() + sentence[1:] + "."


def metric_line(items: list[Row]) -> str | None:
    """``decided by CPU time: both sides CPU-bound``: which metric decided and why, once for
    the report when every benchmark agrees (the shares that differ per benchmark are left to
    :meth:`Row.decided_line`), else per metric with the counts; and how many benchmarks another
    process disturbed (the rows carry the reasons)."""
    decided = [r.metric for r in items if r.metric]
    if not decided:
        return None
    kinds = sorted(set(decided))
    if len(kinds) == 1:
        # "CPU time: both sides CPU-bound (baseline 95%, ...)": the numbers differ per
        # benchmark, the reason does not.
        reasons = {_PARENTHESIS.sub("", r.why) for r in items if r.why}
        why = reasons.pop() if len(reasons) == 1 else None
        if why and why.startswith(kinds[0]):
            text = f"decided by {why}"
        else:
            text = f"decided by {kinds[0]}" + (f" ({why})" if why else "")
    else:
        text = "decided by " + ", ".join(f"{k} for {decided.count(k)}" for k in kinds)
    disturbed = sum(1 for r in items if r.interference)
    if disturbed:
        text += (
            f"; another process ran on the measuring CPUs during {disturbed} of {len(items)} "
            "benchmarks"
        )
    return text


_PARENTHESIS = re.compile(r" \([^()]*\)$")
