"""The ``python`` kind: import the callable and time its calls under the barrier, plainly or
through a driver; and calibrate how many calls make an iteration.

Part of the worker (``duet_worker.py``), inside the measured environment: standard library
only, Python >= 3.8, run by the version's own interpreter.

- Plain: ``spec["sys_path"]`` is prepended to ``sys.path``, ``callable`` (``module:function``,
  the function may be a dotted attribute path) imported, ``setup`` called once before the first
  wait (its value, unless None, is passed to every call), then the callable is called
  ``inner_loops`` times per iteration. ``cpu_ns`` is the worker's process CPU time over the
  iteration (every thread); ``runq_ns`` the run-queue delay of the calling thread
  (``/proc/thread-self/schedstat``); ``nivcsw`` the process's involuntary context switches.
- With a *driver*: a callable marked ``duet_driver = True`` (``duet_pytest:run``, which runs
  one pytest-benchmark test) is called once with a ``measure`` function instead of being timed
  itself; it calls ``measure(function, args, kwargs, setup, teardown)`` once, and that runs the
  warm-up and measured iterations of ``function`` under the barrier exactly like a plain
  callable (``inner_loops`` calls per iteration) and returns the last call's result. ``setup``,
  when given, is called before each wait, once per call, and returns that call's ``(args,
  kwargs)``; ``teardown(*args, **kwargs)`` runs after the clock stopped. Whatever the driver
  does around the call (pytest's fixtures) stays outside the measured iterations.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type checker sees the file where it lies in the duet source tree
    from duet_bench.harness import duet_barrier, duet_samples
else:
    import duet_barrier
    import duet_samples

BenchmarkFailed = duet_samples.BenchmarkFailed

#: The attribute that marks a callable as a driver.
DRIVER_ATTRIBUTE = "duet_driver"


def _resolve(name: str) -> Callable[..., Any]:
    module_name, _, attribute = name.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{name} is not callable ({type(target).__name__})")
    return target  # type: ignore[no-any-return]


def prepare_python(spec: dict[str, Any]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Import the callable (and run the setup once); return the function and its arguments."""
    sys.path[0:0] = spec.get("sys_path", [])
    function = _resolve(spec["callable"])
    args: tuple[Any, ...] = ()
    if spec.get("setup"):
        value = _resolve(spec["setup"])()
        if value is not None:
            args = (value,)
    return function, args


def is_driver(function: Callable[..., Any]) -> bool:
    return getattr(function, DRIVER_ATTRIBUTE, False) is True


def run_python(
    spec: dict[str, Any],
    barrier: duet_barrier.Barrier,
    samples: duet_samples.Samples,
    function: Callable[..., Any],
    args: tuple[Any, ...],
) -> None:
    """Every iteration of a plain callable."""
    warmup = spec["warmup"]
    total = warmup + spec["iterations"]
    timeout_ns = spec["timeout_ns"]
    inner_loops = spec.get("inner_loops", 1)
    repeat = itertools.repeat
    clock = time.monotonic_ns
    cpu_clock = time.process_time_ns
    queue = duet_samples.RunQueue("/proc/thread-self/schedstat")
    switches = duet_samples.involuntary_switches
    try:
        for done in range(total):
            start_ns = barrier.wait(timeout_ns)
            cpu_start = cpu_clock()
            runq_start = queue.read_ns()
            nivcsw_start = switches()
            if args:
                for _ in repeat(None, inner_loops):
                    function(*args)
            else:
                for _ in repeat(None, inner_loops):
                    function()
            end_ns = clock()
            cpu_ns = cpu_clock() - cpu_start
            runq_end = queue.read_ns()
            runq_ns = (
                runq_end - runq_start if runq_end is not None and runq_start is not None else None
            )
            samples.sample(
                done, warmup, start_ns, end_ns, cpu_ns, runq_ns, switches() - nivcsw_start
            )
    finally:
        queue.close()


# -- drivers -----------------------------------------------------------------------------------
#
# A driver is a callable that finds the benchmarked function itself (duet_pytest runs a pytest
# test, whose ``benchmark`` fixture supplies it) and hands it to ``measure``. The driver's own
# work (starting pytest, the test's fixtures) happens before the first and after the last
# iteration; only the calls inside ``measure`` are timed.


class _Measured:
    """What the driver's ``measure`` saw: how often it was called, its first error."""

    def __init__(self) -> None:
        self.calls = 0
        self.error: BaseException | None = None


def _drive(driver: Callable[..., Any], args: tuple[Any, ...], measure: Callable[..., Any]) -> None:
    """Call the driver with ``measure``; raise what went wrong, the error inside ``measure``
    first (the driver's own code, pytest, catches it and reports a failed test: the worker
    must still exit with the code of a timeout, an abort or a failing benchmark)."""
    state = _Measured()

    def guarded(*a: Any, **k: Any) -> Any:
        if state.calls:
            raise RuntimeError(
                "the benchmark was handed over twice in one run (pytest-benchmark's fixture "
                "can be used once per test too): call benchmark(...) once per test"
            )
        state.calls += 1
        try:
            return measure(*a, **k)
        except BaseException as e:
            state.error = e
            raise

    try:
        driver(guarded, *args)
    except BaseException as e:
        if state.error is not None:
            raise state.error from None
        if isinstance(e, Exception):
            # The driver's exceptions are explanations (pytest's own report, with the
            # traceback, is already on stderr): a failed benchmark, without a second traceback.
            raise BenchmarkFailed(str(e)) from e
        raise
    if state.error is not None:
        raise state.error
    if not state.calls:
        raise BenchmarkFailed(
            f"the driver {getattr(driver, '__qualname__', driver)} returned without handing "
            "a function over to measure"
        )


