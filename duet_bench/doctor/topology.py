"""Topology: the core pair ``duet run`` would choose (:func:`duet_bench.topology.choose_pair`), SMT
siblings, and whether this is a VM, in which case host SMT is invisible (Beyer et al.,
*Reliable benchmarking*, section 3.4)."""

from __future__ import annotations

from duet_bench.doctor.model import Check, Finding
from duet_bench.errors import DuetError
from duet_bench.machine import format_cpu_list
from duet_bench.topology import CorePair, Topology

__all__ = ["topology_findings"]


def topology_findings(
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
    more_findings, more_checks = _pair_findings(topology, pair)
    return findings + more_findings, checks + more_checks


def _pair_findings(topology: Topology, pair: CorePair) -> tuple[list[Finding], list[Check]]:
    """What limits the pair itself: a VM's vCPUs, SMT siblings, no third CPU, no isolation."""
    findings: list[Finding] = []
    checks: list[Check] = []
    a, b = pair.cpus
    idle = pair.idle_cpus
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
