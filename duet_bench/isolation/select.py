"""Choosing the isolation level: the best of cgroup v2, cgroup v1 and affinity-only that this
machine allows, from each level's own probe, with the reasons and fixes of the ones that were
not usable.
"""

from __future__ import annotations

import logging
import os

from duet_bench.errors import IsolationError
from duet_bench.isolation.affinity import AffinityBackend
from duet_bench.isolation.base import Backend
from duet_bench.isolation.cgroup_v1 import CgroupV1Backend, probe_v1
from duet_bench.isolation.cgroup_v2 import CgroupV2Backend, probe_v2
from duet_bench.isolation.cgroupfs import privilege_fix
from duet_bench.isolation.model import Request

__all__ = ["select_backend"]

logger = logging.getLogger(__name__)


def select_backend(request: Request = "auto", *, root: str = "/sys/fs/cgroup") -> Backend:
    """Pick the best isolation level this machine allows.

    ``auto``: cgroup v2 if its unified hierarchy offers cpuset, cpu, memory and pids to us, else
    cgroup v1 if its controllers are writable, else ``affinity-only`` with a loud warning
    (logged, and in ``Backend.warning`` for the runner to print). ``cgroup``: the same, but
    raise ``IsolationError`` (with the reason and the command that fixes it) instead of falling
    back. ``affinity``: affinity-only, as asked.
    """

    if request == "affinity":
        backend: Backend = AffinityBackend()
        logger.warning("%s", backend.warning)
        return backend
    if request not in ("auto", "cgroup"):
        raise ValueError(f"request must be 'auto', 'cgroup' or 'affinity', got {request!r}")

    failures: list[tuple[str, str, str | None]] = []
    v2 = probe_v2(root)
    if v2.ok:
        try:
            return CgroupV2Backend(root=root)
        except IsolationError as e:
            failures.append(("cgroup v2", e.message, e.fix))
    else:
        failures.append(("cgroup v2", v2.reason, v2.fix))
    v1 = probe_v1(root)
    if v1.ok:
        try:
            return CgroupV1Backend(root=root)
        except IsolationError as e:
            failures.append(("cgroup v1", e.message, e.fix))
    else:
        failures.append(("cgroup v1", v1.reason, v1.fix))

    why = "; ".join(f"{level}: {reason}" for level, reason, _ in failures)
    fixes = [fix for _, _, fix in failures if fix]
    fix = " or ".join(dict.fromkeys(fixes)) if fixes else None
    if request == "cgroup":
        raise IsolationError(
            f"no cgroup isolation is possible here ({why})",
            fix=fix or (privilege_fix() if os.geteuid() != 0 else None),
        )
    backend = AffinityBackend(reason=why, fix=fix)
    logger.warning("%s", backend.warning)
    return backend
