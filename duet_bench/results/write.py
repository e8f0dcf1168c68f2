"""Writing a results document: the JSON form of each record, and the file replaced atomically
(rewritten after every run, so a crash never loses what was measured)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from duet_bench import files
from duet_bench.errors import ResultsError
from duet_bench.results.model import (
    SIDE_SERIES,
    BenchmarkRecord,
    JSONObject,
    ResultsDocument,
    RunRecord,
    SideRecord,
)


def _side_dict(s: SideRecord) -> JSONObject:
    out: JSONObject = {
        "status": s.status,
        "iterations_ns": list(s.iterations_ns),
        "warmup_ns": list(s.warmup_ns),
    }
    if s.iteration_start_ns is not None:
        out["iteration_start_ns"] = list(s.iteration_start_ns)
    for key in SIDE_SERIES:
        values = getattr(s, key)
        if values is not None:
            out[key] = list(values)
    if s.figures is not None:
        out["figures"] = dict(s.figures)
    if s.runtime is not None:
        out["runtime"] = dict(s.runtime)
    if s.cores is not None:
        out["cores"] = list(s.cores)
    for k in ("cpu_ns", "cpu_user_ns", "cpu_system_ns", "peak_memory_bytes", "wall_ns"):
        out[k] = getattr(s, k)
    out["exit_code"] = s.exit_code
    for k in ("reason", "hit_limit", "runq_source", "stderr_tail"):
        if getattr(s, k) is not None:
            out[k] = getattr(s, k)
    if s.missing:
        out["missing"] = dict(s.missing)
    return out


def _run_dict(r: RunRecord) -> JSONObject:
    out: JSONObject = {"index": r.index, "status": r.status}
    if r.reason is not None:
        out["reason"] = r.reason
    if r.order is not None:
        out["order"] = list(r.order)
    out["baseline"] = _side_dict(r.baseline)
    out["candidate"] = _side_dict(r.candidate)
    return out


def benchmark_dict(b: BenchmarkRecord) -> JSONObject:
    out: JSONObject = {"name": b.name}
    if b.kind is not None:
        out["kind"] = b.kind
    out["method"] = b.method
    if b.versions:
        out["versions"] = dict(b.versions)
    plan = b.settings.to_dict()
    if plan:
        out["settings"] = plan
    if b.note is not None:
        out["note"] = b.note
    if b.analysis is not None:
        out["analysis"] = b.analysis.to_dict()
    out["runs"] = [_run_dict(r) for r in b.runs]
    return out


def to_dict(doc: ResultsDocument) -> JSONObject:
    out: JSONObject = {"schema": doc.schema}
    if doc.tool:
        out["tool"] = dict(doc.tool)
    if doc.created is not None:
        out["created"] = doc.created
    if doc.state:
        out["state"] = dict(doc.state)
    if doc.config:
        out["config"] = dict(doc.config)
    if doc.environment:
        out["environment"] = dict(doc.environment)
    out["benchmarks"] = [benchmark_dict(b) for b in doc.benchmarks]
    return out


def dumps(doc: ResultsDocument) -> str:
    return json.dumps(to_dict(doc), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def save(doc: ResultsDocument, path: str | os.PathLike[str]) -> None:
    """Write ``doc`` atomically: temporary file in the same directory, fsync, rename.

    If anything fails (a full disk, a signal), the previous file is left as it was and the
    temporary file is removed.
    """
    write_atomic(Path(path), dumps(doc))


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` so that readers see the old or the new file, never a part
    (:func:`duet_bench.files.write_atomic`), with the error worded for a results file."""
    try:
        files.write_atomic(path, text)
    except OSError as e:
        raise ResultsError(
            f"{path}: could not write the results ({e.strerror or e}); the previous file "
            "is unchanged",
            fix=files.fix_for(e, "free disk space or choose another --out, then re-run"),
        ) from e
