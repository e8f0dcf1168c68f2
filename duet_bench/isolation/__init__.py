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

This module holds the interface, starting a child that joins its container before ``exec``, and
``select_backend``; the cgroup directories are read and removed by
``duet_bench.isolation.cgroupfs``, and the machine (mounts, our cgroups, CPU lists, live pids) is
read by ``duet_bench.machine``. The names the backends share are re-exported here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from types import MappingProxyType, TracebackType
from typing import IO, Any, Literal, Self

from duet_bench.errors import IsolationError
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
from duet_bench.isolation.sandbox import Sandbox, make_sandbox

# The machine is read in one place (duet_bench.machine); the backends and their tests import these
# names from here.
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

logger = logging.getLogger(__name__)

Level = Literal["cgroup-v2", "cgroup-v1", "affinity-only"]
Request = Literal["auto", "cgroup", "affinity"]

# Container names become directory names next to the controllers' interface files
# (``cpu.stat``, ``memory.max``): no dots, no slashes, and they must start with a letter or digit
# (the v2 backend keeps its own process in a leaf named ``_orchestrator``).
_NAME_RE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_-]{0,63}$")

#: How long to wait for a frozen or killed cgroup to settle before trying again.
SETTLE_TIMEOUT_S = 5.0
#: The signals duet turns into ``Interrupted`` (``duet_bench.cli``); see ``Container.spawn``.
_HELD_WHILE_FORKING = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


