"""Choosing the pair (pure): the two CPUs a duet runs on, on different physical cores, with
the reasons and notes that travel into the report; tested on synthetic machines."""

from __future__ import annotations

import itertools

from duet_bench.errors import EnvironmentNotReady, UsageError
from duet_bench.machine import format_cpu_list
from duet_bench.topology.model import CorePair, Cpu, Topology

__all__ = ["choose_pair"]


_SEQUENTIAL_HINT = "or measure one side after the other with --method sequential"


def _near_cpu0(topology: Topology, cpu: int) -> bool:
    """Whether ``cpu`` is CPU 0 or shares its physical core or L2 cache.

    CPU 0 is where the kernel's boot-time housekeeping and, often, most interrupts land; its
    SMT siblings and module mates feel that too.
    """
    return cpu == 0 or (
        0 in topology.online and (topology.are_siblings(0, cpu) or topology.share_l2(0, cpu))
    )


def _score(topology: Topology, a: Cpu, b: Cpu) -> tuple[int, ...]:
    """How bad a candidate pair is; lower is better, compared lexicographically.

    The order of the components is the order of the rules in ``docs/topology.md``.
    """
    foreign = sum(
        1
        for s in set(a.siblings) | set(b.siblings)
        if s not in (a.id, b.id) and s not in topology.allowed
    )
    isolated = topology.isolated
    return (
        int(a.package != b.package) + int(a.node != b.node),
        int(a.capacity != b.capacity),
        int(topology.share_l2(a.id, b.id)),
        foreign,
        (int(a.id not in isolated) + int(b.id not in isolated)) if isolated else 0,
        int(not topology.share_l3(a.id, b.id)),
        -min(a.capacity or 0, b.capacity or 0),
        int(_near_cpu0(topology, a.id)) + int(_near_cpu0(topology, b.id)),
        int(a.id == 0 or b.id == 0),
        a.id,
        b.id,
    )


def _core_representatives(topology: Topology) -> list[Cpu]:
    """One usable CPU per physical core: the best thread of each core for the pair.

    Threads of one core differ only in being CPU 0 and in being isolated, so keeping the best
    thread per core loses no candidate and turns the search into pairs of cores.
    """
    isolated = topology.isolated
    reps: list[Cpu] = []
    for core in topology.physical_cores(usable_only=True):
        best = min(core, key=lambda c: (c not in isolated if isolated else False, c == 0, c))
        reps.append(topology.cpu(best))
    return reps


def _orchestrator_cpus(
    topology: Topology, pair: tuple[int, int], notes: list[str]
) -> tuple[int, ...]:
    """Where the orchestrator goes: off the pair, and off its siblings and L2 mates if possible."""
    others = [c for c in topology.usable if c not in pair]
    siblings = {c for c in others if any(topology.are_siblings(c, p) for p in pair)}
    l2_mates = {c for c in others if any(topology.share_l2(c, p) for p in pair)}
    free = [c for c in others if c not in siblings and c not in l2_mates]
    if free:
        return tuple(free)
    free = [c for c in others if c not in siblings]
    if free:
        notes.append(
            f"the orchestrator runs on {format_cpu_list(free)}, which share an L2 cache with "
            "the pair: no other CPU is available"
        )
        return tuple(free)
    if others:
        notes.append(
            f"the orchestrator runs on the pair's SMT siblings {format_cpu_list(others)}: no "
            "other CPU is available; it sleeps while the sides run"
        )
        return tuple(others)
    notes.append(
        "no third CPU: the orchestrator shares the pair's cores (it sleeps while the sides run)"
    )
    return ()


