"""What this machine allows and what will disturb measurements (``duet doctor``).

Pure checks: everything is read from injectable ``/sys`` and ``/proc`` roots (synthetic trees in
the tests, the real ones in ``duet doctor``) and returned as a frozen :class:`Diagnosis`; nothing
is printed here. Each problem is a :class:`Finding` that says *what* was found, *why* it matters
for a measurement and the exact command that *fixes* it (``style.md`` item 9).

What is checked, and where the advice comes from:

- isolation: the level ``duet run`` would get, from the isolation backends' own probes
  (:func:`duet.isolation.cgroup_v2.probe_v2`, :func:`duet.isolation.cgroup_v1.probe_v1`), so
  the doctor never promises what the runner then refuses; the cgroup layout (v1, v2, hybrid),
  its controllers, and whether we may use them (root, a delegated subtree, or neither);
- topology: the core pair ``duet run`` would choose (:func:`duet.topology.choose_pair`), SMT
  siblings, and whether this is a VM, in which case host SMT is invisible (Beyer et al.,
  *Reliable benchmarking*, section 3.4);
- frequency: governor, energy-performance preference, boost/turbo, ``intel_pstate`` and
  ``amd_pstate`` state, thermal throttling and temperatures (Fichte et al., *Complications for
  Computational Experiments from Modern Processors*, CP 2021, sections 3-4);
- clocksource, swap and swappiness, load average, CPU pressure (PSI) and steal time;
- another duet already running (live ``duet-<pid>-*`` entries in ``/dev/shm``, ``/var/tmp``
  and the cgroup hierarchies), and leftovers of one that crashed.

Severities: ``error`` (duet cannot measure as asked), ``warning`` (measurements will be
disturbed), ``notice`` (a limit of this machine worth knowing, with what to do about it).
Checks that passed are :class:`Check` lines, without a fix.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from duet.environment import V1_CONTROLLERS, capture_environment
from duet.errors import DuetError
from duet.isolation import PARENT_NAME_RE, Level, Probe
from duet.topology import (
    CorePair,
    Topology,
    choose_pair,
    format_cpu_list,
    parse_cpu_list,
    read_topology,
)

__all__ = [
    "REQUIREMENTS",
    "SEVERITIES",
    "Check",
    "Diagnosis",
    "Finding",
    "Requirement",
    "Severity",
    "diagnose",
    "real_probes",
]

Severity: TypeAlias = Literal["error", "warning", "notice"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "notice")
Requirement: TypeAlias = Literal["cgroup", "cgroup-v2", "none"]
REQUIREMENTS: tuple[Requirement, ...] = ("cgroup", "cgroup-v2", "none")

#: The order in which ``select_backend("auto")`` tries the levels.
_PROBE_ORDER: tuple[Level, ...] = ("cgroup-v2", "cgroup-v1")

# Clocksources read through the vDSO without a system call: a clock_gettime costs tens of
# nanoseconds. The others (hpet, acpi_pm, jiffies) trap into the kernel and cost microseconds,
# which is the size of the barrier's start skew itself.
_FAST_CLOCKSOURCES = frozenset(
    {
        "tsc",
        "kvm-clock",
        "arch_sys_counter",
        "hyperv_clocksource_tsc_page",
        "xen",
        "riscv_clocksource",
    }
)

#: A 1-minute load average at or above this means other work competes for the pair.
LOAD_WARNING = 0.5
#: CPU pressure (PSI "some", 10 s average) at or above this percentage is reported.
PRESSURE_WARNING_PCT = 10.0
#: Steal time at or above this fraction of CPU time is reported.
STEAL_WARNING = 0.02
#: Non-idle CPU time of the whole machine (other work, duet is not running) worth reporting.
BUSY_WARNING = 0.25
#: Swappiness above this lets the kernel page out a benchmark's memory under pressure.
SWAPPINESS_WARNING = 10
#: Report a temperature this close (in millidegrees) to the sensor's own limit.
THERMAL_MARGIN_MC = 10_000
#: Without a limit from the sensor, report temperatures at or above this (millidegrees).
THERMAL_ABSOLUTE_MC = 90_000


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing that will disturb a measurement or limit what duet can do here.

    Attributes
    ----------
    severity : {"error", "warning", "notice"}
    topic : str
        A short stable key (``cgroup``, ``topology``, ``frequency``, ``boost``, ...).
    what : str
        What was found, with the values read.
    why : str
        The consequence for a measurement.
    fix : str
        The exact command (or action) that removes the problem.
    """

    severity: Severity
    topic: str
    what: str
    why: str
    fix: str

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")
        for name in ("topic", "what", "why", "fix"):
            if not getattr(self, name).strip():
                raise ValueError(f"a finding needs a non-empty {name}")

    def to_dict(self) -> dict[str, str]:
        return {
            "severity": self.severity,
            "topic": self.topic,
            "what": self.what,
            "why": self.why,
            "fix": self.fix,
        }


