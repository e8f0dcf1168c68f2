"""cgroup v1 containers: cpuset, cpuacct, memory, pids and freezer hierarchies.

Each controller lives in its own hierarchy (or a few share one, e.g. ``cpu,cpuacct``), so a
container is one directory per hierarchy, and the child writes ``0`` into the ``cgroup.procs`` of
each before it execs. The per-invocation parent ``duet-<pid>-<random>`` sits in *our own* cgroup
of each hierarchy, as BenchExec does: limits an administrator (or a CI system) put on us keep
applying to the benchmarks instead of being escaped by moving them to the root.

Measurement (kernel documentation ``cgroup-v1/cpuacct.rst``, ``memory.rst``, ``pids.rst``):

- ``cpu_ns`` from ``cpuacct.usage``: nanoseconds of scheduler run time of every task that was
  ever in the cgroup, including orphans nobody waited for.
- ``cpu_user_ns``/``cpu_system_ns`` from ``cpuacct.usage_user``/``usage_sys`` (nanosecond
  units) when the kernel has them, else from ``cpuacct.stat`` in USER_HZ ticks converted to
  nanoseconds (resolution 1/USER_HZ, 10 ms at the usual 100). Either way the kernel splits run
  time into user and system by sampling, so only the total is exact.
- ``peak_memory_bytes`` from ``memory.memsw.max_usage_in_bytes`` (RAM + swap, so swapped-out
  pages cannot hide usage) or ``memory.max_usage_in_bytes`` without swap accounting. Pages are
  counted once however many processes share them; page cache charged to the cgroup (files the
  benchmark wrote, e.g. into a tmpfs) counts too.
- ``oom_kills`` from the ``oom_kill`` line of ``memory.oom_control`` (Linux 4.13+).
- ``pids_limit_hit`` from the ``max`` line of ``pids.events``: forks refused by ``pids.max``.

Pressure (PSI): v1 has no per-cgroup CPU pressure, but a machine with v1 controllers usually
mounts a controller-less cgroup2 hierarchy beside them (systemd's ``/sys/fs/cgroup/unified``),
whose cgroups have ``cpu.pressure`` whatever the controllers. When our own cgroup there has it
and we may create cgroups in it, each side also gets a leaf there (``paths["pressure"]``), and
the worker of a command reads its ``cpu.pressure`` (:attr:`Container.pressure_file`): the time
any process of the side, the programs a shell or build started included, waited for a CPU.
Without it the run goes on and the worker reads the spawned process's own run-queue delay.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
from dataclasses import dataclass

from duet_bench.errors import IsolationError
from duet_bench.isolation.base import SETTLE_TIMEOUT_S, Backend, Container
from duet_bench.isolation.cgroupfs import (
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
from duet_bench.isolation.model import Limits, Probe, Usage
from duet_bench.machine import (
    CgroupMount,
    cgroup_mounts,
    format_cpu_list,
    own_cgroups,
    parse_cpu_list,
    pid_alive,
)

__all__ = ["CONTROLLERS", "CgroupV1Backend", "CgroupV1Container", "probe_v1"]

logger = logging.getLogger(__name__)

#: The key of the controller-less cgroup2 hierarchy in ``parents`` and in a container's ``paths``.
PRESSURE = "pressure"

#: The v1 controllers duet uses. ``cpu`` (CFS shares and quotas) is not needed: nothing is
#: throttled, and ``cpuacct`` measures.
CONTROLLERS = ("cpuset", "cpuacct", "memory", "pids", "freezer")

_FREEZE_TIMEOUT_S = 2.0
_KILL_ROUNDS = 5


@dataclass(frozen=True, slots=True)
class _Hierarchy:
    mount: CgroupMount
    base: str  # our own cgroup in this hierarchy: where the per-invocation parent goes
    controllers: frozenset[str]  # the controllers of CONTROLLERS that live in this hierarchy


def _locate(root: str) -> tuple[list[_Hierarchy], Probe]:
    """Find the hierarchies of CONTROLLERS under ``root`` and check we may create cgroups."""
    mounts = [m for m in cgroup_mounts(root) if m.fstype == "cgroup"]
    if not mounts:
        # A pure cgroup v2 machine: nothing to fix here (the v2 probe says what to do there).
        return [], Probe(False, f"no cgroup v1 hierarchy is mounted under {root}")
    try:
        own = own_cgroups()
    except OSError as e:
        return [], Probe(False, f"cannot read /proc/self/cgroup: {e}")
    problems: list[str] = []
    not_mounted: list[str] = []
    not_writable: list[str] = []
    hierarchies: dict[str, _Hierarchy] = {}
    for controller in CONTROLLERS:
        mount = next((m for m in mounts if controller in m.controllers), None)
        if mount is None:
            not_mounted.append(controller)
            continue
        if mount.mountpoint in hierarchies:
            continue
        path = own.get(controller)
        base = cgroup_dir(mount, path) if path is not None else None
        if base is None or not os.path.isdir(base):
            problems.append(
                f"our {controller} cgroup {path} is not visible under {mount.mountpoint}"
            )
            continue
        if not os.access(base, os.W_OK, effective_ids=True):
            not_writable.append(base)
            continue
        used = frozenset(c for c in CONTROLLERS if c in mount.controllers)
        hierarchies[mount.mountpoint] = _Hierarchy(mount=mount, base=base, controllers=used)
    if not_mounted:
        problems.insert(0, f"controllers {', '.join(not_mounted)} are not mounted under {root}")
    if not_writable:
        problems.append(
            f"we (uid {os.geteuid()}) may not create cgroups in {', '.join(not_writable)}"
        )
    if problems:
        if not_writable and not not_mounted:
            fix: str | None = privilege_fix()
        elif not_mounted:
            fix = (
                "mount the missing v1 controllers (e.g. `sudo mount -t cgroup -o cpuset cgroup "
                f"{root}/cpuset`), or use a machine with cgroup v2"
            )
        else:
            fix = None
        return [], Probe(False, "; ".join(problems), fix)
    return list(hierarchies.values()), Probe(True)


def _pressure_base(root: str) -> str | None:
    """Our own cgroup in a cgroup2 hierarchy mounted beside the v1 ones, when its cgroups have
    ``cpu.pressure`` (the kernel has PSI on) and we may create cgroups in it; else None."""
    mount = next((m for m in cgroup_mounts(root) if m.fstype == "cgroup2"), None)
    if mount is None:
        return None
    try:
        path = own_cgroups().get("")
    except OSError:
        return None
    base = cgroup_dir(mount, path) if path is not None else None
    if base is None or not os.access(base, os.W_OK, effective_ids=True):
        return None
    try:
        has_psi = read_text(os.path.join(base, "cpu.pressure")).startswith("some ")
    except OSError:  # absent (no PSI, or psi=0 at boot) or EOPNOTSUPP
        return None
    return base if has_psi else None


def probe_v1(root: str = "/sys/fs/cgroup") -> Probe:
    """Whether cgroup v1 isolation is possible (without creating anything)."""
    return _locate(root)[1]


class CgroupV1Backend(Backend):
    """Containers in the cgroup v1 hierarchies under ``root``.

    Creates the per-invocation parent ``duet-<pid>-<random>`` in each hierarchy right away;
    ``close`` removes them.
    """

    level = "cgroup-v1"

    def __init__(self, root: str = "/sys/fs/cgroup") -> None:
        super().__init__()
        hierarchies, probe = _locate(root)
        if not probe.ok:
            raise IsolationError(f"cgroup v1 is not usable: {probe.reason}", fix=probe.fix)
        self.root = root
        self._hierarchies = hierarchies
        self.parent_name = new_parent_name()
        #: controller -> path of the per-invocation parent in that controller's hierarchy
        self.parents: dict[str, str] = {}
        created: list[str] = []
        try:
            for hierarchy in hierarchies:
                parent = os.path.join(hierarchy.base, self.parent_name)
                os.mkdir(parent)
                created.append(parent)
                if "cpuset" in hierarchy.controllers:
                    # A v1 cpuset starts with empty cpus and mems, and no task (nor child
                    # cpuset) can use an empty one: inherit what we are allowed.
                    for key in ("cpuset.cpus", "cpuset.mems"):
                        write_text(
                            os.path.join(parent, key),
                            read_text(os.path.join(hierarchy.base, key)),
                        )
                for controller in hierarchy.controllers:
                    self.parents[controller] = parent
        except OSError as e:
            for path in reversed(created):
                rmdir_tree(path)
            raise IsolationError(
                f"cannot create the cgroup v1 parent {self.parent_name}: {e}",
                fix=privilege_fix() if e.errno in (errno.EACCES, errno.EPERM) else None,
            ) from e
        self._allowed_cpus = frozenset(
            parse_cpu_list(read_text(os.path.join(self.parents["cpuset"], "cpuset.cpus")))
        )
        self._pressure_base = _pressure_base(root)
        if self._pressure_base is not None:
            parent = os.path.join(self._pressure_base, self.parent_name)
            try:
                os.mkdir(parent)
                self.parents[PRESSURE] = parent
            except OSError as e:
                # Optional: the worker then reads the spawned process's own run-queue delay.
                logger.debug("no pressure cgroup (%s): %s", parent, e)
        logger.debug("cgroup v1 parents: %s", sorted(set(self.parents.values())))

    def _create(
        self, name: str, cpus: tuple[int, ...], mems: tuple[int, ...] | None, limits: Limits
    ) -> CgroupV1Container:
        outside = sorted(set(cpus) - self._allowed_cpus)
        if outside:
            raise IsolationError(
                f"CPUs {outside} are not in our cpuset {sorted(self._allowed_cpus)}",
                fix="choose CPUs from the cpuset duet runs in (see `duet doctor`)",
            )
        paths = {c: os.path.join(parent, name) for c, parent in self.parents.items()}
        created: list[str] = []
        try:
            for path in dict.fromkeys(paths.values()):
                os.mkdir(path)
                created.append(path)
            cpuset = paths["cpuset"]
            # Both before any task joins (an empty cpuset refuses tasks with ENOSPC).
            write_text(os.path.join(cpuset, "cpuset.cpus"), format_cpu_list(cpus))
            node_list = (
                format_cpu_list(mems)
                if mems is not None
                else read_text(os.path.join(self.parents["cpuset"], "cpuset.mems"))
            )
            write_text(os.path.join(cpuset, "cpuset.mems"), node_list)
            if limits.memory_bytes is not None:
                _set_memory_limit(paths["memory"], limits.memory_bytes)
            if limits.pids_max is not None:
                write_text(os.path.join(paths["pids"], "pids.max"), str(limits.pids_max))
        except OSError as e:
            for path in reversed(created):
                rmdir_tree(path)
            raise IsolationError(
                f"cannot set up cgroup v1 container {name}: {e}",
                fix="check the CPU/node numbers and limits; `duet doctor` shows what is allowed",
            ) from e
        return CgroupV1Container(name, cpus, paths)

    def cleanup_stale(self) -> list[str]:
        bases = {h.base: h for h in self._hierarchies}
        stale = find_stale(bases)
        # Kill through the freezer hierarchy first: frozen processes cannot fork while we kill.
        stale.sort(key=lambda p: "freezer" not in bases[os.path.dirname(p)].controllers)
        # The pressure leaves held the same processes, killed through the freezer first: last.
        if self._pressure_base is not None:
            stale += find_stale([self._pressure_base])
        removed: list[str] = []
        for path in stale:
            hierarchy = bases.get(os.path.dirname(path))
            freezer = path if hierarchy is not None and "freezer" in hierarchy.controllers else None
            if not _kill_tree([path], freezer):
                logger.warning("processes in stale cgroup %s survived SIGKILL", path)
            if rmdir_tree(path):
                removed.append(path)
                logger.info("removed stale cgroup %s", path)
        return removed

    def _close_parents(self) -> None:
        leftovers = [p for p in dict.fromkeys(self.parents.values()) if not rmdir_tree(p)]
        if leftovers:
            raise IsolationError(f"could not remove cgroups {leftovers}")


def _set_memory_limit(path: str, limit: int) -> None:
    write_text(os.path.join(path, "memory.limit_in_bytes"), str(limit))
    memsw = os.path.join(path, "memory.memsw.limit_in_bytes")
    if os.path.exists(memsw):
        # RAM + swap limited to the same value: otherwise the kernel would swap the benchmark
        # out when it reaches the limit, slowing it unpredictably and hiding its usage.
        try:
            write_text(memsw, str(limit))
            return
        except OSError as e:
            if e.errno not in (errno.ENOTSUP, errno.EINVAL):
                raise
    if _has_swap():
        logger.warning(
            "the kernel does not account swap (memory.memsw.*), so the memory limit of %s can be "
            "exceeded into swap; boot with swapaccount=1 or run `sudo swapoff -a`",
            path,
        )


def _has_swap() -> bool:
    try:
        return len(read_text("/proc/swaps").splitlines()) > 1
    except OSError:
        return False


def _kill_tree(paths: list[str], freezer: str | None) -> bool:
    """SIGKILL every process in the cgroups ``paths`` (and their descendants); with a freezer
    cgroup, freeze it first so nothing can fork or exit while we kill (which also makes killing
    by pid race-free: a frozen process cannot die and have its pid reused). Returns whether all
    processes are gone."""

    seen: set[int] = set()

    def alive() -> list[int]:
        pids = sorted({pid for path in paths for pid in procs_of(path)})
        seen.update(pids)
        return pids

    def gone() -> bool:
        # A task leaves its cgroup early in exit(), before it is a zombie: wait for that too,
        # so that "killed" means dead for the caller.
        return not alive() and not any(pid_alive(pid) for pid in seen)

    for _ in range(_KILL_ROUNDS):
        if not alive():
            return True
        if freezer is not None:
            state = os.path.join(freezer, "freezer.state")
            write_text(state, "FROZEN")
            if not wait_until(functools.partial(_is_frozen, state), _FREEZE_TIMEOUT_S):
                # Usually a task in uninterruptible sleep; SIGKILL still lands once thawed.
                logger.debug("%s did not reach FROZEN; killing anyway", freezer)
            kill_pids(alive())
            # Thaw the whole subtree: a nested cgroup left FROZEN would keep its tasks (and
            # our SIGKILL) pending forever (BenchExec issue 840).
            for cgroup in subtree_bottom_up(freezer):
                with contextlib.suppress(FileNotFoundError):
                    write_text(os.path.join(cgroup, "freezer.state"), "THAWED")
        else:
            kill_pids(alive())
        if wait_until(gone, SETTLE_TIMEOUT_S):
            return True
    return gone()


def _is_frozen(state_file: str) -> bool:
    return read_text(state_file) == "FROZEN"


class CgroupV1Container(Container):
    """One side in the v1 hierarchies: one directory per hierarchy, same name."""

    def __init__(self, name: str, cpus: tuple[int, ...], paths: dict[str, str]) -> None:
        super().__init__(name, cpus)
        #: controller -> this container's cgroup directory in that controller's hierarchy
        self.paths = dict(paths)
        self._distinct = list(dict.fromkeys(paths.values()))

    @property
    def pressure_file(self) -> str | None:
        pressure = self.paths.get(PRESSURE)
        return None if pressure is None else os.path.join(pressure, "cpu.pressure")

    @property
    def threads_file(self) -> str | None:
        cpuset = self.paths.get("cpuset")
        return None if cpuset is None else os.path.join(cpuset, "tasks")

    def _join_files(self) -> list[str]:
        return [os.path.join(path, "cgroup.procs") for path in self._distinct]

    def processes(self) -> list[int]:
        return sorted({pid for path in self._distinct for pid in procs_of(path)})

    def kill(self) -> None:
        if not _kill_tree(self._distinct, self.paths["freezer"]):
            raise IsolationError(
                f"processes {self.processes()} of container {self.name} survived SIGKILL",
                fix="they are probably stuck in the kernel (state D); check `ps -o stat,pid,cmd`",
            )

    def _remove(self) -> None:
        leftovers = [path for path in self._distinct if not rmdir_tree(path)]
        if leftovers:
            raise IsolationError(f"could not remove cgroups {leftovers}")

    def _measure(self) -> Usage:
        missing: dict[str, str] = {}
        cpuacct = self.paths["cpuacct"]
        cpu_ns = int(read_text(os.path.join(cpuacct, "cpuacct.usage")))
        user_ns, system_ns = _user_system_ns(cpuacct)

        memory = self.paths["memory"]
        peak: int | None = None
        for key in ("memory.memsw.max_usage_in_bytes", "memory.max_usage_in_bytes"):
            try:
                peak = int(read_text(os.path.join(memory, key)))
                break
            except FileNotFoundError:
                continue
            except OSError as e:
                # ENOTSUP when the kernel was booted without swap accounting.
                if e.errno != errno.EOPNOTSUPP:
                    raise
        if peak is None:
            missing["peak_memory_bytes"] = "the memory cgroup has no max_usage_in_bytes"

        oom_kills = read_keyed(os.path.join(memory, "memory.oom_control")).get("oom_kill")
        if oom_kills is None:
            missing["oom_kills"] = "memory.oom_control has no oom_kill counter (Linux < 4.13)"

        pids_events = os.path.join(self.paths["pids"], "pids.events")
        limit_hits = read_keyed(pids_events).get("max") if os.path.exists(pids_events) else None
        if limit_hits is None:
            missing["pids_limit_hit"] = "the pids cgroup has no pids.events (Linux < 4.3)"
        return Usage(
            cpu_ns=cpu_ns,
            cpu_user_ns=user_ns,
            cpu_system_ns=system_ns,
            peak_memory_bytes=peak,
            oom_kills=oom_kills,
            pids_limit_hit=None if limit_hits is None else limit_hits > 0,
            missing=missing,
        )


def _user_system_ns(cpuacct: str) -> tuple[int, int]:
    try:
        return (
            int(read_text(os.path.join(cpuacct, "cpuacct.usage_user"))),
            int(read_text(os.path.join(cpuacct, "cpuacct.usage_sys"))),
        )
    except FileNotFoundError:
        pass
    # Older kernels only have cpuacct.stat, in USER_HZ ticks (not the kernel's HZ).
    stat = read_keyed(os.path.join(cpuacct, "cpuacct.stat"))
    ns_per_tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    return stat["user"] * ns_per_tick, stat["system"] * ns_per_tick
