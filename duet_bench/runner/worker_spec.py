"""How a side's worker is started: its spec (docs/architecture.md, "Worker spec"), its argv and
environment, and the harness files (duet_bench/harness/) installed where every side can read
them."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duet_bench.files import create_new
from duet_bench.isolation.privileges import allowed_environment
from duet_bench.plan import BenchmarkSpec, SideSpec
from duet_bench.results import SideName
from duet_bench.runner.paths import HARNESS_DIR, WORKER

if TYPE_CHECKING:  # only types: context.py does not import this module
    from duet_bench.runner.context import RunnerContext, Side


def worker_spec(
    spec: SideSpec,
    *,
    side: SideName,
    slot: int,
    barrier: str,
    bench: BenchmarkSpec,
    samples: Path,
    inner_loops: int,
    pressure: str | None = None,
    cpus: tuple[int, ...] | None = None,
    tasks: str | None = None,
) -> dict[str, Any]:
    """The worker spec of docs/architecture.md for one side of one run. ``pressure`` is the
    side's ``cpu.pressure`` file (:attr:`Container.pressure_file`), given to a command.
    Crossing over, ``cpus`` are the CPUs the side's waits move it to in turn and ``tasks`` the
    file listing its threads (:attr:`Container.threads_file`; None: the worker's own)."""
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
    if cpus is not None:
        out["cpus"] = list(cpus)
        if tasks is not None:
            out["tasks"] = tasks
    if spec.kind == "command":
        out.update(command=spec.command, shell="/bin/sh")
        if spec.output is not None:
            out["output"] = spec.output
        if pressure is not None:
            out["pressure"] = pressure
    elif spec.kind == "python":
        out.update(
            callable=spec.callable,
            setup=spec.setup,
            sys_path=list(spec.sys_path),
            inner_loops=inner_loops,
        )
    return out


def argv_and_env(
    spec: SideSpec, side: Side, wspec: Mapping[str, Any], ctx: RunnerContext
) -> tuple[list[str], dict[str, str]]:
    # An allow-list: the CI's tokens and the rest stay with duet (docs/isolation.md, "The
    # environment of builds and sides").
    env = allowed_environment(os.environ, ctx.keep_env)
    env = env if ctx.run_as is None else ctx.run_as.environment(env)
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
        # Never inherited: only the runner says whether and where a side crosses over.
        env.pop("DUET_CPUS", None)
        env.pop("DUET_TASKS", None)
        if "cpus" in wspec:
            env["DUET_CPUS"] = ",".join(str(c) for c in wspec["cpus"])
            if "tasks" in wspec:
                env["DUET_TASKS"] = str(wspec["tasks"])
        assert spec.command is not None
        return ["/bin/sh", "-c", "exec " + spec.command], env
    spec_path = side.directory / "spec.json"
    # The side's directory is its user's: never write through a name planted there.
    with open(create_new(spec_path), "w", encoding="utf-8") as f:
        f.write(json.dumps(wspec))
    python = ctx.worker_python if spec.kind == "command" else str(spec.interpreter)
    return [python, str(ctx.worker), str(spec_path)], env


def install_harness(workdir: Path) -> Path:
    """Copy every harness file (``duet_*.py`` of duet_bench/harness/: the worker, the barrier
    client, the pytest driver, the parsers of benchmark tools' output, ...) into one directory of
    the work directory, world-readable, so the sides can run them whatever user they run as and
    wherever duet is installed; return the worker script in it.

    Every ``duet_*.py``, not a list: a harness file added beside the worker is installed
    without editing the runner (the worker imports its siblings from its own directory).
    """
    target = workdir / "harness"
    target.mkdir(mode=0o755, exist_ok=True)
    for source in sorted(HARNESS_DIR.glob("duet_*.py")):
        shutil.copyfile(source, target / source.name)
        os.chmod(target / source.name, 0o644)
    return target / WORKER.name
