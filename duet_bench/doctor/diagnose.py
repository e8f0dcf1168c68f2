"""``diagnose``: read the machine once and ask every concern of the doctor about it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duet_bench.doctor.duets import other_duets
from duet_bench.doctor.frequency import clocksource_findings, frequency_findings
from duet_bench.doctor.isolation import cgroup_facts, isolation_findings, level_of, real_probes
from duet_bench.doctor.load import load_findings, neighbour_findings
from duet_bench.doctor.memory import memory_findings
from duet_bench.doctor.model import SEVERITIES, Check, Diagnosis, Finding, dig
from duet_bench.doctor.thermal import thermal_findings
from duet_bench.doctor.topology import topology_findings
from duet_bench.environment import capture_environment
from duet_bench.errors import DuetError
from duet_bench.isolation import Probe
from duet_bench.lock import lock_path
from duet_bench.machine import CpuTicks, Machine
from duet_bench.topology import CorePair, Topology, choose_pair, read_topology

__all__ = ["diagnose"]


@dataclass(frozen=True, slots=True)
class _Cores:
    """The topology and the pair ``duet run`` would choose, or why there is none."""

    topology: Topology | None
    pair: CorePair | None
    pair_error: DuetError | None
    summary: dict[str, Any]
    findings: tuple[Finding, ...]

    @property
    def measuring_cpus(self) -> Sequence[int]:
        """The pair's CPUs; without a pair every usable CPU."""
        if self.pair is not None:
            return self.pair.cpus
        return self.topology.usable if self.topology is not None else ()


def _cores(sysfs: Path, allowed: Iterable[int] | None) -> _Cores:
    try:
        topology = read_topology(sysfs, allowed=allowed)
    except DuetError as exc:
        finding = Finding(
            "error",
            "topology",
            f"the CPU topology cannot be read: {exc.message}",
            "duet chooses its two cores from /sys/devices/system/cpu; without it there is "
            "no core pair",
            exc.fix or "mount sysfs: `mount -t sysfs sysfs /sys`",
        )
        return _Cores(None, None, None, {"error": str(exc)}, (finding,))
    try:
        pair: CorePair | None = choose_pair(topology)
        pair_error = None
    except DuetError as exc:
        pair, pair_error = None, exc
    return _Cores(topology, pair, pair_error, topology.summary(), ())


@dataclass(frozen=True, slots=True)
class _Sample:
    """Two readings of the CPU times, ``sample_s`` apart (None when not sampled)."""

    cpu: tuple[CpuTicks, CpuTicks, float] | None
    ticks: tuple[dict[int, int], dict[int, int], float] | None


def _sample(machine: Machine, sample_s: float, sleep: Callable[[float], None]) -> _Sample:
    first = machine.cpu_ticks() if sample_s > 0 else None
    ticks_before = machine.process_ticks() if sample_s > 0 else {}
    if first is not None or ticks_before:
        sleep(sample_s)
    second = machine.cpu_ticks() if first is not None else None
    ticks_after = machine.process_ticks() if ticks_before else {}
    return _Sample(
        cpu=(first, second, sample_s) if first is not None and second is not None else None,
        ticks=(ticks_before, ticks_after, sample_s) if ticks_after else None,
    )


def _lock_file(given: str | Path | None) -> Path:
    if given is not None:
        return Path(given)

    return Path(lock_path())


def _facts(
    env: Mapping[str, Any],
    frequency: object,
    load: object,
    neighbours: object,
    thermal: object,
    other_duets: object,
) -> dict[str, Any]:
    """The facts of the diagnosis: the environment record's and those each concern read."""
    return {
        "cpu_model": dig(env, "cpu", "model"),
        "kernel": dig(env, "kernel", "release"),
        "hypervisor": env.get("hypervisor"),
        "smt": env.get("smt"),
        "frequency": frequency,
        "clocksource": env.get("clocksource"),
        "memory": env.get("memory"),
        "load": load,
        "neighbours": neighbours,
        "thermal": thermal,
        "other_duets": other_duets,
        "missing": env.get("missing"),
    }


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
        The machine-wide measuring lock (default: :func:`duet_bench.lock.lock_path`), whose holder
        is another duet measuring now.
    sleep : callable
        How to wait ``sample_s`` (injectable so tests need not wait).

    Returns
    -------
    Diagnosis
    """
    machine = Machine(sys=Path(sysfs), proc=Path(proc))
    euid = os.geteuid() if euid is None else euid
    self_pid = os.getpid() if self_pid is None else self_pid
    if probes is None:
        probes = real_probes()
    level = level_of(probes)
    cores = _cores(machine.sys, allowed)
    topology, pair = cores.topology, cores.pair
    sample = _sample(machine, sample_s, sleep)
    roots = {"proc": str(machine.proc), "sysfs": str(machine.sys)}
    env = capture_environment(topology=topology, pair=pair, isolation=level, **roots)
    cg = cgroup_facts(machine, euid)
    pair_cpus = cores.measuring_cpus
    # Each concern in turn; the order of the topics in the report is this order.
    parts: list[tuple[list[Finding], list[Check]]] = [
        (list(cores.findings), []),
        isolation_findings(level, probes, cg),
        topology_findings(topology, pair, cores.pair_error),
    ]
    freq_f, freq_c, freq_facts = frequency_findings(
        env, machine.sys, pair_cpus, bool(topology and topology.hypervisor)
    )
    parts += [(freq_f, freq_c), clocksource_findings(env), memory_findings(env)]
    load_f, load_c, load_facts = load_findings(
        env, machine, len(topology.online) if topology else 0, sample.cpu
    )
    # On this machine our parent (the shell, pytest) is no neighbour either.
    exclude = {self_pid, os.getppid()} if machine.live else {self_pid}
    neighbour_f, neighbour_c, neighbour_facts = neighbour_findings(
        machine, pair_cpus, sample.ticks, exclude
    )
    thermal_f, thermal_c, thermal_facts = thermal_findings(machine.sys, env)
    duet_f, duet_c, duet_facts = other_duets(
        machine, [Path(d) for d in run_dirs], self_pid, _lock_file(lock_file)
    )
    parts += [(load_f, load_c), (neighbour_f, neighbour_c), (thermal_f, thermal_c)]
    parts.append((duet_f, duet_c))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings = sorted((f for fs, _ in parts for f in fs), key=lambda f: order[f.severity])
    read = (freq_facts, load_facts, neighbour_facts, thermal_facts, duet_facts)
    return Diagnosis(
        isolation=level,
        probes=dict(probes),
        cgroup=cg,
        cpus=cores.summary,
        pair=pair.as_dict() if pair is not None else None,
        facts=_facts(env, *read),
        findings=tuple(findings),
        checks=tuple(c for _, cs in parts for c in cs),
    )
