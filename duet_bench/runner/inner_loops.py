"""The inner-loop calibration of python benchmarks: how many calls make one iteration long
enough to time, measured once per benchmark before its runs."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
from collections.abc import Callable, Mapping

from duet_bench.errors import EnvironmentNotReady
from duet_bench.isolation import RunAs
from duet_bench.isolation.pidns import prepare_pid_namespace
from duet_bench.isolation.privileges import allowed_environment
from duet_bench.isolation.sandbox import pid_namespaces_available
from duet_bench.plan import BenchmarkSpec
from duet_bench.runner.context import RunnerContext, remove_tree, safe_name
from duet_bench.runner.paths import working_directory
from duet_bench.runner.samples import STDERR_TAIL_BYTES
from duet_bench.runner.worker_spec import worker_spec


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
    d = ctx.workdir / f"{safe_name(bench.name)}-calibrate"
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
                cwd=side.cwd or working_directory(),
                env=_environment(side.env, ctx),
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
        remove_tree(d)


def _environment(side_env: Mapping[str, str], ctx: RunnerContext) -> dict[str, str]:
    """As a side's (``worker_spec.argv_and_env``): the allow-list, the user's identity, the
    side's own variables; the python benchmark is the pull request's code."""
    env = allowed_environment(os.environ, ctx.keep_env)
    env = env if ctx.run_as is None else ctx.run_as.environment(env)
    return {**env, **side_env}


def _pin_and_drop(cpu: int, run_as: RunAs | None) -> Callable[[], None]:
    """Pin to ``cpu``; as root, enter a PID namespace with its own ``/proc`` (the callable is
    the pull request's code: it sees no other process, and what it leaves ends with it); drop
    to ``run_as``. Between fork and exec: only system calls on what is prepared here."""
    pids = (
        prepare_pid_namespace(own_mount_namespace=True, keep_leftovers=False)
        if pid_namespaces_available()
        else None
    )
    drop = None if run_as is None else functools.partial(_drop, run_as)

    def preexec() -> None:
        os.sched_setaffinity(0, {cpu})
        if pids is not None:
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
            pids.enter(drop)  # returns in the program only, every signal blocked
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if drop is not None:
            drop()

    return preexec


def _drop(run_as: RunAs) -> None:
    os.setgroups(list(run_as.groups))
    os.setgid(run_as.gid)
    os.setuid(run_as.uid)