@dataclass(frozen=True, slots=True)
class Check:
    """A fact that was checked and is fine (or merely informative): one line of the report."""

    topic: str
    summary: str

    def to_dict(self) -> dict[str, str]:
        return {"topic": self.topic, "summary": self.summary}


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Everything ``duet doctor`` found.

    Attributes
    ----------
    isolation : str
        The level ``duet run --isolation auto`` would get: ``cgroup-v2``, ``cgroup-v1`` or
        ``affinity-only``.
    probes : mapping of str to Probe
        The backends' answer for ``cgroup-v2`` and ``cgroup-v1`` (reason and fix when not ok).
    cgroup : mapping
        The cgroup layout: ``version`` (v1, v2, hybrid, none), controllers, ``privilege``.
    cpus : mapping
        The topology summary (:meth:`duet.topology.Topology.summary`), or ``{"error": ...}``.
    pair : mapping or None
        The pair ``duet run`` would use (:meth:`duet.topology.CorePair.as_dict`), None when
        there is none (a finding says why).
    facts : mapping
        The values read: frequency, clocksource, memory, load, steal, pressure, temperatures,
        other duets.
    findings : tuple of Finding
        Problems and limits, errors first.
    checks : tuple of Check
        What was checked and found fine.
    """

    isolation: Level
    probes: Mapping[str, Probe]
    cgroup: Mapping[str, Any]
    cpus: Mapping[str, Any]
    pair: Mapping[str, Any] | None
    facts: Mapping[str, Any]
    findings: tuple[Finding, ...]
    checks: tuple[Check, ...] = field(default=())

    def satisfies(self, requirement: Requirement) -> bool:
        """Whether the isolation level meets ``--require``: ``cgroup`` (v1 or v2),
        ``cgroup-v2``, or ``none`` (always)."""
        if requirement == "none":
            return True
        if requirement == "cgroup":
            return self.isolation in ("cgroup-v1", "cgroup-v2")
        if requirement == "cgroup-v2":
            return self.isolation == "cgroup-v2"
        raise ValueError(f"requirement must be one of {REQUIREMENTS}, got {requirement!r}")

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "isolation": self.isolation,
            "probes": {
                level: {"ok": p.ok, "reason": p.reason or None, "fix": p.fix}
                for level, p in self.probes.items()
            },
            "cgroup": dict(self.cgroup),
            "cpus": dict(self.cpus),
            "pair": dict(self.pair) if self.pair is not None else None,
            "facts": dict(self.facts),
            "findings": [f.to_dict() for f in self.findings],
            "checks": [c.to_dict() for c in self.checks],
        }


# --------------------------------------------------------------------------------------------
# Small readers (never raise for I/O: a missing file is a fact, not a crash)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _dig(node: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _rebase(path: str, sysfs: Path) -> Path:
    """Map a mount point under /sys onto the sysfs root in use (a synthetic tree in tests)."""
    if path == "/sys" or path.startswith("/sys/"):
        return sysfs / path[len("/sys") :].lstrip("/")
    return Path(path)


def _unescape(text: str) -> str:
    # /proc/*/mounts escapes space, tab, newline and backslash as octal.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def _pid_alive(proc: Path, pid: int) -> bool:
    """Whether ``pid`` runs, from ``<proc>/<pid>/stat`` (a zombie will never run again)."""
    text = _read(proc / str(pid) / "stat")
    if text is None:
        return False
    state = text.rpartition(")")[2].split()
    return bool(state) and state[0] not in ("Z", "X")


def _cmdline(proc: Path, pid: int) -> str:
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
    # One line whatever the arguments hold (a `python -c` program has newlines).
    text = " ".join(" ".join(words).split())
    return text if len(text) <= 120 else text[:117] + "..."


# --------------------------------------------------------------------------------------------
# Isolation


def real_probes(cgroup_root: str = "/sys/fs/cgroup") -> dict[str, Probe]:
    """The isolation backends' own probes on this machine (no side effects)."""
    from duet.isolation.cgroup_v1 import probe_v1
    from duet.isolation.cgroup_v2 import probe_v2

    return {"cgroup-v2": probe_v2(cgroup_root), "cgroup-v1": probe_v1(cgroup_root)}


def _level(probes: Mapping[str, Probe]) -> Level:
    """The level ``select_backend("auto")`` picks: the first usable one, else affinity-only."""
    for level in _PROBE_ORDER:
        probe = probes.get(level)
        if probe is not None and probe.ok:
            return level
    return "affinity-only"


@dataclass(frozen=True, slots=True)
class _Mount:
    point: str
    fstype: str
    controllers: tuple[str, ...]


# What duet's backends need (duet/isolation/cgroup_v1.py, cgroup_v2.py).
_V1_NEEDED = ("cpuset", "cpuacct", "memory", "pids", "freezer")
_V2_NEEDED = ("cpuset", "cpu", "memory", "pids")


def _cgroup_mounts(proc: Path) -> list[_Mount]:
    text = _read(proc / "self" / "mounts") or _read(proc / "mounts") or ""
    mounts: list[_Mount] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[2] not in ("cgroup", "cgroup2"):
            continue
        options = parts[3].split(",")
        controllers = tuple(sorted(o for o in options if o in V1_CONTROLLERS))
        mounts.append(_Mount(_unescape(parts[1]), parts[2], controllers))
    return mounts


