"""The CPU part of the environment record: the model, the topology and the pair the sides run
on, the hypervisor, SMT.

Only the model name comes from ``/proc/cpuinfo``; the topology comes from ``/sys``
(:mod:`duet_bench.topology`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from duet_bench.environment.record import Record
from duet_bench.errors import DuetError
from duet_bench.machine import read_text_or_reason
from duet_bench.topology import CorePair, Topology, choose_pair, detect_hypervisor, read_topology

__all__ = ["measured_cpus", "read_cpu", "read_hypervisor", "read_smt", "resolve_pair"]


def resolve_pair(
    topology: Topology | None, pair: CorePair | None, sysfs: Path, rec: Record
) -> tuple[Topology | None, CorePair | None, str | None]:
    """The topology (read when not given), the pair and where it came from (``"given"``,
    ``"automatic"``: chosen here with :func:`choose_pair`, or None when there is none)."""
    if topology is None:
        try:
            topology = read_topology(sysfs)
        except DuetError as exc:
            rec.missing["topology"] = str(exc)
    if pair is not None:
        return topology, pair, "given"
    if topology is None:
        rec.missing["pair"] = "no topology to choose a pair from"
        return topology, None, None
    try:
        return topology, choose_pair(topology), "automatic"
    except DuetError as exc:
        rec.missing["pair"] = str(exc)
        return topology, None, None


def measured_cpus(topology: Topology | None, pair: CorePair | None) -> Sequence[int]:
    """The CPUs whose frequency and throttling matter: the pair's, else every usable one."""
    if pair is not None:
        return pair.cpus
    if topology is not None:
        return topology.usable
    return ()


def _cpu_model(proc: Path) -> tuple[str | None, str]:
    text, reason = read_text_or_reason(proc / "cpuinfo")
    if text is None:
        return None, reason
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    # x86 says "model name"; other architectures name the model differently.
    for key in ("model name", "Model", "cpu model", "cpu", "Processor"):
        if fields.get(key):
            return " ".join(fields[key].split()), ""
    if "CPU implementer" in fields and "CPU part" in fields:
        return f"ARM implementer {fields['CPU implementer']} part {fields['CPU part']}", ""
    return None, f"{proc / 'cpuinfo'} has no model name line"


def read_cpu(proc: Path, topology: Topology | None, rec: Record) -> dict[str, object]:
    """The record's ``cpu``: the model and the counts of CPUs, cores, packages, nodes."""
    model, why = _cpu_model(proc)
    cpu: dict[str, object] = {"model": rec.get("cpu.model", model, why)}
    if topology is not None:
        cpu.update(
            online=len(topology.online),
            allowed=len(topology.usable),
            physical_cores=len(topology.physical_cores()),
            packages=len(topology.packages),
            numa_nodes=len(topology.nodes),
            threads_per_core=topology.threads_per_core,
        )
    else:
        for key in ("online", "allowed", "physical_cores", "packages", "numa_nodes"):
            cpu[key] = rec.get(f"cpu.{key}", None, "the topology could not be read")
        cpu["threads_per_core"] = rec.get(
            "cpu.threads_per_core", None, "the topology could not be read"
        )
    return cpu


def read_hypervisor(sysfs: Path, topology: Topology | None) -> dict[str, object]:
    """The record's ``hypervisor``: whether one was detected, and the evidence."""
    if topology is not None:
        hypervisor, evidence = topology.hypervisor, topology.hypervisor_evidence
    else:
        hypervisor, evidence = detect_hypervisor(sysfs)
    return {"detected": hypervisor, "evidence": evidence}


def read_smt(sysfs: Path, rec: Record) -> dict[str, object]:
    """The record's ``smt``: the kernel's SMT control and whether SMT is active."""
    smt = sysfs / "devices" / "system" / "cpu" / "smt"
    control, why_control = read_text_or_reason(smt / "control")
    active, why_active = read_text_or_reason(smt / "active")
    return {
        "control": rec.get("smt.control", control, why_control),
        "active": rec.get("smt.active", None if active is None else active == "1", why_active),
    }