@dataclass(frozen=True, slots=True)
class RunAs:
    """The user the measured programs and builds run as when duet runs as root."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...] = ()

    @classmethod
    def for_user(cls, name_or_uid: str) -> RunAs:
        """Look a user up by name or number; raises ``IsolationError`` if unknown."""
        import grp
        import pwd

        try:
            entry = (
                pwd.getpwuid(int(name_or_uid))
                if name_or_uid.isdigit()
                else pwd.getpwnam(name_or_uid)
            )
        except KeyError:
            raise IsolationError(
                f"no such user: {name_or_uid!r}",
                fix="give an existing user name or uid to --user",
            ) from None
        groups = tuple(
            sorted({entry.pw_gid, *(g.gr_gid for g in grp.getgrall() if entry.pw_name in g.gr_mem)})
        )
        return cls(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid, groups=groups)

    @classmethod
    def from_environment(cls, explicit: str | None, environ: Mapping[str, str]) -> RunAs | None:
        """Who to run as: ``--user`` when given; else, as root under ``sudo``, the user who
        invoked sudo (``SUDO_UID``/``SUDO_GID``); else nobody else (run as ourselves)."""
        if explicit:
            if os.geteuid() != 0:
                raise IsolationError(
                    "--user needs root: only root can run programs as another user",
                    fix="run duet with sudo, or leave out --user",
                )
            return cls.for_user(explicit)
        if os.geteuid() == 0 and environ.get("SUDO_UID", "").isdigit():
            found = cls.for_user(environ["SUDO_UID"])
            gid = environ.get("SUDO_GID", "")
            return found if not gid.isdigit() else replace(found, gid=int(gid))
        return None

    def describe(self) -> dict[str, object]:
        return {"user": self.name, "uid": self.uid, "gid": self.gid}

    @property
    def home(self) -> str | None:
        """The user's home directory, when it exists (``nobody``'s does not)."""
        import pwd

        try:
            home = pwd.getpwuid(self.uid).pw_dir
        except KeyError:
            return None
        return home if home and os.path.isdir(home) else None

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with the user's identity: HOME, USER and LOGNAME (sudo leaves root's HOME,
        which the user can neither read nor write)."""
        out = dict(env)
        out.update(USER=self.name, LOGNAME=self.name, HOME=self.home or "/")
        return out


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits for one side. ``None`` means no limit of that kind."""

    memory_bytes: int | None = None
    pids_max: int | None = None

    def __post_init__(self) -> None:
        if self.memory_bytes is not None and self.memory_bytes <= 0:
            raise ValueError(f"memory_bytes must be positive, got {self.memory_bytes}")
        if self.pids_max is not None and self.pids_max <= 0:
            raise ValueError(f"pids_max must be positive, got {self.pids_max}")

    def describe(self) -> str:
        """``memory 2.00 GiB, 4096 processes`` (``no limits`` when none is set): for messages."""
        from duet_bench import units

        parts = []
        if self.memory_bytes is not None:
            parts.append(f"memory {units.size(self.memory_bytes)}")
        if self.pids_max is not None:
            parts.append(f"{self.pids_max} processes")
        return ", ".join(parts) or "no limits"


@dataclass(frozen=True, slots=True)
class Usage:
    """What one container used, for the whole process tree.

    A field that could not be measured is ``None`` and ``missing`` says why; a measured field is
    never in ``missing``. Nothing unmeasured is ever reported as 0.
    """

    cpu_ns: int | None
    cpu_user_ns: int | None
    cpu_system_ns: int | None
    peak_memory_bytes: int | None
    oom_kills: int | None
    pids_limit_hit: bool | None
    missing: Mapping[str, str]

    def __post_init__(self) -> None:
        measured = [f.name for f in fields(self) if f.name != "missing"]
        unknown = set(self.missing) - set(measured)
        if unknown:
            raise ValueError(f"missing names unknown fields: {sorted(unknown)}")
        for name in measured:
            value = getattr(self, name)
            if value is None and name not in self.missing:
                raise ValueError(f"{name} is None but missing gives no reason")
            if value is not None and name in self.missing:
                raise ValueError(f"{name} is measured but also listed as missing")
            if isinstance(value, int) and not isinstance(value, bool) and value < 0:
                raise ValueError(f"{name} must not be negative, got {value}")
        object.__setattr__(self, "missing", MappingProxyType(dict(self.missing)))

    @classmethod
    def unmeasured(cls, reason: str) -> Usage:
        """A usage record where nothing could be measured, all for the same reason."""
        names = [f.name for f in fields(cls) if f.name != "missing"]
        return cls(None, None, None, None, None, None, missing=dict.fromkeys(names, reason))


@dataclass(frozen=True, slots=True)
class Probe:
    """Whether a level can be used here, and if not, why and what would fix it."""

    ok: bool
    reason: str = ""
    fix: str | None = None


class Container(ABC):
    """One side of one run. A context manager; ``close`` kills and removes it.

    ``spawn`` starts a process that joins the container, gets its CPU affinity and its own
    session (hence process group) and enters the sandbox, all *before* it execs the program, so
    nothing the program does (not even its first instruction) happens outside.
    """

    name: str
    cpus: tuple[int, ...]

    def __init__(self, name: str, cpus: Sequence[int]) -> None:
        self.name = name
        self.cpus = tuple(cpus)
        self._popens: list[subprocess.Popen[bytes]] = []
        self._closed = False
        self._final_usage: Usage | None = None

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        stdout: int | IO[Any] | None,
        stderr: int | IO[Any] | None,
        sandbox: Sandbox | None = None,
        run_as: RunAs | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` inside this container.

        With ``run_as`` the child drops to that user (groups, gid, uid) after joining the
        container and entering the sandbox, which need root, and before it execs: the program
        runs with no more privileges than that user has.

        ``env`` is the child's whole environment (plus ``TMPDIR`` when a sandbox is given);
        stdin is ``/dev/null``. Raises ``IsolationError`` when the child could not join the
        container or the sandbox, and ``OSError`` when ``argv[0]`` cannot be executed.
        With a mount namespace the host's ``/tmp`` is hidden from the child: the program and
        the files it is given must not live under ``/tmp``.
        """
        if self._closed:
            raise IsolationError(f"container {self.name} is closed; create a new one")
        if not argv:
            raise ValueError("argv must not be empty")
        child_env = dict(env)
        enter_sandbox: Callable[[], None] | None = None
        if sandbox is not None:
            child_env.update(sandbox.env_overrides())
            enter_sandbox = sandbox.child_setup()
        # SIGINT, SIGTERM and SIGHUP are held while we fork: arriving then, their Python
        # handler would run inside an at-fork callback (logging registers one), where CPython
        # prints the Interrupted it raises ("Exception ignored") and drops it, and the
        # orchestrator would go on measuring. Released once the child is registered (so a kill
        # finds it); the child restores the mask itself before it execs.
        unheld = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_WHILE_FORKING)
        try:
            popen = _spawn_prepared(
                list(argv),
                env=child_env,
                cwd=cwd,
                stdout=stdout,
                stderr=stderr,
                join_files=self._join_files(),
                cpus=frozenset(self.cpus),
                enter_sandbox=enter_sandbox,
                what=f"container {self.name}",
                run_as=run_as,
                signal_mask=unheld,
            )
            self._popens.append(popen)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, unheld)
        return popen

    @abstractmethod
    def _join_files(self) -> Sequence[str]:
        """The ``cgroup.procs`` files the child writes ``0`` into before ``exec``."""

    @abstractmethod
    def _measure(self) -> Usage:
        """Read the usage from the kernel (the container still exists)."""

    @abstractmethod
    def processes(self) -> list[int]:
        """The pids of every process currently in the container (any order)."""

    @abstractmethod
    def kill(self) -> None:
        """SIGKILL every process of the container and wait until they are gone."""

    @abstractmethod
    def _remove(self) -> None:
        """Remove what the container created (its processes are already dead)."""

    def _verify(self) -> None:
        """Raise ``IsolationError`` when the container is no longer what was asked (its CPUs,
        its controllers): then what was measured in it is not what the results would claim.
        Nothing to check by default: without cgroups there is nothing that could change."""
        return

    def usage(self) -> Usage:
        """CPU time, peak memory and limit events of the whole tree so far. After ``close`` this
        is the last reading taken just before the cgroups were removed.

        Before ``close`` it first checks that the container is still what was asked (its CPUs,
        its controllers) and raises ``IsolationError`` if not: the runner reads the usage at the
        end of every run, so a run whose isolation was changed under it fails loudly."""
        if self._final_usage is not None:
            return self._final_usage
        if self._closed:
            return Usage.unmeasured("the container was closed before it could be measured")
        self._verify()
        return self._measure()

    def close(self) -> None:
        """Kill every process, keep a last usage reading, remove the cgroups. Idempotent."""
        if self._closed:
            return
        self._closed = True
        failure: IsolationError | None = None
        try:
            self.kill()
        except IsolationError as e:
            failure = e
        try:
            self._final_usage = self._measure()
        except OSError as e:
            logger.debug("last usage reading of %s failed: %s", self.name, e)
        # Removal is attempted even after a failed kill: whatever can go, goes.
        try:
            self._remove()
        except IsolationError as e:
            failure = failure or e
        if failure is not None:
            raise failure

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Backend(ABC):
    """A way to build containers on this machine. A context manager; ``close`` removes every
    container and the per-invocation parent cgroups."""

    level: Level
    #: Text the runner prints (and records) when the level is degraded; None when not.
    warning: str | None = None

    def __init__(self) -> None:
        self._containers: dict[str, Container] = {}
        self._closed = False

    def container(
        self,
        name: str,
        *,
        cpus: Sequence[int],
        mems: Sequence[int] | None,
        limits: Limits,
    ) -> Container:
        """Create the container of one side of one run, pinned to ``cpus`` (and NUMA nodes
        ``mems``; ``None`` keeps the parent's)."""
        if self._closed:
            raise IsolationError("the isolation backend is closed")
        check_name(name)
        cpu_tuple = tuple(sorted(set(cpus)))
        if not cpu_tuple or any(c < 0 for c in cpu_tuple):
            raise ValueError(f"cpus must be a non-empty list of CPU numbers, got {list(cpus)}")
        if mems is not None and (not mems or any(m < 0 for m in mems)):
            raise ValueError(f"mems must be None or a non-empty list of nodes, got {list(mems)}")
        previous = self._containers.get(name)
        if previous is not None and not previous.closed:
            raise IsolationError(f"a container named {name} is still open; close it first")
        created = self._create(name, cpu_tuple, None if mems is None else tuple(mems), limits)
        # Forget closed ones: a long invocation creates two per run.
        self._containers = {k: v for k, v in self._containers.items() if not v.closed}
        self._containers[name] = created
        return created

    @abstractmethod
    def _create(
        self, name: str, cpus: tuple[int, ...], mems: tuple[int, ...] | None, limits: Limits
    ) -> Container: ...

    @abstractmethod
    def cleanup_stale(self) -> list[str]:
        """Remove the ``duet-<pid>-*`` cgroups of invocations whose pid is dead (killing what
        still runs in them), deepest first; return the removed parent paths."""

    def _close_parents(self) -> None:  # noqa: B027 - optional hook, nothing to do by default
        """Remove the per-invocation parents (cgroup backends)."""

    def close(self) -> None:
        """Close every container, then remove the per-invocation parents. Idempotent."""
        if self._closed:
            return
        self._closed = True
        errors: list[str] = []
        for container in self._containers.values():
            try:
                container.close()
            except (OSError, IsolationError) as e:
                errors.append(f"{container.name}: {e}")
        self._containers.clear()
        try:
            self._close_parents()
        except (OSError, IsolationError) as e:
            errors.append(str(e))
        if errors:
            raise IsolationError(
                "could not clean up every container: " + "; ".join(errors),
                fix="run `duet doctor`; the next duet run removes what is left (cleanup_stale)",
            )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def check_name(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` can be a container (cgroup directory) name."""
    if not _NAME_RE.match(name):
        raise ValueError(
            f"container name {name!r} must be 1-64 letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )


def select_backend(request: Request = "auto", *, root: str = "/sys/fs/cgroup") -> Backend:
    """Pick the best isolation level this machine allows.

    ``auto``: cgroup v2 if its unified hierarchy offers cpuset, cpu, memory and pids to us, else
    cgroup v1 if its controllers are writable, else ``affinity-only`` with a loud warning
    (logged, and in ``Backend.warning`` for the runner to print). ``cgroup``: the same, but
    raise ``IsolationError`` (with the reason and the command that fixes it) instead of falling
    back. ``affinity``: affinity-only, as asked.
    """
    # Imported here: the backends import this module for the interface.
    from duet_bench.isolation.affinity import AffinityBackend
    from duet_bench.isolation.cgroup_v1 import CgroupV1Backend, probe_v1
    from duet_bench.isolation.cgroup_v2 import CgroupV2Backend, probe_v2

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


# ---------------------------------------------------------------------------------------------
# Shared plumbing: starting a child inside a container
# ---------------------------------------------------------------------------------------------


def _spawn_prepared(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str,
    stdout: int | IO[Any] | None,
    stderr: int | IO[Any] | None,
    join_files: Sequence[str],
    cpus: frozenset[int],
    enter_sandbox: Callable[[], None] | None,
    what: str,
    run_as: RunAs | None = None,
    signal_mask: Iterable[int] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` so that it joins ``join_files``, runs on ``cpus``, leads its own session
    and is inside the sandbox before it execs; with ``signal_mask``, the child sets that mask
    right before exec.

    The work happens in ``preexec_fn``, i.e. between ``fork`` and ``exec`` of a process that may
    have other threads; it therefore only makes system calls on data prepared here. CPython
    reports a failing ``preexec_fn`` only as "Exception occurred in preexec_fn", so the child
    writes the real reason into a pipe first.
    """
    encoded = [os.fsencode(path) for path in join_files]
    read_end, write_end = os.pipe()  # both close-on-exec: exec closes the child's copy

    def preexec() -> None:
        stage = "starting"
        try:
            for path in encoded:
                stage = f"joining cgroup {os.fsdecode(path)}"
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
            # After joining: moving into a v1 cpuset resets the affinity to the whole cpuset.
            stage = f"setting CPU affinity to {sorted(cpus)}"
            os.sched_setaffinity(0, cpus)
            if enter_sandbox is not None:
                stage = "entering the sandbox"
                enter_sandbox()
            if run_as is not None:
                # Last: joining cgroups, mounting and unsharing need root. setuid from root to
                # another uid also clears every capability (no PR_SET_KEEPCAPS is set).
                stage = f"dropping privileges to {run_as.name} (uid {run_as.uid})"
                os.setgroups(list(run_as.groups))
                os.setgid(run_as.gid)
                os.setuid(run_as.uid)
            if signal_mask is not None:
                # Last: exec keeps the mask, and the program must get its signals.
                stage = "restoring the signal mask"
                signal.pthread_sigmask(signal.SIG_SETMASK, signal_mask)
        except BaseException as e:
            with contextlib.suppress(OSError):
                os.write(write_end, f"{stage}: {e}".encode(errors="replace"))
            raise

    try:
        try:
            popen = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                # Own session, hence own process group: signals aimed at the orchestrator's
                # group (Ctrl-C in a terminal) do not reach the benchmark, and the
                # affinity-only backend can kill the group.
                start_new_session=True,
                close_fds=True,
                preexec_fn=preexec,
            )
        except subprocess.SubprocessError as e:
            os.close(write_end)
            write_end = -1
            detail = _read_all(read_end).decode(errors="replace") or str(e)
            raise IsolationError(
                f"could not start {argv[0]} in {what}: {detail}",
                fix="run `duet doctor` to see which isolation this machine allows",
            ) from e
    finally:
        if write_end >= 0:
            os.close(write_end)
        os.close(read_end)
    return popen


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)
