"""``duet merge``: one document from the shards of a suite measured by several CI jobs.

Refuses what is not comparable (pyperf's ``Benchmark.add_run`` checks metadata the same way):
shards of different commits, of a different configuration, or measured on a different kind of
machine or isolation level. Naming the difference is the whole point: an average over two
machines is a number nobody can interpret.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from duet import results
from duet.errors import UsageError
from duet.results import ResultsDocument


def _commits(doc: ResultsDocument) -> dict[str, Any]:
    versions: Mapping[str, Any] = doc.config.get("versions") or {}
    return {side: (v or {}).get("commit") for side, v in versions.items() if isinstance(v, Mapping)}


def _suite(doc: ResultsDocument) -> Any:
    return doc.config.get("suite")


def _machine(doc: ResultsDocument) -> tuple[Any, Any]:
    from duet.environment import machine_kind

    env = doc.environment
    kind = env.get("machine_kind") or (machine_kind(dict(env)) if env else None)
    return kind, env.get("isolation")


def merge(documents: Sequence[tuple[str, ResultsDocument]]) -> ResultsDocument:
    """Merge shard documents (``(name, document)`` pairs, the name for messages)."""
    if len(documents) < 2:
        raise UsageError("duet merge needs at least two results files")
    first_name, first = documents[0]
    checks = (
        ("commits", _commits),
        ("configuration", _suite),
        ("machine kind and isolation", _machine),
    )
    for name, doc in documents[1:]:
        for what, key in checks:
            a, b = key(first), key(doc)
            if a != b:
                raise UsageError(
                    f"{name} differs from {first_name} in its {what}: {b!r} vs {a!r}",
                    fix="merge only the shards of one `duet compare` of the same commits, "
                    "configuration and machine kind",
                )
    seen: dict[str, str] = {}
    merged = first
    for name, doc in documents[1:]:
        for b in doc.benchmarks:
            if b.name in seen or any(x.name == b.name for x in first.benchmarks):
                raise UsageError(
                    f"benchmark {b.name!r} is in {name} and in {seen.get(b.name, first_name)}",
                    fix="each benchmark must come from exactly one shard (same --shard i/n twice?)",
                )
            seen[b.name] = name
            merged = merged.with_benchmark(b)
    complete = all(d.state.get("complete", True) for _, d in documents)
    stopped = [f"{n}: {d.state['stopped']}" for n, d in documents if d.state.get("stopped")]
    config = dict(first.config)
    config["shard"] = None
    config["merged_from"] = [n for n, _ in documents]
    # Each shard lists the benchmarks of its part that BASE lacks (duet compare): all of them.
    missing = sorted(
        {str(m) for _, d in documents for m in d.config.get("missing_in_baseline") or []}
    )
    if missing:
        config["missing_in_baseline"] = missing
    return replace(
        merged,
        benchmarks=tuple(sorted(merged.benchmarks, key=lambda b: b.name)),
        config=config,
        state={"complete": complete, "stopped": "; ".join(stopped) or None},
    )


def merge_files(paths: Sequence[Path], out: Path) -> ResultsDocument:
    from duet.commands import load_results

    docs = [(str(p), load_results(p)) for p in paths]
    if out.exists() and any(out.resolve() == p.resolve() for p in paths):
        raise UsageError(f"--out {out} is one of the inputs", fix="write the merge to a new file")
    merged = merge(docs)
    results.save(merged, out)
    return merged
