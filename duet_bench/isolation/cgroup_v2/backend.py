"""The cgroup v2 backend: carrying out the layout of ``duet_bench.isolation.cgroup_v2.layout``
(creating the per-invocation parent, moving ourselves into its ``_orchestrator`` leaf when
delegated, enabling the controllers on the way down), creating each side's cgroup with its CPUs
and limits, and undoing all of it in ``close``, including the controllers it turned on above
the parent that nothing else has come to use.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterable

from duet_bench.errors import IsolationError
from duet_bench.isolation.base import Backend
from duet_bench.isolation.cgroup_v2.container import CgroupV2Container, kill_tree
from duet_bench.isolation.cgroup_v2.controllers import (
    WANTED_CONTROLLERS,
    child_dirs,
    disable,
    enable,
    subtree_control,
    turn_off_unused,
)
from duet_bench.isolation.cgroup_v2.layout import Mode, lacking_fix, lacking_reason, make_layout
from duet_bench.isolation.cgroupfs import (
    find_stale,
    new_parent_name,
    privilege_fix,
    procs_of,
    read_text,
    rmdir_tree,
    write_text,
)
from duet_bench.isolation.model import Limits
from duet_bench.machine import format_cpu_list, online_cpus, parse_cpu_list

__all__ = ["ORCHESTRATOR_LEAF", "CgroupV2Backend"]

logger = logging.getLogger(__name__)

#: The leaf our own process moves into in ``delegated`` mode.
ORCHESTRATOR_LEAF = "_orchestrator"


class CgroupV2Backend(Backend):
    """Containers in the cgroup2 hierarchy at ``root`` (``/sys/fs/cgroup`` or its ``unified``).

    ``require_controllers``: raise ``IsolationError`` unless these controllers can be used.
    The backend uses every controller of ``WANTED_CONTROLLERS`` that is available; without
    ``cpuset`` the sides are pinned by ``sched_setaffinity`` only, without ``memory``/``pids``
    their fields are reported missing and limits of that kind are refused.
    """

    level = "cgroup-v2"

    def __init__(
        self,
        root: str = "/sys/fs/cgroup",
        *,
        require_controllers: Iterable[str] = WANTED_CONTROLLERS,
    ) -> None:
        super().__init__()
        required = frozenset(require_controllers)
        layout, probe = make_layout(root, required | frozenset(WANTED_CONTROLLERS))
        if layout is None:
            raise IsolationError(f"cgroup v2 is not usable: {probe.reason}", fix=probe.fix)
        lacking = required - layout.available
        if lacking:
            raise IsolationError(
                f"cgroup v2 is not usable: {lacking_reason(layout, lacking)}",
                fix=lacking_fix(layout, lacking),
            )
        self.root = root
        self.mount = layout.mount.mountpoint
        self.mode: Mode = layout.mode
        self._layout = layout
        #: The controllers this backend's containers have.
        self.controllers = frozenset(WANTED_CONTROLLERS) & layout.available
        self.parent = os.path.join(layout.base, new_parent_name())
        self._leaf = os.path.join(self.parent, ORCHESTRATOR_LEAF)
        self._enabled_in_own: frozenset[str] = frozenset()
        # (cgroup, controllers we turned on in its subtree_control), top down: undone in close.
        self._enabled_in_chain: list[tuple[str, frozenset[str]]] = []
        self._relocated = False
        unused = frozenset(WANTED_CONTROLLERS) - self.controllers
        if unused:
            consequences = [
                text
                for controller, text in (
                    ("cpuset", "CPU pinning by sched_setaffinity only (a program may undo it)"),
                    ("memory", "peak memory and OOM kills not measured, memory limits refused"),
                    ("pids", "fork limits refused"),
                )
                if controller in unused
            ]
            self.warning = (
                f"isolation level cgroup-v2 without the {', '.join(sorted(unused))} "
                f"controller(s) at {self.mount}: {'; '.join(consequences)}; CPU time and "
                "termination are still exact"
            )
        try:
            self._set_up()
        except OSError as e:
            self._tear_down_quietly()
            raise IsolationError(
                f"cannot set up the cgroup v2 parent {self.parent}: {e}",
                fix=privilege_fix() if e.errno in (errno.EACCES, errno.EPERM) else None,
            ) from e
        self._allowed_cpus = self._read_allowed_cpus()
        logger.debug(
            "cgroup v2 parent %s (mode %s, controllers %s)",
            self.parent,
            self.mode,
            sorted(self.controllers),
        )

    def _set_up(self) -> None:
        layout = self._layout
        os.mkdir(self.parent)
        if layout.mode == "delegated":
            os.mkdir(self._leaf)
            # Everything in our cgroup is us or our children (checked by make_layout): move it all,
            # otherwise the cgroup cannot hand controllers down.
            for pid in procs_of(layout.own, recursive=False):
                try:
                    write_text(os.path.join(self._leaf, "cgroup.procs"), str(pid))
                except ProcessLookupError:
                    continue
            self._relocated = True
            before = subtree_control(layout.own)
            enable(layout.own, self.controllers)
            self._enabled_in_own = self.controllers - before
        else:
            for cgroup in layout.chain:
                # Recorded before the write: one write(2) enables all of them or none.
                self._enabled_in_chain.append((cgroup, self.controllers - subtree_control(cgroup)))
                enable(cgroup, self.controllers)
        enable(self.parent, self.controllers)

    def _read_allowed_cpus(self) -> frozenset[int]:
        for key in ("cpuset.cpus.effective",):
            path = os.path.join(self.parent, key)
            if os.path.exists(path):
                return frozenset(parse_cpu_list(read_text(path)))
        return frozenset(online_cpus())

    def _create(
        self, name: str, cpus: tuple[int, ...], mems: tuple[int, ...] | None, limits: Limits
    ) -> CgroupV2Container:
        if name == ORCHESTRATOR_LEAF:
            raise ValueError(f"{ORCHESTRATOR_LEAF} is reserved")
        outside = sorted(set(cpus) - self._allowed_cpus)
        if outside:
            raise IsolationError(
                f"CPUs {outside} are not available to us (allowed: {sorted(self._allowed_cpus)})",
                fix="choose CPUs from the cpuset duet runs in (see `duet doctor`)",
            )
        if limits.memory_bytes is not None and "memory" not in self.controllers:
            raise IsolationError(
                "a memory limit was asked for but the memory controller is not available",
                fix=lacking_fix(self._layout, ["memory"]),
            )
        if limits.pids_max is not None and "pids" not in self.controllers:
            raise IsolationError(
                "a pids limit was asked for but the pids controller is not available",
                fix=lacking_fix(self._layout, ["pids"]),
            )
        path = os.path.join(self.parent, name)
        try:
            os.mkdir(path)
            if "cpuset" in self.controllers:
                write_text(os.path.join(path, "cpuset.cpus"), format_cpu_list(cpus))
                if mems is not None:
                    write_text(os.path.join(path, "cpuset.mems"), format_cpu_list(mems))
            if "memory" in self.controllers:
                # Swapping adds unbounded noise and hides memory use: never swap a benchmark.
                swap_max = os.path.join(path, "memory.swap.max")
                if os.path.exists(swap_max):
                    write_text(swap_max, "0")
                if limits.memory_bytes is not None:
                    write_text(os.path.join(path, "memory.max"), str(limits.memory_bytes))
            if limits.pids_max is not None:
                write_text(os.path.join(path, "pids.max"), str(limits.pids_max))
        except OSError as e:
            rmdir_tree(path)
            raise IsolationError(
                f"cannot set up cgroup v2 container {name}: {e}",
                fix="check the CPU/node numbers and limits; `duet doctor` shows what is allowed",
            ) from e
        return CgroupV2Container(name, cpus, path, self.controllers, self._layout)

    def cleanup_stale(self) -> list[str]:
        removed: list[str] = []
        for path in find_stale([self._layout.base]):
            if not kill_tree(path):
                logger.warning("processes in stale cgroup %s survived SIGKILL", path)
            if rmdir_tree(path):
                removed.append(path)
                logger.info("removed stale cgroup %s", path)
        return removed

    def _close_parents(self) -> None:
        self._tear_down()

    def _tear_down(self) -> None:
        problems: list[str] = []
        for entry in child_dirs(self.parent):
            if entry != self._leaf:
                # Containers are closed by Backend.close; anything else in our parent is
                # something the benchmarks created.
                kill_tree(entry)
                rmdir_tree(entry)
        if self._relocated:
            try:
                disable(self.parent, self.controllers)
                disable(self._layout.own, self._enabled_in_own)
                for pid in procs_of(self._leaf, recursive=False):
                    try:
                        write_text(os.path.join(self._layout.own, "cgroup.procs"), str(pid))
                    except ProcessLookupError:
                        continue
                self._relocated = False
            except OSError as e:
                problems.append(f"could not move back into {self._layout.own}: {e}")
        if not self._relocated and not rmdir_tree(self.parent):
            problems.append(f"could not remove {self.parent}")
        elif self._enabled_in_chain:
            self._restore_chain()
        if problems:
            raise IsolationError("; ".join(problems))

    def _restore_chain(self) -> None:
        """Turn off, bottom up, the controllers we turned on above our parent (``/`` and
        ``/system.slice`` on a systemd machine): left on, they change how every other cgroup of
        the machine is accounted and weighted until systemd next rewrites them. A controller
        that something else has come to use since (another duet's parent, a unit started with
        ``AllowedCPUs=`` or ``CPUWeight=``) stays on: turning it off would undo their settings.
        """
        while self._enabled_in_chain:
            cgroup, enabled = self._enabled_in_chain.pop()
            turn_off_unused(cgroup, enabled)

    def _tear_down_quietly(self) -> None:
        try:
            self._tear_down()
        except (OSError, IsolationError) as e:
            logger.warning("cleaning up after a failed setup: %s", e)
