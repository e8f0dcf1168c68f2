"""Memory: swap in use and swappiness (BenchExec lists swapping among what makes timings
unreliable)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from duet_bench.doctor.model import Check, Finding, dig, num

__all__ = ["SWAPPINESS_WARNING", "memory_findings"]

#: Swappiness above this lets the kernel page out a benchmark's memory under pressure.
SWAPPINESS_WARNING = 10


def memory_findings(env: Mapping[str, Any]) -> tuple[list[Finding], list[Check]]:
    total = num(dig(env, "memory", "swap_total_bytes"))
    used = num(dig(env, "memory", "swap_used_bytes"))
    swappiness = num(dig(env, "memory", "swappiness"))
    mib = 1024 * 1024
    if total is None:
        return [], [Check("swap", "unknown (/proc/meminfo not readable)")]
    if total == 0:
        return [], [
            Check(
                "swap",
                "no swap"
                + (
                    f" (swappiness {swappiness:.0f} has no effect)"
                    if swappiness is not None
                    else ""
                ),
            )
        ]
    findings: list[Finding] = []
    if used:
        findings.append(
            Finding(
                "warning",
                "swap",
                f"{used / mib:.0f} MiB of swap are in use (of {total / mib:.0f} MiB)",
                "pages that were swapped out come back on first touch: an iteration that "
                "touches them takes page faults to disk that the other side does not",
                "`sudo swapoff -a && sudo swapon -a` (brings them back into memory, needs "
                "enough free RAM), then lower the swappiness: `sudo sysctl vm.swappiness=1`",
            )
        )
    if swappiness is not None and swappiness > SWAPPINESS_WARNING:
        findings.append(
            Finding(
                "warning",
                "swap",
                f"swap is on ({total / mib:.0f} MiB) with vm.swappiness {swappiness:.0f}",
                "under memory pressure the kernel may page out a benchmark's memory, which "
                "BenchExec lists among the things that make timings unreliable; duet's own "
                "memory limit keeps the sides out of swap only when --memory-limit is given",
                "`sudo sysctl vm.swappiness=1` (or `sudo swapoff -a` while measuring)",
            )
        )
    if not findings:
        checks = [Check("swap", f"{total / mib:.0f} MiB, unused, swappiness {swappiness}")]
        return [], checks
    return findings, []
