"""One invocation that measures: isolation, the core pair, the environment, every benchmark's
runs, and the results file rewritten after every run.

``duet run``, ``duet compare``, ``duet calibrate`` and ``duet demo`` all measure through
:func:`measure`. Whatever stops it (a finished suite, a failure, SIGINT or SIGTERM), the results
file is valid afterwards and says where it stopped, and nothing is left behind: no process,
cgroup, barrier file or work directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duet_bench import __version__
from duet_bench.analysis.stopping import check_continuation
from duet_bench.environment import capture_environment, load_average
from duet_bench.errors import BenchmarkFailed, UsageError
from duet_bench.isolation import Backend, select_backend
from duet_bench.isolation.leftovers import remove_stale_files as remove_stale_files
from duet_bench.isolation.sandbox import side_isolation
from duet_bench.lock import acquire as acquire_lock
from duet_bench.plan import BenchmarkSpec
from duet_bench.progress import Progress, say
from duet_bench.results import ResultsDocument, load_given
from duet_bench.results.write import ResultsWriter, now
from duet_bench.runner import (
    RunnerContext,
    install_harness,
    worker_python_for,
)
from duet_bench.session.benchmark import STDERR_LINES_SHOWN as STDERR_LINES_SHOWN
from duet_bench.session.benchmark import Measuring
from duet_bench.session.benchmark import failure_details as failure_details
from duet_bench.session.benchmark import warn as _warn
from duet_bench.session.options import SessionOptions
from duet_bench.session.until_decided import Budget, measure_in_rounds
from duet_bench.topology import choose_pair, read_topology

if TYPE_CHECKING:  # at run time imported by the steps that use them, as they were
    from duet_bench.topology import CorePair, Topology

log = logging.getLogger(__name__)

#: Work directories live here, not under /tmp: a side's sandbox replaces /tmp.
WORK_ROOT = "/var/tmp"
BARRIER_DIR = "/dev/shm"


def _load_average_now() -> list[float] | None:
    with contextlib.suppress(OSError, ValueError):
        return list(load_average())
    return None


def measure(
    benchmarks: Sequence[BenchmarkSpec],
    options: SessionOptions,
    *,
    versions: Mapping[str, Any] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> ResultsDocument:
    """Measure every benchmark, writing ``options.out`` after every run; return the analysed
    document. Failed runs are recorded, not raised: :func:`broken_benchmarks` tells the caller
    which benchmarks failed beyond ``max_failures`` once it has written its reports."""
    # Not progress: what we removed is said even with --quiet.
    note = on_note or (say if options.progress else _warn)
    with _machine_to_ourselves(options) as backend:
        _remove_leftovers(backend, note)
        topology, pair = _core_pair(options)
        environment = _environment(topology, pair, backend, options)
        doc = _first_document(environment, options, versions, benchmarks)
        writer = ResultsWriter(options.out, doc, planned=[(b.name, b.runs) for b in benchmarks])
        # Made here so that its clock (the time left it shows) starts with the runs, not with
        # the wait for the lock.
        progress = Progress(sum(b.runs for b in benchmarks), label="duet", enabled=options.progress)
        with _work_directory() as workdir:
            ctx = _runner_context(backend, workdir, options, progress)
            _measure_all(benchmarks, writer, ctx, pair.cpus, options, progress)
        environment["load_average_after"] = _load_average_now()
        return writer.finish(environment)


def continuing(options: SessionOptions, source: str, bench: BenchmarkSpec) -> SessionOptions:
    """``options`` extended by the measurement of ``bench`` in ``source`` (``duet run
    --continue``), after :func:`duet_bench.analysis.stopping.check_continuation` has found it
    the same rule."""
    doc = load_given(source)
    earlier = next((b for b in doc.benchmarks if b.name == bench.name), None)
    if earlier is None:
        names = ", ".join(repr(b.name) for b in doc.benchmarks) or "none"
        raise UsageError(
            f"--continue {source}: it holds no benchmark {bench.name!r} (it holds {names})",
            fix="give the same commands (and --name) as the measurement you continue",
        )
    check_continuation(
        earlier,
        plan=replace(bench.recorded(), seed=options.seed, analysis=options.analysis.to_record()),
        versions={"baseline": bench.baseline.describe(), "candidate": bench.candidate.describe()},
        design=bench.until_decided,
        source=f"--continue {source}",
    )
    return replace(options, earlier={bench.name: earlier})


@contextlib.contextmanager
def _machine_to_ourselves(options: SessionOptions) -> Iterator[Backend]:
    """The measuring lock (one duet measures at a time on this machine, from the first cgroup
    to the last run), then the isolation backend; both released whatever happens."""
    before = _signature(options.out)
    lock = acquire_lock(wait=options.wait, timeout=options.wait_timeout)
    if options.wait and _signature(options.out) != before:
        lock.release()
        raise UsageError(
            f"--out {options.out} was written by another duet while this one waited for it: "
            "measuring would overwrite its results",
            fix="give each duet that queues with --wait its own --out "
            "(e.g. --out results-$CI_JOB_ID.json)",
        )
    try:
        backend = select_backend(options.isolation)
    except BaseException:
        lock.release()
        raise
    try:
        yield backend
    finally:
        try:
            backend.close()
        finally:
            lock.release()


def _signature(path: Path) -> tuple[int, int, int] | None:
    """Which file ``path`` is and when it last changed, or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _remove_leftovers(backend: Backend, note: Callable[[str], None]) -> None:
    """Remove what an earlier duet that did not finish left: cgroups, barrier files, work
    directories; say so."""
    leftovers = (
        backend.cleanup_stale() + remove_stale_files(BARRIER_DIR) + remove_stale_files(WORK_ROOT)
    )
    if leftovers:
        note(
            "removed what an earlier duet that did not finish left behind: "
            + ", ".join(leftovers[:5])
            + (f" and {len(leftovers) - 5} more" if len(leftovers) > 5 else "")
        )


