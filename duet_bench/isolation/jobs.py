"""The version's own programs outside the measurement (a build, a suite's discovery): each in a
container of its own, stopped and emptied before anything is measured.

The program is the pull request's code: whatever it starts, daemons and ``setsid`` children
included, must not run while duet measures. :func:`run_job` starts it in a container on every
CPU we may use (a cgroup as root, the best level this machine has; else the process tree),
waits for it with a timeout, stops its whole process group on a timeout or an exception (the
CLI turns SIGINT/SIGTERM into one), warns when it left processes behind, and closes the
container, which kills whatever is left in it (docs/isolation.md, "What runs as root"). As
root the job runs in a PID namespace with its own ``/proc`` (``duet_bench.isolation.pidns``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from duet_bench.isolation.affinity import AffinityBackend
from duet_bench.isolation.base import Container
from duet_bench.isolation.model import Limits, RunAs
from duet_bench.isolation.sandbox import pid_namespaces_available
from duet_bench.isolation.select import select_backend
from duet_bench.machine import THIS

log = logging.getLogger(__name__)

#: After SIGTERM, how long a job's processes get to exit before SIGKILL.
KILL_GRACE_S = 2.0


@dataclass(frozen=True, slots=True)
class Captured:
    """What a job printed, and how it ended: ``returncode`` None when it timed out (and was
    stopped), negative when a signal killed it."""

    returncode: int | None
    stdout: str
    stderr: str


@contextlib.contextmanager
def job_container(name: str) -> Iterator[Container]:
    """A container for one job on every CPU we may use: a cgroup as root (the best level this
    machine has), else the process tree (``affinity-only``, which cannot catch a daemon that
    left its session; said in docs/versions.md). Closing it kills what is left."""
    # Not root: no cgroup is ours to make, and select_backend would warn about the
    # measurement at every job.
    backend = select_backend("auto") if os.geteuid() == 0 else AffinityBackend()
    with (
        backend,
        backend.container(
            name, cpus=sorted(os.sched_getaffinity(0)), mems=None, limits=Limits()
        ) as container,
    ):
        yield container


def run_job(
    argv: Sequence[str],
    *,
    name: str,
    what: str,
    cwd: str,
    env: Mapping[str, str],
    stdout: int | IO[Any] | None,
    stderr: int | IO[Any] | None,
    timeout_s: float | None,
    run_as: RunAs | None,
) -> int | None:
    """Run ``argv`` in a container of its own named ``name``; its exit status, None when it
    timed out (then its process group was stopped). ``what`` names it in the warning about
    processes it left running ("the baseline build").

    Its output goes where ``stdout`` and ``stderr`` say: a file, not a pipe, since a process it
    leaves in the background keeps a pipe open and would hang the read. Stdin is /dev/null.
    Raises ``OSError`` when ``argv[0]`` cannot be executed (or ``cwd`` entered) and
    ``IsolationError`` when the container cannot be made or joined.
    """
    with job_container(name) as container:
        # In its own session (hence process group, as every spawn), so that a timeout or a
        # signal stops the whole job (make and its compilers) gently first.
        # As root, in a PID namespace with its own /proc: it sees no process but its own, not
        # the environment of the shell that ran sudo, nor duet's (issue 33, finding 2).
        proc = container.spawn(
            list(argv),
            cwd=cwd,
            env=env,
            stdout=stdout,
            stderr=stderr,
            run_as=run_as,
            pid_namespace=pid_namespaces_available(),
        )
        try:
            returncode: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            returncode = None
        except BaseException:
            # SIGINT/SIGTERM arrive as an exception (the CLI's handler): the job must not
            # outlive us.
            stop_group(proc)
            raise
        if THIS.group_alive(proc.pid) or container.processes():
            log.warning(
                "%s left processes running; stopping them (they would disturb the measurement)",
                what,
            )
            stop_group(proc)
    # Closing the container killed what was left in it: daemons that left the process group.
    return returncode


def run_job_captured(
    argv: Sequence[str],
    *,
    name: str,
    what: str,
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float | None,
    run_as: RunAs | None,
) -> Captured:
    """:func:`run_job` with its stdout and stderr captured, through unnamed temporary files
    (nothing in a directory to plant a link at, nothing a leftover process can hold open)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        returncode = run_job(
            argv,
            name=name,
            what=what,
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=err,
            timeout_s=timeout_s,
            run_as=run_as,
        )
        return Captured(returncode, _text(out), _text(err))


def _text(f: IO[bytes]) -> str:
    """The file's text, newlines translated as ``subprocess``'s text mode does."""
    f.seek(0)
    return f.read().decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the job's process group, SIGKILL what is left after a grace period, reap."""
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if proc.poll() is not None and not THIS.group_alive(proc.pid):
                return
            time.sleep(0.02)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE_S)
