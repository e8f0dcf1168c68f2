"""One run of a benchmark (two containers, the barrier, two workers, then clean-up), and every
planned run of a benchmark with the rules that stop early.

For a duet run both sides start together, each in a fresh container pinned to its CPU, and
meet at a two-party barrier before every iteration. Crossing over (``crossover = "iteration"``,
docs/statistics.md, method 1b) each container holds both CPUs of the pair and the sides' barrier
waits move them to the iteration's CPU (the worker spec's ``cpus`` and ``tasks``, a native program's
``DUET_CPUS`` and ``DUET_TASKS``). For a sequential run each side runs alone
(a one-party barrier) on the same CPU, one after the other.

Every run is cleaned up whatever happens (success, failure, timeout, a signal): the barrier is
aborted so no side waits forever, the containers are killed and removed, the barrier file and
the side directories are deleted.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO

from duet_bench.errors import EnvironmentNotReady
from duet_bench.files import create_new
from duet_bench.harness import duet_barrier
from duet_bench.isolation import Limits
from duet_bench.isolation.sandbox import make_sandbox
from duet_bench.plan import BenchmarkSpec, RunPlan
from duet_bench.results import SIDES, RunRecord, SideName, SideRecord
from duet_bench.runner.context import RunnerContext, Side, remove_tree, safe_name
from duet_bench.runner.outcome import run_status, side_record
from duet_bench.runner.paths import uses_host_tmp, why_hidden, working_directory
from duet_bench.runner.supervise import abort_quietly, reap, supervise
from duet_bench.runner.worker_spec import argv_and_env, worker_spec

log = logging.getLogger(__name__)


def _execute(
    bench: BenchmarkSpec,
    plan: RunPlan,
    names: tuple[SideName, ...],
    ctx: RunnerContext,
    run_dir: Path,
    inner_loops: int,
) -> dict[SideName, SideRecord]:
    """Run the sides in ``names`` together (one party each), wait, collect and clean up."""
    # A sequential run has one side at a time: nothing to cross over.
    crossing = plan.crossover and len(names) == len(SIDES)
    path = duet_barrier.new_path(ctx.barrier_dir)
    with contextlib.ExitStack() as stack:
        # Removal first: a signal between creating the file and registering its removal left
        # the barrier file in /dev/shm (seen in the guest tier). Removing a file that was never
        # created is a no-op.
        stack.callback(_remove, path)
        # 0600, the sides' user's: no other user may open it (docs/isolation.md).
        owner = None if ctx.run_as is None else (ctx.run_as.uid, ctx.run_as.gid)
        barrier = duet_barrier.create(path, parties=len(names), mode=0o600, owner=owner)
        stack.callback(barrier.close)
        # Runs first on the way out (LIFO): whatever happened, no side may keep waiting.
        sides: list[Side] = []
        stderr_files: dict[SideName, IO[bytes]] = {}
        for slot, name in enumerate(names):
            side, stderr_files[name] = _new_side(
                stack, bench, plan, ctx, run_dir / name, name, slot, crossing=crossing
            )
            sides.append(side)
        _hide_each_from_the_other(sides)
        stack.callback(abort_quietly, barrier)
        for s in sides:
            side_spec = bench.baseline if s.name == "baseline" else bench.candidate
            wspec = worker_spec(
                side_spec,
                side=s.name,
                slot=s.slot,
                barrier=path,
                bench=bench,
                samples=s.samples_path,
                inner_loops=inner_loops,
                pressure=s.container.pressure_file,
                cpus=plan.cpus_of(s.name) if crossing else None,
                tasks=s.container.threads_file if crossing else None,
            )
            argv, env = argv_and_env(side_spec, s, wspec, ctx)
            stderr = stderr_files[s.name]
            s.started_ns = time.monotonic_ns()
            try:
                s.popen = s.container.spawn(
                    argv,
                    env=env,
                    cwd=side_spec.cwd or working_directory(),
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    sandbox=s.sandbox,
                    run_as=ctx.run_as,
                )
            except OSError as e:
                raise _not_started(s.name, argv[0], e) from e
        per_run = bench.warmup + bench.iterations
        parts = 1 if len(names) == len(SIDES) else len(SIDES)  # sequential: one side at a time
        part = 0 if len(names) == len(SIDES) else SIDES.index(names[0])
        report = ctx.on_iterations
        # Crossing over, an iteration is two barrier generations (finished, then moved).
        waits = 2 if crossing else 1

        def begun(generations: int) -> None:
            if report is not None:
                iterations = generations // waits
                report((part + min(iterations, per_run) / max(per_run, 1)) / parts)

        supervise(sides, barrier, int(bench.timeout_s * 1e9), begun)
        return {s.name: side_record(s, bench, s.container.usage()) for s in sides}


def _hide_each_from_the_other(sides: list[Side]) -> None:
    """In its own mount namespace, a side cannot reach the other side's directory nor its
    private ``/tmp`` (both are covered there: ``Sandbox.hidden``). Both sides run as the same
    user: without it, the baseline made files in the candidate's directory and ``/tmp``
    (issue 33, finding 4)."""
    for s in sides:
        if s.sandbox.mount_namespace:
            peers = [p for p in sides if p is not s]
            hidden = tuple(x for p in peers for x in (str(p.directory), p.sandbox.tmpdir))
            s.sandbox = replace(s.sandbox, hidden=hidden)


def _new_side(
    stack: contextlib.ExitStack[bool | None],
    bench: BenchmarkSpec,
    plan: RunPlan,
    ctx: RunnerContext,
    d: Path,
    name: SideName,
    slot: int,
    *,
    crossing: bool,
) -> tuple[Side, IO[bytes]]:
    """One side's directory, stderr file, sandbox and container, each registered on ``stack``
    for clean-up; the side and the stderr file it writes to."""
    limits = Limits(memory_bytes=bench.memory_limit_bytes, pids_max=bench.pids_max)
    # Entered on the caller's stack: closed with the run, not here.
    stderr = stack.enter_context(open(_side_directory(d), "wb"))  # noqa: SIM115
    side_spec = bench.baseline if name == "baseline" else bench.candidate
    # Beside the side's directory, in the run's, which is root's: in the side's own, the user
    # could swap it for a link before the child bind-mounts it onto /tmp by name
    # (docs/isolation.md, "What runs as root").
    sandbox = make_sandbox(str(d.parent), f"{name}-tmp", share_network=ctx.share_network)
    if ctx.run_as is not None:
        # Last: from here on the user may change what is in it, not what root holds.
        os.chown(d, ctx.run_as.uid, ctx.run_as.gid)
    if sandbox.mount_namespace and uses_host_tmp(side_spec, ctx.worker_python):
        # A private /tmp would hide the benchmark itself: keep the host's /tmp and give the
        # side its own directory through TMPDIR only; the namespace still hides the other side.
        sandbox = replace(sandbox, private_tmp=False)
    stack.callback(sandbox.remove)
    cpus = plan.cpus_of(name) if crossing else (plan.cpus[name],)
    # Crossing over, the cpuset holds both CPUs; the side's barrier wait pins each iteration
    # to one of them.
    container = ctx.backend.container(
        f"r{plan.index:03d}-{name}",
        cpus=list(cpus),
        mems=None,
        limits=limits,
    )
    side = Side(
        name=name,
        cpu=plan.cpus[name],
        slot=slot,
        directory=d,
        container=container,
        sandbox=sandbox,
        samples_path=d / "samples.jsonl",
        stderr_path=d / "stderr.txt",
    )
    stack.callback(reap, side)  # after the kill below: no zombie is left
    stack.callback(container.close)
    return side, stderr


def _side_directory(d: Path) -> int:
    """Make a side's directory, 0700 (the directories above it root's, 0755 whatever the
    umask), and in it the side's ``stderr.txt``; the descriptor of that file.

    The caller hands the directory to the sides' user afterwards: a stderr file created before
    is root's own, whatever the user then puts at its name (docs/isolation.md, "What runs as
    root")."""
    missing = [p for p in (d, *d.parents) if not p.exists()]
    for p in reversed(missing):
        mode = 0o700 if p == d else 0o755
        p.mkdir(mode=mode)
        os.chmod(p, mode)
    return create_new(d / "stderr.txt")


