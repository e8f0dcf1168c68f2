"""``duet merge``: one document from the shards of a suite measured by several CI jobs.

Refuses what is not comparable (pyperf's ``Benchmark.add_run`` checks metadata the same way):
a document ``duet compare`` did not write, shards of different commits, of a different
configuration or command-line options, of different splits (``--bench``, ``--shard i/N``),
measured on a different kind of machine or isolation level or by another duet version. Naming
the difference is the whole point: an average over two machines is a number nobody can
interpret.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from duet_bench import results
from duet_bench.environment import machine_kind
from duet_bench.errors import UsageError
from duet_bench.results import ResultsDocument


def _commits(doc: ResultsDocument) -> dict[str, Any]:
    versions: Mapping[str, Any] = doc.config.get("versions") or {}
    return {side: (v or {}).get("commit") for side, v in versions.items() if isinstance(v, Mapping)}


def _suite(doc: ResultsDocument) -> Any:
    return doc.config.get("suite")


def _options(doc: ResultsDocument) -> Any:
    return doc.config.get("options") or {}


def _selection(doc: ResultsDocument) -> str:
    shard, bench = doc.config.get("shard"), doc.config.get("bench")
    # Shards split one selection; without --shard, different --bench patterns are the split.
    if not shard:
        return "no --shard"
    return f"--shard i/{shard[1]}" + (f" of --bench {bench}" if bench else " of the whole suite")


def _machine(doc: ResultsDocument) -> dict[str, Any]:
    env = doc.environment
    kind = env.get("machine_kind") or (machine_kind(dict(env)) if env else None)
    return {"machine kind": kind, "isolation": env.get("isolation")}


def _tool(doc: ResultsDocument) -> Any:
    return doc.tool.get("version")


#: What must be the same in every shard, and how a difference is named.
CHECKS: tuple[tuple[str, Callable[[ResultsDocument], Any]], ...] = (
    ("commits", _commits),
    ("configuration", _suite),
    ("command-line options", _options),
    ("selection of the suite (--bench, --shard i/N)", _selection),
    ("machine kind and isolation", _machine),
    ("duet version", _tool),
)


def _show(value: Any) -> str:
    """A value as a user reads it in a message: JSON, never a Python repr."""
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def differences(a: Any, b: Any, where: str = "") -> list[tuple[str, Any, Any]]:
    """Each place where two JSON values differ: (the key path, the value in ``a``, in ``b``)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out: list[tuple[str, Any, Any]] = []
        for key in sorted({*a, *b}, key=str):
            out += differences(a.get(key), b.get(key), f"{where}.{key}" if where else str(key))
        return out
    if isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b) and a != b:
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{where}[{i}]")
        ]
    return [] if a == b else [(where, a, b)]


def _check_kind(name: str, doc: ResultsDocument) -> None:
    command = doc.config.get("command")
    if command != "compare":
        made_by = f"`duet {command}`" if isinstance(command, str) else "no duet command it names"
        raise UsageError(
            f"{name} was written by {made_by}, not by `duet compare`: it is not a shard of a suite",
            fix="merge only the results.json of the jobs of one `duet compare --shard i/N`",
        )


def merge(documents: Sequence[tuple[str, ResultsDocument]]) -> ResultsDocument:
    """Merge shard documents (``(name, document)`` pairs, the name for messages)."""
    if len(documents) < 2:
        raise UsageError("duet merge needs at least two results files")
    for name, doc in documents:
        _check_kind(name, doc)
    first_name, first = documents[0]
    for name, doc in documents[1:]:
        for what, key in CHECKS:
            found = [
                f"{where + ': ' if where else ''}{_show(b)} in {name}, {_show(a)} in {first_name}"
                for where, a, b in differences(key(first), key(doc))
            ]
            if found:
                shown = "; ".join(found[:3]) + (
                    f"; and {len(found) - 3} more" if len(found) > 3 else ""
                )
                raise UsageError(
                    f"{name} differs from {first_name} in its {what}: {shown}",
                    fix="merge only the shards of one `duet compare` of the same commits, "
                    "configuration and machine kind",
                )
    shards: dict[str, str] = {}
    for name, doc in documents:
        shard = doc.config.get("shard")
        if shard:
            index = f"{shard[0]}/{shard[1]}"
            if index in shards:
                raise UsageError(
                    f"{shards[index]} and {name} are both shard {index}",
                    fix="give each shard's results once (one per --shard i/N)",
                )
            shards[index] = name
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
    complete = all(d.state.get("complete", True) is not False for _, d in documents)
    stopped = [f"{n}: {d.state['stopped']}" for n, d in documents if d.state.get("stopped")]
    # What each shard planned, so that a benchmark an interrupted shard never started stays
    # listed (duet_bench.results.completeness) instead of vanishing from the merge.
    planned = [p for _, d in documents for p in (d.state.get("planned") or [])]
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
        state={
            "complete": complete,
            "stopped": "; ".join(stopped) or None,
            **({"planned": planned} if planned else {}),
        },
    )


def merge_files(paths: Sequence[Path], out: Path) -> ResultsDocument:

    docs = [(str(p), results.load_given(p)) for p in paths]
    if out.exists() and any(out.resolve() == p.resolve() for p in paths):
        raise UsageError(f"--out {out} is one of the inputs", fix="write the merge to a new file")
    merged = merge(docs)
    results.save(merged, out)
    return merged