def _arguments(
    setup: Callable[[], Any] | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if setup is None:
        return args, kwargs
    made = setup()
    if not (isinstance(made, tuple) and len(made) == 2):
        raise TypeError(f"the setup must return (args, kwargs), got {made!r}")
    return tuple(made[0]), dict(made[1])


def run_driver(
    spec: dict[str, Any],
    barrier: duet_barrier.Barrier,
    samples: duet_samples.Samples,
    driver: Callable[..., Any],
    args: tuple[Any, ...],
) -> int:
    """Every iteration of a driver's function, under the barrier; returns the calls made per
    iteration."""
    warmup = spec["warmup"]
    total = warmup + spec["iterations"]
    timeout_ns = spec["timeout_ns"]
    inner_loops: int = spec.get("inner_loops", 1)

    def measure(
        function: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        repeat = itertools.repeat
        clock = time.monotonic_ns
        cpu_clock = time.process_time_ns
        queue = duet_samples.RunQueue("/proc/thread-self/schedstat")
        switches = duet_samples.involuntary_switches
        result = None
        try:
            for done in range(total):
                # The untimed setup of every call of this iteration, before the wait.
                calls = (
                    [_arguments(setup, args, kwargs) for _ in repeat(None, inner_loops)]
                    if setup is not None
                    else None
                )
                start_ns = barrier.wait(timeout_ns)
                cpu_start = cpu_clock()
                runq_start = queue.read_ns()
                nivcsw_start = switches()
                if calls is not None:
                    for call_args, call_kwargs in calls:
                        result = function(*call_args, **call_kwargs)
                elif kwargs:
                    for _ in repeat(None, inner_loops):
                        result = function(*args, **kwargs)
                elif args:
                    for _ in repeat(None, inner_loops):
                        result = function(*args)
                else:
                    for _ in repeat(None, inner_loops):
                        result = function()
                end_ns = clock()
                cpu_ns = cpu_clock() - cpu_start
                runq_end = queue.read_ns()
                runq_ns = (
                    runq_end - runq_start
                    if runq_end is not None and runq_start is not None
                    else None
                )
                samples.sample(
                    done, warmup, start_ns, end_ns, cpu_ns, runq_ns, switches() - nivcsw_start
                )
                if teardown is not None:
                    for call_args, call_kwargs in calls or [(args, kwargs)]:
                        teardown(*call_args, **call_kwargs)
        finally:
            queue.close()
        return result

    _drive(driver, args, measure)
    return inner_loops


# -- calibration -------------------------------------------------------------------------------


def _time_calls(function: Callable[..., Any], args: tuple[Any, ...], n: int) -> int:
    repeat = itertools.repeat
    start = time.perf_counter_ns()
    if args:
        for _ in repeat(None, n):
            function(*args)
    else:
        for _ in repeat(None, n):
            function()
    return time.perf_counter_ns() - start


def calibrate_calls(
    function: Callable[..., Any], args: tuple[Any, ...], target: int, cap: int
) -> tuple[int, int]:
    """The smallest number of calls ``function(*args)`` found that takes at least ``target``
    ns, capped at ``cap``, and the time they took."""
    _time_calls(function, args, 1)  # first call: imports, caches, lazy initialisation
    n = 1
    while True:
        elapsed = _time_calls(function, args, n)
        if elapsed >= target or n >= cap:
            return n, elapsed
        # Aim 10% past the target from the rate seen so far; grow at most 100x a round so
        # a noisy tiny first timing cannot overshoot wildly.
        wanted = n * target * 1.1 / max(elapsed, 1)
        n = int(min(cap, n * 100, max(n + 1, wanted)))


def calibrate_driver(
    driver: Callable[..., Any], args: tuple[Any, ...], target: int, cap: int
) -> tuple[int, int]:
    """The calls per iteration of a driver's function, and the time they took. A function
    with a setup gets one call per iteration (as pytest-benchmark does: the setup prepares one
    call's input)."""
    found: list[int] = []

    def measure(
        function: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
    ) -> Any:
        call_args, call_kwargs = _arguments(setup, args, kwargs or {})
        start = time.perf_counter_ns()
        result = function(*call_args, **call_kwargs)
        elapsed = time.perf_counter_ns() - start
        if teardown is not None:
            teardown(*call_args, **call_kwargs)
        if setup is not None:
            found[:] = [1, elapsed]
        else:

            def call() -> Any:
                return function(*call_args, **call_kwargs)

            found[:] = calibrate_calls(call, (), target, cap)
        return result

    _drive(driver, args, measure)
    return found[0], found[1]


def calibrate(
    function: Callable[..., Any], args: tuple[Any, ...], target: int, cap: int
) -> tuple[int, int]:
    """The calls per iteration of a python benchmark (plain or a driver) that take at least
    ``target`` ns, capped at ``cap``, and the time they took."""
    if is_driver(function):
        return calibrate_driver(function, args, target, cap)
    return calibrate_calls(function, args, target, cap)
