"""Machine topology and the choice of the two cores a duet runs on.

Everything about the machine is read from ``/sys/devices/system/cpu`` and
``/sys/devices/system/node``, never from ``/proc/cpuinfo``: the latter has neither NUMA nodes nor
which CPUs share a physical core, and the kernel's numbering follows no scheme one could guess
(Beyer, Löwe, Wendler, *Reliable benchmarking*, STTT 2017, section 3.4: SMT siblings may be
adjacent or far apart, core ids repeat across NUMA nodes, ``(package, core id)`` is not unique).
So a physical core here is *the set of CPUs the kernel lists as thread siblings*, not a core id.

The package is split on purpose (``docs/architecture.md``, rule 3):
:mod:`~duet_bench.topology.model` holds the frozen records, :mod:`~duet_bench.topology.read` does
the file reads (through the machine reader, :mod:`duet_bench.machine`) and returns a
:class:`Topology`; :func:`choose_pair` (:mod:`~duet_bench.topology.pair`) is pure, so the rules are
tested on synthetic machines (Intel SMT with far-apart sibling ids, AMD modules, NUMA nodes numbered
out of order, small VMs) as well as on the real one.

Glossary: a *CPU* is what Linux schedules on (a "processing unit", a hardware thread or a vCPU);
a *physical core* is a set of CPUs that share execution units (SMT siblings); the *pair* is the
two CPUs the two sides of a duet run on, one each.
"""

from __future__ import annotations

# CPU lists are parsed and written by the machine reader; re-exported for their callers.
from duet_bench.machine import format_cpu_list, parse_cpu_list
from duet_bench.topology.model import CorePair, Cpu, Topology
from duet_bench.topology.pair import choose_pair
from duet_bench.topology.read import detect_hypervisor, read_topology

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
