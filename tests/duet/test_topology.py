"""Core-pair selection on synthetic machines, synthetic /sys trees and this machine.

The machines follow the layouts that break naive core numbering (Beyer, Löwe, Wendler,
*Reliable benchmarking*, section 3.4 and appendix A; BenchExec's ``test_core_assignment.py``):
SMT siblings with far-apart ids, AMD modules sharing an L2, NUMA nodes and packages numbered out
of order with repeated core ids, plus the small VMs CI runs on.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duet_bench.errors import EnvironmentNotReady, UsageError
from duet_bench.topology import (
    CorePair,
    Cpu,
    Topology,
    choose_pair,
    detect_hypervisor,
    format_cpu_list,
    parse_cpu_list,
    read_topology,
)
from duet_bench.topology.pair import _score

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"


# --------------------------------------------------------------------------------------------
# Building machines


class Core(NamedTuple):
    """One physical core of a synthetic machine (as the kernel would report it)."""

    cpus: tuple[int, ...]
    package: int = 0
    node: int = 0
    l2: str | None = None  # cores naming the same group share an L2; None: private L2
    l3: str | None = "L3"  # None: the kernel does not describe an L3
    core_id: int | None = None
    capacity: int | None = None


def make_topology(
    cores: Sequence[Core],
    *,
    allowed: Iterable[int] | None = None,
    hypervisor: bool = False,
    evidence: str = "",
    isolated: Iterable[int] = (),
) -> Topology:
    """Build a Topology from physical cores; ``allowed`` defaults to every CPU."""
    l2_groups: dict[str, set[int]] = {}
    l3_groups: dict[str, set[int]] = {}
    for core in cores:
        if core.l2 is not None:
            l2_groups.setdefault(core.l2, set()).update(core.cpus)
        if core.l3 is not None:
            l3_groups.setdefault(core.l3, set()).update(core.cpus)
    cpus: list[Cpu] = []
    for index, core in enumerate(cores):
        l2 = l2_groups[core.l2] if core.l2 is not None else set(core.cpus)
        l3 = l3_groups[core.l3] if core.l3 is not None else set()
        for cpu in core.cpus:
            cpus.append(
                Cpu(
                    id=cpu,
                    package=core.package,
                    core=index if core.core_id is None else core.core_id,
                    siblings=tuple(sorted(core.cpus)),
                    node=core.node,
                    l2=tuple(sorted(l2)),
                    l3=tuple(sorted(l3)),
                    capacity=core.capacity,
                )
            )
    cpus.sort(key=lambda c: c.id)
    every = [c.id for c in cpus]
    return Topology(
        cpus=tuple(cpus),
        allowed=frozenset(every if allowed is None else allowed),
        hypervisor=hypervisor,
        hypervisor_evidence=evidence,
        isolated=frozenset(isolated),
    )


def intel_smt(*, allowed: Iterable[int] | None = None) -> Topology:
    """One Intel package, 8 cores with hyper-threading; siblings are ``c`` and ``c + 8``."""
    return make_topology([Core((c, c + 8), core_id=c) for c in range(8)], allowed=allowed)


def xeon_dual() -> Topology:
    """Two Xeon E5-2650 v2 (paper Fig. 13): package p has CPUs 8p..8p+7 and +16, node p."""
    cores = [
        Core((8 * p + c, 8 * p + c + 16), package=p, node=p, l3=f"L3-{p}", core_id=c)
        for p in range(2)
        for c in range(8)
    ]
    return make_topology(cores)


def opteron(*, modules_as_siblings: bool, allowed: Iterable[int] | None = None) -> Topology:
    """Two Opteron 6380 (paper Fig. 12): per package two nodes of four 2-CPU modules.

    Module halves have adjacent ids and different core ids; core ids repeat in the other node
    of the same package; each module shares an L2, each node an L3. Older kernels report
    module halves as separate cores (``modules_as_siblings=False``), newer ones as siblings.
    """
    cores: list[Core] = []
    for p, n, m in itertools.product(range(2), range(2), range(4)):
        first = 16 * p + 8 * n + 2 * m
        node, l2, l3 = 2 * p + n, f"L2-{p}{n}{m}", f"L3-{p}{n}"
        halves = [(first, first + 1)] if modules_as_siblings else [(first,), (first + 1,)]
        for half, cpus in enumerate(halves):
            cores.append(Core(cpus, package=p, node=node, l2=l2, l3=l3, core_id=2 * m + half))
    return make_topology(cores, allowed=allowed)


def numa_out_of_order(*, allowed: Iterable[int] | None = None) -> Topology:
    """Two packages whose ids, node ids and CPU ids run in opposite orders, core ids repeated.

    CPUs 0-3 are package 1 / node 1, CPUs 4-7 package 0 / node 0; core ids 0-3 in both.
    """
    cores = [Core((c,), package=1, node=1, l3="L3-b", core_id=c) for c in range(4)] + [
        Core((4 + c,), package=0, node=0, l3="L3-a", core_id=c) for c in range(4)
    ]
    return make_topology(cores, allowed=allowed)


def vm_2vcpu() -> Topology:
    """This machine: two vCPUs, one core each, a shared L3, a KVM guest."""
    return make_topology(
        [Core((0,)), Core((1,))], hypervisor=True, evidence="the kvm-clock clocksource"
    )


def gh_runner(*, adjacent: bool = True) -> Topology:
    """A 4-vCPU GitHub-hosted runner: 2 cores x 2 threads, SMT visible, in a VM."""
    pairs = [(0, 1), (2, 3)] if adjacent else [(0, 2), (1, 3)]
    return make_topology(
        [Core(p) for p in pairs],
        hypervisor=True,
        evidence="DMI names a virtual machine ('Microsoft Corporation Virtual Machine')",
    )


def hybrid() -> Topology:
    """An Intel hybrid part: 4 P-cores with HT (capacity 1024), 8 E-cores in L2 clusters of 4."""
    p_cores = [Core((2 * c, 2 * c + 1), capacity=1024) for c in range(4)]
    e_cores = [Core((8 + c,), l2=f"E{c // 4}", capacity=512) for c in range(8)]
    return make_topology(p_cores + e_cores)


# --------------------------------------------------------------------------------------------
# CPU lists


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("", ()),
        ("0", (0,)),
        ("0-3", (0, 1, 2, 3)),
        ("0-1,8-9", (0, 1, 8, 9)),
        (" 3,1,2 \n", (1, 2, 3)),
        ("0,0-1", (0, 1)),
    ],
)
def test_parse_cpu_list(text: str, ids: tuple[int, ...]) -> None:
    assert parse_cpu_list(text) == ids


@pytest.mark.parametrize("text", ["a", "3-1", "-1", "1-", "0-3:2/4"])
def test_parse_cpu_list_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="not a CPU list"):
        parse_cpu_list(text)


@given(st.sets(st.integers(min_value=0, max_value=300)))
def test_format_parse_round_trip(ids: set[int]) -> None:
    assert parse_cpu_list(format_cpu_list(ids)) == tuple(sorted(ids))


def test_format_cpu_list() -> None:
    assert format_cpu_list([9, 0, 1, 2, 8, 11]) == "0-2,8-9,11"


# --------------------------------------------------------------------------------------------
# The data model


def test_cpu_validates() -> None:
    with pytest.raises(ValueError, match="contain the CPU itself"):
        Cpu(id=1, package=0, core=0, siblings=(0, 2), node=0)
    with pytest.raises(ValueError, match="sorted"):
        Cpu(id=1, package=0, core=0, siblings=(1, 0), node=0)
    with pytest.raises(ValueError, match="at least the CPU"):
        Cpu(id=1, package=0, core=0, siblings=(), node=0)


def test_topology_rejects_unsorted_cpus() -> None:
    a = Cpu(id=0, package=0, core=0, siblings=(0,), node=0)
    b = Cpu(id=1, package=0, core=1, siblings=(1,), node=0)
    with pytest.raises(ValueError, match="sorted"):
        Topology(cpus=(b, a), allowed=frozenset({0, 1}))


def test_core_pair_validates() -> None:
    with pytest.raises(ValueError, match="two different"):
        CorePair(cpus=(1, 1), orchestrator_cpus=(), node=0, shared_l3=True)
    with pytest.raises(ValueError, match="orchestrator"):
        CorePair(cpus=(1, 2), orchestrator_cpus=(2,), node=0, shared_l3=True)


def test_physical_cores_follow_siblings_not_core_ids() -> None:
    topo = numa_out_of_order()
    # core_id 0 appears twice (CPU 0 and CPU 4) yet they are different physical cores.
    assert topo.cpu(0).core == topo.cpu(4).core == 0
    assert not topo.are_siblings(0, 4)
    assert len(topo.physical_cores()) == 8
    assert intel_smt().physical_cores()[0] == (0, 8)
    assert intel_smt().threads_per_core == 2


def test_siblings_listed_on_one_side_only_still_count() -> None:
    # A kernel that reports CPU 0's sibling but not the converse must not fool the choice.
    cpus = (
        Cpu(id=0, package=0, core=0, siblings=(0, 1), node=0),
        Cpu(id=1, package=0, core=0, siblings=(1,), node=0),
        Cpu(id=2, package=0, core=1, siblings=(2,), node=0),
    )
    topo = Topology(cpus=cpus, allowed=frozenset({0, 1, 2}))
    assert topo.are_siblings(1, 0)
    assert topo.physical_cores() == ((0, 1), (2,))
    assert not topo.are_siblings(*choose_pair(topo).cpus)


# --------------------------------------------------------------------------------------------
# choose_pair on synthetic machines


def test_intel_smt_far_apart_siblings() -> None:
    topo = intel_smt()
    pair = choose_pair(topo)
    assert pair.cpus == (1, 2)  # not CPU 0's core (0, 8); never 1 with its sibling 9
    assert pair.siblings == ((9,), (10,))
    assert pair.idle_cpus == (9, 10)
    assert pair.shared_l3
    assert set(pair.orchestrator_cpus) == set(range(16)) - {1, 2, 9, 10}
    assert any("SMT siblings 9-10" in n for n in pair.notes)


def test_intel_smt_naive_consecutive_ids_would_be_siblings() -> None:
    # With adjacent sibling numbering, consecutive ids are the *same* core.
    topo = make_topology([Core((2 * c, 2 * c + 1)) for c in range(4)])
    pair = choose_pair(topo)
    assert not topo.are_siblings(*pair.cpus)
    assert pair.cpus == (2, 4)


def test_xeon_dual_stays_in_one_package_and_node() -> None:
    topo = xeon_dual()
    pair = choose_pair(topo)
    a, b = (topo.cpu(c) for c in pair.cpus)
    assert (a.package, a.node) == (b.package, b.node) == (0, 0)
    assert pair.cpus == (1, 2)
    assert pair.node == 0
    assert pair.siblings == ((17,), (18,))


@pytest.mark.parametrize("modules_as_siblings", [False, True])
def test_amd_modules_are_not_paired(modules_as_siblings: bool) -> None:
    topo = opteron(modules_as_siblings=modules_as_siblings)
    pair = choose_pair(topo)
    a, b = pair.cpus
    assert not topo.share_l2(a, b)
    assert not topo.are_siblings(a, b)
    assert topo.cpu(a).node == topo.cpu(b).node
    assert pair.shared_l3
    # CPU 0's module (0, 1) is avoided: interrupts on CPU 0 pollute the L2 it shares.
    assert pair.cpus == (2, 4)
    # The orchestrator stays off the pair's module mates.
    assert not {3, 5} & set(pair.orchestrator_cpus)
    assert 1 in pair.orchestrator_cpus


def test_amd_modules_only_one_module_per_l3_allowed() -> None:
    # Only module mates in node 0 and one CPU in node 1: mates share L2 but are the only
    # same-node choice, which outranks the shared L2.
    topo = opteron(modules_as_siblings=False, allowed={2, 3, 8})
    pair = choose_pair(topo)
    assert pair.cpus == (2, 3)
    assert any("share an L2 cache" in n for n in pair.notes)


def test_numa_numbered_out_of_order() -> None:
    topo = numa_out_of_order()
    pair = choose_pair(topo)
    assert pair.cpus == (1, 2)
    assert pair.node == 1
    assert pair.package == 1
    # With CPU 0 alone on its node, the two node-0 CPUs win over the lower ids.
    pair = choose_pair(numa_out_of_order(allowed={0, 4, 5}))
    assert pair.cpus == (4, 5)
    assert pair.node == 0
    assert pair.orchestrator_cpus == (0,)


def test_numa_forced_across_nodes_gets_notes() -> None:
    pair = choose_pair(numa_out_of_order(allowed={3, 4}))
    assert pair.cpus == (3, 4)
    assert not pair.shared_l3
    text = " ".join(pair.notes)
    assert "different packages" in text
    assert "different NUMA nodes" in text
    assert "do not share an L3" in text


def test_vm_2vcpu_like_this_one() -> None:
    pair = choose_pair(vm_2vcpu())
    assert pair.cpus == (0, 1)
    assert pair.orchestrator_cpus == ()
    assert pair.siblings == ((), ())
    assert (
        "2-vCPU VM: the two vCPUs are the pair; host-level SMT cannot be seen from inside"
        in pair.notes
    )
    assert any(
        n.startswith("no third CPU: the orchestrator shares the pair's cores") for n in pair.notes
    )


def test_two_cpus_bare_metal() -> None:
    pair = choose_pair(make_topology([Core((0,)), Core((1,))]))
    assert pair.cpus == (0, 1)
    assert "only two usable CPUs: they are the pair" in pair.notes
    assert not any("VM" in n for n in pair.notes)


def test_single_cpu_is_not_ready() -> None:
    with pytest.raises(EnvironmentNotReady, match="single online CPU") as info:
        choose_pair(make_topology([Core((0,))]))
    assert info.value.fix is not None
    assert "--method sequential" in info.value.fix


def test_only_smt_siblings_allowed_is_not_ready() -> None:
    with pytest.raises(EnvironmentNotReady, match="SMT siblings of one") as info:
        choose_pair(intel_smt(allowed={3, 11}))
    assert info.value.fix is not None
    assert "taskset -c 3,0" in info.value.fix


def test_one_allowed_cpu_is_not_ready() -> None:
    with pytest.raises(EnvironmentNotReady, match="only CPU 5"):
        choose_pair(intel_smt(allowed={5}))


def test_no_allowed_online_cpu_is_not_ready() -> None:
    with pytest.raises(EnvironmentNotReady, match="none of the CPUs"):
        choose_pair(intel_smt(allowed={40, 41}))


@pytest.mark.parametrize("adjacent", [True, False])
def test_github_runner_4vcpu_smt_exposed(adjacent: bool) -> None:
    topo = gh_runner(adjacent=adjacent)
    pair = choose_pair(topo)
    assert not topo.are_siblings(*pair.cpus)
    assert 0 not in pair.cpus
    assert pair.cpus == (1, 2)
    # The only other CPUs are the pair's SMT siblings: the orchestrator goes there (it
    # mostly sleeps) rather than onto a measuring CPU.
    assert set(pair.orchestrator_cpus) == {0, 3}
    assert set(pair.idle_cpus) == {0, 3}
    text = " ".join(pair.notes)
    assert "orchestrator runs on the pair's SMT siblings" in text
    assert "host-level SMT cannot be seen from inside" in text
    assert "2-vCPU VM" not in text


def test_hybrid_pairs_performance_cores() -> None:
    topo = hybrid()
    pair = choose_pair(topo)
    assert {topo.cpu(c).capacity for c in pair.cpus} == {1024}
    assert pair.cpus == (2, 4)
    # E-cores alone: equal capacity, and two different L2 clusters are preferred.
    pair = choose_pair(make_topology(hybrid_e_only()))
    assert not make_topology(hybrid_e_only()).share_l2(*pair.cpus)


def hybrid_e_only() -> list[Core]:
    return [Core((8 + c,), l2=f"E{c // 4}", capacity=512) for c in range(8)]


def test_mixed_capacity_forced_gets_a_note() -> None:
    topo = make_topology([Core((0,), capacity=1024), Core((1,), capacity=512)])
    pair = choose_pair(topo)
    assert any("different capacities" in n for n in pair.notes)


def test_isolated_cpus_are_preferred() -> None:
    pair = choose_pair(make_topology([Core((c,)) for c in range(8)], isolated={5, 7}))
    assert pair.cpus == (5, 7)


def test_cores_with_foreign_siblings_are_avoided() -> None:
    # 4 cores x 2 threads (c, c+4). CPU 5 (sibling of 1) belongs to someone else.
    topo = make_topology([Core((c, c + 4)) for c in range(4)], allowed={1, 2, 3, 6, 7})
    pair = choose_pair(topo)
    assert pair.cpus == (2, 3)
    # When the foreign sibling cannot be avoided, the note says so.
    topo = make_topology([Core((c, c + 4)) for c in range(2)], allowed={0, 1, 4})
    pair = choose_pair(topo)
    assert pair.cpus == (1, 4)
    assert any("may be used by other processes" in n for n in pair.notes)


def test_unknown_l3_is_said() -> None:
    topo = make_topology([Core((c,), l3=None) for c in range(3)])
    pair = choose_pair(topo)
    assert not pair.shared_l3
    assert any("does not describe the L3" in n for n in pair.notes)


def test_choice_is_deterministic() -> None:
    for build in (intel_smt, xeon_dual, numa_out_of_order, hybrid, vm_2vcpu):
        assert choose_pair(build()) == choose_pair(build())


# --------------------------------------------------------------------------------------------
# --cores overrides


def test_override_valid_is_used_sorted() -> None:
    pair = choose_pair(intel_smt(), override=(5, 0))
    assert pair.cpus == (0, 5)
    assert "cores 5,0 chosen with --cores" in pair.notes
    assert pair.siblings == ((8,), (13,))


def test_override_smt_siblings_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="SMT siblings") as info:
        choose_pair(intel_smt(), override=(0, 8))
    assert info.value.fix is not None
    assert "--cores 1,2" in info.value.fix


@pytest.mark.parametrize(
    ("override", "message"),
    [((3, 3), "same CPU twice"), ((1, 20), "CPU 20 is not online"), ((1, 2), "outside")],
)
def test_override_invalid(override: tuple[int, int], message: str) -> None:
    topo = intel_smt(allowed={0, 1, 3, 4})
    with pytest.raises(UsageError, match=message):
        choose_pair(topo, override=override)


def test_override_wrong_length() -> None:
    with pytest.raises(UsageError, match="exactly two"):
        choose_pair(intel_smt(), override=(1, 2, 3))  # type: ignore[arg-type]


def test_override_across_nodes_and_modules_is_allowed_with_notes() -> None:
    pair = choose_pair(xeon_dual(), override=(1, 9))
    assert any("different NUMA nodes" in n for n in pair.notes)
    pair = choose_pair(opteron(modules_as_siblings=False), override=(2, 3))
    assert any("share an L2 cache" in n for n in pair.notes)


def test_override_on_a_one_cpu_machine_suggests_leaving_it_out() -> None:
    with pytest.raises(UsageError, match="not online") as info:
        choose_pair(make_topology([Core((0,))]), override=(0, 1))
    assert info.value.fix == "leave --cores out"


# --------------------------------------------------------------------------------------------
# Property: on any machine, the choice is valid and the best by the documented rules


@st.composite
def machines(draw: st.DrawFn) -> Topology:
    packages = draw(st.integers(1, 2))
    nodes_per_package = draw(st.integers(1, 2))
    cores_per_node = draw(st.integers(1, 4))
    threads = draw(st.integers(1, 2))
    modules = draw(st.booleans())  # pairs of cores sharing an L2
    shapes: list[tuple[int, int, str | None, str, int]] = []
    for p, n, c in itertools.product(
        range(packages), range(nodes_per_package), range(cores_per_node)
    ):
        l2 = f"{p}{n}{c // 2}" if modules else None
        shapes.append((p, p * nodes_per_package + n, l2, f"{p}{n}", c))
    total = len(shapes) * threads
    ids = draw(st.permutations(range(total)))  # any numbering, however odd
    cores = [
        Core(
            tuple(sorted(ids[i * threads + t] for t in range(threads))),
            package=p,
            node=node,
            l2=l2,
            l3=l3,
            core_id=core_id,
        )
        for i, (p, node, l2, l3, core_id) in enumerate(shapes)
    ]
    allowed = draw(st.sets(st.sampled_from(range(total)), min_size=1))
    isolated = draw(st.sets(st.sampled_from(range(total)), max_size=2))
    return make_topology(cores, allowed=allowed, isolated=isolated)


@settings(max_examples=150, deadline=None)
@given(machines())
def test_choice_is_valid_and_optimal(topo: Topology) -> None:
    candidates = [
        (a, b) for a, b in itertools.combinations(topo.usable, 2) if not topo.are_siblings(a, b)
    ]
    if not candidates:
        with pytest.raises(EnvironmentNotReady):
            choose_pair(topo)
        return
    pair = choose_pair(topo)
    a, b = pair.cpus
    assert a < b
    assert {a, b} <= topo.allowed
    assert not topo.are_siblings(a, b)
    assert not {a, b} & set(pair.orchestrator_cpus)
    assert set(pair.orchestrator_cpus) <= topo.allowed
    # Same answer as scoring every pair of CPUs (not just one thread per core).
    best = min(candidates, key=lambda p: _score(topo, topo.cpu(p[0]), topo.cpu(p[1])))
    assert pair.cpus == best
    # Same package and node whenever such a pair exists.
    if any(
        topo.cpu(x).node == topo.cpu(y).node and topo.cpu(x).package == topo.cpu(y).package
        for x, y in candidates
    ):
        assert topo.cpu(a).node == topo.cpu(b).node


# --------------------------------------------------------------------------------------------
# Synthetic /sys trees on disk


def write_sysfs(
    root: Path,
    topology: Topology,
    *,
    offline: Iterable[int] = (),
    legacy_siblings: bool = False,
    numa: bool = True,
    hide_topology: Iterable[int] = (),
    extra: Mapping[str, str] | None = None,
) -> Path:
    """Write ``topology`` as the kernel would under ``root`` and return ``root``.

    Parameters
    ----------
    offline : CPUs to add as offline (a ``cpuN`` directory with ``online`` = 0).
    legacy_siblings : write only ``thread_siblings_list`` (kernels before 5.4).
    numa : write ``devices/system/node``; without it the kernel has no NUMA support.
    hide_topology : CPUs whose ``topology/`` directory is missing (stripped containers).
    extra : more files, path relative to ``root`` -> content.
    """

    def put(rel: str, text: str) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")

    cpu_root = "devices/system/cpu"
    put(f"{cpu_root}/online", format_cpu_list(topology.online))
    put(f"{cpu_root}/isolated", format_cpu_list(topology.isolated))
    for cpu_id in offline:
        put(f"{cpu_root}/cpu{cpu_id}/online", "0")
    nodes: dict[int, list[int]] = {}
    for cpu in topology.cpus:
        base = f"{cpu_root}/cpu{cpu.id}"
        if cpu.id != 0:
            put(f"{base}/online", "1")  # cpu0 has no online file: it cannot be unplugged
        if cpu.id not in set(hide_topology):
            put(f"{base}/topology/physical_package_id", str(cpu.package))
            put(f"{base}/topology/core_id", str(cpu.core))
            put(f"{base}/topology/die_id", str(cpu.die))
            put(f"{base}/topology/thread_siblings_list", format_cpu_list(cpu.siblings))
            if not legacy_siblings:
                put(f"{base}/topology/core_cpus_list", format_cpu_list(cpu.siblings))
        caches = [
            (1, "Data", cpu.siblings),
            (1, "Instruction", cpu.siblings),
            (2, "Unified", cpu.l2),
            (3, "Unified", cpu.l3),
        ]
        for index, (level, kind, shared) in enumerate(caches):
            if shared:
                put(f"{base}/cache/index{index}/level", str(level))
                put(f"{base}/cache/index{index}/type", kind)
                put(f"{base}/cache/index{index}/shared_cpu_list", format_cpu_list(shared))
        if cpu.capacity is not None:
            put(f"{base}/cpu_capacity", str(cpu.capacity))
        nodes.setdefault(cpu.node, []).append(cpu.id)
    if numa:
        for node, ids in nodes.items():
            put(f"devices/system/node/node{node}/cpulist", format_cpu_list(ids))
    if topology.hypervisor:
        put(
            "devices/system/clocksource/clocksource0/available_clocksource",
            "tsc kvm-clock acpi_pm",
        )
    for rel, text in (extra or {}).items():
        put(rel, text)
    return root


@pytest.mark.parametrize(
    "build",
    [
        intel_smt,
        xeon_dual,
        numa_out_of_order,
        vm_2vcpu,
        gh_runner,
        hybrid,
        lambda: opteron(modules_as_siblings=False),
    ],
    ids=[
        "intel-smt",
        "xeon-dual",
        "numa-out-of-order",
        "vm-2vcpu",
        "gh-runner",
        "hybrid",
        "opteron",
    ],
)
def test_sysfs_round_trip(tmp_path: Path, build: object) -> None:
    expected: Topology = build()  # type: ignore[operator]
    write_sysfs(tmp_path, expected)
    got = read_topology(tmp_path, allowed=expected.allowed)
    assert got.cpus == expected.cpus
    assert got.allowed == expected.allowed
    assert got.hypervisor == expected.hypervisor
    assert got.notes == ()
    assert choose_pair(got).cpus == choose_pair(expected).cpus


def test_sysfs_intel_smt_with_offline_cpu_and_legacy_kernel(tmp_path: Path) -> None:
    # CPU 9 offline: the kernel drops it from "online" and from CPU 1's sibling list.
    full = intel_smt()
    cpus = tuple(
        Cpu(
            id=c.id,
            package=c.package,
            core=c.core,
            siblings=tuple(s for s in c.siblings if s != 9),
            node=c.node,
            l2=tuple(s for s in c.l2 if s != 9),
            l3=tuple(s for s in c.l3 if s != 9),
        )
        for c in full.cpus
        if c.id != 9
    )
    topo = Topology(cpus=cpus, allowed=frozenset(range(16)))
    write_sysfs(tmp_path, topo, offline=[9], legacy_siblings=True)
    got = read_topology(tmp_path, allowed=range(16))
    assert 9 not in got.online
    assert got.cpu(1).siblings == (1,)
    assert got.cpu(2).siblings == (2, 10)
    pair = choose_pair(got)
    # Core 1 has no busy sibling now and its neighbour thread is gone: it is still a fine core.
    assert pair.cpus == (1, 2)
    assert 9 not in pair.orchestrator_cpus


def test_sysfs_without_online_summary(tmp_path: Path) -> None:
    write_sysfs(tmp_path, intel_smt(), offline=[16])
    (tmp_path / "devices/system/cpu/online").unlink()
    got = read_topology(tmp_path, allowed=range(17))
    assert got.online == tuple(range(16))
    assert any("online CPUs taken from cpuN directories" in n for n in got.notes)


def test_sysfs_without_numa_and_with_hidden_topology(tmp_path: Path) -> None:
    write_sysfs(tmp_path, gh_runner(), numa=False, hide_topology=[3])
    got = read_topology(tmp_path, allowed=range(4))
    assert {c.node for c in got.cpus} == {0}
    assert any("without NUMA support" in n for n in got.notes)
    assert got.cpu(3).siblings == (3,)
    assert any(n.startswith("cpu3:") and "SMT siblings are unknown" in n for n in got.notes)
    # The notes travel into the pair, so the report shows them.
    pair = choose_pair(got)
    assert any("cpu3:" in n for n in pair.notes)


def test_sysfs_missing_is_not_ready(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentNotReady, match="does not exist") as info:
        read_topology(tmp_path / "nothing", allowed=[0])
    assert info.value.fix is not None
    assert "sysfs" in info.value.fix


def test_sysfs_with_no_online_cpu_is_not_ready(tmp_path: Path) -> None:
    (tmp_path / "devices/system/cpu").mkdir(parents=True)
    (tmp_path / "devices/system/cpu/online").write_text("\n")
    with pytest.raises(EnvironmentNotReady, match="no online CPU"):
        read_topology(tmp_path, allowed=[0])


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, False),
        ({"hypervisor/type": "xen"}, True),
        ({"class/dmi/id/sys_vendor": "QEMU", "class/dmi/id/product_name": "Standard PC"}, True),
        (
            {
                "class/dmi/id/sys_vendor": "Microsoft Corporation",
                "class/dmi/id/product_name": "Virtual Machine",
            },
            True,
        ),
        ({"class/dmi/id/sys_vendor": "Amazon EC2", "class/dmi/id/product_name": "c5.metal"}, False),
        ({"class/dmi/id/sys_vendor": "Dell Inc.", "class/dmi/id/product_name": "PowerEdge"}, False),
        (
            {"devices/system/clocksource/clocksource0/available_clocksource": "tsc hpet acpi_pm"},
            False,
        ),
        (
            {"devices/system/clocksource/clocksource0/available_clocksource": "tsc kvm-clock"},
            True,
        ),
        (
            {
                "devices/system/cpu/vulnerabilities/mds": (
                    "Mitigation: Clear CPU buffers; SMT Host state unknown"
                )
            },
            True,
        ),
    ],
)
def test_detect_hypervisor(tmp_path: Path, files: dict[str, str], expected: bool) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text + "\n")
    detected, evidence = detect_hypervisor(tmp_path)
    assert detected is expected
    assert bool(evidence) is expected


def test_captured_fixture_of_the_development_vm() -> None:
    topo = read_topology(FIXTURES / "epyc-2vcpu-kvm", allowed={0, 1})
    assert topo.online == (0, 1)
    assert topo.physical_cores() == ((0,), (1,))
    assert topo.cpu(0).l3 == topo.cpu(1).l3 == (0, 1)
    assert topo.hypervisor
    assert "kvm-clock" in topo.hypervisor_evidence
    assert topo.notes == ()
    pair = choose_pair(topo)
    assert pair.cpus == (0, 1)
    assert pair.shared_l3
    assert "2-vCPU VM: the two vCPUs are the pair; host-level SMT cannot be seen from inside" in (
        pair.notes
    )


# --------------------------------------------------------------------------------------------
# This machine


def test_this_machine() -> None:
    topo = read_topology()
    assert topo.online, "no online CPU read from /sys"
    assert set(topo.usable) <= set(topo.online)
    assert set(topo.usable) == os.sched_getaffinity(0) & set(topo.online)
    for cpu in topo.cpus:
        assert cpu.id in cpu.siblings
    cores = topo.physical_cores(usable_only=True)
    if len(cores) < 2:
        with pytest.raises(EnvironmentNotReady):
            choose_pair(topo)
        return
    pair = choose_pair(topo)
    assert not topo.are_siblings(*pair.cpus)
    assert set(pair.cpus) <= topo.allowed
    summary = topo.summary()
    assert summary["physical_cores"] == len(topo.physical_cores())
