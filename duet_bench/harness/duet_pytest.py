"""Runs one pytest-benchmark test in process, its benchmarked function timed by the duet worker.

Lives beside ``duet_worker.py`` and runs inside the measured environment, with the version's
own interpreter and pytest (Python >= 3.8, standard library and pytest only, never imports
``duet_bench``). pytest-benchmark itself need not be installed: the ``benchmark`` fixture is ours.

Two uses:

- the worker's driver, ``callable = "duet_pytest:run"``: the worker calls :func:`run` with its
  ``measure`` function (see ``duet_python.py``, "drivers"); ``run`` starts pytest on the one test
  named by ``DUET_PYTEST_NODEID`` (relative to the working directory, the version's directory),
  and when the test calls ``benchmark(fn, *args, **kwargs)`` or ``benchmark.pedantic(...)``
  the fixture hands ``fn`` to ``measure``: every warm-up and measured iteration runs while
  the test's fixtures are alive, and they are torn down after the last one. The fixture
  returns the last call's result, as pytest-benchmark's does.
- discovery, ``python duet_pytest.py --list [PYTEST ARGS...]``: collects the tests (the
  arguments are a test path and ``-k EXPRESSION``) and prints one JSON line to stdout,
  ``{"tests": [node ids of the tests that request the benchmark fixture]}``, each relative
  to the working directory; pytest's own output goes to stderr.

pytest runs with ``-p no:benchmark`` (pytest-benchmark's plugin, when installed, would time
the function its own way), ``-p no:cacheprovider`` (nothing written into the checkout) and
``-o addopts=`` (the project's default options are for a person's test run: coverage, xdist,
pytest-benchmark's options, none of which belong in a measurement; ``PYTEST_ADDOPTS`` is
dropped for the same reasons); ``DUET_PYTEST_ARGS``
(shell words) adds options of the suite's own.

Exit codes of ``--list``: 0 listed (possibly nothing), 2 usage, 3 pytest is missing, 4 pytest
could not collect the tests (what it printed says why).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import Callable
from typing import Any

NODEID_VARIABLE = "DUET_PYTEST_NODEID"
ARGS_VARIABLE = "DUET_PYTEST_ARGS"
#: What every pytest run gets, before the suite's own arguments.
BASE_ARGS = ("-p", "no:benchmark", "-p", "no:cacheprovider", "-o", "addopts=")

EXIT_LISTED = 0
EXIT_USAGE = 2
EXIT_NO_PYTEST = 3
EXIT_COLLECTION = 4

#: pytest's exit codes (pytest.ExitCode, which pytest < 5 lacks), for the messages.
_PYTEST_EXIT = {
    1: "the test failed",
    2: "pytest was interrupted (an error while collecting: an import error, a syntax error)",
    3: "pytest hit an internal error",
    4: "pytest was used wrongly (a test that does not exist, a bad option)",
    5: "pytest collected no test",
}


class PytestMissing(Exception):
    """pytest cannot be imported in this interpreter."""


class TestProblem(Exception):
    """The test did not hand its function over (failed, skipped, missing, never called
    ``benchmark``); the message says which and what to do."""

    __test__ = False  # not a test class, whatever pytest thinks of the name


def _import_pytest() -> Any:
    try:
        import pytest
    except ImportError as e:
        raise PytestMissing(
            f"pytest cannot be imported by {sys.executable} ({e}): the version's environment "
            "must have pytest (and what the tests import) installed; install it there, e.g. "
            f"{sys.executable} -m pip install pytest"
        ) from e
    return pytest


def _suite_args() -> list[str]:
    text = os.environ.get(ARGS_VARIABLE, "")
    try:
        return shlex.split(text)
    except ValueError as e:
        raise TestProblem(f"{ARGS_VARIABLE}={text!r} is not valid shell words: {e}") from e


class BenchmarkFixture:
    """The ``benchmark`` fixture as a test sees it: pytest-benchmark's calls and attributes
    (``name``, ``fullname``, ``param``, ``params``, ``group``, ``extra_info``), timed by duet.

    ``pedantic``'s ``rounds``, ``warmup_rounds`` and ``iterations`` are not used: duet's own
    ``iterations`` and ``warmup`` settings say how many iterations run, its calibration how
    many calls make one iteration (one call when there is a ``setup``).
    """

    disabled = False
    enabled = True
    stats = None
    cprofile_stats = None

    def __init__(self, measure: Callable[..., Any], node: Any) -> None:
        self._measure = measure
        self._mode: str | None = None
        self.name = node.name
        self.fullname = node.nodeid
        callspec = getattr(node, "callspec", None)
        self.param = callspec.id if callspec is not None else None
        self.params = callspec.params if callspec is not None else None
        self.group = None
        self.extra_info: dict[str, Any] = {}
        self.has_error = False
        self.skipped = False

    @property
    def used(self) -> bool:
        return self._mode is not None

    def _use(self, mode: str) -> None:
        if self._mode is not None:
            raise TestProblem(
                f"the benchmark fixture can be used once per test; it was used as {self._mode} "
                f"already (pytest-benchmark refuses this too)"
            )
        self._mode = mode

    def __call__(self, function_to_benchmark: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._use("benchmark(...)")
        return self._measure(function_to_benchmark, args, kwargs)

    def pedantic(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
        rounds: int = 1,
        warmup_rounds: int = 0,
        iterations: int = 1,
    ) -> Any:
        self._use("benchmark.pedantic(...)")
        # pytest-benchmark's own checks, so a test that fails there fails here as well.
        if not isinstance(iterations, int) or iterations < 1:
            raise ValueError("Must have positive int for `iterations`.")
        if not isinstance(rounds, int) or rounds < 1:
            raise ValueError("Must have positive int for `rounds`.")
        if not isinstance(warmup_rounds, int) or warmup_rounds < 0:
            raise ValueError("Must have positive int for `warmup_rounds`.")
        if iterations > 1 and setup:
            raise ValueError("Can't use more than 1 `iterations` with a `setup` function.")
        kwargs = dict(kwargs or {})
        if setup is None:
            return self._measure(target, tuple(args), kwargs, None, teardown)
        given = bool(args or kwargs)

        def make_arguments() -> tuple[tuple[Any, ...], dict[str, Any]]:
            # pytest-benchmark's rule: a setup returns (args, kwargs), or None to keep the
            # arguments given to pedantic.
            made = setup()
            if not made:
                return tuple(args), kwargs
            if given:
                raise TypeError("Can't use `args` or `kwargs` if `setup` returns the arguments.")
            made_args, made_kwargs = made
            return tuple(made_args), dict(made_kwargs)

        return self._measure(target, (), {}, make_arguments, teardown)

    def weave(self, target: Any, **kwargs: Any) -> None:
        raise TestProblem(
            "benchmark.weave (and benchmark.patch) are not supported by duet: call "
            "benchmark(function, ...) with the function to measure"
        )

    patch = weave


class _Plugin:
    """Watches what happens to the test; :func:`_plugin` adds the ``benchmark`` fixture."""

    def __init__(self, measure: Callable[..., Any] | None) -> None:
        self.measure = measure
        self.fixtures: list[BenchmarkFixture] = []
        self.items: list[Any] = []
        self.reports: list[Any] = []
        self.collection_errors: list[str] = []

    def make_fixture(self, request: Any) -> BenchmarkFixture:
        if self.measure is None:
            raise TestProblem("the benchmark fixture only works under duet's worker")
        fixture = BenchmarkFixture(self.measure, request.node)
        self.fixtures.append(fixture)
        return fixture

    def pytest_configure(self, config: Any) -> None:
        # pytest-benchmark registers its marker; without it --strict-markers would refuse
        # @pytest.mark.benchmark(...).
        config.addinivalue_line("markers", "benchmark: pytest-benchmark settings (unused by duet)")

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collection_errors.append(report.nodeid or "<the test path>")

    def pytest_collection_finish(self, session: Any) -> None:
        self.items = list(session.items)

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.reports.append(report)


def _plugin(pytest: Any, measure: Callable[..., Any] | None) -> _Plugin:
    # pytest looks for a plugin's fixtures on its class, decorated with the pytest it runs:
    # the class is made once pytest is imported (so a missing pytest is reported, not a crash).
    class Plugin(_Plugin):
        @pytest.fixture(name="benchmark")  # type: ignore[untyped-decorator]
        def benchmark_fixture(self, request: Any) -> BenchmarkFixture:
            return self.make_fixture(request)

    return Plugin(measure)


def _pytest_main(pytest: Any, args: list[str], plugin: _Plugin) -> int:
    # PYTEST_ADDOPTS is addopts from the environment (a CI job's --cov): the same reasons hold.
    os.environ.pop("PYTEST_ADDOPTS", None)
    # pytest prints its report to stdout; the worker's stdout is not kept, its stderr is (the
    # runner shows its tail when a side fails), and --list answers on stdout.
    with contextlib.redirect_stdout(sys.stderr):
        return int(pytest.main(args, plugins=[plugin]))


def run(measure: Callable[..., Any]) -> None:
    """The worker's driver: run the test ``DUET_PYTEST_NODEID``, its benchmark timed by
    ``measure``. Raises :class:`TestProblem` (or :class:`PytestMissing`) saying why when the
    test did not hand a function over and return cleanly."""
    nodeid = os.environ.get(NODEID_VARIABLE, "")
    if not nodeid:
        raise TestProblem(
            f"{NODEID_VARIABLE} is not set: duet_pytest:run runs the pytest test it names "
            "(a node id relative to the version's directory, e.g. "
            "benchmarks/test_parse.py::test_parse); set it in the benchmark's env"
        )
    pytest = _import_pytest()
    plugin = _plugin(pytest, measure)
    code = _pytest_main(pytest, [*BASE_ARGS, *_suite_args(), "-q", nodeid], plugin)
    _check_outcome(nodeid, code, plugin)


run.duet_driver = True  # type: ignore[attr-defined]


def _check_outcome(nodeid: str, code: int, plugin: _Plugin) -> None:
    used = any(f.used for f in plugin.fixtures)
    failed = [r for r in plugin.reports if r.failed]
    skipped = [r for r in plugin.reports if r.skipped]
    where = f"the test {nodeid}"
    if failed:
        phase = failed[0].when
        after = " after the benchmark ran" if used else ""
        raise TestProblem(
            f"{where} failed in its {phase}{after} (pytest's report on the side's stderr "
            "says why); it must pass with plain pytest: run "
            f"`python -m pytest {shlex.quote(nodeid)}` in this version's directory"
        )
    if skipped and not used:
        reason = skipped[0].longrepr
        if isinstance(reason, tuple) and len(reason) == 3:
            reason = reason[2]
        raise TestProblem(
            f"{where} was skipped ({reason}), so there is nothing to measure at this version; "
            "remove it from the suite's selection (the suite's filter) or make it run here"
        )
    if code != 0 and not plugin.items:
        if plugin.collection_errors:
            raise TestProblem(
                f"{where} could not be collected: {_PYTEST_EXIT.get(code, f'exit {code}')} "
                f"in {', '.join(plugin.collection_errors)}; pytest's report on the side's "
                "stderr says why"
            )
        raise TestProblem(
            f"{where} does not exist at this version ({_PYTEST_EXIT.get(code, f'exit {code}')}"
            "): it was renamed or removed, or its parameters changed; discover the suite "
            "again, or run `python -m pytest --collect-only -q` here to see the node ids"
        )
    if code != 0:
        raise TestProblem(f"{where}: {_PYTEST_EXIT.get(code, f'pytest exited with {code}')}")
    if not plugin.fixtures:
        raise TestProblem(
            f"{where} passed without requesting the benchmark fixture: it is not a "
            "pytest-benchmark test (or a conftest.py defines its own benchmark fixture, "
            "which hides duet's); give it a benchmark argument and call benchmark(function)"
        )
    if not used:
        raise TestProblem(
            f"{where} requested the benchmark fixture but never called it: nothing was "
            "measured; call benchmark(function, *args) (or benchmark.pedantic) in the test"
        )


def _relative_nodeid(item: Any) -> str:
    """The item's node id with its file part relative to the working directory (pytest's is
    relative to its rootdir, which a pytest.ini deeper in the tree moves)."""
    nodeid = str(item.nodeid)
    path = getattr(item, "path", None) or getattr(item, "fspath", None)
    _, separator, rest = nodeid.partition("::")
    if path is None or not separator:
        return nodeid
    return os.path.relpath(str(path), os.getcwd()).replace(os.sep, "/") + "::" + rest


def list_tests(args: list[str]) -> tuple[int, list[str]]:
    """Collect with ``args``; the exit code and the benchmark tests' node ids, in pytest's
    order."""
    pytest = _import_pytest()
    plugin = _plugin(pytest, None)
    code = _pytest_main(pytest, [*BASE_ARGS, *args, "--collect-only", "-q"], plugin)
    names = [
        _relative_nodeid(item)
        for item in plugin.items
        if "benchmark" in getattr(item, "fixturenames", ())
    ]
    return code, names


def _harness_directory_out() -> None:
    """Run as a script, Python puts this file's directory first on sys.path; the tests import
    the version's modules, which must come from the working directory (the version's) as the
    worker's ``sys_path`` gives them."""
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and sys.path[0] and os.path.realpath(sys.path[0]) == here:
        del sys.path[0]
    sys.path.insert(0, os.getcwd())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "--list":
        print("usage: duet_pytest.py --list [TEST PATH] [-k EXPRESSION]", file=sys.stderr)
        return EXIT_USAGE
    _harness_directory_out()
    try:
        code, names = list_tests(args[1:])
    except PytestMissing as e:
        print(f"duet_pytest: {e}", file=sys.stderr)
        return EXIT_NO_PYTEST
    # 5: nothing collected (an empty directory, a filter that matches nothing): no benchmarks.
    if code not in (0, 5):
        print(
            f"duet_pytest: {_PYTEST_EXIT.get(code, f'pytest exited with {code}')}",
            file=sys.stderr,
        )
        return EXIT_COLLECTION
    print(json.dumps({"tests": names}))
    return EXIT_LISTED


if __name__ == "__main__":
    sys.exit(main())