def _own_cgroups(proc: Path) -> dict[str, str]:
    """``<proc>/self/cgroup``: controller -> path; the cgroup2 entry has key ``""``."""
    result: dict[str, str] = {}
    for line in (_read(proc / "self" / "cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if not parts[1]:
            result[""] = parts[2]
        for controller in parts[1].split(","):
            if controller:
                result[controller.removeprefix("name=")] = parts[2]
    return result


def _owned_by(path: Path, uid: int) -> bool:
    try:
        return path.stat().st_uid == uid
    except OSError:
        return False


def _cgroup_facts(proc: Path, sysfs: Path, euid: int) -> dict[str, Any]:
    """The cgroup layout and whether we may create cgroups in it."""
    mounts = _cgroup_mounts(proc)
    own = _own_cgroups(proc)
    v1 = [m for m in mounts if m.fstype == "cgroup"]
    v2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
    v1_controllers = sorted({c for m in v1 for c in m.controllers})
    v2_controllers: list[str] | None = None
    v2_own: str | None = None
    delegated = False
    if v2 is not None:
        mount_dir = _rebase(v2.point, sysfs)
        text = _read(mount_dir / "cgroup.controllers")
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
    if v1 and v2 is not None:
        version = "hybrid"
    elif v1:
        version = "v1"
    elif v2 is not None:
        version = "v2"
    else:
        version = "none"
    if euid == 0:
        privilege = "root"
    elif delegated:
        privilege = "delegated"
    else:
        privilege = "none"
    return {
        "version": version,
        "v1_controllers": v1_controllers,
        "v1_missing": [c for c in _V1_NEEDED if c not in v1_controllers] if v1 else None,
        "v2_mount": v2.point if v2 is not None else None,
        "v2_controllers": v2_controllers,
        "v2_own_cgroup": v2_own,
        "privilege": privilege,
        "euid": euid,
    }


def _isolation_findings(
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


# --------------------------------------------------------------------------------------------
# Topology


def _topology_findings(
    topology: Topology | None, pair: CorePair | None, pair_error: DuetError | None
) -> tuple[list[Finding], list[Check]]:
    findings: list[Finding] = []
    checks: list[Check] = []
    if topology is None:
        return findings, checks
    cores = topology.physical_cores()
    threads = topology.threads_per_core
    checks.append(
        Check(
            "cpus",
            f"{len(topology.online)} online CPUs ({format_cpu_list(topology.online)}), "
            f"{len(topology.usable)} allowed, {len(cores)} physical cores, "
            f"{threads} thread{'s' if threads != 1 else ''} per core, "
            f"{len(topology.packages)} package(s), {len(topology.nodes)} NUMA node(s)"
            + (f"; a VM ({topology.hypervisor_evidence})" if topology.hypervisor else ""),
        )
    )
    if pair is None:
        assert pair_error is not None
        findings.append(
            Finding(
                "error",
                "topology",
                f"no core pair for a duet: {pair_error.message}",
                "the two sides must run on two different physical cores at the same time; "
                "without such a pair only the sequential method can measure here",
                pair_error.fix or "measure with `duet run --method sequential ...`",
            )
        )
        return findings, checks
    a, b = pair.cpus
    idle = pair.idle_cpus
    siblings = (
        f"; SMT siblings {format_cpu_list(idle)} to keep idle" if idle else "; no SMT siblings"
    )
    orchestrator = (
        f"; duet itself on {format_cpu_list(pair.orchestrator_cpus)}"
        if pair.orchestrator_cpus
        else "; duet itself shares the pair (no third CPU)"
    )
    checks.append(Check("pair", f"CPUs {a} and {b}{siblings}{orchestrator}"))
    if topology.hypervisor:
        findings.append(
            Finding(
                "notice",
                "topology",
                f"this is a virtual machine ({topology.hypervisor_evidence}): vCPUs {a} and {b} "
                "may be SMT siblings of one host core, and the host's other guests share it",
                "host-level SMT is invisible from inside a guest; if the two vCPUs share a host "
                "core the sides slow each other down, and the two vCPUs need not be equally "
                "fast (1.2-2.4% apart measured on 2-vCPU cloud VMs; `duet calibrate` reports "
                "it as the side asymmetry)",
                "keep duet's balanced side alternation (the default); measure the asymmetry "
                "with `duet calibrate --command true`; for dedicated cores use a bare-metal "
                "or dedicated-host runner",
            )
        )
    if idle:
        foreign = [c for c in idle if c not in topology.allowed]
        findings.append(
            Finding(
                "warning" if foreign else "notice",
                "smt",
                f"the pair's SMT siblings {format_cpu_list(idle)} share execution units with "
                f"CPUs {a} and {b}"
                + (
                    f"; {format_cpu_list(foreign)} lie outside duet's affinity, so other "
                    "processes may run there"
                    if foreign
                    else ""
                ),
                "work on a sibling slows the side on the same core (BenchExec measured +53% CPU "
                "time), and only that side",
                "keep the siblings idle (duet does not run anything there), or switch SMT off "
                "while measuring: `echo off | sudo tee /sys/devices/system/cpu/smt/control`",
            )
        )
    if not pair.orchestrator_cpus:
        findings.append(
            Finding(
                "notice",
                "topology",
                "there is no CPU besides the pair: duet's own process shares the measured cores",
                "the orchestrator sleeps while the sides run, but its wake-ups (once a second, "
                "and between runs) land on a measured core",
                "nothing to do for correctness; a runner with 3 or more CPUs keeps duet off the "
                "pair (e.g. a 4-vCPU GitHub runner)",
            )
        )
    if len(topology.usable) < len(topology.online):
        outside = [c for c in topology.online if c not in topology.allowed]
        checks.append(
            Check(
                "affinity",
                f"CPUs {format_cpu_list(outside)} are outside this process's affinity "
                "(taskset or a cpuset): duet chooses among the others",
            )
        )
    if len(topology.online) >= 4 and not topology.isolated:
        findings.append(
            Finding(
                "notice",
                "topology",
                f"no CPU is isolated from the scheduler (isolcpus is empty); CPUs {a} and {b} "
                "also run other tasks and interrupts",
                "other tasks scheduled on a measured core add noise to one side only",
                f"boot with `isolcpus={a},{b} nohz_full={a},{b} rcu_nocbs={a},{b}` (kernel "
                "command line), or keep the machine otherwise idle while measuring",
            )
        )
    return findings, checks


# --------------------------------------------------------------------------------------------
# Frequency, boost, clocksource


def _frequency_findings(
    env: Mapping[str, Any], sysfs: Path, pair_cpus: Sequence[int], vm: bool
) -> tuple[list[Finding], list[Check], dict[str, Any]]:
    findings: list[Finding] = []
    checks: list[Check] = []
    cpu_root = sysfs / "devices" / "system" / "cpu"
    per_cpu = _dig(env, "cpufreq", "cpus")
    per_cpu = per_cpu if isinstance(per_cpu, Mapping) else {}
    policies = {int(k): v for k, v in per_cpu.items() if isinstance(v, Mapping)}
    epp: dict[int, str] = {}
    for cpu in policies:
        value = _read(cpu_root / f"cpu{cpu}" / "cpufreq" / "energy_performance_preference")
        if value is not None:
            epp[cpu] = value
    boost = _dig(env, "cpufreq", "boost")
    boost_source = _dig(env, "cpufreq", "boost_source")
    intel = _dig(env, "cpufreq", "intel_pstate_status")
    amd = _dig(env, "cpufreq", "amd_pstate_status")
    facts: dict[str, Any] = {
        "cpus": {str(k): dict(v) for k, v in policies.items()},
        "energy_performance_preference": {str(k): v for k, v in epp.items()},
        "boost": boost,
        "boost_source": boost_source,
        "intel_pstate": intel,
        "amd_pstate": amd,
    }
    if not policies:
        where = "the hypervisor's host" if vm else "the firmware"
        driver_word = "no cpufreq driver is loaded"
        findings.append(
            Finding(
                "notice",
                "frequency",
                f"{driver_word} for CPUs {format_cpu_list(pair_cpus)}: frequency, turbo and "
                f"power states are set by {where} and cannot be read or fixed from here",
                "a frequency change that hits both sides alike cancels in the per-iteration "
                "ratio; one that hits one core only (turbo depends on how many cores are busy) "
                "does not",
                "inside a VM nothing can be done: check the result with "
                "`duet calibrate --command true` (side asymmetry, A/A interval); on bare metal "
                "load the driver (`sudo modprobe acpi-cpufreq`) or set the BIOS power profile "
                "to maximum performance",
            )
        )
    else:
        governors = {cpu: _dig(p, "governor") for cpu, p in policies.items()}
        drivers = sorted({str(_dig(p, "driver")) for p in policies.values()})
        checks.append(
            Check(
                "frequency",
                "governor "
                + ", ".join(f"cpu{c} {g}" for c, g in sorted(governors.items()))
                + f"; driver {', '.join(drivers)}"
                + (f"; intel_pstate {intel}" if intel else "")
                + (f"; amd_pstate {amd}" if amd else ""),
            )
        )
        slow = sorted(c for c, g in governors.items() if g != "performance")
        if slow:
            cpus = format_cpu_list(slow)
            names = sorted({str(governors[c]) for c in slow})
            findings.append(
                Finding(
                    "warning",
                    "frequency",
                    f"CPU {cpus} use the {'/'.join(names)} governor, not performance",
                    "the governor lowers the frequency while a core waits (at the barrier, "
                    "between runs) and raises it under load, so the first part of every "
                    "iteration runs slower and the two sides need not run at the same speed "
                    "(Fichte et al., section 4)",
                    "`sudo cpupower frequency-set -g performance`, or `echo performance | sudo "
                    "tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`",
                )
            )
        if len({str(g) for g in governors.values()}) > 1:
            findings.append(
                Finding(
                    "warning",
                    "frequency",
                    "the CPUs of the pair use different governors ("
                    + ", ".join(f"cpu{c} {g}" for c, g in sorted(governors.items()))
                    + ")",
                    "one core then runs at a different frequency than the other; alternating "
                    "the sides cancels the bias but not the extra noise",
                    "`sudo cpupower frequency-set -g performance` (sets every CPU alike)",
                )
            )
        lazy = sorted(c for c, v in epp.items() if v != "performance")
        if lazy:
            findings.append(
                Finding(
                    "warning",
                    "frequency",
                    f"CPU {format_cpu_list(lazy)} have energy_performance_preference "
                    f"{'/'.join(sorted({epp[c] for c in lazy}))}",
                    "with hardware-managed P-states (intel_pstate or amd_pstate in active "
                    "mode) the CPU picks its own frequency from this hint; anything but "
                    "performance trades speed for energy as load changes",
                    "`echo performance | sudo tee "
                    "/sys/devices/system/cpu/cpu*/cpufreq/energy_performance_preference`",
                )
            )
    if boost in ("on", "mixed"):
        if boost_source == "intel_pstate/no_turbo":
            fix = "`echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo`"
        elif boost_source == "cpufreq/boost":
            fix = "`echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost`"
        else:
            fix = "`echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/policy*/boost`"
        findings.append(
            Finding(
                "warning",
                "boost",
                f"turbo/boost is {boost} ({boost_source})",
                "the boosted frequency depends on how many cores are busy, on temperature and "
                "on the power budget, and changes within seconds: run-to-run variation that "
                "a second core does not necessarily share (Fichte et al., section 3)",
                fix,
            )
        )
    elif boost == "off":
        checks.append(Check("boost", f"turbo/boost is off ({boost_source})"))
    return findings, checks, facts


def _clocksource_findings(env: Mapping[str, Any]) -> tuple[list[Finding], list[Check]]:
    current = _dig(env, "clocksource", "current")
    available = _dig(env, "clocksource", "available")
    avail = [str(x) for x in available] if isinstance(available, list) else []
    if not isinstance(current, str):
        return [], [Check("clocksource", "unknown (not readable)")]
    if current in _FAST_CLOCKSOURCES:
        return [], [Check("clocksource", f"{current} (available: {' '.join(avail) or '?'})")]
    better = next((c for c in ("tsc", "kvm-clock", "arch_sys_counter") if c in avail), None)
    fix = (
        f"`echo {better} | sudo tee "
        "/sys/devices/system/clocksource/clocksource0/current_clocksource`"
        if better
        else "boot with `clocksource=tsc tsc=reliable` only if the TSC is known to be stable "
        "on this machine; otherwise use another machine"
    )
    return [
        Finding(
            "warning",
            "clocksource",
            f"the clocksource is {current} (available: {' '.join(avail) or '?'})",
            "reading this clock is a system call costing microseconds instead of a vDSO read "
            "of tens of nanoseconds: short iterations and the barrier's start timestamps are "
            "measured coarsely",
            fix,
        )
    ], []


# --------------------------------------------------------------------------------------------
# Memory, load, steal, pressure, temperature


def _memory_findings(env: Mapping[str, Any]) -> tuple[list[Finding], list[Check]]:
    total = _num(_dig(env, "memory", "swap_total_bytes"))
    used = _num(_dig(env, "memory", "swap_used_bytes"))
    swappiness = _num(_dig(env, "memory", "swappiness"))
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


def _cpu_times(proc: Path) -> tuple[int, int, int] | None:
    """``(steal, idle + iowait, total)`` ticks from the aggregate ``cpu`` line of /proc/stat."""
    text = _read(proc / "stat")
    if text is None:
        return None
    line = next((ln for ln in text.splitlines() if ln.startswith("cpu ")), None)
    if line is None:
        return None
    numbers = [int(x) for x in line.split()[1:] if x.isdigit()]
    if len(numbers) < 8:
        return None
    # user nice system idle iowait irq softirq steal (guest time is already counted in user)
    return numbers[7], numbers[3] + numbers[4], sum(numbers[:8])


def _pressure(proc: Path) -> float | None:
    """PSI: percentage of the last 10 s in which some runnable task waited for a CPU."""
    text = _read(proc / "pressure" / "cpu")
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("some "):
            for word in line.split()[1:]:
                key, _, value = word.partition("=")
                if key == "avg10":
                    try:
                        return float(value)
                    except ValueError:
                        return None
    return None


def _load_findings(
    env: Mapping[str, Any],
    proc: Path,
    n_cpus: int,
    sample: tuple[tuple[int, int, int], tuple[int, int, int], float] | None,
) -> tuple[list[Finding], list[Check], dict[str, Any]]:
    findings: list[Finding] = []
    checks: list[Check] = []
    loads = env.get("load_average")
    load1 = _num(loads[0]) if isinstance(loads, list) and loads else None
    pressure = _pressure(proc)
    steal_boot = _num(_dig(env, "steal", "fraction_since_boot"))
    steal_now: float | None = None
    busy_now: float | None = None
    interval_s: float | None = None
    if sample is not None:
        (s0, i0, t0), (s1, i1, t1), interval_s = sample
        if t1 > t0:
            steal_now = (s1 - s0) / (t1 - t0)
            busy_now = 1.0 - (i1 - i0) / (t1 - t0)
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


#: A process is named as using the measuring CPUs from this share of one CPU over the sample.
NEIGHBOUR_SHARE = 0.02
#: At most this many are named (the busiest first).
NEIGHBOURS_SHOWN = 5


def _process_ticks(proc: Path) -> dict[int, int]:
    """``pid -> utime + stime`` (clock ticks) of every process, from ``<proc>/<pid>/stat``."""
    out: dict[int, int] = {}
    try:
        entries = list(proc.iterdir())
    except OSError:
        return out
    for entry in entries:
        if not entry.name.isdigit():
            continue
        text = _read(entry / "stat")
        if text is None:
            continue
        # Fields after "(comm)": state is field 3, utime 14 and stime 15 (1-based).
        rest = text.rpartition(")")[2].split()
        if len(rest) > 12 and rest[11].isdigit() and rest[12].isdigit():
            out[int(entry.name)] = int(rest[11]) + int(rest[12])
    return out


def _allowed_cpus(proc: Path, pid: int) -> tuple[int, ...] | None:
    text = _read(proc / str(pid) / "status")
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            try:
                return parse_cpu_list(line.split(":", 1)[1].strip())
            except (ValueError, DuetError):
                return None
    return None


def _neighbour_findings(
    proc: Path,
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
        allowed = _allowed_cpus(proc, pid)
        if allowed is not None and not set(allowed) & set(pair_cpus):
            continue
        command = _cmdline(proc, pid) or f"[{(_read(proc / str(pid) / 'comm') or '?').strip()}]"
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


def _thermal_findings(
    sysfs: Path, env: Mapping[str, Any]
) -> tuple[list[Finding], list[Check], dict[str, Any]]:
    findings: list[Finding] = []
    sensors: list[dict[str, Any]] = []
    zone_root = sysfs / "class" / "thermal"
    try:
        zones = sorted(p for p in zone_root.iterdir() if p.name.startswith("thermal_zone"))
    except OSError:
        zones = []
    for zone in zones:
        temp = _read_int(zone / "temp")
        if temp is None:
            continue
        limit: int | None = None
        for trip in sorted(zone.glob("trip_point_*_type")):
            kind = _read(trip)
            value = _read_int(trip.with_name(trip.name.replace("_type", "_temp")))
            # The first trip where the kernel acts (passive cooling = throttling) is the limit.
            if kind in ("passive", "hot", "critical") and value and value > 0:
                limit = value if limit is None else min(limit, value)
        sensors.append(
            {
                "sensor": f"{zone.name} ({_read(zone / 'type') or '?'})",
                "mc": temp,
                "limit_mc": limit,
            }
        )
    hwmon_root = sysfs / "class" / "hwmon"
    try:
        hwmons = sorted(hwmon_root.iterdir())
    except OSError:
        hwmons = []
    for hw in hwmons:
        name = _read(hw / "name") or hw.name
        for inp in sorted(hw.glob("temp*_input")):
            temp = _read_int(inp)
            if temp is None:
                continue
            prefix = inp.name.removesuffix("_input")
            limits = [
                v
                for v in (_read_int(hw / f"{prefix}_max"), _read_int(hw / f"{prefix}_crit"))
                if v is not None and v > 0
            ]
            label = _read(hw / f"{prefix}_label") or prefix
            sensors.append(
                {
                    "sensor": f"{name} {label}",
                    "mc": temp,
                    "limit_mc": min(limits) if limits else None,
                }
            )
    hot = [
        s
        for s in sensors
        if (s["limit_mc"] is not None and s["mc"] >= s["limit_mc"] - THERMAL_MARGIN_MC)
        or (s["limit_mc"] is None and s["mc"] >= THERMAL_ABSOLUTE_MC)
    ]
    if hot:
        listed = ", ".join(
            f"{s['sensor']} {s['mc'] / 1000:.0f} °C"
            + (f" (limit {s['limit_mc'] / 1000:.0f} °C)" if s["limit_mc"] else "")
            for s in hot
        )
        findings.append(
            Finding(
                "warning",
                "thermal",
                f"hot: {listed}",
                "near its limit the CPU lowers its frequency (thermal throttling), in the middle "
                "of a run and not necessarily on both cores alike (Fichte et al., section 3)",
                "let the machine cool down and improve its cooling; switching turbo off "
                "lowers the heat (see the boost finding); watch with "
                "`watch -n1 cat /sys/class/thermal/thermal_zone*/temp`",
            )
        )
    throttle = _dig(env, "thermal", "core_throttle_count")
    counts = (
        {k: int(v) for k, v in throttle.items() if isinstance(v, int) and v > 0}
        if isinstance(throttle, Mapping)
        else {}
    )
    if counts:
        findings.append(
            Finding(
                "warning",
                "thermal",
                "the CPUs of the pair were thermally throttled since boot ("
                + ", ".join(f"cpu{k}: {v} times" for k, v in sorted(counts.items()))
                + ")",
                "a throttled core runs slower for a while: a run that meets it is slower on "
                "one side only",
                "improve cooling or switch turbo off; the counters are in "
                "/sys/devices/system/cpu/cpu*/thermal_throttle/ (they only grow: compare "
                "before and after a measurement)",
            )
        )
    checks: list[Check] = []
    if not sensors:
        checks.append(Check("temperature", "not exposed by the kernel (usual inside a VM)"))
    elif not hot:
        warmest = max(sensors, key=lambda s: s["mc"])
        checks.append(
            Check(
                "temperature",
                f"{len(sensors)} sensor(s), warmest {warmest['sensor']} "
                f"{warmest['mc'] / 1000:.0f} °C",
            )
        )
    return findings, checks, {"sensors": sensors, "throttle_counts": counts}


# --------------------------------------------------------------------------------------------
# Other duets


def _cgroup_dirs(proc: Path, sysfs: Path) -> list[Path]:
    """``duet-*`` directories in every cgroup hierarchy, not descending into them."""
    found: list[Path] = []
    for mount in _cgroup_mounts(proc):
        top = _rebase(mount.point, sysfs)
        base_depth = len(top.parts)
        for dirpath, dirnames, _ in os.walk(top):
            here = Path(dirpath)
            for name in list(dirnames):
                if name.startswith("duet-"):
                    found.append(here / name)
                    dirnames.remove(name)
            # duet's parents sit in our own cgroup or next to it, a few levels down at most.
            if len(here.parts) - base_depth >= 4:
                dirnames.clear()
    return sorted(set(found))


def _lock_holder(lock_file: Path) -> tuple[int, str] | None:
    """``(pid, command)`` written in the measuring lock file (:mod:`duet.lock`), possibly stale.

    Read without taking the lock: the doctor must not make a starting duet wait or fail."""
    from duet.lock import parse_holder

    try:
        with lock_file.open("rb") as f:
            holder = parse_holder(f.read(8192))
    except OSError:
        return None
    return (holder.pid, holder.command) if holder is not None else None


def _other_duets(
    proc: Path,
    sysfs: Path,
    run_dirs: Iterable[Path],
    self_pid: int,
    lock_file: Path | None,
) -> tuple[list[Finding], list[Check], dict[str, Any]]:
    live: dict[int, list[str]] = {}
    stale: list[str] = []
    holder = _lock_holder(lock_file) if lock_file is not None else None
    if holder is not None and holder[0] != self_pid and _pid_alive(proc, holder[0]):
        live.setdefault(holder[0], []).append(f"holds the measuring lock {lock_file}")
    candidates: list[Path] = []
    for directory in run_dirs:
        try:
            candidates.extend(sorted(directory.iterdir()))
        except OSError:
            continue
    candidates.extend(_cgroup_dirs(proc, sysfs))
    for path in candidates:
        match = PARENT_NAME_RE.match(path.name) or re.match(r"^duet-(\d+)-", path.name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == self_pid:
            continue
        if _pid_alive(proc, pid):
            live.setdefault(pid, []).append(str(path))
        else:
            stale.append(str(path))
    findings: list[Finding] = []
    checks: list[Check] = []
    if live:

        def who(pid: int) -> str:
            # The process's own command line; the lock file's text when /proc hides it.
            command = _cmdline(proc, pid)
            if not command and holder is not None and holder[0] == pid:
                command = holder[1]
            return f"pid {pid} ({command})" if command else f"pid {pid}"

        described = "; ".join(who(pid) for pid in sorted(live))
        pids = sorted(live)
        findings.append(
            Finding(
                "warning",
                "duet",
                f"another duet is running on this machine: {described}",
                "two duets compete for the same cores: each one's sides are disturbed by the "
                "other's, and a calibration taken now describes a busier machine than usual",
                f"wait for it to finish (`tail --pid={pids[0]} -f /dev/null`), or let duet queue "
                "behind it (`duet run --wait ...`; without --wait a second duet refuses to "
                "measure), or serialise the jobs on this runner (a CI concurrency group)",
            )
        )
    else:
        checks.append(Check("duet", "no other duet is running"))
    if stale:
        shown = ", ".join(stale[:4]) + (f" and {len(stale) - 4} more" if len(stale) > 4 else "")
        findings.append(
            Finding(
                "notice",
                "duet",
                f"leftovers of a duet that did not finish: {shown}",
                "they hold no CPU, but barrier files and cgroups accumulate",
                "the next `duet run` removes them (it cleans up after dead invocations); to do "
                "it now: `sudo rm -rf /dev/shm/duet-* /var/tmp/duet-*` for the files and "
                "`sudo rmdir` on the cgroup directories (only while no duet runs)",
            )
        )
    return findings, checks, {"running": {str(k): v for k, v in live.items()}, "stale": stale}


# --------------------------------------------------------------------------------------------
# Entry point


def diagnose(
    *,
    sysfs: str | Path = "/sys",
    proc: str | Path = "/proc",
    run_dirs: Sequence[str | Path] = ("/dev/shm", "/var/tmp"),
    probes: Mapping[str, Probe] | None = None,
    euid: int | None = None,
    allowed: Iterable[int] | None = None,
    sample_s: float = 0.0,
    self_pid: int | None = None,
    lock_file: str | Path | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Diagnosis:
    """Check what this machine allows and what will disturb measurements.

    Parameters
    ----------
    sysfs, proc : str or Path
        The sysfs and procfs roots (synthetic trees in tests).
    run_dirs : sequence of str or Path
        Where duet keeps barrier files and work directories (``/dev/shm``, ``/var/tmp``).
    probes : mapping of level to Probe, optional
        The isolation backends' answers (``cgroup-v2``, ``cgroup-v1``); :func:`real_probes`
        when not given, which looks at *this* machine whatever ``sysfs`` says, so tests of
        synthetic trees pass their own.
    euid : int, optional
        The effective uid to judge privileges for (default: ours).
    allowed : iterable of int, optional
        The CPUs this process may use (default: our affinity).
    sample_s : float
        When positive, read ``/proc/stat`` twice this far apart to measure the steal and busy
        fractions *now*, not only since boot.
    self_pid : int, optional
        Our pid, never reported as "another duet" (default: ours).
    lock_file : str or Path, optional
        The machine-wide measuring lock (default: :func:`duet.lock.lock_path`), whose holder
        is another duet measuring now.
    sleep : callable
        How to wait ``sample_s`` (injectable so tests need not wait).

    Returns
    -------
    Diagnosis
    """
    sys_root, proc_root = Path(sysfs), Path(proc)
    euid = os.geteuid() if euid is None else euid
    self_pid = os.getpid() if self_pid is None else self_pid
    if probes is None:
        probes = real_probes()
    level = _level(probes)

    findings: list[Finding] = []
    checks: list[Check] = []

    topology: Topology | None = None
    pair: CorePair | None = None
    pair_error: DuetError | None = None
    cpus: dict[str, Any]
    try:
        topology = read_topology(sys_root, allowed=allowed)
        cpus = topology.summary()
    except DuetError as exc:
        cpus = {"error": str(exc)}
        findings.append(
            Finding(
                "error",
                "topology",
                f"the CPU topology cannot be read: {exc.message}",
                "duet chooses its two cores from /sys/devices/system/cpu; without it there is "
                "no core pair",
                exc.fix or "mount sysfs: `mount -t sysfs sysfs /sys`",
            )
        )
    if topology is not None:
        try:
            pair = choose_pair(topology)
        except DuetError as exc:
            pair_error = exc

    first = _cpu_times(proc_root) if sample_s > 0 else None
    ticks_before = _process_ticks(proc_root) if sample_s > 0 else {}
    if first is not None or ticks_before:
        sleep(sample_s)
    second = _cpu_times(proc_root) if first is not None else None
    ticks_after = _process_ticks(proc_root) if ticks_before else {}
    sample = (first, second, sample_s) if first is not None and second is not None else None

    env = capture_environment(
        topology=topology, pair=pair, isolation=level, proc=str(proc_root), sysfs=str(sys_root)
    )
    cg = _cgroup_facts(proc_root, sys_root, euid)
    part_f, part_c = _isolation_findings(level, probes, cg)
    findings += part_f
    checks += part_c
    part_f, part_c = _topology_findings(topology, pair, pair_error)
    findings += part_f
    checks += part_c
    pair_cpus: Sequence[int] = (
        pair.cpus if pair is not None else (topology.usable if topology else ())
    )
    freq_f, freq_c, freq_facts = _frequency_findings(
        env, sys_root, pair_cpus, bool(topology and topology.hypervisor)
    )
    findings += freq_f
    checks += freq_c
    part_f, part_c = _clocksource_findings(env)
    findings += part_f
    checks += part_c
    part_f, part_c = _memory_findings(env)
    findings += part_f
    checks += part_c
    n_cpus = len(topology.online) if topology is not None else 0
    load_f, load_c, load_facts = _load_findings(env, proc_root, n_cpus, sample)
    findings += load_f
    checks += load_c
    neighbour_f, neighbour_c, neighbour_facts = _neighbour_findings(
        proc_root,
        pair_cpus,
        (ticks_before, ticks_after, sample_s) if ticks_after else None,
        {self_pid, os.getppid()} if proc_root == Path("/proc") else {self_pid},
    )
    findings += neighbour_f
    checks += neighbour_c
    thermal_f, thermal_c, thermal_facts = _thermal_findings(sys_root, env)
    findings += thermal_f
    checks += thermal_c
    if lock_file is None:
        from duet.lock import lock_path

        lock_file = lock_path()
    duet_f, duet_c, duet_facts = _other_duets(
        proc_root, sys_root, [Path(d) for d in run_dirs], self_pid, Path(lock_file)
    )
    findings += duet_f
    checks += duet_c

    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: order[f.severity])  # stable: topics keep their order
    facts: dict[str, Any] = {
        "cpu_model": _dig(env, "cpu", "model"),
        "kernel": _dig(env, "kernel", "release"),
        "hypervisor": env.get("hypervisor"),
        "smt": env.get("smt"),
        "frequency": freq_facts,
        "clocksource": env.get("clocksource"),
        "memory": env.get("memory"),
        "load": load_facts,
        "neighbours": neighbour_facts,
        "thermal": thermal_facts,
        "other_duets": duet_facts,
        "missing": env.get("missing"),
    }
    return Diagnosis(
        isolation=level,
        probes=dict(probes),
        cgroup=cg,
        cpus=cpus,
        pair=pair.as_dict() if pair is not None else None,
        facts=facts,
        findings=tuple(findings),
        checks=tuple(checks),
    )
