"""Starting the program of a side: fork, join the container, pin, enter the sandbox, drop
privileges, exec; and the reason when a step before ``exec`` fails.

``Container.spawn`` (``duet_bench.isolation.base``) calls ``spawn_prepared`` with the files its
backend's child must join, while ``signals_held`` keeps the signals duet turns into
``Interrupted`` away from the fork.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from duet_bench import interrupts
from duet_bench.errors import IsolationError
from duet_bench.isolation.model import RunAs
from duet_bench.isolation.pidns import PidNamespace

__all__ = ["HELD_WHILE_FORKING", "signals_held", "spawn_prepared"]

#: The signals duet turns into ``Interrupted`` (``duet_bench.interrupts``); see ``signals_held``.
HELD_WHILE_FORKING = frozenset(interrupts.SIGNALS)

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up before any fork (the child only calls it)."""
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: no parent-death signal
        return None
    return prctl


_PRCTL = _load_prctl()


@contextlib.contextmanager
def signals_held() -> Iterator[set[int | signal.Signals]]:
    """Hold ``HELD_WHILE_FORKING`` while the block forks; yields the mask to restore.

    Arriving during a fork, their Python handler would run inside an at-fork callback (logging
    registers one), where CPython prints the ``Interrupted`` it raises ("Exception ignored")
    and drops it, and the orchestrator would go on measuring. The caller releases them once the
    child is registered (so a kill finds it); the child restores the mask itself before it
    execs (``spawn_prepared(signal_mask=...)``).
    """
    unheld = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_WHILE_FORKING)
    try:
        yield unheld
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, unheld)


def spawn_prepared(
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
    pid_namespace: PidNamespace | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` so that it joins ``join_files``, runs on ``cpus``, leads its own session,
    is inside the sandbox and gets SIGKILL when this process dies before it execs; with
    ``signal_mask``, the child sets that mask right before exec. With ``pid_namespace``: PID 2
    of a PID namespace with its own ``/proc`` (``duet_bench.isolation.pidns``).

    The work happens in ``preexec_fn``, i.e. between ``fork`` and ``exec`` of a process that may
    have other threads; it therefore only makes system calls on data prepared here. CPython
    reports a failing ``preexec_fn`` only as "Exception occurred in preexec_fn", so the child
    writes the real reason into a pipe first.
    """
    encoded = [os.fsencode(path) for path in join_files]
    parent = os.getpid()
    read_end, write_end = os.pipe()  # both close-on-exec: exec closes the child's copy
    drop = None if run_as is None else functools.partial(_drop_privileges, run_as)

    def preexec() -> None:
        stage = "starting"
        mask: Iterable[int] | None = signal_mask
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
            if pid_namespace is not None:
                stage = "entering a PID namespace with its own /proc"
                mask = _enter_pid_namespace(pid_namespace, parent, drop, mask)
            if run_as is not None:
                # Last: joining cgroups, mounting and unsharing need root. setuid from root to
                # another uid also clears every capability (no PR_SET_KEEPCAPS is set).
                stage = f"dropping privileges to {run_as.name} (uid {run_as.uid})"
                _drop_privileges(run_as)
            if pid_namespace is None:
                # After dropping privileges, which clears it: the side dies with the
                # orchestrator (a SIGKILLed duet no longer leaves its workers measuring
                # unsupervised), and if the orchestrator died before this line, the child is
                # no longer its child.
                stage = "asking for SIGKILL when duet dies (PR_SET_PDEATHSIG)"
                _die_with(parent)
            if mask is not None:
                # Last: exec keeps the mask, and the program must get its signals.
                stage = "restoring the signal mask"
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
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


def _enter_pid_namespace(
    pid_namespace: PidNamespace,
    parent: int,
    drop: Callable[[], None] | None,
    mask: Iterable[int] | None,
) -> Iterable[int]:
    """In the child: enter ``pid_namespace``; returns (in the program only) the signal mask to
    restore before exec. The keeper (this process, root) dies with duet, the init with the
    keeper, the program with the init (a namespace ends with its PID 1)."""
    _die_with(parent)
    if mask is None:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    pid_namespace.enter(drop)
    return mask


def _drop_privileges(run_as: RunAs) -> None:
    os.setgroups(list(run_as.groups))
    os.setgid(run_as.gid)
    os.setuid(run_as.uid)


def _die_with(parent: int) -> None:
    """In the child: SIGKILL when ``parent`` ends, and at once if it already has (the child is
    no longer its child)."""
    if _PRCTL is not None:
        if _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)
