"""Supervising the sides of a run: sleeping on their pidfds, the watchdog on the barrier's
progress, aborting the barrier and killing the others when one fails or stalls, and reaping.

The orchestrator shares the CPUs with the sides on a 2-vCPU machine, so it must stay quiet: it
wakes when a side exits, and otherwise at most once every :data:`WATCHDOG_PERIOD_S`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
from collections.abc import Callable

from duet_bench import interrupts
from duet_bench.harness import duet_barrier, duet_worker
from duet_bench.runner.context import Side

#: The orchestrator wakes at least this often to check the barrier's progress.
WATCHDOG_PERIOD_S = 1.0
#: Abort reason codes of docs/barrier-protocol.md.
ABORT_ORCHESTRATOR = 1
ABORT_WATCHDOG = 2
ABORT_PARTY_EXITED = 5


def _open_pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def supervise(
    sides: list[Side],
    barrier: duet_barrier.Barrier,
    timeout_ns: int,
    on_iterations: Callable[[int], None] | None = None,
) -> None:
    """Wait until every side has exited; abort and kill on a failure or a stall.

    A side that exits non-zero, or is killed, aborts the barrier (the others are released at
    once) and the others are killed. No barrier progress for ``timeout_ns`` is a timeout: the
    sides that did not arrive are the stuck ones.
    """
    selector = selectors.DefaultSelector()
    pidfds: dict[int, Side] = {}
    try:
        for s in sides:
            assert s.popen is not None
            fd = _open_pidfd(s.popen.pid)
            if fd is not None:
                pidfds[fd] = s
                selector.register(fd, selectors.EVENT_READ)
        last = barrier.generations()
        last_change = time.monotonic_ns()
        running = list(sides)
        while running:
            now = time.monotonic_ns()
            remaining_s = (last_change + timeout_ns - now) / 1e9
            wait_s = max(0.0, min(remaining_s, WATCHDOG_PERIOD_S)) if pidfds else 0.05
            for key, _ in selector.select(timeout=wait_s):
                selector.unregister(key.fd)
            interrupts.raise_if_pending()  # a signal whose own exception was dropped
            for s in list(running):
                assert s.popen is not None
                if s.popen.poll() is None:
                    continue
                s.ended_ns = time.monotonic_ns()
                running.remove(s)
                if s.popen.returncode == duet_worker.EXIT_ABORTED:
                    # A consequence, not a cause: another party raised the abort first.
                    if s.stopped_by is None:
                        s.stopped_by = "stopped because the other side failed"
                elif s.popen.returncode == duet_worker.EXIT_TIMEOUT and running:
                    # Its wait at the barrier timed out: the sides still running are the ones
                    # that never arrived (hung in an iteration, or never started).
                    s.stopped_by = "stopped after waiting for the other side at the barrier"
                    for other in running:
                        other.timed_out = True
                        other.container.kill()
                elif s.popen.returncode != 0 and s.stopped_by is None:
                    barrier.abort(ABORT_PARTY_EXITED)
                    for other in running:
                        other.stopped_by = f"stopped because the {s.name} side failed"
                        other.container.kill()
            gens = barrier.generations()
            if gens != last:
                last, last_change = gens, time.monotonic_ns()
                if on_iterations is not None:
                    # The generations both sides reached: one per iteration, two when the
                    # sides cross over (the caller divides; the watchdog only needs a change).
                    on_iterations(min(gens[s.slot] for s in sides))
            elif running and time.monotonic_ns() - last_change > timeout_ns:
                most = max(gens)
                for s in running:
                    if gens[s.slot] < most or len(set(gens)) == 1:
                        s.timed_out = True
                barrier.abort(ABORT_WATCHDOG)
                for s in running:
                    if not s.timed_out:
                        s.stopped_by = "stopped because the other side timed out"
                    s.container.kill()
                for s in running:
                    assert s.popen is not None
                    s.popen.wait()
                    s.ended_ns = time.monotonic_ns()
                running = []
    finally:
        selector.close()
        for fd in pidfds:
            os.close(fd)


def reap(side: Side) -> None:
    """Wait (up to 10 s) for a side that was killed, so no zombie is left."""
    if side.popen is not None and side.popen.returncode is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            side.popen.wait(timeout=10)


def abort_quietly(barrier: duet_barrier.Barrier) -> None:
    """Abort the barrier unless it is already: whatever happened, no side may keep waiting."""
    with contextlib.suppress(Exception):
        if barrier.abort_reason() is None:
            barrier.abort(ABORT_ORCHESTRATOR)
