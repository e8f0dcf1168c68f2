"""The kernel part of the environment record: release and timing-relevant boot options, the
cgroup hierarchy the isolation works through, the clocksource the timings are read from."""

from __future__ import annotations

import os
from pathlib import Path

from duet_bench.environment.record import Record
from duet_bench.machine import Machine, cgroup_version, read_text_or_reason

__all__ = ["boot_options", "read_cgroup", "read_clocksource", "read_kernel"]

# Kernel boot options that change how steady timings are. Only these are recorded: the whole
# command line can hold site-specific or secret values that do not belong in a results file.
_BOOT_OPTIONS = frozenset(
    {
        "isolcpus",
        "nohz_full",
        "rcu_nocbs",
        "irqaffinity",
        "threadirqs",
        "nosmt",
        "mitigations",
        "preempt",
        "intel_pstate",
        "amd_pstate",
        "cpufreq.default_governor",
        "processor.max_cstate",
        "intel_idle.max_cstate",
        "idle",
        "transparent_hugepage",
        "clocksource",
        "tsc",
        "nowatchdog",
        "nmi_watchdog",
        "skew_tick",
    }
)


def boot_options(cmdline: str) -> dict[str, str]:
    """The timing-relevant options of a kernel command line (``name -> value``, "" if bare)."""
    options: dict[str, str] = {}
    for word in cmdline.split():
        if word == "--":
            break  # what follows is for init, not the kernel
        name, _, value = word.partition("=")
        if name in _BOOT_OPTIONS:
            options[name] = value
    return options


def read_kernel(proc: Path, rec: Record) -> dict[str, object]:
    """The record's ``kernel``: ``uname`` and the boot options of ``<proc>/cmdline``."""
    uname = os.uname()
    cmdline, why = read_text_or_reason(proc / "cmdline")
    return {
        "sysname": uname.sysname,
        "release": uname.release,
        "version": uname.version,
        "machine": uname.machine,
        "boot_options": rec.get(
            "kernel.boot_options", None if cmdline is None else boot_options(cmdline), why
        ),
    }


def read_cgroup(machine: Machine, rec: Record) -> dict[str, object]:
    """The record's ``cgroup``: version, v1 controllers, the v2 mount and its controllers."""
    # The same reader and parser as the isolation backends' (duet_bench.machine).
    mounts, reason = machine.cgroup_mounts_or_reason()
    if mounts is None:
        return {
            "version": rec.get("cgroup.version", None, reason),
            "v1_controllers": rec.get("cgroup.v1_controllers", None, reason),
            "v2_mount": rec.get("cgroup.v2_mount", None, reason),
            "v2_controllers": rec.get("cgroup.v2_controllers", None, reason),
        }
    v1 = {c for m in mounts if m.fstype == "cgroup" for c in m.controllers}
    v2_mount = next((m.mountpoint for m in mounts if m.fstype == "cgroup2"), None)
    v2_controllers: list[str] | None = []
    if v2_mount is not None:
        controllers, why = read_text_or_reason(machine.on_sys(v2_mount) / "cgroup.controllers")
        v2_controllers = None if controllers is None else sorted(controllers.split())
        rec.get("cgroup.v2_controllers", v2_controllers, why)
    # "hybrid": systemd's layout with the v1 controllers plus an (almost) empty v2 hierarchy at
    # /sys/fs/cgroup/unified; duet's isolation then works through v1.
    return {
        "version": cgroup_version(mounts),
        "v1_controllers": sorted(v1),
        "v2_mount": rec.get("cgroup.v2_mount", v2_mount, "no cgroup2 file system is mounted"),
        "v2_controllers": v2_controllers,
    }


def read_clocksource(sysfs: Path, rec: Record) -> dict[str, object]:
    """The record's ``clocksource``: the current one and those available."""
    base = sysfs / "devices" / "system" / "clocksource" / "clocksource0"
    current, why_current = read_text_or_reason(base / "current_clocksource")
    available, why_available = read_text_or_reason(base / "available_clocksource")
    return {
        "current": rec.get("clocksource.current", current, why_current),
        "available": rec.get(
            "clocksource.available",
            available.split() if available is not None else None,
            why_available,
        ),
    }