def _describe(topology: Topology, pair: tuple[int, int], notes: list[str]) -> CorePair:
    a, b = (topology.cpu(c) for c in pair)
    if a.package != b.package:
        notes.append(
            f"CPUs {a.id} and {b.id} are in different packages ({a.package} and {b.package}): "
            "they do not share caches or the memory controller, so one side may be slower"
        )
    if a.node != b.node:
        notes.append(
            f"CPUs {a.id} and {b.id} are on different NUMA nodes ({a.node} and {b.node}): memory "
            f"is bound to node {a.node}, remote for CPU {b.id}"
        )
    if topology.share_l2(a.id, b.id):
        notes.append(
            f"CPUs {a.id} and {b.id} share an L2 cache (an AMD module or a core cluster): the "
            "two sides compete for it"
        )
    if a.capacity != b.capacity:
        notes.append(
            f"CPUs {a.id} and {b.id} have different capacities ({a.capacity} and {b.capacity}: "
            "performance and efficiency cores): alternating sides cancels the bias, not the noise"
        )
    if not a.l3 or not b.l3:
        notes.append(
            f"the kernel does not describe the L3 cache of CPU {a.id if not a.l3 else b.id}: "
            "whether the pair shares one is unknown"
        )
    elif not topology.share_l3(a.id, b.id):
        notes.append(f"CPUs {a.id} and {b.id} do not share an L3 cache")
    sibling_sets = (a.smt_siblings, b.smt_siblings)
    idle = sorted(set(sibling_sets[0]) | set(sibling_sets[1]))
    if idle:
        foreign = [c for c in idle if c not in topology.allowed]
        notes.append(
            f"SMT siblings {format_cpu_list(idle)} of the pair should stay idle while measuring"
            + (
                f"; {format_cpu_list(foreign)} may be used by other processes duet cannot "
                "control (not in its affinity)"
                if foreign
                else ""
            )
        )
    if topology.hypervisor:
        if len(topology.online) == 2:
            notes.append(
                "2-vCPU VM: the two vCPUs are the pair; host-level SMT cannot be seen from inside"
            )
        else:
            evidence = f" ({topology.hypervisor_evidence})" if topology.hypervisor_evidence else ""
            notes.append(
                f"running in a VM{evidence}: vCPUs {a.id} and {b.id} may still share a host "
                "physical core; host-level SMT cannot be seen from inside"
            )
    elif len(topology.usable) == 2:
        notes.append("only two usable CPUs: they are the pair")
    orchestrator = _orchestrator_cpus(topology, pair, notes)
    notes.extend(topology.notes)
    return CorePair(
        cpus=pair,
        orchestrator_cpus=orchestrator,
        node=a.node,
        shared_l3=topology.share_l3(a.id, b.id),
        notes=tuple(notes),
        siblings=sibling_sets,
        package=a.package,
    )


def _signature(topology: Topology, cpu: Cpu) -> tuple[object, ...]:
    """Everything :func:`_score` looks at about one core, except its id.

    Caches are shared by disjoint groups of CPUs, so two cores share an L2 (or L3) exactly
    when their ``shared_cpu_list`` is the same set; an L2 that holds only the core's own
    threads is private and shared with nobody (``None``).
    """
    l2 = frozenset(cpu.l2) if set(cpu.l2) - set(cpu.siblings) else None
    return (
        cpu.package,
        cpu.node,
        cpu.capacity,
        l2,
        frozenset(cpu.l3) if cpu.l3 else None,
        sum(1 for s in cpu.smt_siblings if s not in topology.allowed),
        cpu.id in topology.isolated,
        _near_cpu0(topology, cpu.id),
        cpu.id == 0,
    )


def _best_pair(topology: Topology) -> tuple[int, int] | None:
    reps = _core_representatives(topology)
    if len(reps) < 2:
        return None
    # Cores with the same signature are interchangeable but for their ids, and the ids only
    # break ties (lowest first), so the two lowest-id cores of each signature are the only
    # candidates needed: the search is over signatures, not over all pairs of cores, which
    # keeps a 256-core machine as fast as a small one.
    by_signature: dict[tuple[object, ...], list[Cpu]] = {}
    for cpu in reps:  # ascending ids
        kept = by_signature.setdefault(_signature(topology, cpu), [])
        if len(kept) < 2:
            kept.append(cpu)
    candidates = sorted((c for kept in by_signature.values() for c in kept), key=lambda c: c.id)
    a, b = min(itertools.combinations(candidates, 2), key=lambda p: _score(topology, p[0], p[1]))
    return (a.id, b.id)


