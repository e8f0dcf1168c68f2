"""The results document reduced to what the comment shows, every field type-checked.

The results file may come from a pull request's own run (the fork-safe GitHub pattern
downloads it from an unprivileged workflow): it is untrusted input. :func:`sanitize` keeps
only the fields the markdown report renders, each of the type it must have (a verdict one of
the four words, numbers finite, a commit hex), so a string where a number belongs neither
crashes the renderer nor reaches the comment unescaped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from duet_bench.metrics import get, names
from duet_bench.results import BenchmarkRecord, ResultsDocument

_VERDICTS = ("regression", "improvement", "no change", "inconclusive")
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


def _opt_text(value: Any) -> str | None:
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


def _positive(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    value = float(x)
    return value if math.isfinite(value) and value > 0 else None


def _sanitize_benchmark(b: BenchmarkRecord) -> BenchmarkRecord:
    runs = b.settings.get("runs")
    b = replace(
        b,
        name=text(b.name),
        note=_opt_text(b.note),
        settings={"runs": runs} if _is_int(runs) else {},
    )
    a = b.analysis
    if a is None:
        return b
    confidence = _positive(a.get("confidence"))
    raw_threshold = a.get("threshold")
    threshold = (
        float(raw_threshold)
        if not isinstance(raw_threshold, bool)
        and isinstance(raw_threshold, int | float)
        and math.isfinite(raw_threshold)
        and raw_threshold >= 0
        else None
    )
    verdict = a.get("verdict")
    note = a.get("note")

    def count(x: Any) -> int:
        return x if _is_int(x) and x >= 0 else 0

    def side(s: Any) -> dict[str, Any] | None:
        if not isinstance(s, Mapping):
            return None
        return {
            "geomean_ns": _positive(s.get("geomean_ns")),
            "median_ns": _positive(s.get("median_ns")),
        }

    def metric_estimate(m: Any) -> dict[str, Any] | None:
        if not isinstance(m, Mapping):
            return None
        if isinstance(m.get("missing"), str):
            return {"missing": m["missing"]}
        v = m.get("verdict")
        return {
            "ratio": _positive(m.get("ratio")),
            "ci_low": _positive(m.get("ci_low")),
            "ci_high": _positive(m.get("ci_high")),
            "verdict": v if v in _VERDICTS else None,
        }

    raw_metrics = a.get("metrics")
    metrics = (
        {k: e for k in names() if (e := metric_estimate(raw_metrics.get(k))) is not None}
        if isinstance(raw_metrics, Mapping)
        else None
    )
    raw_interference = a.get("interference")
    interference = None
    if isinstance(raw_interference, Mapping):
        share = _positive(raw_interference.get("share"))
        interference = {
            "share": min(share, 1.0) if share is not None else 0.0,
            "runq_ns": _positive(raw_interference.get("runq_ns")),
        }
    metric = a.get("metric")

    clean: dict[str, Any] = {
        "ratio": _positive(a.get("ratio")),
        "ci_low": _positive(a.get("ci_low")),
        "ci_high": _positive(a.get("ci_high")),
        "confidence": confidence if confidence is not None and confidence < 1 else None,
        "threshold": threshold,
        "verdict": verdict if verdict in _VERDICTS else None,
        "runs_used": count(a.get("runs_used")),
        "runs_failed": count(a.get("runs_failed")),
        "baseline": side(a.get("baseline")),
        "candidate": side(a.get("candidate")),
        "note": _opt_text(note),
        "metric": metric if get(metric) is not None else None,
        "metric_reason": _opt_text(a.get("metric_reason")),
        "metrics": metrics,
        "interference": interference,
        "disagreement": _opt_text(a.get("disagreement")),
        # The comment names failed runs ("run 4: timeout") and what would decide an
        # inconclusive result; both are escaped where they are rendered.
        "failures": [text(f) for f in a.get("failures") or [] if isinstance(f, str)][:_MAX_FAILURES]
        if isinstance(a.get("failures"), list)
        else [],
        "runs_needed": count(a.get("runs_needed")) or None,
    }
    return replace(b, analysis=clean)
