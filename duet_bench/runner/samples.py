"""Reading what a side leaves behind: its samples file (docs/architecture.md, "Samples file")
and the end of its stderr.

Both are in the side's own directory, which belongs to the user the side runs as: root reads
them only as regular files of their own, never through a link
(:func:`duet_bench.files.open_existing`; docs/isolation.md, "What runs as root")."""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duet_bench.files import open_existing

STDERR_TAIL_BYTES = 2000


@dataclass(frozen=True, slots=True)
class Samples:
    """What a samples file holds (docs/architecture.md, "Samples file")."""

    warmup_ns: tuple[int, ...] = ()
    iterations_ns: tuple[int, ...] = ()
    iteration_start_ns: tuple[int, ...] = ()
    #: Per measured iteration, each None unless every measured line had the figure.
    iteration_cpu_ns: tuple[int, ...] | None = None
    iteration_runq_ns: tuple[int, ...] | None = None
    iteration_nivcsw: tuple[int, ...] | None = None
    #: Per measured iteration, the CPU the side was pinned to (the line's ``cpu``).
    iteration_cpus: tuple[int, ...] | None = None
    #: The benchmark tool's own figures beside the time (go's ``B/op``, ``allocs/op``, ``MB/s``,
    #: ``b.ReportMetric`` units), each the median over the measured iterations; a unit only when
    #: every measured line had it.
    figures: Mapping[str, float] = field(default_factory=dict)
    error: str | None = None
    #: The error line says the measured command failed (it carries the command's
    #: ``exit_status`` or the ``signal`` that killed it), not the worker or the spec.
    command_failed: bool = False
    done: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)


def read_samples(path: Path) -> Samples:
    """Parse a samples file; a line cut short by a kill is ignored, not fatal."""
    warmup: list[int] = []
    measured: list[int] = []
    starts: list[int] = []
    per_iteration: dict[str, list[int]] = {"cpu_ns": [], "runq_ns": [], "nivcsw": [], "cpu": []}
    error = None
    command_failed = False
    done = False
    extra: dict[str, Any] = {}
    figures: list[Mapping[str, Any]] = []
    try:
        fd = open_existing(path)
    except OSError as e:
        return Samples(error=f"the samples file was not read: {e.strerror or e}")
    if fd is None:
        return Samples(error="the side wrote no samples file")
    with open(fd, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    for line in lines:
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            # Not JSON, or JSON that json refuses to build (an integer of more than 4300
            # digits, nesting deeper than the recursion limit): the benchmark wrote it, and it
            # must not take the orchestrator down.
            continue
        if not isinstance(item, dict):
            continue
        if "error" in item:
            error = str(item["error"])
            command_failed = "exit_status" in item or "signal" in item
        elif item.get("done"):
            done = True
            extra = {k: v for k, v in item.items() if k != "done"}
        elif item.get("phase") in ("warmup", "measure"):
            d = item.get("duration_ns")
            if not isinstance(d, int) or d <= 0:
                continue
            if item["phase"] == "warmup":
                warmup.append(d)
            else:
                measured.append(d)
                start = item.get("start_ns")
                starts.append(start if isinstance(start, int) else -1)
                for key, values in per_iteration.items():
                    v = item.get(key)
                    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                        values.append(v)
                given = item.get("figures")
                figures.append(given if isinstance(given, dict) else {})

    def complete(key: str) -> tuple[int, ...] | None:
        # A figure missing from one line (an old harness, a kernel without schedstat) cannot
        # be paired iteration by iteration: all or nothing.
        values = per_iteration[key]
        return tuple(values) if measured and len(values) == len(measured) else None

    return Samples(
        warmup_ns=tuple(warmup),
        iterations_ns=tuple(measured),
        iteration_start_ns=tuple(starts),
        iteration_cpu_ns=complete("cpu_ns"),
        iteration_runq_ns=complete("runq_ns"),
        iteration_nivcsw=complete("nivcsw"),
        iteration_cpus=complete("cpu"),
        figures=_medians(figures),
        error=error,
        command_failed=command_failed,
        done=done,
        extra=extra,
    )


def _medians(lines: list[Mapping[str, Any]]) -> dict[str, float]:
    """Per unit present in every line, the median of its values."""
    if not lines:
        return {}
    out: dict[str, float] = {}
    for unit in lines[0]:
        values = [line.get(unit) for line in lines]
        numbers = [
            float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        if len(numbers) == len(lines) and all(math.isfinite(v) for v in numbers):
            out[str(unit)] = statistics.median(numbers)
    return out


def stderr_tail(path: Path) -> str | None:
    """The last :data:`STDERR_TAIL_BYTES` of a side's stderr file, None when it is empty or gone."""
    try:
        fd = open_existing(path)
    except OSError as e:
        return f"({path.name} was not read: {e.strerror or e})"
    if fd is None:
        return None
    with open(fd, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - STDERR_TAIL_BYTES))
        text = f.read().decode("utf-8", errors="replace").strip()
    return text or None
