"""The duet worker: runs one side of a run for ``command`` and ``python`` benchmarks.

Executed by path with the version's own interpreter (Python >= 3.8, standard library only, never
imports ``duet_bench``)::

    python duet_worker.py SPEC.json              # a run: warmup + iterations, at the barrier
    python duet_worker.py --calibrate SPEC.json  # prints {"inner_loops": N, "per_call_ns": X}

This file is the entry point: it reads the spec, opens the samples file, attaches to the
barrier, hands the side to its kind and turns what went wrong into an exit code. The rest are
harness files beside it, each with one job:

- ``duet_spec.py``: the worker spec, read and checked;
- ``duet_samples.py``: the samples file (one line per iteration, the error and done lines) and
  the readers of a line's figures (CPU time, run-queue delay, context switches);
- ``duet_command.py``: the ``command`` kind, plain or with ``"output"`` (suite adapters);
- ``duet_python.py``: the ``python`` kind, plain or through a driver (``duet_pytest.py``), its
  one timed loop, and the calibration of inner loops;
- ``duet_barrier.py``: the barrier client; ``duet_outputs.py``: the parsers of benchmark tools'
  output.

The worker spec and the samples file are described in ``docs/architecture.md``; the barrier in
``docs/barrier-protocol.md``. Every iteration starts right after leaving the barrier
(``start_ns``), and its line is appended and flushed before the next wait, so a crash never loses
a measured iteration. ``runq_ns`` and ``nivcsw`` are left out of a sample line when the kernel
does not provide them (no ``/proc/<pid>/schedstat`` without ``CONFIG_SCHED_INFO``).

Exit codes (the runner's contract):

0. every iteration done, ``{"done": true, ...}`` written
2. usage: bad arguments, an invalid spec, a samples file that cannot be written
3. the benchmark failed: the command exited non-zero or was killed by a signal, or the
   callable, its setup or its import raised (the worker aborts the barrier, reason
   ``PARTY_FAILED``, so the other side stops at once)
4. a barrier wait timed out (the worker aborts the barrier, reason ``PARTY_TIMEOUT``)
5. the barrier was aborted by someone else (the orchestrator or the other side)
6. the barrier file cannot be used (missing, malformed, another protocol version, slot taken)

Every failure writes ``{"error": "Type: message"}`` to the samples file when it is open, and
the traceback or the message to stderr. The error line of a command that exited non-zero also
has ``"exit_status"`` (its exit status), of a command a signal killed ``"signal"`` (the signal
number).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from typing import TYPE_CHECKING, Any

# The exit codes of the docstring, defined here only: duet's runner imports them
# (duet_bench.runner.supervise) from this file as a module of duet's package, which then loads
# no other harness file and leaves sys.path alone (the imports below run when the worker runs).
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_FAILED = 3
EXIT_TIMEOUT = 4
EXIT_ABORTED = 5
EXIT_BARRIER = 6

#: This file's directory: the harness files beside it.
HARNESS_DIRECTORY = os.path.dirname(os.path.realpath(__file__))

if TYPE_CHECKING:  # the type checker sees the files where they lie in the duet source tree
    from duet_bench.harness import (
        duet_barrier,
        duet_command,
        duet_python,
        duet_samples,
        duet_spec,
    )
elif __name__ == "__main__":
    # Our own files first while the worker imports them, so that a module of the same name
    # elsewhere on sys.path (PYTHONPATH, site-packages) cannot stand in for one of them.
    sys.path.insert(0, HARNESS_DIRECTORY)
    import duet_barrier
    import duet_command
    import duet_python
    import duet_samples
    import duet_spec


def _harness_directory_last() -> None:
    """Put the harness directory at the END of sys.path, and forget our modules' names.

    Run as a script, Python puts the script's directory first on sys.path, where it would shadow
    the benchmarked code's own modules. Our modules are imported by now (the worker keeps them);
    their names leave ``sys.modules`` so that the benchmarked code's ``import duet_spec`` finds
    its own module of that name, and a later import of ours (``duet_pytest:run``) still finds
    the harness directory, last.
    """
    here = HARNESS_DIRECTORY
    sys.path[:] = [p for p in sys.path if not p or os.path.realpath(p) != here]
    sys.path.append(here)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        ours = file and os.path.dirname(os.path.realpath(file)) == here
        if ours and "." not in name and name not in ("__main__", __name__):
            del sys.modules[name]


if __name__ == "__main__":
    _harness_directory_last()


# -- entry points ------------------------------------------------------------------------------


def run(spec_path: str) -> int:
    """One side of one run; returns the exit code."""
    samples: duet_samples.Samples | None = None
    try:
        try:
            spec = duet_spec.load_spec(spec_path)
        except duet_spec.SpecError as e:
            # Said in the samples file too when the spec names one, for the runner to read.
            named = duet_spec.read_samples_path(spec_path)
            if named is not None:
                with contextlib.suppress(OSError):
                    samples = duet_samples.Samples(*named)
                    samples.write(duet_samples.error_line(e))
            print(f"duet_worker: {e}", file=sys.stderr)
            return EXIT_USAGE
        try:
            samples = duet_samples.Samples(spec["samples"], spec["side"])
        except OSError as e:
            print(f"duet_worker: cannot write the samples file: {e}", file=sys.stderr)
            return EXIT_USAGE
        return _run_attached(spec, samples)
    finally:
        if samples is not None:
            samples.close()


def _run_kind(
    spec: dict[str, Any], barrier: duet_barrier.Barrier, samples: duet_samples.Samples
) -> dict[str, Any]:
    """Every iteration of the side, by its kind; returns the ``done`` line."""
    if spec["kind"] == "command":
        how = (duet_command.run_command_output if spec.get("output") else duet_command.run_command)(
            spec, barrier, samples
        )
        return {"done": True, "inner_loops": 1, **how}
    function, args = duet_python.prepare_python(spec)
    if duet_python.is_driver(function):
        inner_loops = duet_python.run_driver(spec, barrier, samples, function, args)
    else:
        duet_python.run_python(spec, barrier, samples, function, args)
        inner_loops = spec.get("inner_loops", 1)
    return {"done": True, "inner_loops": inner_loops}


def _place(spec: dict[str, Any], barrier: duet_barrier.Barrier) -> None:
    """Crossover (spec ``"cpus"``): every wait moves the side to its next CPU. Else the side
    stays where the runner pinned it; its one CPU, when it has one, is recorded per iteration."""
    if spec.get("cpus"):
        barrier.cross(spec["cpus"], spec.get("tasks"))
        return
    pinned = os.sched_getaffinity(0)
    if len(pinned) == 1:
        barrier.cpu = next(iter(pinned))


def _run_attached(spec: dict[str, Any], samples: duet_samples.Samples) -> int:
    try:
        barrier = duet_barrier.attach(spec["barrier"], spec["slot"])
    except (duet_barrier.BarrierError, OSError) as e:
        samples.write(duet_samples.error_line(e))
        print(f"duet_worker: cannot use the barrier: {e}", file=sys.stderr)
        return EXIT_BARRIER
    try:
        _place(spec, barrier)
        samples.write(_run_kind(spec, barrier, samples))
        return EXIT_OK
    except duet_barrier.BarrierTimeout as e:
        barrier.abort(duet_barrier.REASON_PARTY_TIMEOUT)
        return _failed(samples, e, EXIT_TIMEOUT, with_traceback=False)
    except duet_barrier.BarrierAborted as e:
        return _failed(samples, e, EXIT_ABORTED, with_traceback=False)
    except duet_barrier.BarrierError as e:
        barrier.abort(duet_barrier.REASON_PARTY_FAILED)
        return _failed(samples, e, EXIT_BARRIER, with_traceback=False)
    except duet_samples.BenchmarkFailed as e:
        barrier.abort(duet_barrier.REASON_PARTY_FAILED)
        return _failed(samples, e, EXIT_FAILED, with_traceback=False)
    except (Exception, SystemExit) as e:
        # The benchmarked code raised (or called sys.exit): a failure of the benchmark.
        barrier.abort(duet_barrier.REASON_PARTY_FAILED)
        return _failed(samples, e, EXIT_FAILED, with_traceback=True)
    except KeyboardInterrupt as e:
        barrier.abort(duet_barrier.REASON_ORCHESTRATOR)
        _failed(samples, e, EXIT_FAILED, with_traceback=False)
        raise
    finally:
        barrier.close()


def _failed(
    samples: duet_samples.Samples, error: BaseException, code: int, with_traceback: bool
) -> int:
    with contextlib.suppress(OSError, ValueError):
        samples.write(duet_samples.error_line(error))
    if with_traceback:
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    else:
        print(f"duet_worker: {duet_samples.error_text(error)}", file=sys.stderr)
    return code


def calibrate(spec_path: str) -> int:
    """Print {"inner_loops": N, "per_call_ns": X}: the smallest N found whose loop takes at
    least the target iteration time (spec "target_iteration_ns", 10 ms by default), capped at
    "max_inner_loops" (10 million by default)."""
    try:
        spec = duet_spec.load_spec(spec_path, calibrate=True)
        target, cap = duet_spec.calibration_limits(spec)
    except duet_spec.SpecError as e:
        print(json.dumps({"error": duet_samples.error_text(e)}))
        print(f"duet_worker: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        function, args = duet_python.prepare_python(spec)
        n, elapsed = duet_python.calibrate(function, args, target, cap)
    except (Exception, SystemExit) as e:
        print(json.dumps({"error": duet_samples.error_text(e)}))
        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps({"inner_loops": n, "per_call_ns": elapsed / n}))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--calibrate":
        return calibrate(args[1])
    if len(args) == 1 and not args[0].startswith("-"):
        return run(args[0])
    print("usage: duet_worker.py SPEC.json | duet_worker.py --calibrate SPEC.json", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
