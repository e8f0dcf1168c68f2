"""Isolation: the level ``duet run`` would get and the cgroup layout behind it.

The level comes from the isolation backends' own probes
(:func:`duet_bench.isolation.cgroup_v2.probe_v2`, :func:`duet_bench.isolation.cgroup_v1.probe_v1`),
and the layout from the same mount parser as theirs
(:meth:`duet_bench.machine.Machine.cgroup_mounts`), so the doctor never promises what the runner
then refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duet_bench.doctor.model import Check, Finding
from duet_bench.isolation import Level, Probe
from duet_bench.isolation.cgroup_v1 import probe_v1
from duet_bench.isolation.cgroup_v2 import probe_v2
from duet_bench.machine import Machine, cgroup_version, read_text

__all__ = ["cgroup_facts", "isolation_findings", "level_of", "real_probes"]

#: The order in which ``select_backend("auto")`` tries the levels.
_PROBE_ORDER: tuple[Level, ...] = ("cgroup-v2", "cgroup-v1")

# What duet's backends need (duet_bench/isolation/cgroup_v1.py, cgroup_v2.py).
_V1_NEEDED = ("cpuset", "cpuacct", "memory", "pids", "freezer")


def real_probes(cgroup_root: str = "/sys/fs/cgroup") -> dict[str, Probe]:
    """The isolation backends' own probes on this machine (no side effects)."""
    return {"cgroup-v2": probe_v2(cgroup_root), "cgroup-v1": probe_v1(cgroup_root)}


def level_of(probes: Mapping[str, Probe]) -> Level:
    """The level ``select_backend("auto")`` picks: the first usable one, else affinity-only."""
    for level in _PROBE_ORDER:
        probe = probes.get(level)
        if probe is not None and probe.ok:
            return level
    return "affinity-only"


def _owned_by(path: Path, uid: int) -> bool:
    try:
        return path.stat().st_uid == uid
    except OSError:
        return False


def cgroup_facts(machine: Machine, euid: int) -> dict[str, Any]:
    """The cgroup layout and whether we may create cgroups in it."""
    mounts = machine.cgroup_mounts()
    try:
        own = machine.own_cgroups()
    except OSError:
        own = {}
    v1 = [m for m in mounts if m.fstype == "cgroup"]
    v2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
    v1_controllers = sorted({c for m in v1 for c in m.controllers})
    v2_controllers: list[str] | None = None
    v2_own: str | None = None
    delegated = False
    if v2 is not None:
        mount_dir = machine.on_sys(v2.mountpoint)
        text = read_text(mount_dir / "cgroup.controllers")
        v2_controllers = sorted(text.split()) if text is not None else None
        path = own.get("")
        if path is not None:
            v2_own = path
            own_dir = mount_dir / path.lstrip("/")
            # systemd's Delegate=yes hands the directory and its cgroup.procs and
            # cgroup.subtree_control to the user: that ownership is what delegation is.
            delegated = euid != 0 and all(
                _owned_by(p, euid)
                for p in (own_dir, own_dir / "cgroup.procs", own_dir / "cgroup.subtree_control")
            )
    if euid == 0:
        privilege = "root"
    elif delegated:
        privilege = "delegated"
    else:
        privilege = "none"
    return {
        "version": cgroup_version(mounts),
        "v1_controllers": v1_controllers,
        "v1_missing": [c for c in _V1_NEEDED if c not in v1_controllers] if v1 else None,
        "v2_mount": v2.mountpoint if v2 is not None else None,
        "v2_controllers": v2_controllers,
        "v2_own_cgroup": v2_own,
        "privilege": privilege,
        "euid": euid,
    }


def isolation_findings(
    level: Level, probes: Mapping[str, Probe], cg: Mapping[str, Any]
) -> tuple[list[Finding], list[Check]]:
    findings: list[Finding] = []
    checks: list[Check] = []
    version = cg["version"]
    layout = {
        "v1": "cgroup v1",
        "v2": "cgroup v2 (unified)",
        "hybrid": "hybrid (controllers in cgroup v1, a cgroup2 hierarchy beside them)",
        "none": "no cgroup file system mounted",
    }[version]
    controllers: list[str] = []
    if cg["v1_controllers"]:
        controllers.append(f"v1: {', '.join(cg['v1_controllers'])}")
    if cg["v2_mount"] is not None:
        v2c = cg["v2_controllers"]
        shown = ", ".join(v2c) if v2c else "none"
        controllers.append(f"cgroup2 at {cg['v2_mount']}: {shown}")
    privilege = {
        "root": "root",
        "delegated": f"uid {cg['euid']} with a delegated cgroup2 subtree ({cg['v2_own_cgroup']})",
        "none": f"uid {cg['euid']}, no delegated cgroup",
    }[cg["privilege"]]
    checks.append(
        Check("cgroup", f"{layout}; controllers {'; '.join(controllers) or 'none'}; {privilege}")
    )
    reasons = "; ".join(f"{lvl}: {p.reason}" for lvl, p in probes.items() if not p.ok and p.reason)
    if level == "affinity-only":
        fixes = [p.fix for p in probes.values() if not p.ok and p.fix]
        if version == "none":
            fix = (
                "mount cgroup2: `sudo mount -t cgroup2 none /sys/fs/cgroup` (in a container: "
                "`docker run --cgroupns=private --privileged ...`)"
            )
        elif fixes:
            fix = " or ".join(dict.fromkeys(fixes))
        else:
            fix = (
                'run as root (`sudo "$(command -v duet)" run ...`: sudo resets PATH, so a duet '
                "installed with pipx or in a venv is named by its full path), or on systemd with "
                "cgroup v2 in a delegated "
                "scope: `systemd-run --user --scope -p Delegate=yes duet run ...`"
            )
        findings.append(
            Finding(
                "warning",
                "cgroup",
                f"duet can only use affinity-only isolation here ({reasons or 'no usable cgroup'})",
                "without cgroups the CPU time of orphaned children and the peak memory of a "
                "process tree cannot be measured (reported missing), limits are not enforced, "
                "and a program that changes its own affinity or daemonises escapes the pinning",
                fix,
            )
        )
    else:
        extra = ""
        if level == "cgroup-v1" and version == "hybrid":
            extra = " (on this hybrid layout the v1 hierarchies hold the controllers)"
        checks.insert(0, Check("isolation", f"duet run gets {level}{extra}"))
    return findings, checks