def _not_started(side: str, program: str, error: OSError) -> EnvironmentNotReady:
    """Why a side could not start. The file the kernel refused is named when it is not the
    program: without ``/dev/null`` (a ``nodev`` mount in a user namespace) nothing can start."""
    culprit = os.fsdecode(error.filename) if error.filename is not None else program
    reason = error.strerror or str(error)
    if culprit != program:
        if culprit.startswith("/dev/"):
            fix = "in a container or sandbox give duet a /dev of its own (e.g. bwrap --dev /dev)"
        elif error.errno == errno.ENOENT:
            # Most often the side's working directory, removed by the benchmark or its build.
            fix = (
                f"{culprit} no longer exists: a benchmark (or its build) must not remove its own "
                "directory; restore it and run again"
            )
        else:
            fix = f"{culprit} must be usable by the side's user"
        return EnvironmentNotReady(
            f"cannot start the {side} side ({program}): {culprit}: {reason}", fix=fix
        )
    hidden = why_hidden(program) if error.errno == errno.ENOENT else None
    if hidden is not None:
        # The program is there for duet but not for the side: its private /tmp hides it.
        return EnvironmentNotReady(
            f"cannot start the {side} side ({program}): {reason}: {hidden}",
            fix="keep what the side runs outside /tmp (e.g. the virtual environment in the "
            "checkout itself, not a link into /tmp)",
        )
    return EnvironmentNotReady(
        f"cannot start the {side} side ({program}): {reason}",
        fix="check that the command or interpreter exists and is executable",
    )


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def measure_run(
    bench: BenchmarkSpec, plan: RunPlan, ctx: RunnerContext, *, inner_loops: int = 1
) -> RunRecord:
    """Measure one run of ``bench`` as planned; failures become a failed :class:`RunRecord`."""
    run_dir = ctx.workdir / f"{safe_name(bench.name)}-r{plan.index:03d}"
    try:
        if plan.order is None:
            records = _execute(bench, plan, SIDES, ctx, run_dir, inner_loops)
        else:
            records = {}
            for name in plan.order:
                records.update(_execute(bench, plan, (name,), ctx, run_dir / name, inner_loops))
    finally:
        remove_tree(run_dir)
    status, reason = run_status(records)
    return RunRecord(
        index=plan.index,
        status=status,
        reason=reason,
        order=plan.order,
        baseline=records["baseline"],
        candidate=records["candidate"],
    )


