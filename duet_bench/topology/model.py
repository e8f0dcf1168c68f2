"""The machine's CPUs as duet sees them: :class:`Cpu`, :class:`Topology` and the chosen
:class:`CorePair` (frozen, validated on construction)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from duet_bench.machine import format_cpu_list

__all__ = ["CorePair", "Cpu", "Topology"]


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
