"""Machine topology and the choice of the two cores a duet runs on.

Everything about the machine is read from ``/sys/devices/system/cpu`` and
``/sys/devices/system/node``, never from ``/proc/cpuinfo``: the latter has neither NUMA nodes nor
which CPUs share a physical core, and the kernel's numbering follows no scheme one could guess
(Beyer, Löwe, Wendler, *Reliable benchmarking*, STTT 2017, section 3.4: SMT siblings may be
adjacent or far apart, core ids repeat across NUMA nodes, ``(package, core id)`` is not unique).
So a physical core here is *the set of CPUs the kernel lists as thread siblings*, not a core id.

The module is split in two on purpose (``style.md`` item 14): :func:`read_topology` does
the file reads and returns a frozen :class:`Topology`; :func:`choose_pair` is pure, so the
rules are tested on synthetic machines (Intel SMT with far-apart sibling ids, AMD modules,
NUMA nodes numbered out of order, small VMs) as well as on the real one.

Glossary: a *CPU* is what Linux schedules on (a "processing unit", a hardware thread or a vCPU);
a *physical core* is a set of CPUs that share execution units (SMT siblings); the *pair* is the
two CPUs the two sides of a duet run on, one each.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from duet.errors import EnvironmentNotReady, UsageError

# CPU lists are parsed and written by the machine reader; re-exported for their callers.
from duet.machine import format_cpu_list, parse_cpu_list, read_cpu_list, read_int, read_text

__all__ = [
    "CorePair",
    "Cpu",
    "Topology",
    "choose_pair",
    "detect_hypervisor",
    "format_cpu_list",
    "parse_cpu_list",
    "read_topology",
]

logger = logging.getLogger(__name__)

# DMI strings that name a virtual machine. Matched case-insensitively as substrings of
# sys_vendor / product_name; the list follows systemd's detect-virt (src/basic/virt.c).
_DMI_VM_VENDORS = (
    "qemu",
    "kvm",
    "vmware",
    "innotek",
    "virtualbox",
    "xen",
    "bochs",
    "parallels",
    "bhyve",
    "openstack",
    "google compute engine",
    "amazon ec2",
    "microsoft corporation virtual machine",
    "cloud hypervisor",
    "firecracker",
    "apple virtualization",
)
# Clocksources that only exist when the kernel runs as a guest of that hypervisor.
_GUEST_CLOCKSOURCES = ("kvm-clock", "xen", "hyperv_clocksource_tsc_page", "hyperv_clocksource_msr")
# The kernel prints this in several vulnerabilities/* files when it runs as a guest, because a
# guest cannot know whether the host has SMT enabled (arch/x86/kernel/cpu/bugs.c).
_GUEST_VULNERABILITY_TEXT = "SMT Host state unknown"


# --------------------------------------------------------------------------------------------
# Data model


@dataclass(frozen=True, slots=True)
class Cpu:
    """One online CPU (hardware thread or vCPU) as the kernel describes it.

    Attributes
    ----------
    id : int
        The processor id, the number used for affinity and cpusets.
    package : int
        ``topology/physical_package_id`` (the socket).
    core : int
        ``topology/core_id``. Informative only: it is *not* unique per physical core (it
        repeats across NUMA nodes of one package, and AMD module halves get different ids).
    siblings : tuple of int
        The CPUs sharing this CPU's physical core, this one included (``core_cpus_list`` or
        ``thread_siblings_list``). This, not ``core``, defines the physical core.
    node : int
        The NUMA node whose ``cpulist`` holds this CPU (0 on a kernel without NUMA).
    l2, l3 : tuple of int
        The CPUs sharing this CPU's level-2 / level-3 cache (``shared_cpu_list``), this one
        included; empty when the kernel does not describe that cache.
    die : int
        ``topology/die_id`` (0 where the kernel has no dies).
    capacity : int or None
        ``cpu_capacity`` (relative speed on hybrid and big.LITTLE machines), None if absent.
    """

    id: int
    package: int
    core: int
    siblings: tuple[int, ...]
    node: int
    l2: tuple[int, ...] = ()
    l3: tuple[int, ...] = ()
    die: int = 0
    capacity: int | None = None

    def __post_init__(self) -> None:
        if self.id < 0:
            raise ValueError(f"Cpu.id must be >= 0, got {self.id}")
        for name in ("siblings", "l2", "l3"):
            ids: tuple[int, ...] = getattr(self, name)
            if tuple(sorted(set(ids))) != ids:
                raise ValueError(f"Cpu {self.id}: {name} must be sorted and unique, got {ids}")
            if ids and self.id not in ids:
                raise ValueError(f"Cpu {self.id}: {name} {ids} must contain the CPU itself")
        if not self.siblings:
            raise ValueError(f"Cpu {self.id}: siblings must contain at least the CPU itself")

    @property
    def smt_siblings(self) -> tuple[int, ...]:
        """The other CPUs of this physical core (empty without SMT)."""
        return tuple(c for c in self.siblings if c != self.id)


@dataclass(frozen=True, slots=True)
class Topology:
    """The online CPUs of a machine and the ones this process may use.

    Attributes
    ----------
    cpus : tuple of Cpu
        Every online CPU, sorted by id.
    allowed : frozenset of int
        The CPUs this process may run on (``sched_getaffinity``, which already reflects a
        cgroup cpuset or ``taskset``). Ids that are not online are ignored by the selection.
    hypervisor : bool
        Whether the kernel runs as a guest of a hypervisor (see :func:`detect_hypervisor`).
        Inside a VM, two vCPUs that look like separate cores may still be SMT siblings on the
        host; nothing inside the guest can tell.
    hypervisor_evidence : str
        What the guess rests on, for the report ("" when nothing pointed to a hypervisor).
    isolated : frozenset of int
        CPUs listed in ``/sys/devices/system/cpu/isolated`` (``isolcpus=``): the scheduler keeps
        ordinary work off them, so they are the best place for the pair.
    notes : tuple of str
        What could not be read and what was assumed instead.
    """

    cpus: tuple[Cpu, ...]
    allowed: frozenset[int]
    hypervisor: bool = False
    hypervisor_evidence: str = ""
    isolated: frozenset[int] = frozenset()
    notes: tuple[str, ...] = ()
    _by_id: Mapping[int, Cpu] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids = [c.id for c in self.cpus]
        if ids != sorted(set(ids)):
            raise ValueError(f"Topology.cpus must be sorted by id without duplicates, got {ids}")
        object.__setattr__(self, "_by_id", {c.id: c for c in self.cpus})

    # --- look-ups -----------------------------------------------------------------------

    def cpu(self, cpu_id: int) -> Cpu:
        """Return the online CPU ``cpu_id``.

        Raises
        ------
        KeyError
            If ``cpu_id`` is not an online CPU.
        """
        return self._by_id[cpu_id]

    @property
    def online(self) -> tuple[int, ...]:
        """Ids of all online CPUs, ascending."""
        return tuple(self._by_id)

    @property
    def usable(self) -> tuple[int, ...]:
        """Ids of the CPUs that are both online and allowed, ascending."""
        return tuple(c for c in self._by_id if c in self.allowed)

    def are_siblings(self, a: int, b: int) -> bool:
        """Whether CPUs ``a`` and ``b`` share a physical core (SMT siblings).

        Checked both ways, so a kernel that lists the relation on one side only still counts.
        """
        if a == b:
            return True
        ca, cb = self._by_id.get(a), self._by_id.get(b)
        return (ca is not None and b in ca.siblings) or (cb is not None and a in cb.siblings)

    def share_l2(self, a: int, b: int) -> bool:
        """Whether CPUs ``a`` and ``b`` share a level-2 cache (as in an AMD module)."""
        ca, cb = self._by_id.get(a), self._by_id.get(b)
        return (ca is not None and b in ca.l2) or (cb is not None and a in cb.l2)

    def share_l3(self, a: int, b: int) -> bool:
        """Whether CPUs ``a`` and ``b`` share a level-3 cache (False when unknown)."""
        ca, cb = self._by_id.get(a), self._by_id.get(b)
        return (ca is not None and b in ca.l3) or (cb is not None and a in cb.l3)

    def physical_cores(self, *, usable_only: bool = False) -> tuple[tuple[int, ...], ...]:
        """Group CPUs into physical cores.

        The groups are the connected components of the sibling relation, so a kernel that
        reports siblings inconsistently still yields disjoint cores.

        Parameters
        ----------
        usable_only : bool
            Keep only CPUs that are online and allowed (a core with no usable CPU disappears).

        Returns
        -------
        tuple of tuple of int
            Each core's CPU ids ascending; cores ordered by their lowest id.
        """
        parent = {c: c for c in self._by_id}

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for cpu in self.cpus:
            for s in cpu.siblings:
                if s in parent:
                    ra, rb = find(cpu.id), find(s)
                    if ra != rb:
                        parent[max(ra, rb)] = min(ra, rb)
        groups: dict[int, list[int]] = {}
        for c in self._by_id:
            if usable_only and c not in self.allowed:
                continue
            groups.setdefault(find(c), []).append(c)
        return tuple(sorted(tuple(sorted(g)) for g in groups.values()))

    @property
    def packages(self) -> tuple[int, ...]:
        """Distinct package ids, ascending."""
        return tuple(sorted({c.package for c in self.cpus}))

    @property
    def nodes(self) -> tuple[int, ...]:
        """Distinct NUMA node ids, ascending."""
        return tuple(sorted({c.node for c in self.cpus}))

    @property
    def threads_per_core(self) -> int:
        """The largest number of CPUs on one physical core (1 without SMT, 0 without CPUs)."""
        return max((len(g) for g in self.physical_cores()), default=0)

    def summary(self) -> dict[str, object]:
        """A JSON-ready description for the environment record and ``duet doctor``."""
        return {
            "online": format_cpu_list(self.online),
            "allowed": format_cpu_list(self.usable),
            "isolated": format_cpu_list(self.isolated),
            "packages": len(self.packages),
            "numa_nodes": len(self.nodes),
            "physical_cores": len(self.physical_cores()),
            "threads_per_core": self.threads_per_core,
            "hypervisor": self.hypervisor,
            "hypervisor_evidence": self.hypervisor_evidence,
            "cpus": [
                {
                    "id": c.id,
                    "package": c.package,
                    "die": c.die,
                    "core": c.core,
                    "node": c.node,
                    "siblings": list(c.siblings),
                    "l2": list(c.l2),
                    "l3": list(c.l3),
                    "capacity": c.capacity,
                }
                for c in self.cpus
            ],
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class CorePair:
    """The two CPUs a duet runs on, one per side, and where everything else should go.

    Attributes
    ----------
    cpus : tuple of (int, int)
        The two CPUs, ascending. They are on different physical cores.
    orchestrator_cpus : tuple of int
        CPUs outside the pair for the orchestrator (duet itself); empty when there is no other
        CPU, in which case it shares the pair's cores.
    node : int
        The NUMA node of ``cpus[0]`` (of both, unless a note says otherwise): the memory node
        the runner should bind both sides to.
    shared_l3 : bool
        Whether the two CPUs share a level-3 cache (False when the kernel does not say).
    notes : tuple of str
        Sentences for the report: compromises made, what cannot be known (host SMT in a VM).
    siblings : tuple of (tuple of int, tuple of int)
        The SMT siblings of ``cpus[0]`` and of ``cpus[1]`` (excluding the pair itself), which
        the runner should keep idle.
    package : int
        The package of ``cpus[0]``.
    """

    cpus: tuple[int, int]
    orchestrator_cpus: tuple[int, ...]
    node: int
    shared_l3: bool
    notes: tuple[str, ...] = ()
    siblings: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    package: int = 0

    def __post_init__(self) -> None:
        a, b = self.cpus
        if a == b:
            raise ValueError(f"CorePair.cpus must be two different CPUs, got {self.cpus}")
        if set(self.orchestrator_cpus) & {a, b}:
            raise ValueError("CorePair.orchestrator_cpus must not contain the pair's CPUs")

    @property
    def idle_cpus(self) -> tuple[int, ...]:
        """Every SMT sibling of the pair, ascending: the CPUs to keep idle while measuring."""
        return tuple(sorted(set(self.siblings[0]) | set(self.siblings[1])))

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready form for the environment record."""
        return {
            "cpus": list(self.cpus),
            "smt_siblings": {
                str(c): list(s) for c, s in zip(self.cpus, self.siblings, strict=True)
            },
            "orchestrator_cpus": list(self.orchestrator_cpus),
            "package": self.package,
            "node": self.node,
            "shared_l3": self.shared_l3,
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------------------------
# Reading /sys


def detect_hypervisor(sysfs: str | Path = "/sys") -> tuple[bool, str]:
    """Guess whether this kernel runs as a guest of a hypervisor, from ``/sys`` only.

    The evidence, in the order tried (the first that answers wins):

    1. ``/sys/hypervisor/type`` (Xen and a few others fill it);
    2. DMI ``/sys/class/dmi/id/sys_vendor`` and ``product_name`` naming a VM (QEMU, KVM, VMware,
       Hyper-V, EC2, GCE, ...). EC2 bare-metal instances (``*.metal``) are not VMs;
    3. a guest-only clocksource in ``devices/system/clocksource/clocksource0/
       available_clocksource`` (``kvm-clock``, ``xen``, ``hyperv_clocksource_*``), which is what
       answers on minimal VMs such as Firecracker that have neither of the above;
    4. "SMT Host state unknown" in ``devices/system/cpu/vulnerabilities/*``, which the kernel
       writes only as a guest (Intel CPUs).

    ``/proc/cpuinfo``'s ``hypervisor`` flag is deliberately not used: topology and machine
    facts come from ``/sys`` only.

    Parameters
    ----------
    sysfs : str or Path
        The sysfs root (a synthetic tree in tests).

    Returns
    -------
    (bool, str)
        Whether a hypervisor was detected, and the evidence as a short sentence ("" if none).
    """
    root = Path(sysfs)
    text = read_text(root / "hypervisor" / "type")
    if text:
        return True, f"/sys/hypervisor/type is {text!r}"

    vendor = read_text(root / "class" / "dmi" / "id" / "sys_vendor")
    product = read_text(root / "class" / "dmi" / "id" / "product_name")
    if vendor is not None or product is not None:
        both = f"{vendor or ''} {product or ''}".strip()
        lowered = both.lower()
        if product and product.lower().endswith(".metal"):
            pass  # EC2 bare metal: the DMI vendor says Amazon EC2, but there is no hypervisor.
        elif any(name in lowered for name in _DMI_VM_VENDORS):
            return True, f"DMI names a virtual machine ({both!r})"

    cs_dir = root / "devices" / "system" / "clocksource" / "clocksource0"
    available = read_text(cs_dir / "available_clocksource")
    if available:
        for name in _GUEST_CLOCKSOURCES:
            if name in available.split():
                return True, f"the {name} clocksource is available (guest-only)"

    vuln_dir = root / "devices" / "system" / "cpu" / "vulnerabilities"
    try:
        vuln_files = sorted(vuln_dir.iterdir())
    except OSError:
        vuln_files = []
    for path in vuln_files:
        content = read_text(path)
        if content and _GUEST_VULNERABILITY_TEXT in content:
            return True, f"{path.name} vulnerability says {_GUEST_VULNERABILITY_TEXT!r}"
    return False, ""


def _cache_lists(cpu_dir: Path) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (L2, L3) ``shared_cpu_list`` of one CPU; empty tuples for caches not described."""
    l2: tuple[int, ...] = ()
    l3: tuple[int, ...] = ()
    try:
        indexes = sorted(p for p in (cpu_dir / "cache").iterdir() if p.name.startswith("index"))
    except OSError:
        return l2, l3
    for index in indexes:
        level = read_int(index / "level")
        kind = read_text(index / "type")
        shared = read_cpu_list(index / "shared_cpu_list")
        # Level-1 caches are per core and split; only unified (or data) L2 and L3 matter here.
        if shared is None or kind not in ("Unified", "Data"):
            continue
        if level == 2 and (not l2 or kind == "Unified"):
            l2 = shared
        elif level == 3 and (not l3 or kind == "Unified"):
            l3 = shared
    return l2, l3


def _online_cpus(cpu_root: Path, notes: list[str]) -> tuple[int, ...]:
    online = read_cpu_list(cpu_root / "online")
    if online is not None:
        return online
    # Without the summary file, a cpuN directory whose own "online" is not "0" is online
    # (cpu0 usually has no "online" file at all because it cannot be unplugged).
    ids: list[int] = []
    try:
        entries = list(cpu_root.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        suffix = entry.name[3:]
        if entry.name.startswith("cpu") and suffix.isdigit():
            state = read_text(entry / "online")
            if state != "0":
                ids.append(int(suffix))
    notes.append(f"{cpu_root / 'online'} is unreadable: online CPUs taken from cpuN directories")
    return tuple(sorted(ids))


def _node_map(sysfs: Path, notes: list[str]) -> dict[int, int]:
    node_root = sysfs / "devices" / "system" / "node"
    mapping: dict[int, int] = {}
    try:
        entries = sorted(node_root.iterdir())
    except OSError:
        notes.append(
            f"{node_root} is missing (kernel without NUMA support): all CPUs taken as node 0"
        )
        return mapping
    for entry in entries:
        suffix = entry.name[4:]
        if not (entry.name.startswith("node") and suffix.isdigit()):
            continue
        cpus = read_cpu_list(entry / "cpulist")
        if cpus is None:
            notes.append(f"{entry / 'cpulist'} is unreadable")
            continue
        for c in cpus:
            mapping[c] = int(suffix)
    return mapping


def read_topology(sysfs: str | Path = "/sys", *, allowed: Iterable[int] | None = None) -> Topology:
    """Read the CPU topology from a sysfs tree.

    Parameters
    ----------
    sysfs : str or Path
        The sysfs root; tests point it at synthetic trees.
    allowed : iterable of int, optional
        The CPUs this process may use. Default: ``os.sched_getaffinity(0)`` of this process
        (pass it explicitly when ``sysfs`` is not this machine's).

    Returns
    -------
    Topology
        The online CPUs with their package, physical core (siblings), NUMA node, L2 and L3
        sharing; what could not be read is in ``Topology.notes`` with what was assumed.

    Raises
    ------
    EnvironmentNotReady
        If ``<sysfs>/devices/system/cpu`` does not exist or lists no online CPU.
    """
    root = Path(sysfs)
    cpu_root = root / "devices" / "system" / "cpu"
    if not cpu_root.is_dir():
        raise EnvironmentNotReady(
            f"cannot read the CPU topology: {cpu_root} does not exist",
            fix=(
                "duet needs sysfs: mount it with `mount -t sysfs sysfs /sys`, or run the "
                "container with /sys mounted (read-only is enough)"
            ),
        )
    notes: list[str] = []
    online = _online_cpus(cpu_root, notes)
    if not online:
        raise EnvironmentNotReady(
            f"no online CPU found under {cpu_root}",
            fix="check that sysfs is mounted and complete (`cat /sys/devices/system/cpu/online`)",
        )
    nodes = _node_map(root, notes)
    cpus: list[Cpu] = []
    for cpu_id in online:
        cpu_dir = cpu_root / f"cpu{cpu_id}"
        topo = cpu_dir / "topology"
        package = read_int(topo / "physical_package_id")
        core = read_int(topo / "core_id")
        siblings = read_cpu_list(topo / "core_cpus_list")
        if siblings is None:
            siblings = read_cpu_list(topo / "thread_siblings_list")
        if package is None or core is None or not siblings or cpu_id not in siblings:
            # gVisor and some stripped containers hide topology/: treat the CPU as a core of
            # its own but say so, because two such CPUs may in fact be SMT siblings.
            notes.append(
                f"cpu{cpu_id}: {topo} is incomplete; taken as its own physical core in package 0 "
                "(its SMT siblings are unknown)"
            )
            package = 0 if package is None else package
            core = cpu_id if core is None else core
            siblings = (cpu_id,)
        die = read_int(topo / "die_id")
        l2, l3 = _cache_lists(cpu_dir)
        # shared_cpu_list may name offline CPUs; they are harmless but keep the model tidy.
        keep = set(online)
        cpus.append(
            Cpu(
                id=cpu_id,
                package=package,
                core=core,
                siblings=tuple(c for c in siblings if c in keep or c == cpu_id),
                node=nodes.get(cpu_id, 0),
                l2=tuple(c for c in l2 if c in keep or c == cpu_id) if cpu_id in l2 else (),
                l3=tuple(c for c in l3 if c in keep or c == cpu_id) if cpu_id in l3 else (),
                die=0 if die is None or die < 0 else die,
                capacity=read_int(cpu_dir / "cpu_capacity"),
            )
        )
        if nodes and cpu_id not in nodes:
            notes.append(f"cpu{cpu_id} is in no node*/cpulist: taken as node 0")
    isolated = read_cpu_list(cpu_root / "isolated") or ()
    hypervisor, evidence = detect_hypervisor(root)
    if allowed is None:
        allowed = os.sched_getaffinity(0)
    topology = Topology(
        cpus=tuple(cpus),
        allowed=frozenset(allowed),
        hypervisor=hypervisor,
        hypervisor_evidence=evidence,
        isolated=frozenset(isolated),
        notes=tuple(notes),
    )
    logger.debug(
        "topology: online %s, allowed %s, %d physical cores, hypervisor %s",
        format_cpu_list(topology.online),
        format_cpu_list(topology.usable),
        len(topology.physical_cores()),
        evidence or "no",
    )
    return topology


# --------------------------------------------------------------------------------------------
# Choosing the pair (pure)

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
