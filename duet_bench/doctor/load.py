"""Load and neighbours: load average, CPU pressure (PSI), steal time, and the processes that
use the measuring CPUs."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from duet_bench.doctor.model import Check, Finding, dig, num
from duet_bench.machine import CpuTicks, Machine

__all__ = [
    "BUSY_WARNING",
    "LOAD_WARNING",
    "NEIGHBOURS_SHOWN",
    "NEIGHBOUR_SHARE",
    "PRESSURE_WARNING_PCT",
    "STEAL_WARNING",
    "command_of",
    "load_findings",
    "neighbour_findings",
]

#: A 1-minute load average at or above this means other work competes for the pair.
LOAD_WARNING = 0.5
#: CPU pressure (PSI "some", 10 s average) at or above this percentage is reported.
PRESSURE_WARNING_PCT = 10.0
#: Steal time at or above this fraction of CPU time is reported.
STEAL_WARNING = 0.02
#: Non-idle CPU time of the whole machine (other work, duet is not running) worth reporting.
BUSY_WARNING = 0.25
#: A process is named as using the measuring CPUs from this share of one CPU over the sample.
NEIGHBOUR_SHARE = 0.02
#: At most this many are named (the busiest first).
NEIGHBOURS_SHOWN = 5


def command_of(machine: Machine, pid: int) -> str:
    """The command line of ``pid`` on one line of at most 120 characters, "" when unknown."""
    text = machine.cmdline(pid) or ""
    return text if len(text) <= 120 else text[:117] + "..."


def load_findings(
    env: Mapping[str, Any],
    machine: Machine,
    n_cpus: int,
    sample: tuple[CpuTicks, CpuTicks, float] | None,
) -> tuple[list[Finding], list[Check], dict[str, Any]]:
    findings: list[Finding] = []
    checks: list[Check] = []
    loads = env.get("load_average")
    load1 = num(loads[0]) if isinstance(loads, list) and loads else None
    pressure = machine.cpu_pressure()
    steal_boot = num(dig(env, "steal", "fraction_since_boot"))
    steal_now: float | None = None
    busy_now: float | None = None
    interval_s: float | None = None
    if sample is not None:
        first, second, interval_s = sample
        if second.total > first.total:
            total = second.total - first.total
            steal_now = (second.steal - first.steal) / total
            busy_now = 1.0 - (second.idle - first.idle) / total
    facts: dict[str, Any] = {
        "load_average": loads,
        "cpu_pressure_some_avg10_pct": pressure,
        "steal_fraction_since_boot": steal_boot,
        "steal_fraction_now": steal_now,
        "busy_fraction_now": busy_now,
        "sample_s": interval_s,
    }
    described = []
    if load1 is not None and isinstance(loads, list):
        described.append(f"load average {' '.join(f'{x:.2f}' for x in loads)} on {n_cpus} CPUs")
    if busy_now is not None and interval_s is not None:
        described.append(f"{busy_now:.0%} of CPU time busy over {interval_s:.1f} s")
    if pressure is not None:
        described.append(f"CPU pressure {pressure:.1f}% (10 s)")
    busy = (
        (load1 is not None and load1 >= LOAD_WARNING)
        or (busy_now is not None and busy_now >= BUSY_WARNING)
        or (pressure is not None and pressure >= PRESSURE_WARNING_PCT)
    )
    if busy:
        findings.append(
            Finding(
                "warning",
                "load",
                "other work is running: " + ", ".join(described),
                "other tasks take CPU time and caches from the sides; what hits both sides of an "
                "iteration cancels in the ratio, what hits one side does not, and the interval "
                "widens either way",
                "find it with `top -o %CPU` (or `ps -eo pid,pcpu,etime,args --sort=-pcpu | "
                "head`) and stop or move it; then check what this machine still detects with "
                "`duet calibrate --command true`",
            )
        )
    elif described:
        checks.append(Check("load", ", ".join(described)))
    steal = steal_now if steal_now is not None else steal_boot
    if steal is not None and steal >= STEAL_WARNING:
        when = (
            f"over the last {interval_s:.1f} s"
            if steal_now is not None and interval_s is not None
            else "since boot"
        )
        findings.append(
            Finding(
                "warning",
                "steal",
                f"the hypervisor took {steal:.1%} of CPU time for other guests {when}",
                "stolen time is counted in the iteration that suffers it; when it hits one vCPU "
                "and not the other, the ratio does not cancel it",
                "use a larger or dedicated instance (stolen time shows in `vmstat 1`, column "
                "st); duet's per-iteration ratio cancels steal that hits both vCPUs together",
            )
        )
    elif steal is not None:
        checks.append(Check("steal", f"steal time {steal:.1%}"))
    return findings, checks, facts


def neighbour_findings(
    machine: Machine,
    pair_cpus: Sequence[int],
    ticks: tuple[dict[int, int], dict[int, int], float] | None,
    exclude: set[int],
) -> tuple[list[Finding], list[Check], list[dict[str, Any]]]:
    """The processes that used CPU time during the sample and may run on the measuring CPUs:
    on a 2-CPU machine every one of them must take turns with a side."""
    if ticks is None or not pair_cpus:
        return [], [], []
    before, after, interval_s = ticks
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    found: list[dict[str, Any]] = []
    for pid, end in after.items():
        if pid in exclude or pid not in before:
            continue
        share = (end - before[pid]) / hz / interval_s if interval_s > 0 else 0.0
        if share < NEIGHBOUR_SHARE:
            continue
        allowed = machine.allowed_cpus(pid)
        if allowed is not None and not set(allowed) & set(pair_cpus):
            continue
        command = command_of(machine, pid) or f"[{(machine.comm(pid) or '?').strip()}]"
        command = command if len(command) <= 60 else command[:57] + "..."
        found.append({"pid": pid, "cpu_share": share, "command": command})
    found.sort(key=lambda f: -f["cpu_share"])
    cpus = ", ".join(str(c) for c in pair_cpus)
    if not found:
        return [], [Check("neighbours", f"no other process used CPUs {cpus} during the sample")], []
    shown = "; ".join(
        f"{f['pid']} {f['command']} ({f['cpu_share']:.0%} of a CPU)"
        for f in found[:NEIGHBOURS_SHOWN]
    )
    more = f"; and {len(found) - NEIGHBOURS_SHOWN} more" if len(found) > NEIGHBOURS_SHOWN else ""
    finding = Finding(
        "warning" if sum(f["cpu_share"] for f in found) >= 0.1 else "notice",
        "neighbours",
        f"processes using the measuring CPUs ({cpus}): {shown}{more}",
        "on this machine they must take turns with a side: its wall time then measures the "
        'scheduler (CPU time does not, and duet\'s `metric = "auto"` switches to it for '
        "CPU-bound benchmarks), and they still share caches and memory bandwidth",
        "stop them, or keep them off the measuring CPUs (`taskset -apc <other CPUs> PID`); "
        "every report says how many iterations another process delayed",
    )
    return [finding], [], found
