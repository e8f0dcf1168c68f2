"""The interface of isolation: ``Backend`` builds the containers of one level on this machine,
``Container`` is one side of one run (start its programs, measure, verify, kill, remove).

The three levels implement them (``duet_bench.isolation.cgroup_v2``, ``cgroup_v1``,
``affinity``); what the two classes do themselves (checking names and CPUs, starting a child
through ``duet_bench.isolation.spawn``, the order of a close) is the same at every level.
"""

from __future__ import annotations

import logging
import re
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import IO, Any, Self

from duet_bench.errors import IsolationError
from duet_bench.isolation.model import Level, Limits, RunAs, Usage
from duet_bench.isolation.pidns import prepare_pid_namespace
from duet_bench.isolation.sandbox import Sandbox, namespaces_available
from duet_bench.isolation.spawn import signals_held, spawn_prepared

__all__ = ["SETTLE_TIMEOUT_S", "Backend", "Container", "check_name"]

logger = logging.getLogger(__name__)

# Container names become directory names next to the controllers' interface files
# (``cpu.stat``, ``memory.max``): no dots, no slashes, and they must start with a letter or digit
# (the v2 backend keeps its own process in a leaf named ``_orchestrator``).
_NAME_RE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_-]{0,63}$")

#: How long to wait for a frozen or killed cgroup to settle before trying again.
SETTLE_TIMEOUT_S = 5.0


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
        pid_namespace: bool = False,
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

        With ``pid_namespace`` (or a sandbox whose ``pid_namespace`` is set; root only) the
        program runs in a PID namespace of its own with its own ``/proc``: it sees no process
        but its own. The ``Popen`` returned is then the namespace's keeper, which ends as the
        program ends (``duet_bench.isolation.pidns``); ``processes()`` lists the keeper and
        the namespace's init too.
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
        own_pids = pid_namespace or (sandbox is not None and sandbox.pid_namespace)
        if own_pids and not namespaces_available():
            raise IsolationError(
                "a PID namespace needs root (with CAP_SYS_ADMIN)",
                fix="run duet as root (sudo duet ...), or start the program without one",
            )
        prepared = (
            prepare_pid_namespace(
                own_mount_namespace=sandbox is None or not sandbox.mount_namespace
            )
            if own_pids
            else None
        )
        # Held while we fork and until the child is registered (so a kill finds it).
        with signals_held() as unheld:
            popen = spawn_prepared(
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
                pid_namespace=prepared,
            )
            self._popens.append(popen)
        return popen

    @property
    def pressure_file(self) -> str | None:
        """The ``cpu.pressure`` file (PSI) of this container's cgroup in a cgroup2 hierarchy:
        the time in which any of its processes waited for a CPU. None without one (no cgroup, no
        cgroup2 hierarchy we may use, a kernel without PSI)."""
        return None

    @property
    def threads_file(self) -> str | None:
        """The file listing every thread of this container (cgroup v1: its cpuset cgroup's
        ``tasks``; v2: ``cgroup.threads``): what a crossover moves from one CPU to the other,
        a command's children and their threads included. None without a cgroup."""
        return None

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
