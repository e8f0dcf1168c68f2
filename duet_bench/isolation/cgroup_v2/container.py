"""One side in cgroup v2: the ``CgroupV2Container`` (join, measure from ``cpu.stat``,
``memory.peak`` and the event counters, check that its CPUs and controllers are still what
was set, remove), and ``kill_tree``, which kills everything in a cgroup and below it.
"""

from __future__ import annotations

import os

from duet_bench.errors import IsolationError
from duet_bench.isolation.base import SETTLE_TIMEOUT_S, Container
from duet_bench.isolation.cgroup_v2.controllers import controllers_of
from duet_bench.isolation.cgroup_v2.layout import Layout, lacking_reason
from duet_bench.isolation.cgroupfs import (
    kill_pids,
    procs_of,
    read_keyed,
    read_text,
    rmdir_tree,
    subtree_bottom_up,
    wait_until,
    write_text,
)
from duet_bench.isolation.model import Usage
from duet_bench.machine import format_cpu_list, parse_cpu_list, pid_alive

__all__ = ["CgroupV2Container", "kill_tree"]

_FREEZE_TIMEOUT_S = 2.0
_KILL_ROUNDS = 5


def _populated(cgroup: str) -> bool:
    try:
        return read_keyed(os.path.join(cgroup, "cgroup.events")).get("populated", 0) != 0
    except FileNotFoundError:
        return False


def kill_tree(cgroup: str, *, use_kill_file: bool = True) -> bool:
    """SIGKILL every process in ``cgroup`` and below; returns whether it is empty.
    ``use_kill_file=False`` takes the path of kernels before 5.14 even where ``cgroup.kill``
    exists (for the tests)."""
    seen: set[int] = set()

    def gone() -> bool:
        # A task leaves its cgroup early in exit(), before it is a zombie: wait for that too,
        # so that "killed" means dead for the caller.
        return not _populated(cgroup) and not any(pid_alive(pid) for pid in seen)

    for _ in range(_KILL_ROUNDS):
        if not _populated(cgroup):
            break
        seen.update(procs_of(cgroup))
        kill_file = os.path.join(cgroup, "cgroup.kill")
        if use_kill_file and os.path.exists(kill_file):
            # One write kills the whole subtree atomically; forks in flight are caught too.
            write_text(kill_file, "1")
        else:
            # Before Linux 5.14: frozen tasks cannot fork, and in v2 they still die of SIGKILL.
            freeze = os.path.join(cgroup, "cgroup.freeze")
            write_text(freeze, "1")
            wait_until(
                lambda: read_keyed(os.path.join(cgroup, "cgroup.events")).get("frozen") == 1,
                _FREEZE_TIMEOUT_S,
            )
            for nested in subtree_bottom_up(cgroup):
                kill_pids(procs_of(nested, recursive=False))
            write_text(freeze, "0")
        if wait_until(gone, SETTLE_TIMEOUT_S):
            return True
    return wait_until(gone, SETTLE_TIMEOUT_S)


class CgroupV2Container(Container):
    """One side: one cgroup in the unified hierarchy."""

    def __init__(
        self,
        name: str,
        cpus: tuple[int, ...],
        path: str,
        controllers: frozenset[str],
        layout: Layout,
    ) -> None:
        super().__init__(name, cpus)
        self.path = path
        self.controllers = controllers
        self._mount = layout.mount.mountpoint
        self._layout = layout

    @property
    def pressure_file(self) -> str | None:
        # Every cgroup2 cgroup has one when the kernel has PSI on, whatever its controllers.
        path = os.path.join(self.path, "cpu.pressure")
        return path if os.path.exists(path) else None

    @property
    def threads_file(self) -> str | None:
        return os.path.join(self.path, "cgroup.threads")

    def _join_files(self) -> list[str]:
        return [os.path.join(self.path, "cgroup.procs")]

    def processes(self) -> list[int]:
        return sorted(pid for pid in procs_of(self.path) if pid_alive(pid))

    def _verify(self) -> None:
        problems: list[str] = []
        lost = self.controllers - controllers_of(self.path)
        if lost:
            problems.append(
                f"the controller(s) {', '.join(sorted(lost))} were taken away from it "
                "(turned off in a cgroup above)"
            )
        if "cpuset" in self.controllers and "cpuset" not in lost:
            effective = frozenset(
                parse_cpu_list(read_text(os.path.join(self.path, "cpuset.cpus.effective")))
            )
            if effective != frozenset(self.cpus):
                problems.append(
                    f"its CPUs are {format_cpu_list(effective) or 'none'}, not "
                    f"{format_cpu_list(self.cpus)} as set (a cpuset above was changed)"
                )
        if problems:
            raise IsolationError(
                f"the cgroup of {self.name} ({self.path}) was changed while it was measured: "
                f"{'; '.join(problems)}; its samples are not what the results would claim",
                fix="something else rewrites this cgroup tree (systemd applying a unit's "
                "AllowedCPUs= or a daemon-reload, another tool): run duet in a delegated scope, "
                "which systemd leaves alone: `sudo systemd-run --scope -p Delegate=yes duet ...`",
            )

    def kill(self) -> None:
        if not kill_tree(self.path):
            raise IsolationError(
                f"processes {self.processes()} of container {self.name} survived SIGKILL",
                fix="they are probably stuck in the kernel (state D); check `ps -o stat,pid,cmd`",
            )

    def _remove(self) -> None:
        if not rmdir_tree(self.path):
            raise IsolationError(f"could not remove cgroup {self.path}")

    def _measure(self) -> Usage:
        missing: dict[str, str] = {}
        stat = read_keyed(os.path.join(self.path, "cpu.stat"))

        def micro(key: str, field: str) -> int | None:
            if key in stat:
                return stat[key] * 1000
            missing[field] = f"cpu.stat has no {key}"
            return None

        cpu_ns = micro("usage_usec", "cpu_ns")
        user_ns = micro("user_usec", "cpu_user_ns")
        system_ns = micro("system_usec", "cpu_system_ns")

        peak: int | None = None
        oom_kills: int | None = None
        if "memory" in self.controllers:
            peak_file = os.path.join(self.path, "memory.peak")
            if os.path.exists(peak_file):
                peak = int(read_text(peak_file))
            else:
                missing["peak_memory_bytes"] = "memory.peak needs Linux 5.19 or later"
            oom_kills = read_keyed(os.path.join(self.path, "memory.events")).get("oom_kill")
            if oom_kills is None:
                missing["oom_kills"] = "memory.events has no oom_kill counter (Linux < 4.13)"
        else:
            reason = lacking_reason(self._layout, ["memory"])
            missing["peak_memory_bytes"] = reason
            missing["oom_kills"] = reason

        limit_hit: bool | None = None
        if "pids" in self.controllers:
            limit_hit = read_keyed(os.path.join(self.path, "pids.events")).get("max", 0) > 0
        else:
            missing["pids_limit_hit"] = lacking_reason(self._layout, ["pids"])
        return Usage(
            cpu_ns=cpu_ns,
            cpu_user_ns=user_ns,
            cpu_system_ns=system_ns,
            peak_memory_bytes=peak,
            oom_kills=oom_kills,
            pids_limit_hit=limit_hit,
            missing=missing,
        )
