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

Both go through one timed loop, :func:`timed_iterations`. Crossover: the barrier's wait moves
every thread of the process (or of the side's cgroup) to the iteration's CPU before it releases
(``duet_barrier.Barrier.cross``): threads the callable or pytest started move with it.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import sys
import time
from collections.abc import Callable, Iterable
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


# -- the timed loop ----------------------------------------------------------------------------


def timed_iterations(
    spec: dict[str, Any],
    barrier: duet_barrier.Barrier,
    samples: duet_samples.Samples,
    function: Callable[..., Any],
    args: tuple[Any, ...],
    prepare: Callable[[], Iterable[Callable[[], Any]]] | None = None,
    after: Callable[[], object] | None = None,
) -> Any:
    """Every iteration, warm-up and measured, each started right after leaving the barrier and
    written to ``samples`` before the next wait; returns the last call's result.

    An iteration is ``inner_loops`` calls of ``function(*args)``, or, with ``prepare``, the
    zero-argument calls that ``prepare()`` returns, made before the wait (a driver's per-call
    setup). ``after()`` runs once the iteration's line is written (a driver's teardown).

    Inside the timed region there is nothing but the clock and figure reads and the calls, as
    in a hand-written loop: the choice between ``function(*args)`` and a call without
    arguments is one test per iteration, and a call without arguments iterates over the
    callables themselves (``repeat(function, n)``, made before the wait), which costs what
    ``function()`` in a counted loop does. Keyword arguments are bound before the loop
    (:func:`_call_form`). Each call's result is kept until the next call returns (the driver
    returns the last one).
    """
    warmup = spec["warmup"]
    total = warmup + spec["iterations"]
    timeout_ns = spec["timeout_ns"]
    inner_loops: int = spec.get("inner_loops", 1)
    repeat = itertools.repeat
    clock = time.monotonic_ns
    cpu_clock = time.process_time_ns
    queue = duet_samples.RunQueue("/proc/thread-self/schedstat")
    switches = duet_samples.involuntary_switches
    calls: Iterable[Callable[[], Any]] = ()
    result = None
    try:
        for done in range(total):
            if prepare is not None:
                calls = prepare()
            elif not args:
                calls = repeat(function, inner_loops)
            start_ns = barrier.wait(timeout_ns)
            cpu_start = cpu_clock()
            runq_start = queue.read_ns()
            nivcsw_start = switches()
            if args:
                for _ in repeat(None, inner_loops):
                    result = function(*args)
            else:
                for call in calls:
                    result = call()
            end_ns = clock()
            cpu_ns = cpu_clock() - cpu_start
            runq_end = queue.read_ns()
            runq_ns = (
                runq_end - runq_start if runq_end is not None and runq_start is not None else None
            )
            samples.sample(
                done,
                warmup,
                start_ns,
                end_ns,
                cpu_ns,
                runq_ns,
                switches() - nivcsw_start,
                barrier.ran_on(),
            )
            if after is not None:
                after()
    finally:
        queue.close()
    return result


def _call_form(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """What the timed loop calls for ``function(*args, **kwargs)``: keyword arguments bound
    by ``functools.partial``, which does per call what ``function(*args, **kwargs)`` does
    (copy the keywords, call)."""
    if kwargs:
        return functools.partial(function, *args, **kwargs), ()
    return function, args


def run_python(
    spec: dict[str, Any],
    barrier: duet_barrier.Barrier,
    samples: duet_samples.Samples,
    function: Callable[..., Any],
    args: tuple[Any, ...],
) -> None:
    """Every iteration of a plain callable."""
    timed_iterations(spec, barrier, samples, function, args)


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


def _prepare_calls(
    function: Callable[..., Any],
    setup: Callable[[], Any],
    inner_loops: int,
    made: list[tuple[tuple[Any, ...], dict[str, Any]]],
) -> list[Callable[[], Any]]:
    """The calls of one iteration with a per-call setup, run before the wait; their
    arguments are kept in ``made`` for the teardown."""
    made[:] = [_arguments(setup, (), {}) for _ in range(inner_loops)]
    return [functools.partial(function, *a, **k) for a, k in made]


def _tear_down(
    teardown: Callable[..., Any], made: list[tuple[tuple[Any, ...], dict[str, Any]]]
) -> None:
    for call_args, call_kwargs in made:
        teardown(*call_args, **call_kwargs)


def run_driver(
    spec: dict[str, Any],
    barrier: duet_barrier.Barrier,
    samples: duet_samples.Samples,
    driver: Callable[..., Any],
    args: tuple[Any, ...],
) -> int:
    """Every iteration of a driver's function, under the barrier; returns the calls made per
    iteration."""
    inner_loops: int = spec.get("inner_loops", 1)

    def measure(
        function: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        # The arguments of the iteration's calls, for the teardown: one pair per call with a
        # setup (made before each wait), else the same pair once per iteration.
        made = [(args, kwargs)]
        prepare: Callable[[], list[Callable[[], Any]]] | None
        if setup is None:
            called, positional = _call_form(function, args, kwargs)
            prepare = None
        else:
            called, positional = function, ()
            prepare = functools.partial(_prepare_calls, function, setup, inner_loops, made)
        return timed_iterations(
            spec,
            barrier,
            samples,
            called,
            positional,
            prepare,
            None if teardown is None else functools.partial(_tear_down, teardown, made),
        )

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
            # Calibrated in the form the timed loop calls it.
            found[:] = calibrate_calls(*_call_form(function, call_args, call_kwargs), target, cap)
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
