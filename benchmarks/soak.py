"""Soak: one long invocation of many runs, watching the orchestrator for leaks (reliability issue).

One benchmark of ``--runs`` runs (200) with ``--iterations`` short iterations each (1,000 of
about ``--iteration-us`` µs: the native integer workload of ``benchmarks/workloads/``, the
candidate doing ``--slowdown`` more work), measured through ``duet_bench.session.measure`` in this
process, so the orchestrator is this process. After every run
(``duet_bench.runner.run.measure_run`` is wrapped) it records:

- the resident set size (``VmRSS``) and the open file descriptors (``/proc/self/fd``), after a
  ``gc.collect()`` and a ``malloc_trim(0)`` so that memory the allocator merely keeps does not
  look like a leak;
- Python's allocated blocks (``sys.getallocatedblocks``) and the wall time of the run, which
  includes rewriting the results file.

The document legitimately grows with every run (it holds every sample); ``held_mib`` is an
estimate of what the samples take as Python objects, so growth beyond it is what a leak would be.
Then a short measurement (``--short-runs`` runs, same benchmark) gives the verdict to compare.
Failed runs are counted with their reasons (none should happen: nothing here causes one), and
whatever the soak left behind (cgroups, barrier files, work directories of this pid) is listed.

``--noise`` runs everything under the reference interference generator
(``benchmarks/noise/``, one hog per CPU on an on/off schedule).

Run: ``python benchmarks/soak.py [--runs 200] [--iterations 1000] [--noise] [--json PATH]``
(as root for cgroup isolation). It takes the machine-wide measuring lock with ``wait``: it
queues behind a duet that is measuring instead of disturbing it.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import glob
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import noise  # noqa: E402
import workloads  # noqa: E402

import duet_bench.runner.run  # noqa: E402
from duet_bench.lock import acquire as acquire_lock  # noqa: E402
from duet_bench.plan import BenchmarkSpec, SideSpec  # noqa: E402
from duet_bench.results import ResultsDocument  # noqa: E402
from duet_bench.session import MachineOptions, SessionOptions, measure  # noqa: E402

MiB = 1024 * 1024


def _libc_trim() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def probe() -> dict[str, float]:
    """The orchestrator's (our) memory and descriptors right now."""
    gc.collect()
    _libc_trim()
    rss_kib = 0
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
    return {
        "rss_mib": rss_kib / 1024,
        "fds": len(os.listdir("/proc/self/fd")),
        "blocks": sys.getallocatedblocks(),
        "threads": len(os.listdir("/proc/self/task")),
    }


