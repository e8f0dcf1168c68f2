"""The rows every tabular report shows, computed once from an analysed document."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from duet import units
from duet.results import BenchmarkRecord, ResultsDocument


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


def row(b: BenchmarkRecord) -> Row:
    a: Mapping[str, Any] = b.analysis or {}
    used = _count(a.get("runs_used"))
    failed = _count(a.get("runs_failed"))
    verdict = a.get("verdict")
    ratio = _number(a.get("ratio"))
    return Row(
        name=b.name,
        runs=f"{used}" if not failed else f"{used} ({failed} failed)",
        baseline=units.duration(_number(_side(a, "baseline").get("median_ns"))),
        candidate=units.duration(_number(_side(a, "candidate").get("median_ns"))),
        ratio=units.ratio(ratio),
        interval=units.interval(_number(a.get("ci_low")), _number(a.get("ci_high"))),
        confidence=_number(a.get("confidence")),
        change=units.change(ratio),
        verdict=verdict if verdict in VERDICTS else "no verdict",
        note=_note(a),
    )


def _note(a: Mapping[str, Any]) -> str | None:
    """The analysis note plus the failed runs (the first two reasons), for the notes list."""
    parts = [str(a["note"])] if a.get("note") else []
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
