"""The results document reduced to what the comment shows, every field type-checked.

The results file may come from a pull request's own run (the fork-safe GitHub pattern
downloads it from an unprivileged workflow): it is untrusted input. :func:`sanitize` keeps
only the fields the markdown report renders, each of the type it must have (a verdict one of
the four words, numbers finite, a commit hex), so a string where a number belongs neither
crashes the renderer nor reaches the comment unescaped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from duet_bench.metrics import get, names
from duet_bench.results import BenchmarkRecord, RecordedPlan, ResultsDocument
from duet_bench.results.analysis import (
    AnalysisBlock,
    Interference,
    MetricBlock,
    SideSummary,
    verdict,
)
from duet_bench.results.values import count, number

_HEX = re.compile(r"[0-9a-fA-F]{4,64}")
# What GitHub and GitLab turn into a link by itself: a scheme's "://", "www.", "mailto:".
_AUTOLINK = re.compile(r"(?i)(?<=[a-z])(?=://)|(?<=\bwww)(?=\.)|(?<=\bmailto)(?=:)")
# Bidirectional overrides, embeddings, isolates and marks: text that reads other than it is.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def text(value: str) -> str:
    """A string from the results shown in the comment: no bare URL (a zero-width space breaks
    what would be autolinked, so a benchmark cannot post a link as duet) and no bidirectional
    control (shown as U+FFFD)."""
    return _AUTOLINK.sub("\u200b", _BIDI.sub("\ufffd", value))


def _opt_text(value: object) -> str | None:
    return text(value) if isinstance(value, str) else None


#: Failed runs kept per benchmark: the notes name two and count the rest.
_MAX_FAILURES = 100


def sanitize(doc: ResultsDocument) -> ResultsDocument:
    """A copy of ``doc`` holding only what the markdown report shows, each field of the type
    it must have. A results file from a pull request's own run is untrusted input: a string
    where a number belongs must neither crash the renderer nor reach the comment unescaped."""
    versions = doc.config.get("versions")
    clean_versions: dict[str, Any] = {}
    if isinstance(versions, Mapping):
        for side in ("baseline", "candidate"):
            v = versions.get(side)
            if isinstance(v, Mapping):
                commit = v.get("commit")
                ref = v.get("ref")
                clean_versions[side] = {
                    "commit": commit
                    if isinstance(commit, str) and _HEX.fullmatch(commit)
                    else None,
                    "ref": _opt_text(ref),
                }
    env = doc.environment
    clean_env: dict[str, Any] = {}
    for k in ("isolation", "machine_kind"):
        if isinstance(env.get(k), str):
            clean_env[k] = text(env[k])
    cpu = env.get("cpu")
    if isinstance(cpu, Mapping) and isinstance(cpu.get("model"), str):
        online = cpu.get("online")
        clean_env["cpu"] = {
            "model": text(cpu["model"]),
            "online": online if _is_int(online) else "?",
        }
    pair = env.get("pair")
    if isinstance(pair, Mapping) and isinstance(pair.get("cpus"), list):
        cpus = [c for c in pair["cpus"] if _is_int(c)]
        if cpus:
            clean_env["pair"] = {"cpus": cpus}
    return replace(
        doc,
        config={"versions": clean_versions} if clean_versions else {},
        environment=clean_env,
        benchmarks=tuple(_sanitize_benchmark(b) for b in doc.benchmarks),
        state=_state(doc.state),
    )


def _state(state: Mapping[str, Any]) -> dict[str, Any]:
    """What the completeness sentence reads (:mod:`duet_bench.results.completeness`)."""
    out: dict[str, Any] = {}
    if state.get("complete") is False:
        out["complete"] = False
    if isinstance(state.get("stopped"), str):
        out["stopped"] = text(state["stopped"])
    planned = state.get("planned")
    if isinstance(planned, list):
        out["planned"] = [
            {"name": text(p["name"]), "runs": p["runs"] if _is_int(p.get("runs")) else 0}
            for p in planned
            if isinstance(p, Mapping) and isinstance(p.get("name"), str)
        ]
    return out


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _positive(x: object) -> float | None:
    value = number(x)
    return value if value is not None and value > 0 else None


def _sanitize_benchmark(b: BenchmarkRecord) -> BenchmarkRecord:
    b = replace(
        b,
        name=text(b.name),
        note=_opt_text(b.note),
        settings=RecordedPlan(runs=b.settings.runs),
    )
    a = b.analysis
    return b if a is None else replace(b, analysis=_sanitize_analysis(a))


def _sanitize_analysis(a: AnalysisBlock) -> AnalysisBlock:
    """The figures the markdown report renders, each checked again (a record may have been
    built by other code than :func:`duet_bench.results.from_dict`) and its text neutralized."""
    confidence = _positive(a.confidence)
    threshold = number(a.threshold)

    def side(s: SideSummary | None) -> SideSummary | None:
        if s is None:
            return None
        return SideSummary(geomean_ns=_positive(s.geomean_ns), median_ns=_positive(s.median_ns))

    def metric_block(m: MetricBlock) -> MetricBlock:
        if m.missing is not None:
            return MetricBlock(missing=text(m.missing))
        return MetricBlock(
            ratio=_positive(m.ratio),
            ci_low=_positive(m.ci_low),
            ci_high=_positive(m.ci_high),
            verdict=verdict(m.verdict),
        )

    interference = None
    if a.interference is not None:
        share = _positive(a.interference.share)
        interference = Interference(
            share=min(share, 1.0) if share is not None else 0.0,
            runq_ns=count(a.interference.runq_ns) or None,
        )
    return AnalysisBlock(
        ratio=_positive(a.ratio),
        ci_low=_positive(a.ci_low),
        ci_high=_positive(a.ci_high),
        confidence=confidence if confidence is not None and confidence < 1 else None,
        threshold=threshold if threshold is not None and threshold >= 0 else None,
        verdict=verdict(a.verdict),
        runs_used=count(a.runs_used) or 0,
        runs_failed=count(a.runs_failed) or 0,
        baseline=side(a.baseline),
        candidate=side(a.candidate),
        note=_opt_text(a.note),
        metric=a.metric if get(a.metric) is not None else None,
        metric_reason=_opt_text(a.metric_reason),
        metrics={k: metric_block(m) for k in names() if (m := a.metrics.get(k)) is not None},
        interference=interference,
        disagreement=_opt_text(a.disagreement),
        # The comment names failed runs ("run 4: timeout") and what would decide an
        # inconclusive result; both are escaped where they are rendered.
        failures=tuple(text(f) for f in a.failures if isinstance(f, str))[:_MAX_FAILURES],
        runs_needed=count(a.runs_needed) or None,
    )