class RunProbe:
    """Wraps ``duet_bench.runner.run.measure_run`` (which ``measure_benchmark``, in the same
    module, looks up at every call) to probe after every run."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self._original = duet_bench.runner.run.measure_run
        self._last = time.monotonic()

    def __enter__(self) -> RunProbe:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            record = self._original(*args, **kwargs)
            now = time.monotonic()
            # The previous run's wall time includes writing the results after it.
            row = {"run_s": now - self._last, **probe(), "ok": float(record.ok)}
            self._last = now
            self.rows.append(row)
            return record

        duet_bench.runner.run.measure_run = wrapped  # type: ignore[assignment]
        self._last = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        duet_bench.runner.run.measure_run = self._original  # type: ignore[assignment]


def held_mib(doc: ResultsDocument) -> float:
    """What the samples of ``doc`` take as Python objects (tuples of ints), in MiB."""
    total = 0
    for bench in doc.benchmarks:
        for run in bench.runs:
            for side in (run.baseline, run.candidate):
                for values in (side.iterations_ns, side.warmup_ns, side.iteration_start_ns or ()):
                    total += sys.getsizeof(values) + sum(sys.getsizeof(v) for v in values)
    return total / MiB


def leftovers(pid: int) -> list[str]:
    prefix = f"duet-{pid}-"
    found = glob.glob(f"/dev/shm/{prefix}*") + glob.glob(f"/var/tmp/{prefix}*")
    for dirpath, dirnames, _ in os.walk("/sys/fs/cgroup"):
        found += [os.path.join(dirpath, d) for d in dirnames if d.startswith(prefix)]
        if dirpath.count("/") > 6:
            dirnames.clear()
    return sorted(found)


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def benchmark(
    name: str, runs: int, iterations: int, warmup: int, ops: int, slowdown: float
) -> BenchmarkSpec:
    def side(n: int) -> SideSpec:
        return SideSpec(kind="native", command=workloads.command("integer", n))

    return BenchmarkSpec(
        name=name,
        baseline=side(ops),
        candidate=side(round(ops * (1 + slowdown))),
        runs=runs,
        iterations=iterations,
        warmup=warmup,
        timeout_s=30,
    )


def summary(doc: ResultsDocument) -> dict[str, Any]:
    bench = doc.benchmarks[0]
    analysis = {} if bench.analysis is None else bench.analysis.to_dict()
    failed = [f"run {r.index}: {r.status}: {r.reason}" for r in bench.runs if not r.ok]
    return {
        "runs": len(bench.runs),
        "failed": failed,
        "verdict": analysis.get("verdict"),
        "ratio": analysis.get("ratio"),
        "ci": [analysis.get("ci_low"), analysis.get("ci_high")],
        "isolation": doc.environment.get("isolation"),
        "complete": doc.state.get("complete"),
    }


def spread(rows: list[dict[str, float]], key: str) -> dict[str, float]:
    values = [r[key] for r in rows]
    first = values[: max(1, len(values) // 10)]
    last = values[-max(1, len(values) // 10) :]
    return {
        "start": values[0],
        "end": values[-1],
        "max": max(values),
        "min": min(values),
        "first_tenth_mean": sum(first) / len(first),
        "last_tenth_mean": sum(last) / len(last),
    }


@contextlib.contextmanager
def maybe_noise(enabled: bool) -> Iterator[dict[str, object]]:
    if not enabled:
        yield {}
        return
    # Bounded by the generator itself even if we are killed: an hour is far more than needed.
    with noise.Noise(duration=3600, seed=1) as generator:
        yield dict(generator.info)


def soak(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The soak and the short run; every figure, per-run rows included."""
    ops = workloads.calibrate("integer", args.iteration_us / 1000.0)
    figures: dict[str, Any] = {
        "command": command,
        "runs": args.runs,
        "iterations": args.iterations,
        "warmup": args.warmup,
        "iteration_us": args.iteration_us,
        "ops": ops,
        "slowdown": args.slowdown,
        "noise": args.noise,
        "load_average_before": load_average(),
        "nproc": os.cpu_count(),
    }
    print(f"soak: {json.dumps(figures)}", file=sys.stderr)
    before = probe()
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="soak-", dir="/var/tmp") as tmp,
        maybe_noise(args.noise) as info,
    ):
        figures["noise_info"] = info
        soak_bench = benchmark("soak", args.runs, args.iterations, args.warmup, ops, args.slowdown)
        options = SessionOptions(
            out=Path(tmp) / "soak.json",
            machine=MachineOptions(progress=True, wait=True),
            config={"soak": True},
        )
        with RunProbe() as runs:
            doc = measure([soak_bench], options)
        figures["soak_s"] = round(time.monotonic() - started, 1)
        figures["load_average_after_soak"] = load_average()
        after = probe()
        short_bench = benchmark(
            "short", args.short_runs, args.iterations, args.warmup, ops, args.slowdown
        )
        short = measure(
            [short_bench],
            SessionOptions(
                out=Path(tmp) / "short.json", machine=MachineOptions(progress=False, wait=True)
            ),
        )
        results_mib = (Path(tmp) / "soak.json").stat().st_size / MiB
    figures["load_average_after"] = load_average()
    figures["soak"] = summary(doc)
    figures["short"] = summary(short)
    figures["same_verdict"] = figures["soak"]["verdict"] == figures["short"]["verdict"]
    figures["orchestrator"] = {
        "before_soak": before,
        "after_soak": after,
        "rss_mib": spread(runs.rows, "rss_mib"),
        "fds": spread(runs.rows, "fds"),
        "threads": spread(runs.rows, "threads"),
        "allocated_blocks": spread(runs.rows, "blocks"),
        "run_s": spread(runs.rows, "run_s"),
        "samples_held_mib": round(held_mib(doc), 1),
        "results_file_mib": round(results_mib, 1),
    }
    figures["per_run"] = runs.rows
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--short-runs", type=int, default=10)
    parser.add_argument("--iteration-us", type=float, default=100.0)
    parser.add_argument(
        "--slowdown",
        type=float,
        default=0.20,
        help="the candidate's extra work: large enough that a short run's verdict is certain",
    )
    parser.add_argument("--noise", action="store_true", help="run under benchmarks/noise/")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    command = " ".join(["python", "benchmarks/soak.py", *(sys.argv[1:] if argv is None else argv)])

    logging.basicConfig(level=logging.WARNING, format="soak: %(levelname)s: %(message)s")
    # Ours for the whole soak, noise included: the noise must not disturb another duet's
    # measurement, and no other duet may measure between the soak and the short run.
    with acquire_lock(wait=True, command=command):
        figures = soak(args, command)
    figures["left_behind"] = leftovers(os.getpid())
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    shown = {k: v for k, v in figures.items() if k != "per_run"}
    print(json.dumps(shown, indent=1))
    ok = not figures["soak"]["failed"] and not figures["left_behind"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