def _no_pair_error(topology: Topology) -> EnvironmentNotReady:
    usable = topology.usable
    if not usable:
        return EnvironmentNotReady(
            f"none of the CPUs this process may use ({format_cpu_list(topology.allowed)}) is "
            f"online (online: {format_cpu_list(topology.online)})",
            fix="run duet with an affinity that includes online CPUs (check taskset -p $$)",
        )
    cores = topology.physical_cores()
    if len(usable) == 1:
        reason = f"this process may use only CPU {usable[0]}"
        if len(topology.online) == 1:
            reason = "this machine has a single online CPU"
    else:
        reason = (
            f"the CPUs this process may use ({format_cpu_list(usable)}) are SMT siblings of one "
            "physical core, and two sides sharing a core slow each other down (BenchExec "
            "measured +53% CPU time)"
        )
    other = next(
        (c for core in cores for c in core if not topology.are_siblings(c, usable[0])), None
    )
    if other is not None:
        fix = (
            f"allow a CPU on another physical core, e.g. `taskset -c {usable[0]},{other} duet ...` "
            f"or widen the cgroup cpuset; {_SEQUENTIAL_HINT}"
        )
    else:
        fix = (
            "run on a machine (or CI runner) with at least two physical cores or vCPUs; "
            f"{_SEQUENTIAL_HINT}"
        )
    return EnvironmentNotReady(f"no pair of CPUs on different physical cores: {reason}", fix=fix)


def _validate_override(topology: Topology, override: tuple[int, int]) -> list[str]:
    """Check ``--cores A,B``; return the notes it deserves or raise :class:`UsageError`."""
    best = _best_pair(topology)
    suggestion = (
        f"use --cores {best[0]},{best[1]} (duet's own choice) or leave --cores out"
        if best
        else "leave --cores out"
    )
    if len(override) != 2:
        raise UsageError(f"--cores needs exactly two CPUs, got {len(override)}", fix=suggestion)
    a, b = override
    if a == b:
        raise UsageError(
            f"--cores {a},{b} names the same CPU twice: the two sides need a core each",
            fix=suggestion,
        )
    for c in (a, b):
        if c not in topology.online:
            raise UsageError(
                f"--cores: CPU {c} is not online (online: {format_cpu_list(topology.online)})",
                fix=suggestion,
            )
        if c not in topology.allowed:
            raise UsageError(
                f"--cores: CPU {c} is outside this process's affinity "
                f"({format_cpu_list(topology.usable)}), set by taskset or a cgroup cpuset",
                fix=suggestion,
            )
    if topology.are_siblings(a, b):
        raise UsageError(
            f"--cores {a},{b}: CPUs {a} and {b} are SMT siblings of one physical core; the two "
            "sides would share its execution units and slow each other down",
            fix=suggestion,
        )
    return [f"cores {a},{b} chosen with --cores"]


def choose_pair(topology: Topology, *, override: tuple[int, int] | None = None) -> CorePair:
    """Choose the two CPUs a duet runs on.

    Rules, most important first (each later rule only breaks ties of the earlier ones):

    1. two CPUs on different physical cores (never SMT siblings of each other), online and
       allowed;
    2. in one package and one NUMA node;
    3. of equal capacity (never a performance core against an efficiency core);
    4. not sharing an L2 cache (AMD modules, core clusters);
    5. on cores whose SMT siblings are all ours (allowed), so the runner can keep them idle;
    6. isolated CPUs (``isolcpus``), when the machine has any;
    7. sharing an L3 cache;
    8. the fastest cores (highest capacity);
    9. away from CPU 0 (and its siblings and L2 mates), where interrupts and housekeeping land,
       and not CPU 0 itself;
    10. the lowest ids, so the choice is deterministic.

    The orchestrator gets every other usable CPU, preferring ones that are neither SMT
    siblings nor L2 mates of the pair.

    Parameters
    ----------
    topology : Topology
        The machine, from :func:`read_topology` or built by hand.
    override : tuple of (int, int), optional
        The user's ``--cores A,B``: validated, then used as given (sorted). Different packages,
        nodes or a shared L2 are accepted with a note.

    Returns
    -------
    CorePair

    Raises
    ------
    UsageError
        If ``override`` is invalid: a CPU twice, offline, outside the affinity, or two SMT
        siblings.
    EnvironmentNotReady
        If no valid pair exists (a single CPU, or only SMT siblings of one core allowed).
    """
    if override is not None:
        notes = _validate_override(topology, override)
        pair = (min(override), max(override))
        return _describe(topology, (pair[0], pair[1]), notes)
    best = _best_pair(topology)
    if best is None:
        raise _no_pair_error(topology)
    return _describe(topology, best, [])
