"""The runner: measure one run of a benchmark (two containers, the barrier, two workers).

For a duet run both sides start together, each in a fresh container pinned to its CPU, and
meet at a two-party barrier before every iteration. For a sequential run each side runs alone
(a one-party barrier) on the same CPU, one after the other. The orchestrator sleeps on the
sides' pidfds and wakes at most once a second to check that the barrier generations advance:
it shares the CPUs with the sides on a 2-vCPU machine, so it must stay quiet.

Every run is cleaned up whatever happens (success, failure, timeout, a signal): the barrier is
aborted so no side waits forever, the containers are killed and removed, the barrier file and
the side directories are deleted.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from duet_bench import units
from duet_bench.errors import EnvironmentNotReady
from duet_bench.harness import duet_barrier
from duet_bench.isolation import Backend, Container, Limits, RunAs, Usage
from duet_bench.isolation.sandbox import Sandbox, make_sandbox
from duet_bench.plan import BenchmarkSpec, RunPlan, SideSpec
from duet_bench.results import SIDES, RunRecord, SideName, SideRecord

log = logging.getLogger(__name__)

WORKER = Path(__file__).parent / "harness" / "duet_worker.py"
STDERR_TAIL_BYTES = 2000
#: The orchestrator wakes at least this often to check the barrier's progress.
WATCHDOG_PERIOD_S = 1.0
#: Abort reason codes of docs/barrier-protocol.md.
ABORT_ORCHESTRATOR = 1
ABORT_WATCHDOG = 2
ABORT_PARTY_EXITED = 5
#: Worker exit code (docs/barrier-protocol.md): the barrier was aborted by another party.
WORKER_EXIT_ABORTED = 5
#: Worker exit code: its own wait at the barrier timed out.
WORKER_EXIT_TIMEOUT = 4


@dataclass(frozen=True, slots=True)
class RunnerContext:
    """What every run of an invocation shares."""

    backend: Backend
    #: Private work directory of this invocation. Not under /tmp: a side's sandbox replaces
    #: /tmp, and the side must still see its spec and samples files.
    workdir: Path
    share_network: bool = False
    #: The interpreter that runs the worker of ``command`` benchmarks (ours).
    worker_python: str = sys.executable
    barrier_dir: str = "/dev/shm"
    #: Run the sides as this user (root drops to it before exec); None runs them as we are.
    run_as: RunAs | None = None
    #: The worker file the sides execute (a copy in ``workdir``, see :func:`install_harness`).
    worker: Path = WORKER
    #: Called about once a second while a run is measured, with the share of the run's
    #: iterations (warm-up included) that both sides have finished: progress within a run.
    on_iterations: Callable[[float], None] | None = None


@dataclass(slots=True)
class _Side:
    """One side while it runs (mutable, internal to this module)."""

    name: SideName
    cpu: int
    slot: int
    directory: Path
    container: Container
    sandbox: Sandbox
    samples_path: Path
    stderr_path: Path
    popen: subprocess.Popen[bytes] | None = None
    started_ns: int = 0
    ended_ns: int | None = None
    timed_out: bool = False
    stopped_by: str | None = None


@dataclass(frozen=True, slots=True)
class Samples:
    """What a samples file holds (docs/architecture.md, "Samples file")."""

    warmup_ns: tuple[int, ...] = ()
    iterations_ns: tuple[int, ...] = ()
    iteration_start_ns: tuple[int, ...] = ()
    #: Per measured iteration, each None unless every measured line had the figure.
    iteration_cpu_ns: tuple[int, ...] | None = None
    iteration_runq_ns: tuple[int, ...] | None = None
    iteration_nivcsw: tuple[int, ...] | None = None
    error: str | None = None
    done: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)


def read_samples(path: Path) -> Samples:
    """Parse a samples file; a line cut short by a kill is ignored, not fatal."""
    warmup: list[int] = []
    measured: list[int] = []
    starts: list[int] = []
    per_iteration: dict[str, list[int]] = {"cpu_ns": [], "runq_ns": [], "nivcsw": []}
    error = None
    done = False
    extra: dict[str, Any] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return Samples(error="the side wrote no samples file")
    for line in lines:
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            # Not JSON, or JSON that json refuses to build (an integer of more than 4300
            # digits, nesting deeper than the recursion limit): the benchmark wrote it, and it
            # must not take the orchestrator down.
            continue
        if not isinstance(item, dict):
            continue
        if "error" in item:
            error = str(item["error"])
        elif item.get("done"):
            done = True
            extra = {k: v for k, v in item.items() if k != "done"}
        elif item.get("phase") in ("warmup", "measure"):
            d = item.get("duration_ns")
            if not isinstance(d, int) or d <= 0:
                continue
            if item["phase"] == "warmup":
                warmup.append(d)
            else:
                measured.append(d)
                start = item.get("start_ns")
                starts.append(start if isinstance(start, int) else -1)
                for key, values in per_iteration.items():
                    v = item.get(key)
                    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                        values.append(v)

    def complete(key: str) -> tuple[int, ...] | None:
        # A figure missing from one line (an old harness, a kernel without schedstat) cannot
        # be paired iteration by iteration: all or nothing.
        values = per_iteration[key]
        return tuple(values) if measured and len(values) == len(measured) else None

    return Samples(
        warmup_ns=tuple(warmup),
        iterations_ns=tuple(measured),
        iteration_start_ns=tuple(starts),
        iteration_cpu_ns=complete("cpu_ns"),
        iteration_runq_ns=complete("runq_ns"),
        iteration_nivcsw=complete("nivcsw"),
        error=error,
        done=done,
        extra=extra,
    )


def _tail(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - STDERR_TAIL_BYTES))
            text = f.read().decode("utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None
    return text or None


def worker_spec(
    spec: SideSpec,
    *,
    side: SideName,
    slot: int,
    barrier: str,
    bench: BenchmarkSpec,
    samples: Path,
    inner_loops: int,
) -> dict[str, Any]:
    """The worker spec of docs/architecture.md for one side of one run."""
    out: dict[str, Any] = {
        "protocol": 1,
        "kind": spec.kind,
        "side": side,
        "slot": slot,
        "barrier": barrier,
        "warmup": bench.warmup,
        "iterations": bench.iterations,
        "timeout_ns": int(bench.timeout_s * 1e9),
        "samples": str(samples),
    }
    if spec.kind == "command":
        out.update(command=spec.command, shell="/bin/sh")
        if spec.output is not None:
            out["output"] = spec.output
    elif spec.kind == "python":
        out.update(
            callable=spec.callable,
            setup=spec.setup,
            sys_path=list(spec.sys_path),
            inner_loops=inner_loops,
        )
    return out


def _argv_and_env(
    spec: SideSpec, side: _Side, wspec: Mapping[str, Any], ctx: RunnerContext
) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ) if ctx.run_as is None else ctx.run_as.environment(os.environ)
    env.update(spec.env)
    env.update(side.sandbox.env_overrides())
    env["DUET_SIDE"] = side.name
    if spec.kind == "native":
        env.update(
            DUET_BARRIER=str(wspec["barrier"]),
            DUET_SLOT=str(wspec["slot"]),
            DUET_WARMUP=str(wspec["warmup"]),
            DUET_ITERATIONS=str(wspec["iterations"]),
            DUET_TIMEOUT_NS=str(wspec["timeout_ns"]),
            DUET_SAMPLES=str(wspec["samples"]),
        )
        assert spec.command is not None
        return ["/bin/sh", "-c", "exec " + spec.command], env
    spec_path = side.directory / "spec.json"
    spec_path.write_text(json.dumps(wspec))
    python = ctx.worker_python if spec.kind == "command" else str(spec.interpreter)
    return [python, str(ctx.worker), str(spec_path)], env


def uses_host_tmp(spec: SideSpec, worker_python: str | None = None) -> bool:
    """Whether a side names files under the host's /tmp (its directory, interpreter, the
    worker's interpreter, python path or program), which a private /tmp in its mount namespace
    would hide."""
    tmp = os.path.realpath("/tmp")
    interpreter = worker_python if spec.kind == "command" else spec.interpreter
    paths = [spec.cwd, interpreter, *spec.sys_path]
    for word in (spec.command or "").split():
        # A file the benchmark creates directly in /tmp (a cache, a socket: `--db /tmp/x.db`)
        # is what the private /tmp is for; only what exists there already (the program, an
        # input, a directory prepared for it) needs the host's /tmp.
        if not word.startswith("/") or os.path.realpath(word) == tmp:
            continue
        if os.path.lexists(word) or os.path.realpath(os.path.dirname(word)) != tmp:
            paths.append(word)
    if spec.cwd is None:
        paths.append(os.getcwd())
    return any(p and under_host_tmp(p) for p in paths)


def accessible_by(path: str, run_as: RunAs | None, *, mode: int = os.X_OK) -> bool:
    """Whether ``run_as`` may execute (or read, with ``mode=os.R_OK``) ``path``: every directory
    on the way must be searchable by that user, and the file itself executable (readable)."""
    if run_as is None:
        return os.access(path, mode)
    import stat

    real = os.path.realpath(path)
    parts = real.split("/")
    dirs = ["/".join(parts[:i]) or "/" for i in range(1, len(parts))]
    checks = [(d, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH) for d in dirs]
    if mode == os.X_OK:
        checks.append((real, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH))
    else:
        checks.append((real, stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH))
    for target, user_bit, group_bit, other_bit in checks:
        try:
            st = os.stat(target)
        except OSError:
            return False
        if st.st_uid == run_as.uid:
            ok = st.st_mode & user_bit
        elif st.st_gid == run_as.gid or st.st_gid in run_as.groups:
            ok = st.st_mode & group_bit
        else:
            ok = st.st_mode & other_bit
        if not ok:
            return False
    return True


def under_host_tmp(path: str) -> bool:
    """Whether ``path`` lies under the host's /tmp, which a side's private /tmp hides: the
    path as written (a symlink in /tmp is hidden too, wherever it points) or resolved."""
    tmp = os.path.realpath("/tmp")
    written = os.path.normpath(os.path.abspath(path))
    resolved = os.path.realpath(written)
    return any(
        (p + "/").startswith(prefix + "/") for p in (written, resolved) for prefix in {tmp, "/tmp"}
    )


def worker_python_for(run_as: RunAs | None) -> str:
    """The interpreter that runs the worker of ``command`` benchmarks.

    The worker uses only the standard library, so any Python >= 3.11 will do. Ours, unless the
    sides run as a user who cannot execute it (duet installed under /root and run with sudo),
    or it lives under /tmp (a checkout in /tmp: a side's private /tmp would hide it); then the
    interpreter our virtual environment was made from, or a system python3.
    """
    base = getattr(sys, "_base_executable", None) or sys.executable
    candidates = list(
        dict.fromkeys(
            [
                sys.executable,
                base,
                os.path.realpath(base),
                "/usr/bin/python3",
                "/usr/local/bin/python3",
            ]
        )
    )
    usable = [c for c in candidates if os.path.exists(c) and accessible_by(c, run_as)]
    if usable:
        outside_tmp = [c for c in usable if not under_host_tmp(c)]
        # Under /tmp only: uses_host_tmp then gives the side the host's /tmp.
        return (outside_tmp or usable)[0]
    who = run_as.name if run_as else "this user"
    raise EnvironmentNotReady(
        f"no Python interpreter that {who} may execute was found (tried {', '.join(candidates)})",
        fix="install python3 system-wide (apt-get install python3) or install duet where that "
        "user can read it",
    )


def install_harness(workdir: Path) -> Path:
    """Copy the worker, the barrier client, the pytest driver (``duet_pytest:run``) and the
    parsers of harness output (``duet_outputs``) into the work directory (world-readable), so
    the sides can run them whatever user they run as and wherever duet is installed."""
    import shutil

    target = workdir / "harness"
    target.mkdir(mode=0o755, exist_ok=True)
    for source in sorted(WORKER.parent.glob("duet_*.py")):
        shutil.copyfile(source, target / source.name)
        os.chmod(target / source.name, 0o644)
    return target / "duet_worker.py"


def _open_pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _supervise(
    sides: list[_Side],
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
    pidfds: dict[int, _Side] = {}
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
            for s in list(running):
                assert s.popen is not None
                if s.popen.poll() is None:
                    continue
                s.ended_ns = time.monotonic_ns()
                running.remove(s)
                if s.popen.returncode == WORKER_EXIT_ABORTED:
                    # A consequence, not a cause: another party raised the abort first.
                    if s.stopped_by is None:
                        s.stopped_by = "stopped because the other side failed"
                elif s.popen.returncode == WORKER_EXIT_TIMEOUT and running:
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
                    # Each generation is one pass through the barrier: the iterations begun.
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


def _side_record(s: _Side, bench: BenchmarkSpec, usage: Usage) -> SideRecord:
    samples = read_samples(s.samples_path)
    assert s.popen is not None
    code = s.popen.returncode
    status, reason, limit = "ok", None, None
    if usage.oom_kills:
        status, limit = "out-of-memory", "memory"
        reason = (
            f"reached the memory limit of {units.size(bench.memory_limit_bytes)}; the kernel's "
            f"OOM killer killed {usage.oom_kills} process(es)"
        )
    elif usage.pids_limit_hit:
        status, limit = "pids-limit", "pids"
        reason = f"reached the limit of {bench.pids_max} processes (pids.max): a fork bomb?"
    elif s.timed_out:
        status, limit = "timeout", "timeout"
        reason = (
            f"no barrier progress for {bench.timeout_s:g} s (hung in an iteration or never arrived)"
        )
    elif s.stopped_by is not None:
        status, reason = "failed", s.stopped_by
    elif code is not None and code < 0:
        status, reason = "failed", f"killed by {signal.Signals(-code).name}"
    elif code != 0:
        status = "failed"
        # The exit code first: "exit code 2 (the side wrote no samples file)" says the program
        # stopped by itself (a usage error, a crash it caught), not that duet lost its samples.
        reason = f"exit code {code}" + (f" ({samples.error})" if samples.error else "")
    elif len(samples.iterations_ns) != bench.iterations:
        status = "failed"
        reason = f"wrote {len(samples.iterations_ns)} of {bench.iterations} measured samples" + (
            f" ({samples.error})" if samples.error else ""
        )
    missing = dict(usage.missing)
    if samples.iterations_ns:
        for key, figure in (
            ("iteration_cpu_ns", samples.iteration_cpu_ns),
            ("iteration_runq_ns", samples.iteration_runq_ns),
        ):
            if figure is None:
                missing[key] = "not in every sample line (the harness or the kernel gives none)"
    return SideRecord(
        iterations_ns=samples.iterations_ns,
        warmup_ns=samples.warmup_ns,
        iteration_start_ns=samples.iteration_start_ns if samples.iteration_start_ns else None,
        iteration_cpu_ns=samples.iteration_cpu_ns,
        iteration_runq_ns=samples.iteration_runq_ns,
        iteration_nivcsw=samples.iteration_nivcsw,
        cores=(s.cpu,),
        cpu_ns=usage.cpu_ns,
        cpu_user_ns=usage.cpu_user_ns,
        cpu_system_ns=usage.cpu_system_ns,
        peak_memory_bytes=usage.peak_memory_bytes,
        wall_ns=(s.ended_ns - s.started_ns) if s.ended_ns else None,
        exit_code=code,
        status=status,
        reason=reason,
        hit_limit=limit,
        stderr_tail=_tail(s.stderr_path) if status != "ok" else None,
        missing=missing,
    )


def _execute(
    bench: BenchmarkSpec,
    plan: RunPlan,
    names: tuple[SideName, ...],
    ctx: RunnerContext,
    run_dir: Path,
    inner_loops: int,
) -> dict[SideName, SideRecord]:
    """Run the sides in ``names`` together (one party each), wait, collect and clean up."""
    limits = Limits(memory_bytes=bench.memory_limit_bytes, pids_max=bench.pids_max)
    path = duet_barrier.new_path(ctx.barrier_dir)
    with contextlib.ExitStack() as stack:
        # Removal first: a signal between creating the file and registering its removal left
        # the barrier file in /dev/shm (seen in the guest tier). Removing a file that was never
        # created is a no-op.
        stack.callback(_remove, path)
        barrier = duet_barrier.create(path, parties=len(names), mode=0o666)
        stack.callback(barrier.close)
        # Runs first on the way out (LIFO): whatever happened, no side may keep waiting.
        sides: list[_Side] = []
        for slot, name in enumerate(names):
            d = run_dir / name
            d.mkdir(parents=True)
            os.chmod(d, 0o777)
            side_spec = bench.baseline if name == "baseline" else bench.candidate
            sandbox = make_sandbox(str(d), "tmp", share_network=ctx.share_network)
            if sandbox.mount_namespace and uses_host_tmp(side_spec, ctx.worker_python):
                # A private /tmp would hide the benchmark itself: keep the host's /tmp and
                # give the side its own directory through TMPDIR only.
                sandbox = replace(sandbox, mount_namespace=False)
            stack.callback(sandbox.remove)
            container = ctx.backend.container(
                f"r{plan.index:03d}-{name}",
                cpus=[plan.cpus[name]],
                mems=None,
                limits=limits,
            )
            side = _Side(
                name=name,
                cpu=plan.cpus[name],
                slot=slot,
                directory=d,
                container=container,
                sandbox=sandbox,
                samples_path=d / "samples.jsonl",
                stderr_path=d / "stderr.txt",
            )
            stack.callback(_reap, side)  # after the kill below: no zombie is left
            stack.callback(container.close)
            sides.append(side)
        stack.callback(_abort_quietly, barrier)
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
            )
            argv, env = _argv_and_env(side_spec, s, wspec, ctx)
            stderr: IO[bytes] = stack.enter_context(s.stderr_path.open("wb"))
            s.started_ns = time.monotonic_ns()
            try:
                s.popen = s.container.spawn(
                    argv,
                    env=env,
                    cwd=side_spec.cwd or os.getcwd(),
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

        def begun(iterations: int) -> None:
            if report is not None:
                report((part + min(iterations, per_run) / max(per_run, 1)) / parts)

        _supervise(sides, barrier, int(bench.timeout_s * 1e9), begun)
        return {s.name: _side_record(s, bench, s.container.usage()) for s in sides}


def _not_started(side: str, program: str, error: OSError) -> EnvironmentNotReady:
    """Why a side could not start. The file the kernel refused is named when it is not the
    program: without ``/dev/null`` (a ``nodev`` mount in a user namespace) nothing can start."""
    culprit = os.fsdecode(error.filename) if error.filename is not None else program
    reason = error.strerror or str(error)
    if culprit != program:
        return EnvironmentNotReady(
            f"cannot start the {side} side ({program}): {culprit}: {reason}",
            fix=f"{culprit} must be usable by duet; in a container or sandbox give it a /dev "
            "of its own (e.g. bwrap --dev /dev)",
        )
    return EnvironmentNotReady(
        f"cannot start the {side} side ({program}): {reason}",
        fix="check that the command or interpreter exists and is executable",
    )


def _reap(side: _Side) -> None:
    if side.popen is not None and side.popen.returncode is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            side.popen.wait(timeout=10)


def _abort_quietly(barrier: duet_barrier.Barrier) -> None:
    with contextlib.suppress(Exception):
        if barrier.abort_reason() is None:
            barrier.abort(ABORT_ORCHESTRATOR)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _run_status(records: Mapping[SideName, SideRecord]) -> tuple[str, str | None]:
    # The cause, not the consequence: a side stopped because the other failed, or that gave up
    # waiting for it at the barrier, is not the reason.
    failed = [(n, r) for n, r in records.items() if r.status != "ok"]
    if not failed:
        return "ok", None
    consequences = ("stopped because", "stopped after waiting")
    causes = [(n, r) for n, r in failed if not (r.reason or "").startswith(consequences)]
    name, rec = (causes or failed)[0]
    status = rec.status if rec.status in ("timeout", "out-of-memory", "pids-limit") else "failed"
    reason = rec.reason or status
    # The worker's own exit code 3 says only "the command failed"; the command's exit status is
    # in its message, and that is the number a user can act on (127: not found).
    worker_wrapper = "exit code 3 (BenchmarkFailed: the command "
    if reason.startswith(worker_wrapper) and reason.endswith(")"):
        reason = "the command " + reason[len(worker_wrapper) : -1]
    return status, f"{name}: {reason}"


def measure_run(
    bench: BenchmarkSpec, plan: RunPlan, ctx: RunnerContext, *, inner_loops: int = 1
) -> RunRecord:
    """Measure one run of ``bench`` as planned; failures become a failed :class:`RunRecord`."""
    run_dir = ctx.workdir / f"{_safe(bench.name)}-r{plan.index:03d}"
    try:
        if plan.order is None:
            records = _execute(bench, plan, SIDES, ctx, run_dir, inner_loops)
        else:
            records = {}
            for name in plan.order:
                records.update(_execute(bench, plan, (name,), ctx, run_dir / name, inner_loops))
    finally:
        _rmtree(run_dir)
    status, reason = _run_status(records)
    return RunRecord(
        index=plan.index,
        status=status,
        reason=reason,
        order=plan.order,
        baseline=records["baseline"],
        candidate=records["candidate"],
    )


def calibrate_inner_loops(
    bench: BenchmarkSpec, ctx: RunnerContext, *, cpu: int, target_iteration_ns: int = 10_000_000
) -> int:
    """How many calls of a python benchmark make one iteration last ``target_iteration_ns``.

    Measured once, on the baseline's interpreter pinned to ``cpu``; both sides then use the
    same count, so the ratio compares the same work.
    """
    side = bench.baseline
    if side.kind != "python":
        return 1
    d = ctx.workdir / f"{_safe(bench.name)}-calibrate"
    d.mkdir(parents=True, exist_ok=True)
    try:
        spec = worker_spec(
            side,
            side="baseline",
            slot=0,
            barrier="",
            bench=bench,
            samples=d / "samples.jsonl",
            inner_loops=1,
        )
        spec["target_iteration_ns"] = target_iteration_ns
        spec_path = d / "spec.json"
        spec_path.write_text(json.dumps(spec))
        argv = [str(side.interpreter), str(ctx.worker), "--calibrate", str(spec_path)]
        try:
            done = subprocess.run(
                argv,
                cwd=side.cwd or os.getcwd(),
                env={**os.environ, **side.env},
                capture_output=True,
                timeout=bench.timeout_s * 5,
                preexec_fn=_pin_and_drop(cpu, ctx.run_as),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise EnvironmentNotReady(
                f"{bench.name}: calibrating the python benchmark failed: {e}",
                fix="check the interpreter and the callable (run it by hand once)",
            ) from e
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip()[-STDERR_TAIL_BYTES:]
            raise EnvironmentNotReady(
                f"{bench.name}: the python benchmark failed while calibrating "
                f"(exit code {done.returncode}):\n{tail}",
                fix="fix the callable or its setup; run it by hand with the same interpreter",
            )
        for line in reversed(done.stdout.decode(errors="replace").splitlines()):
            with contextlib.suppress(json.JSONDecodeError, AttributeError, TypeError, ValueError):
                return max(1, int(json.loads(line)["inner_loops"]))
        raise EnvironmentNotReady(f"{bench.name}: the calibration printed no inner_loops")
    finally:
        _rmtree(d)


def _pin_and_drop(cpu: int, run_as: RunAs | None) -> Callable[[], None]:
    def preexec() -> None:
        os.sched_setaffinity(0, {cpu})
        if run_as is not None:
            os.setgroups(list(run_as.groups))
            os.setgid(run_as.gid)
            os.setuid(run_as.uid)

    return preexec


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60] or "benchmark"


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


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