def _core_pair(options: SessionOptions) -> tuple[Topology, CorePair]:
    """The machine's topology and the two CPUs the sides run on; we move off them when the
    machine has a third CPU."""
    topology = read_topology()
    pair = choose_pair(topology, override=options.cores)
    if pair.orchestrator_cpus:
        os.sched_setaffinity(0, set(pair.orchestrator_cpus))
    for text in pair.notes:
        log.info("%s", text)
    return topology, pair


def _environment(
    topology: Topology, pair: CorePair, backend: Backend, options: SessionOptions
) -> dict[str, Any]:
    """The environment record of docs/statistics.md, method 7, with the user the sides run as."""
    environment = dict(capture_environment(topology=topology, pair=pair, isolation=backend.level))
    environment["run_as"] = options.run_as.describe() if options.run_as else None
    environment["side_isolation"] = side_isolation(
        backend.level, share_network=options.share_network
    )
    return environment


def _first_document(
    environment: Mapping[str, Any],
    options: SessionOptions,
    versions: Mapping[str, Any] | None,
    benchmarks: Sequence[BenchmarkSpec],
) -> ResultsDocument:
    """The document before the first run: no benchmark yet but those continued, as they were
    (its state is the writer's)."""
    doc = ResultsDocument(
        benchmarks=(),
        tool={"name": "duet-bench", "version": __version__},
        created=now(),
        environment=environment,
        config={**options.config, **({"versions": dict(versions)} if versions else {})},
    )
    # Continued (--continue): the earlier runs are in the file from the start, so that an
    # interruption before the first new run loses none of them.
    for bench in benchmarks:
        if bench.name in options.earlier:
            doc = doc.with_benchmark(options.earlier[bench.name])
    return doc


