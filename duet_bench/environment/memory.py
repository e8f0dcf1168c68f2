"""The memory part of the environment record: total, available, swap and swappiness."""

from __future__ import annotations

from pathlib import Path

from duet_bench.environment.record import Record
from duet_bench.machine import read_int_or_reason, read_text_or_reason

__all__ = ["read_memory"]


def _meminfo(proc: Path) -> tuple[dict[str, int], str]:
    text, reason = read_text_or_reason(proc / "meminfo")
    if text is None:
        return {}, reason
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            unit = parts[1] if len(parts) > 1 else ""
            values[key.strip()] = int(parts[0]) * (1024 if unit == "kB" else 1)
    return values, ""


def read_memory(proc: Path, rec: Record) -> dict[str, object]:
    """The record's ``memory``, in bytes, from ``<proc>/meminfo`` and ``vm.swappiness``."""
    info, reason = _meminfo(proc)

    def field(name: str, key: str) -> object:
        why = reason or f"{proc / 'meminfo'} has no {name} line"
        return rec.get(f"memory.{key}", info.get(name), why)

    swap_used: int | None = None
    if "SwapTotal" in info and "SwapFree" in info:
        swap_used = info["SwapTotal"] - info["SwapFree"]
    swappiness, why = read_int_or_reason(proc / "sys" / "vm" / "swappiness")
    return {
        "total_bytes": field("MemTotal", "total_bytes"),
        "available_bytes": field("MemAvailable", "available_bytes"),
        "swap_total_bytes": field("SwapTotal", "swap_total_bytes"),
        "swap_used_bytes": rec.get(
            "memory.swap_used_bytes",
            swap_used,
            reason or f"{proc / 'meminfo'} lacks SwapTotal or SwapFree",
        ),
        "swappiness": rec.get("memory.swappiness", swappiness, why),
    }