RunCallback = Callable[[RunRecord], None]


def measure_benchmark(
    bench: BenchmarkSpec,
    plans: tuple[RunPlan, ...],
    ctx: RunnerContext,
    *,
    on_run: RunCallback,
    max_failures: int | None,
    inner_loops: int = 1,
    on_stop: Callable[[str], None] | None = None,
) -> tuple[RunRecord, ...]:
    """Every planned run of one benchmark; ``on_run`` is called after each (to save results).

    Stops early when more than ``max_failures`` runs have failed, or after the first run when
    its failure would repeat in every run (docs/reliability.md, "Failures that repeat"); then
    ``on_stop`` gets the sentence that says why (else it is logged).
    """

    def repeats(record: RunRecord) -> str | None:
        # A side that exited by itself before finishing a single iteration, in the very first
        # run, failed on what every run shares: the command, the interpreter, the callable's
        # import, a missing file. A timeout, a limit or a signal can be the machine's doing,
        # and a failure after some iterations proves that the start works: those are retried.
        side_name, _, _ = (record.reason or "").partition(": ")
        if record.index != plans[0].index or side_name not in SIDES:
            return None
        side = record.side(side_name)
        by_itself = side.exit_code is not None and side.exit_code >= 0
        if (
            record.status != "failed"
            or not by_itself
            or side.iterations_ns
            or side.warmup_ns
            or (side.reason or "").startswith("stopped")
        ):
            return None
        return (
            f"{bench.name}: stopped after run 1 of {len(plans)}: the {side_name} failed before "
            "its first iteration, so every run would fail the same way"
        )

    records: list[RunRecord] = []
    failures = 0
    for plan in plans:
        record = measure_run(bench, plan, ctx, inner_loops=inner_loops)
        records.append(record)
        on_run(record)
        if record.ok:
            continue
        failures += 1
        # The caller shows the failure (on_run); logging it here as well printed it twice.
        log.info("%s run %d failed: %s", bench.name, plan.index, record.reason)
        why = repeats(record)
        if why is None and max_failures is not None and failures > max_failures:
            why = (
                f"{bench.name}: stopped after run {len(records)} of {len(plans)}: {failures} "
                f"{'run' if failures == 1 else 'runs'} failed, more than --max-failures "
                f"{max_failures}"
            )
        if why is not None:
            if on_stop is not None:
                on_stop(why)
            else:
                log.warning("%s", why)
            break
    return tuple(records)
