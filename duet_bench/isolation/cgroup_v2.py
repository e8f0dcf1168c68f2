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
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from duet_bench.errors import IsolationError
from duet_bench.isolation import (
    SETTLE_TIMEOUT_S,
    Backend,
    Container,
    Limits,
    Probe,
    Usage,
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
from duet_bench.machine import (
    THIS,
    CgroupMount,
    cgroup_mounts,
    format_cpu_list,
    online_cpus,
    own_cgroups,
    parse_cpu_list,
    pid_alive,
)

__all__ = ["WANTED_CONTROLLERS", "CgroupV2Backend", "CgroupV2Container", "probe_v2"]

logger = logging.getLogger(__name__)

#: The controllers a full cgroup-v2 container uses.
WANTED_CONTROLLERS: tuple[str, ...] = ("cpuset", "cpu", "memory", "pids")
#: The leaf our own process moves into in ``delegated`` mode.
ORCHESTRATOR_LEAF = "_orchestrator"

_FREEZE_TIMEOUT_S = 2.0
_KILL_ROUNDS = 5

Mode = Literal["root", "delegated", "sibling"]


@dataclass(frozen=True, slots=True)
class _Plan:
    mount: CgroupMount
    own: str  # our cgroup directory
    base: str  # where the per-invocation parent goes
    mode: Mode
    available: frozenset[str]  # controllers we can have in the parent's children
    chain: tuple[str, ...]  # cgroups whose subtree_control we may have to extend, top down


def find_v2_mount(root: str) -> CgroupMount | None:
    """The cgroup2 mount at ``root`` (pure v2) or at ``root/unified`` (hybrid systemd layout)."""
    mounts = [m for m in cgroup_mounts(root) if m.fstype == "cgroup2"]
    for candidate in (root, os.path.join(root, "unified")):
        candidate = os.path.normpath(candidate)
        for mount in mounts:
            if mount.mountpoint == candidate:
                return mount
    return None


def _controllers(cgroup: str) -> frozenset[str]:
    try:
        return frozenset(read_text(os.path.join(cgroup, "cgroup.controllers")).split())
    except OSError:
        return frozenset()


def _subtree_control(cgroup: str) -> frozenset[str]:
    return frozenset(read_text(os.path.join(cgroup, "cgroup.subtree_control")).split())


def _is_real_root(cgroup: str) -> bool:
    # Only the real root cgroup lacks cgroup.type; the root of a cgroup namespace has it (and
    # is bound by the no-internal-processes rule like any other cgroup).
    return not os.path.exists(os.path.join(cgroup, "cgroup.type"))


def _is_ours(pid: int) -> bool:
    """Whether ``pid`` is this process or one of its descendants."""
    me = os.getpid()
    seen = 0
    while pid > 1 and seen < 4096:
        if pid == me:
            return True
        parent = THIS.parent_pid(pid)
        if parent is None:
            return False
        pid = parent
        seen += 1
    return pid == me


def _plan(root: str, wanted: Iterable[str]) -> tuple[_Plan | None, Probe]:
    """Decide where the parent goes and which controllers we can get, without side effects."""
    mount = find_v2_mount(root)
    if mount is None:
        return None, Probe(
            False,
            f"no cgroup2 hierarchy is mounted at {root} or {root}/unified",
            f"mount it (`sudo mount -t cgroup2 none {root}`); in a container, start it with "
            "cgroups available (e.g. `docker run --cgroupns=private --privileged ...`)",
        )
    try:
        own_path = own_cgroups().get("")
    except OSError as e:
        return None, Probe(False, f"cannot read /proc/self/cgroup: {e}")
    own = cgroup_dir(mount, own_path) if own_path is not None else None
    if own is None or not os.path.isdir(own):
        return None, Probe(
            False,
            f"our cgroup2 cgroup {own_path} is not visible under {mount.mountpoint}",
            "run duet where the cgroup2 file system shows its own cgroup (e.g. a container "
            "started with a private cgroup namespace)",
        )
    wanted_set = frozenset(wanted)

    def writable(cgroup: str, *files: str) -> bool:
        # With the effective uid: that is what the kernel checks when we write.
        return all(
            os.access(os.path.join(cgroup, name), os.W_OK, effective_ids=True)
            for name in (".", "cgroup.subtree_control", *files)
        )

    if _is_real_root(own):
        plan = _Plan(mount, own, own, "root", _controllers(own), (own,))
    elif writable(own, "cgroup.procs") and all(
        _is_ours(pid) for pid in procs_of(own, recursive=False)
    ):
        plan = _Plan(mount, own, own, "delegated", _controllers(own), (own,))
    elif os.geteuid() == 0:
        base = os.path.dirname(own)
        chain = [base]
        while chain[0] != mount.mountpoint:
            chain.insert(0, os.path.dirname(chain[0]))
        plan = _Plan(mount, own, base, "sibling", _controllers(mount.mountpoint), tuple(chain))
    elif not writable(own, "cgroup.procs"):
        return None, Probe(False, _not_writable_reason(own, own_path), privilege_fix())
    else:
        return None, Probe(
            False,
            f"our cgroup {own_path} is shared with processes that are not ours and we "
            f"(uid {os.geteuid()}) cannot create cgroups elsewhere",
            privilege_fix(),
        )
    if not writable(plan.base):
        return None, Probe(False, f"we may not create cgroups in {plan.base}", privilege_fix())
    # Enabling a controller in a cgroup that holds processes fails with EBUSY (only the real
    # root is exempt); find that now rather than halfway through the setup.
    needed = wanted_set & plan.available
    for cgroup in plan.chain:
        if plan.mode == "delegated" or _is_real_root(cgroup):
            continue
        if needed - _subtree_control(cgroup) and procs_of(cgroup, recursive=False):
            return None, Probe(
                False,
                f"cannot enable {', '.join(sorted(needed))} below {cgroup}: it holds processes "
                "(cgroup v2 allows controllers only over cgroups without processes)",
                "start duet in its own cgroup: `systemd-run --scope -p Delegate=yes duet ...`",
            )
    return plan, Probe(True)


def _not_writable_reason(own: str, own_path: str | None) -> str:
    try:
        owner = f"it belongs to uid {os.stat(own).st_uid}"
    except OSError as e:
        owner = f"cannot stat it: {e.strerror}"
    return (
        f"we (uid {os.geteuid()}) may not write our cgroup {own_path} ({owner}: nothing "
        "delegated it to us) and cannot create cgroups elsewhere"
    )


def probe_v2(
    root: str = "/sys/fs/cgroup", require_controllers: Iterable[str] = WANTED_CONTROLLERS
) -> Probe:
    """Whether cgroup v2 isolation with ``require_controllers`` is possible (no side effects)."""
    required = frozenset(require_controllers)
    plan, probe = _plan(root, required | frozenset(WANTED_CONTROLLERS))
    if plan is None:
        return probe
    lacking = required - plan.available
    if lacking:
        return Probe(False, _lacking_reason(plan, lacking), _lacking_fix(plan, lacking))
    return probe


def _lacking_reason(plan: _Plan, lacking: Iterable[str]) -> str:
    offered = ", ".join(sorted(plan.available)) or "none"
    reason = (
        f"the cgroup2 hierarchy at {plan.mount.mountpoint} does not offer "
        f"{', '.join(sorted(lacking))} to {plan.base} (offered: {offered})"
    )
    if any(m.fstype == "cgroup" for m in cgroup_mounts(os.path.dirname(plan.mount.mountpoint))):
        reason += " (on this hybrid system, controllers mounted as cgroup v1 are not in cgroup2)"
    return reason


def _lacking_fix(plan: _Plan, lacking: Iterable[str]) -> str:
    lacking = sorted(lacking)
    controllers = " ".join(f"+{c}" for c in lacking)
    if not set(lacking) <= _controllers(plan.mount.mountpoint):
        # The kernel does not offer them to cgroup2 at all (bound to v1, or not built).
        return (
            "boot with systemd.unified_cgroup_hierarchy=1 to have them in cgroup v2, or let "
            "duet use the cgroup v1 hierarchies (`--isolation auto` does)"
        )
    if plan.mode == "delegated":
        return (
            "delegate the controllers to duet's scope: "
            "`systemd-run --user --scope -p Delegate=yes duet ...` (and `Delegate=yes` for "
            "user@.service, see `systemctl edit user@.service`)"
        )
    return (
        f"enable them: `echo '{controllers}' | sudo tee {plan.mount.mountpoint}/"
        "cgroup.subtree_control`"
    )


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
        plan, probe = _plan(root, required | frozenset(WANTED_CONTROLLERS))
        if plan is None:
            raise IsolationError(f"cgroup v2 is not usable: {probe.reason}", fix=probe.fix)
        lacking = required - plan.available
        if lacking:
            raise IsolationError(
                f"cgroup v2 is not usable: {_lacking_reason(plan, lacking)}",
                fix=_lacking_fix(plan, lacking),
            )
        self.root = root
        self.mount = plan.mount.mountpoint
        self.mode: Mode = plan.mode
        self._plan = plan
        #: The controllers this backend's containers have.
        self.controllers = frozenset(WANTED_CONTROLLERS) & plan.available
        self.parent = os.path.join(plan.base, new_parent_name())
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
        plan = self._plan
        os.mkdir(self.parent)
        if plan.mode == "delegated":
            os.mkdir(self._leaf)
            # Everything in our cgroup is us or our children (checked by _plan): move it all,
            # otherwise the cgroup cannot hand controllers down.
            for pid in procs_of(plan.own, recursive=False):
                try:
                    write_text(os.path.join(self._leaf, "cgroup.procs"), str(pid))
                except ProcessLookupError:
                    continue
            self._relocated = True
            before = _subtree_control(plan.own)
            _enable(plan.own, self.controllers)
            self._enabled_in_own = self.controllers - before
        else:
            for cgroup in plan.chain:
                # Recorded before the write: one write(2) enables all of them or none.
                self._enabled_in_chain.append((cgroup, self.controllers - _subtree_control(cgroup)))
                _enable(cgroup, self.controllers)
        _enable(self.parent, self.controllers)

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
                fix=_lacking_fix(self._plan, ["memory"]),
            )
        if limits.pids_max is not None and "pids" not in self.controllers:
            raise IsolationError(
                "a pids limit was asked for but the pids controller is not available",
                fix=_lacking_fix(self._plan, ["pids"]),
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
        return CgroupV2Container(name, cpus, path, self.controllers, self._plan)

    def cleanup_stale(self) -> list[str]:
        removed: list[str] = []
        for path in find_stale([self._plan.base]):
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
        for entry in _child_dirs(self.parent):
            if entry != self._leaf:
                # Containers are closed by Backend.close; anything else in our parent is
                # something the benchmarks created.
                kill_tree(entry)
                rmdir_tree(entry)
        if self._relocated:
            try:
                _disable(self.parent, self.controllers)
                _disable(self._plan.own, self._enabled_in_own)
                for pid in procs_of(self._leaf, recursive=False):
                    try:
                        write_text(os.path.join(self._plan.own, "cgroup.procs"), str(pid))
                    except ProcessLookupError:
                        continue
                self._relocated = False
            except OSError as e:
                problems.append(f"could not move back into {self._plan.own}: {e}")
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
            for controller in sorted(enabled & _subtree_control_or_empty(cgroup)):
                user = _configured_child(cgroup, controller)
                if user is not None:
                    logger.debug("leaving %s on in %s: %s uses it", controller, cgroup, user)
                    continue
                try:
                    _disable(cgroup, [controller])
                except OSError as e:
                    # EBUSY: a child has turned it on for its own children meanwhile.
                    logger.debug("leaving %s on in %s: %s", controller, cgroup, e)

    def _tear_down_quietly(self) -> None:
        try:
            self._tear_down()
        except (OSError, IsolationError) as e:
            logger.warning("cleaning up after a failed setup: %s", e)


def _child_dirs(path: str) -> list[str]:
    try:
        return [
            os.path.join(path, entry)
            for entry in sorted(os.listdir(path))
            if os.path.isdir(os.path.join(path, entry))
        ]
    except FileNotFoundError:
        return []


def _subtree_control_or_empty(cgroup: str) -> frozenset[str]:
    try:
        return _subtree_control(cgroup)
    except OSError:
        return frozenset()


#: Interface files of each controller and their values in a cgroup nobody has configured.
_DEFAULTS: dict[str, dict[str, tuple[str, ...]]] = {
    "cpuset": {"cpuset.cpus": ("",), "cpuset.mems": ("",)},
    "cpu": {"cpu.weight": ("100",), "cpu.max": ("max 100000",), "cpu.idle": ("0",)},
    "memory": {
        "memory.min": ("0",),
        "memory.low": ("0",),
        "memory.high": ("max",),
        "memory.max": ("max",),
    },
    "pids": {"pids.max": ("max",)},
}


def _configured_child(cgroup: str, controller: str) -> str | None:
    """A child of ``cgroup`` that hands ``controller`` on or has a setting of it, if any."""
    for child in _child_dirs(cgroup):
        if controller in _subtree_control_or_empty(child):
            return child
        for name, defaults in _DEFAULTS.get(controller, {}).items():
            try:
                value = read_text(os.path.join(child, name))
            except OSError:
                continue
            if value not in defaults:
                return f"{child} ({name} = {value or 'empty'})"
    return None


def _enable(cgroup: str, controllers: Iterable[str]) -> None:
    missing = sorted(frozenset(controllers) - _subtree_control(cgroup))
    if missing:
        write_text(
            os.path.join(cgroup, "cgroup.subtree_control"), " ".join(f"+{c}" for c in missing)
        )


def _disable(cgroup: str, controllers: Iterable[str]) -> None:
    present = sorted(frozenset(controllers) & _subtree_control(cgroup))
    if present:
        write_text(
            os.path.join(cgroup, "cgroup.subtree_control"), " ".join(f"-{c}" for c in present)
        )


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
        plan: _Plan,
    ) -> None:
        super().__init__(name, cpus)
        self.path = path
        self.controllers = controllers
        self._mount = plan.mount.mountpoint
        self._plan = plan

    def _join_files(self) -> list[str]:
        return [os.path.join(self.path, "cgroup.procs")]

    def processes(self) -> list[int]:
        return sorted(pid for pid in procs_of(self.path) if pid_alive(pid))

    def _verify(self) -> None:
        problems: list[str] = []
        lost = self.controllers - _controllers(self.path)
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
            reason = _lacking_reason(self._plan, ["memory"])
            missing["peak_memory_bytes"] = reason
            missing["oom_kills"] = reason

        limit_hit: bool | None = None
        if "pids" in self.controllers:
            limit_hit = read_keyed(os.path.join(self.path, "pids.events")).get("max", 0) > 0
        else:
            missing["pids_limit_hit"] = _lacking_reason(self._plan, ["pids"])
        return Usage(
            cpu_ns=cpu_ns,
            cpu_user_ns=user_ns,
            cpu_system_ns=system_ns,
            peak_memory_bytes=peak,
            oom_kills=oom_kills,
            pids_limit_hit=limit_hit,
            missing=missing,
        )
