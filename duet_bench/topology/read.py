"""Reading the topology from ``/sys`` (through :mod:`duet_bench.machine`): the online CPUs, their
siblings, caches and nodes, and whether this is a VM."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from duet_bench.errors import EnvironmentNotReady
from duet_bench.machine import format_cpu_list, read_cpu_list, read_int, read_text
from duet_bench.topology.model import Cpu, Topology

__all__ = ["detect_hypervisor", "read_topology"]

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
