"""What a run's sides left, as records: each side's status and reason from its exit, its
samples and its container's usage, and the run's status named after the cause of a failure,
not its consequences."""

from __future__ import annotations

import signal
from collections.abc import Mapping

from duet_bench import units
from duet_bench.isolation import Usage
from duet_bench.plan import BenchmarkSpec
from duet_bench.results import SideName, SideRecord
from duet_bench.runner.context import Side
from duet_bench.runner.samples import read_samples, stderr_tail


def side_record(s: Side, bench: BenchmarkSpec, usage: Usage) -> SideRecord:
    """The record of a side that has exited: a limit it hit first, then a timeout, a stop
    by the supervisor, a signal, its exit code, or too few samples; else ``ok``."""
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
        reason = pids_reason(bench.pids_max)
    elif s.timed_out:
        status, limit = "timeout", "timeout"
        reason = (
            f"no barrier progress for {bench.timeout_s:g} s (hung in an iteration or never arrived)"
        )
    elif s.stopped_by is not None:
        status, reason = "failed", s.stopped_by
    elif code is not None and code < 0:
        status, reason = "failed", f"killed by {signal.Signals(-code).name}"
    elif code != 0 and samples.command_failed and samples.error:
        # The worker's own exit code says only "the command failed"; the command's exit status
        # (or signal) in the worker's message is the figure a user can act on (127: not found).
        status, reason = "failed", samples.error.removeprefix("BenchmarkFailed: ")
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
        iteration_cpus=samples.iteration_cpus,
        figures=dict(samples.figures) or None,
        runtime=runtime_of(samples.extra),
        runq_source=(
            None if samples.iteration_runq_ns is None else str(samples.extra.get("runq", "task"))
        ),
        # Crossing over, both CPUs of the pair (iteration_cpus says which ran what).
        cores=tuple(s.container.cpus),
        cpu_ns=usage.cpu_ns,
        cpu_user_ns=usage.cpu_user_ns,
        cpu_system_ns=usage.cpu_system_ns,
        peak_memory_bytes=usage.peak_memory_bytes,
        wall_ns=(s.ended_ns - s.started_ns) if s.ended_ns else None,
        exit_code=code,
        status=status,
        reason=reason,
        hit_limit=limit,
        stderr_tail=stderr_tail(s.stderr_path) if status != "ok" else None,
        missing=missing,
    )


def pids_reason(pids_max: int | None) -> str:
    """Why a side whose fork the pids controller refused failed, and how to allow more."""
    fix = "a benchmark that needs more processes raises it: --pids-limit N, or pids_limit = N"
    if pids_max is None:
        # duet set none (--pids-limit none): a parent cgroup's pids.max refused the fork, which
        # the kernel (before 6.12's hierarchical events) counts in the side's pids.events.
        return "reached the limit of processes of a cgroup above the side's (--pids-limit none)"
    return f"reached the limit of {pids_max} processes (pids.max): a fork bomb? ({fix})"


def run_status(records: Mapping[SideName, SideRecord]) -> tuple[str, str | None]:
    """The run's status and reason (``"<side>: <why>"``) from its sides' records."""
    # The cause, not the consequence: a side stopped because the other failed, or that gave up
    # waiting for it at the barrier, is not the reason.
    failed = [(n, r) for n, r in records.items() if r.status != "ok"]
    if not failed:
        return "ok", None
    consequences = ("stopped because", "stopped after waiting")
    causes = [(n, r) for n, r in failed if not (r.reason or "").startswith(consequences)]
    name, rec = (causes or failed)[0]
    status = rec.status if rec.status in ("timeout", "out-of-memory", "pids-limit") else "failed"
    return status, f"{name}: {rec.reason or status}"


def runtime_of(done_line: Mapping[str, object]) -> dict[str, object] | None:
    """What ran the side's code, from the done line of its samples file: JMH's ``jvm`` object
    (the forked JVM's path, versions and flags); None when the harness named none."""
    jvm = done_line.get("jvm")
    return {"jvm": dict(jvm)} if isinstance(jvm, Mapping) else None
