"""cgroup v2 containers in the unified hierarchy.

Where the per-invocation parent ``duet-<pid>-<random>`` goes depends on where we run, because
cgroup v2 forbids a (non-root) cgroup to hold processes *and* hand controllers to children (the
"no internal processes" rule):

``root``
    We are in the root cgroup (a VM or container run as root): the parent goes directly under
    the root, which is exempt from the rule.
``delegated``
    Our cgroup holds only us and our descendants and we may write it: a systemd scope started
    with ``systemd-run --user --scope -p Delegate=yes duet ...``, or a container whose entry point
    is duet. We move ourselves into the leaf ``<parent>/_orchestrator`` (as BenchExec does) so our
    cgroup can delegate controllers, and move back in ``close``. Nothing outside our cgroup is
    touched.
``sibling``
    We are root but share our cgroup with other processes (a CI job's service, a login session):
    the parent goes next to our cgroup, under its parent, and the controllers are enabled on
    the path from the hierarchy's root down to it.

Measurement (kernel documentation ``cgroup-v2.rst``): ``cpu.stat`` ``usage_usec``,
``user_usec``, ``system_usec`` (microsecond units, always present, no controller needed),
``memory.peak`` (Linux 5.19+), ``memory.events`` ``oom_kill``, ``pids.events`` ``max``. Killing
uses ``cgroup.kill`` (Linux 5.14+), else freeze, SIGKILL every task, thaw, until empty.

``CgroupV2Backend(require_controllers=())`` runs with whatever controllers the hierarchy offers
and reports the fields it cannot measure; ``select_backend`` only picks v2 when all four
(cpuset, cpu, memory, pids) are there.

One module per concern: ``layout`` (where the parent goes, probing, reasons and fixes; reads
only), ``controllers`` (which controllers a cgroup has and hands on, turning them on and off),
``backend`` (setting the parent up and tearing it down, creating the sides' cgroups),
``container`` (one side: measure, verify, kill, remove).
"""

from __future__ import annotations

from duet_bench.isolation.cgroup_v2.backend import ORCHESTRATOR_LEAF, CgroupV2Backend
from duet_bench.isolation.cgroup_v2.container import CgroupV2Container, kill_tree
from duet_bench.isolation.cgroup_v2.controllers import WANTED_CONTROLLERS
from duet_bench.isolation.cgroup_v2.layout import Mode, find_v2_mount, probe_v2

__all__ = [
    "ORCHESTRATOR_LEAF",
    "WANTED_CONTROLLERS",
    "CgroupV2Backend",
    "CgroupV2Container",
    "Mode",
    "find_v2_mount",
    "kill_tree",
    "probe_v2",
]
