"""Containers for the two sides of a run: one cgroup (or, without permission, one process group)
per side, pinned to its own CPU, with reliable termination and whole-tree measurement.

The requirements are those of the BenchExec paper (Beyer, Löwe, Wendler 2017, sections 2-5):
CPU time and peak memory of the whole process tree including orphaned children, limits that
apply to the tree, termination that no double fork or ``setsid`` escapes, deliberate core
assignment, no swapping, and isolated temporary directories. Only cgroups give all of that;
``affinity-only`` is a loudly announced fallback.

Levels, best first:

``cgroup-v2``
    The unified hierarchy with the cpuset, cpu, memory and pids controllers
    (``duet_bench.isolation.cgroup_v2``).
``cgroup-v1``
    The legacy hierarchies cpuset, cpuacct, memory, pids and freezer
    (``duet_bench.isolation.cgroup_v1``).
``affinity-only``
    ``sched_setaffinity`` and a process group (``duet_bench.isolation.affinity``).

Layout of the cgroups (per hierarchy): one parent per invocation, ``duet-<pid>-<random>``, and
under it one child per side per run named by the caller (``r003-baseline``). The pid in the
parent's name lets ``Backend.cleanup_stale`` find what a crashed invocation left behind.

One module per concern:

``model``
    The records: ``RunAs``, ``Limits``, ``Usage``, ``Probe``, the ``Level`` and ``Request`` names.
``base``
    The interface every level implements: ``Backend`` and ``Container``.
``spawn``
    Starting a child that joins its container (and sandbox, and user) before ``exec``.
``select``
    ``select_backend``: the best level this machine allows.
``cgroupfs``
    The cgroup directories: interface files, walking, killing and removing a tree, stale parents.
``sandbox``
    A side's private ``/tmp`` and loopback.
``cgroup_v2``, ``cgroup_v1``, ``affinity``
    The three levels.

The machine (mounts, our cgroups, CPU lists, live pids) is read by ``duet_bench.machine``. This
package re-exports the names its callers and the backends' tests use, so
``from duet_bench.isolation import Limits`` keeps working wherever a name moves.
"""

from __future__ import annotations

from duet_bench.isolation.base import Backend, Container
from duet_bench.isolation.cgroupfs import (
    PARENT_NAME_RE,
    cgroup_dir,
    find_stale,
    kill_pids,
    new_parent_name,
    privilege_fix,
    procs_of,
    read_keyed,
    read_text,
    rmdir_tree,
    subtree_bottom_up,
    wait_until,
    write_text,
)
from duet_bench.isolation.model import Level, Limits, Probe, Request, RunAs, Usage
from duet_bench.isolation.sandbox import Sandbox, make_sandbox
from duet_bench.isolation.select import select_backend

# The machine is read in one place (duet_bench.machine); the backends' tests import these names
# from here.
from duet_bench.machine import (
    CgroupMount,
    cgroup_mounts,
    format_cpu_list,
    online_cpus,
    own_cgroups,
    parse_cpu_list,
    pid_alive,
)

__all__ = [
    "PARENT_NAME_RE",
    "Backend",
    "CgroupMount",
    "Container",
    "Level",
    "Limits",
    "Probe",
    "Request",
    "RunAs",
    "Sandbox",
    "Usage",
    "cgroup_dir",
    "cgroup_mounts",
    "find_stale",
    "format_cpu_list",
    "kill_pids",
    "make_sandbox",
    "new_parent_name",
    "online_cpus",
    "own_cgroups",
    "parse_cpu_list",
    "pid_alive",
    "privilege_fix",
    "procs_of",
    "read_keyed",
    "read_text",
    "rmdir_tree",
    "select_backend",
    "subtree_bottom_up",
    "wait_until",
    "write_text",
]
