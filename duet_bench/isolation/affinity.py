"""``affinity-only``: the fallback when duet may not create cgroups.

Each side is pinned with ``sched_setaffinity`` and started in its own session (hence process
group). Both are advisory: a program may change its own affinity, and a child that calls
``setsid`` or ``setpgid`` after its parent died leaves the group where we cannot find it (BenchExec
paper, sections 3.3 and 3.4). CPU time from ``wait4`` misses children nobody waited for, and
there is no way to measure the peak memory of a process tree, so those fields are reported
missing rather than wrong. Limits are not enforced (``setrlimit`` limits single processes, not
trees). The runner prints ``AffinityBackend.warning`` and records the level with the results.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal

from duet_bench.errors import IsolationError
from duet_bench.isolation.base import SETTLE_TIMEOUT_S, Backend, Container
from duet_bench.isolation.cgroupfs import kill_pids, privilege_fix, wait_until
from duet_bench.isolation.model import Limits, Usage
from duet_bench.machine import (
    THIS,
    online_cpus,
    pid_alive,
)

__all__ = ["UNRELIABLE", "AffinityBackend", "AffinityContainer"]

logger = logging.getLogger(__name__)

#: Why CPU time and peak memory are missing at this level.
UNRELIABLE = "affinity-only: CPU time of orphaned children and peak memory are unreliable"

_KILL_ROUNDS = 5


class AffinityBackend(Backend):
    """Process groups and CPU affinity, no cgroups. ``reason`` says why no cgroup level could
    be used and ``fix`` what would allow one (default: the privilege fix when we are not root);
    both go into ``warning``."""

    level = "affinity-only"

    def __init__(self, reason: str | None = None, fix: str | None = None) -> None:
        super().__init__()
        self.reason = reason
        self._warned_limits = False
        if fix is None and os.geteuid() != 0:
            fix = privilege_fix()
        self.warning = (
            "isolation level affinity-only. Without cgroups the sides are pinned by "
            "sched_setaffinity (which a program may undo) and tracked by process group (which "
            "double-forked daemons and setsid escape); CPU time of orphaned children and peak "
            "memory are unreliable and not reported; memory and pids limits are not enforced."
            + (f" Why no cgroups: {reason}." if reason else "")
            + (f" Fix: {fix}." if fix else "")
        )

    def _create(
        self, name: str, cpus: tuple[int, ...], mems: tuple[int, ...] | None, limits: Limits
    ) -> AffinityContainer:
        allowed = set(online_cpus())
        outside = sorted(set(cpus) - allowed)
        if outside:
            raise IsolationError(
                f"CPUs {outside} are not online (online: {sorted(allowed)})",
                fix="choose online CPUs (see `duet doctor`)",
            )
        if limits != Limits():
            # Once per backend: the runner asks for the same limits in every run.
            log = logger.debug if self._warned_limits else logger.warning
            log(
                "affinity-only: the limits of container %s (%s) are not enforced",
                name,
                limits.describe(),
            )
            self._warned_limits = True
        if mems is not None:
            logger.debug("affinity-only: memory nodes %s of %s are not enforced", mems, name)
        return AffinityContainer(name, cpus)

    def cleanup_stale(self) -> list[str]:
        # Nothing persistent is created at this level: there is nothing a crash could leave.
        return []


def _proc_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, process group) of every live (non-zombie) process."""
    table: dict[int, tuple[int, int]] = {}
    for pid in THIS.pids():
        stat = THIS.stat(pid)
        if stat is not None and stat.state not in ("Z", "X"):
            table[pid] = (stat.parent_pid, stat.process_group)
    return table


class AffinityContainer(Container):
    """The processes started by ``spawn``: their process groups and, while the chain of parents
    is intact, their descendants."""

    def _join_files(self) -> list[str]:
        return []

    def _roots(self) -> set[int]:
        # A reaped child's pid may already belong to someone else; an unreaped one (running or
        # zombie) cannot be reused.
        return {p.pid for p in self._popens if p.returncode is None}

    def processes(self) -> list[int]:
        roots = self._roots()
        groups = {p.pid for p in self._popens}
        table = _proc_table()
        found = {pid for pid, (_, pgid) in table.items() if pgid in groups}
        found |= roots & table.keys()
        # Descendants through the parent chain catch children that changed their group but
        # whose parent is still alive.
        changed = True
        while changed:
            changed = False
            for pid, (ppid, _) in table.items():
                if ppid in found and pid not in found:
                    found.add(pid)
                    changed = True
        return sorted(found)

    def kill(self) -> None:
        killed: set[int] = set()

        def all_gone() -> bool:
            # The killed pids themselves, not just processes(): a child whose parent died
            # first drops out of the parent chain while it is still exiting.
            return not self.processes() and not any(pid_alive(pid) for pid in killed)

        for _ in range(_KILL_ROUNDS):
            pids = self.processes()
            if not pids:
                break
            for pgid in {p.pid for p in self._popens}:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
            kill_pids(pids)
            killed.update(pids)
            if wait_until(all_gone, SETTLE_TIMEOUT_S):
                return
        if all_gone():
            return
        raise IsolationError(
            f"processes {self.processes()} of container {self.name} survived SIGKILL",
            fix="they are probably stuck in the kernel (state D); check `ps -o stat,pid,cmd`",
        )

    def _measure(self) -> Usage:
        return Usage.unmeasured(UNRELIABLE)

    def _remove(self) -> None:
        return None