@contextlib.contextmanager
def _work_directory() -> Iterator[Path]:
    """This invocation's private work directory (see :data:`WORK_ROOT`), removed afterwards."""
    workdir = Path(tempfile.mkdtemp(prefix=f"duet-{os.getpid()}-", dir=WORK_ROOT))
    try:
        os.chmod(workdir, 0o755)
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _runner_context(
    backend: Backend, workdir: Path, options: SessionOptions, progress: Progress
) -> RunnerContext:
    """What every run shares, the harness installed in ``workdir`` for the sides."""
    return RunnerContext(
        backend=backend,
        workdir=workdir,
        share_network=options.share_network,
        run_as=options.run_as,
        worker=install_harness(workdir),
        worker_python=worker_python_for(options.run_as),
        on_iterations=progress.advance if options.progress else None,
        keep_env=options.keep_env,
    )


def _measure_all(
    benchmarks: Sequence[BenchmarkSpec],
    writer: ResultsWriter,
    ctx: RunnerContext,
    pair: tuple[int, int],
    options: SessionOptions,
    progress: Progress,
) -> None:
    """The benchmarks of a fixed design one after the other, then those measured until decided
    together, round by round (:mod:`duet_bench.session.until_decided`), each run written by
    ``writer``. Whatever stops it (a failure, SIGINT, SIGTERM), the document as last written
    (the runs of every benchmark in progress included) is saved with where it stopped, and the
    error goes on."""
    where = ["before the first run"]

    def at(name: str) -> None:
        where[0] = f"while measuring {name!r}"

    try:
        rounds = []
        for bench in benchmarks:
            at(bench.name)
            measuring = Measuring(bench, ctx, pair, options, progress, writer)
            if bench.until_decided is None:
                measuring.run_all()
                measuring.finish()
            else:
                rounds.append(measuring)
        measure_in_rounds(rounds, Budget.of(benchmarks), at)
        for measuring in rounds:
            measuring.finish()
    except BaseException as e:
        reason = getattr(e, "message", None) or type(e).__name__
        writer.stop(f"{reason} {where[0]}")
        raise


def broken_benchmarks(doc: ResultsDocument, max_failures: int | None) -> list[str]:
    """One sentence per benchmark that had no successful run or more failed runs than allowed."""
    broken = []
    for b in doc.benchmarks:
        if not b.runs:
            continue  # not measured on purpose (e.g. missing in one version): reported by its note
        failed = sum(1 for r in b.runs if not r.ok)
        if not b.ok_runs():
            first = b.note or next((r.reason for r in b.runs if r.reason), "no run")
            broken.append(f"{b.name}: no successful run ({first})")
        elif max_failures is not None and failed > max_failures:
            broken.append(
                f"{b.name}: {failed} failed runs (more than --max-failures {max_failures})"
            )
    return broken


def raise_if_broken(
    doc: ResultsDocument, max_failures: int | None, *, missing: Sequence[str] = ()
) -> None:
    """Raise :class:`BenchmarkFailed` (exit 3) when :func:`broken_benchmarks` finds any, or
    when ``missing`` names benchmarks that one version does not have (``duet compare``)."""
    broken = broken_benchmarks(doc, max_failures)
    if broken:
        statuses = {r.status for b in doc.benchmarks for r in b.runs if not r.ok}
        limits = {
            "timeout": "--timeout (seconds per iteration)",
            "out-of-memory": "--memory-limit",
            "pids-limit": "--pids-limit",
        }
        raise_ = [limits[s] for s in sorted(statuses) if s in limits]
        fix = (
            "each failed run's cause and the end of its stderr are above (all of it in the "
            "results file: stderr_tail of each side); "
        )
        if raise_ and statuses <= limits.keys():
            fix += f"if the benchmark is right, raise {' or '.join(raise_)}"
        else:
            fix += (
                "fix what that cause names (run the benchmark's command by hand in the "
                "version's directory to see it fail)"
            )
            fix += f", or raise {' or '.join(raise_)}" if raise_ else ""
        raise BenchmarkFailed("; ".join(broken), fix=fix)
    if missing:
        raise BenchmarkFailed(
            f"{', '.join(missing)}: missing in the baseline's configuration, so not measured "
            "(the other benchmarks were measured and reported)",
            fix="a benchmark added by this change has nothing to compare against: pass "
            "--allow-missing to accept that (the verdicts of the others decide the exit code)",
        )
