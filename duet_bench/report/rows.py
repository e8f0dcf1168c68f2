"""The rows every tabular report shows, computed once from an analysed document."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from duet_bench import units
from duet_bench.metrics import INTERFERENCE_NOTICE_SHARE, METRIC_NAMES
from duet_bench.results import BenchmarkRecord, ResultsDocument


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    runs: str
    baseline: str
    candidate: str
    ratio: str
    interval: str
    confidence: float | None
    change: str
    verdict: str
    note: str | None
    #: The metric that decided ("CPU time", "wall time"), or "" for an analysis without one.
    metric: str = ""
    #: The other metric, analysed too: ``wall time 1.06 [1.01, 1.12] regression``.
    other: str = ""
    #: One line when another process delayed the sides in enough iterations, else None.
    interference: str | None = None
    #: The interval as changes in percent: ``[+2.90%, +5.30%]`` (``n/a`` without one).
    change_interval: str = "n/a"

    @property
    def changed(self) -> bool:
        return self.verdict not in ("no change",)


VERDICTS = ("regression", "improvement", "inconclusive", "no change")


def _number(value: object) -> float | None:
    """A finite number from an analysis block, else None: a results file is outside input."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _side(a: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    side = a.get(name)
    return side if isinstance(side, Mapping) else {}


def _typical_ns(side: Mapping[str, Any]) -> float | None:
    """The side's typical iteration: the geometric mean of the paired data the ratio comes
    from (files analysed before duet-results/2 have only the median)."""
    return _number(side.get("geomean_ns")) or _number(side.get("median_ns"))


def row(b: BenchmarkRecord) -> Row:
    a: Mapping[str, Any] = b.analysis or {}
    used = _count(a.get("runs_used"))
    failed = _count(a.get("runs_failed"))
    verdict = a.get("verdict")
    ratio = _number(a.get("ratio"))
    metric = a.get("metric")
    return Row(
        name=b.name,
        runs=f"{used}" if not failed else f"{used} ({failed} failed)",
        baseline=units.duration(_typical_ns(_side(a, "baseline"))),
        candidate=units.duration(_typical_ns(_side(a, "candidate"))),
        ratio=units.ratio(ratio),
        interval=units.interval(_number(a.get("ci_low")), _number(a.get("ci_high"))),
        confidence=_number(a.get("confidence")),
        change=units.change(ratio),
        verdict=verdict if verdict in VERDICTS else "no verdict",
        note=_note(a),
        metric=METRIC_NAMES.get(metric, "") if isinstance(metric, str) else "",
        other=_other_metric(a),
        interference=interference_line(a),
        change_interval=_change_interval(_number(a.get("ci_low")), _number(a.get("ci_high"))),
    )


def _change_interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "n/a"
    return f"[{units.change(low)}, {units.change(high)}]"


def _other_metric(a: Mapping[str, Any]) -> str:
    """The metrics that did not decide, each with its ratio, interval and verdict."""
    metrics = a.get("metrics")
    if not isinstance(metrics, Mapping):
        return ""
    parts = []
    for key, name in METRIC_NAMES.items():
        m = metrics.get(key)
        if key == a.get("metric") or not isinstance(m, Mapping) or "missing" in m:
            continue
        ratio = _number(m.get("ratio"))
        verdict = m.get("verdict")
        text = f"{name} {units.ratio(ratio)}"
        interval = units.interval(_number(m.get("ci_low")), _number(m.get("ci_high")))
        if interval != "n/a":
            text += f" {interval}"
        parts.append(text + (f" {verdict}" if verdict in VERDICTS else ""))
    return "; ".join(parts)


def interference_line(a: Mapping[str, Any]) -> str | None:
    """``another process ran on the measuring CPUs in 59% of iterations (1.2 s waiting): CPU
    time decided`` when the share reaches :data:`INTERFERENCE_NOTICE_SHARE`."""
    info = a.get("interference")
    if not isinstance(info, Mapping):
        return None
    share = _number(info.get("share"))
    if share is None or share < INTERFERENCE_NOTICE_SHARE:
        return None
    text = f"another process ran on the measuring CPUs in {units.share(share)} of iterations"
    waited = _number(info.get("runq_ns"))
    if waited:
        text += f" ({units.duration(waited)} waiting for a CPU)"
    metric = a.get("metric")
    if metric in METRIC_NAMES:
        text += f": {METRIC_NAMES[str(metric)]} decided"
    return text


def _note(a: Mapping[str, Any]) -> str | None:
    """The analysis note, a disagreement of the metrics and the failed runs (the first two
    reasons), for the notes list."""
    parts = [str(a["note"])] if a.get("note") else []
    if isinstance(a.get("disagreement"), str):
        parts.append(str(a["disagreement"]))
    raw = a.get("failures")
    failures = [str(f) for f in raw] if isinstance(raw, list) else []
    if failures:
        shown = "; ".join(failures[:2]) + (
            f"; and {len(failures) - 2} more" if len(failures) > 2 else ""
        )
        parts.append(f"{len(failures)} failed run{'s' if len(failures) > 1 else ''}: {shown}")
    return "; ".join(parts) or None


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
    if not parts:
        parts.append(f"no benchmark of {total} changed beyond the threshold")
    rest = [
        (c.get("no change", 0), "unchanged"),
        (c.get("inconclusive", 0), "inconclusive (the interval could not decide)"),
        (c.get("no verdict", 0), "without a verdict"),
    ]
    parts += [f"{n} {word}" for n, word in rest if n and (slower or faster or word != "unchanged")]
    shared = common_confidence(items)
    sure = (
        f" ({units.percent(shared)} intervals)" if shared is not None and (slower or faster) else ""
    )
    sentence = "; ".join(parts) + sure
    return sentence[0].upper() + sentence[1:] + "."


def metric_line(items: list[Row], doc: ResultsDocument) -> str | None:
    """``metric: CPU time (auto: both sides CPU-bound ...)``: which metric decided and why, once
    for the report when every benchmark agrees, else per metric with the counts."""
    decided = [r.metric for r in items if r.metric]
    if not decided:
        return None
    kinds = sorted(set(decided))
    if len(kinds) == 1:
        reasons = {
            str((b.analysis or {}).get("metric_reason"))
            for b in doc.benchmarks
            if isinstance((b.analysis or {}).get("metric_reason"), str)
        }
        why = reasons.pop() if len(reasons) == 1 else None
        if why and why.startswith(kinds[0]):
            # "CPU time: both sides CPU-bound (...)": the reason already names the metric.
            return f"decided by {why}"
        return f"decided by {kinds[0]}" + (f" ({why})" if why else "")
    return "decided by " + ", ".join(f"{k} for {decided.count(k)}" for k in kinds)


def isolation_line(doc: ResultsDocument) -> str | None:
    """``isolation cgroup-v1, AMD EPYC (2 CPUs), cores 0,1`` from the environment record."""
    env = doc.environment
    bits = []
    if env.get("isolation"):
        bits.append(f"isolation {env['isolation']}")
    cpu = env.get("cpu")
    if isinstance(cpu, Mapping) and cpu.get("model"):
        bits.append(f"{cpu['model']} ({cpu.get('online', '?')} CPUs)")
    elif env.get("machine_kind"):
        bits.append(str(env["machine_kind"]))
    pair = env.get("pair")
    if isinstance(pair, Mapping) and pair.get("cpus"):
        bits.append("cores " + ",".join(str(c) for c in pair["cpus"]))
    return ", ".join(bits) if bits else None
