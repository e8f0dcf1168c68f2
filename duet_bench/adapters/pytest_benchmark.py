"""pytest-benchmark suites, measured in process under the barrier.

Discovery runs the version's own interpreter over the suite's test path with
``duet_bench/harness/duet_pytest.py --list`` and keeps the tests that request the ``benchmark``
fixture (each parametrisation on its own), named by their pytest node id relative to the
version's directory (``benchmarks/test_parse.py::test_parse[small]``). Each becomes a
``python`` benchmark whose callable is the driver ``duet_pytest:run``: the worker starts
pytest on that one test, and the test's ``benchmark(fn, *args)`` call hands ``fn`` to the
worker's measured loop (docs/adapters.md, "pytest-benchmark").

The suite's own option: ``args``, extra pytest arguments (a list of strings, or
one string of shell words) used at discovery and in every run, for what the project's
``addopts`` would have given (``-p myplugin``, ``--import-mode=importlib``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duet_bench.adapters.base import Checkout
from duet_bench.config import BenchmarkConfig
from duet_bench.config.model import AdapterOptions, Suite, options_of
from duet_bench.config.suites import OptionError
from duet_bench.errors import ConfigError
from duet_bench.harness import duet_pytest
from duet_bench.isolation.jobs import run_job_captured
from duet_bench.isolation.privileges import allowed_environment
from duet_bench.runner.worker_spec import install_harness

if TYPE_CHECKING:
    from duet_bench.isolation.jobs import Captured

#: The driver the worker imports from its own directory (see duet_bench/harness/duet_pytest.py).
DRIVER = "duet_pytest:run"
HARNESS = Path(__file__).resolve().parent.parent / "harness" / "duet_pytest.py"
#: Variables the driver reads (duet_pytest.NODEID_VARIABLE, ARGS_VARIABLE).
NODEID_VARIABLE = "DUET_PYTEST_NODEID"
ARGS_VARIABLE = "DUET_PYTEST_ARGS"
#: Collection of a large suite imports every test module: minutes, not hours.
DISCOVERY_TIMEOUT_S = 600.0
_OUTPUT_TAIL_CHARS = 3000


@dataclass(frozen=True, slots=True)
class PytestOptions(AdapterOptions):
    """A pytest-benchmark suite's own option: ``args``, extra pytest arguments, as the entry
    gives them (a list of strings, or one string of shell words)."""

    args: tuple[str, ...] | str | None = None


def _args(key: str, value: Any) -> tuple[str, ...] | str:
    """The ``args`` of a suite entry: a list of strings, or one string of shell words."""
    if isinstance(value, str):
        try:
            shlex.split(value)
        except ValueError as e:
            raise OptionError(
                f"{value!r} is not valid shell words: {e}",
                'write args as a list of strings, e.g. args = ["-p", "myplugin"]',
            ) from None
        return value
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise OptionError(
            f"must be a list of strings, got {value!r}", 'write e.g. args = ["-p", "myplugin"]'
        )
    return tuple(value)


def _suite_args(suite: Suite) -> list[str]:
    args = options_of(suite, PytestOptions).args
    if args is None:
        return []
    if isinstance(args, str):
        try:
            return shlex.split(args)
        except ValueError as e:
            raise ConfigError(
                f"suite {suite.name!r}: args = {args!r} is not valid shell words: {e}",
                fix='write args as a list of strings, e.g. args = ["-p", "myplugin"]',
            ) from e
    return list(args)


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _OUTPUT_TAIL_CHARS else "..." + text[-_OUTPUT_TAIL_CHARS:]


class PytestBenchmarkAdapter:
    """The ``pytest-benchmark`` adapter (see the module documentation)."""

    name = "pytest-benchmark"
    iteration = (
        "one iteration calls the function the test passes to benchmark(...) as many times as "
        "duet's calibration chose (once when benchmark.pedantic has a setup), inside the "
        "running test, its fixtures set up before the first iteration and torn down after the "
        "last"
    )
    options: Mapping[str, Callable[[PytestOptions, str, Any], PytestOptions]] = {
        "args": lambda o, k, v: replace(o, args=_args(k, v))
    }
    no_options = PytestOptions()

    def discover(self, suite: Suite, checkout: Checkout) -> tuple[str, ...]:
        if checkout.python is None:
            raise ConfigError(
                f"suite {suite.name!r}: a pytest-benchmark suite runs in the version's python "
                "interpreter, and none is configured",
                fix='set python = ".venv/bin/python" (relative to the version\'s directory)',
            )
        where = f"suite {suite.name!r} in {checkout.directory}"
        with _readable_harness() as harness:
            argv = [checkout.python, str(harness), "--list", *_suite_args(suite), suite.path]
            if suite.filter:
                argv += ["-k", suite.filter]
            done = _collect(argv, suite, checkout, where)
        if done.returncode == duet_pytest.EXIT_NO_PYTEST:
            raise ConfigError(
                f"{where}: {_tail(done.stderr).removeprefix('duet_pytest: ')}",
                fix=f"install pytest in that environment ({checkout.python} -m pip install "
                "pytest), e.g. in the build command",
            )
        if done.returncode != 0:
            raise ConfigError(
                f"{where}: pytest could not collect {suite.path} (exit code "
                f"{done.returncode}); it printed:\n{_tail(done.stderr + done.stdout)}",
                fix=f"run `{checkout.python} -m pytest --collect-only {suite.path}` in the "
                "version's directory and fix what it reports",
            )
        return _parse_listing(done.stdout, where)

    def benchmark(self, suite: Suite, name: str) -> BenchmarkConfig:
        if not name or "::" not in name:
            raise ConfigError(
                f"suite {suite.name!r}: {name!r} is not a pytest node id",
                fix="name a test as discovery does, e.g. benchmarks/test_x.py::test_y",
            )
        env = {**suite.env, NODEID_VARIABLE: name}
        args = _suite_args(suite)
        if args:
            env[ARGS_VARIABLE] = shlex.join(args)
        return BenchmarkConfig(
            name=f"{suite.name}/{name}", kind="python", callable=DRIVER, env=env, **suite.settings
        )


def _parse_listing(stdout: str, where: str) -> tuple[str, ...]:
    for line in reversed(stdout.splitlines()):
        try:
            listing = json.loads(line)
        except ValueError:
            continue
        tests = listing.get("tests") if isinstance(listing, Mapping) else None
        if isinstance(tests, list) and all(isinstance(t, str) for t in tests):
            return tuple(tests)
    raise ConfigError(
        f"{where}: the test listing printed no list of tests; it printed:\n{_tail(stdout)}",
        fix="a conftest.py that writes to stdout at exit can hide it; run the discovery by hand: "
        f"python {HARNESS} --list PATH",
    )


ADAPTER = PytestBenchmarkAdapter()


@contextlib.contextmanager
def _readable_harness() -> Iterator[Path]:
    """The pytest driver with its sibling harness files, in a directory of root's that any
    user may read (the collection runs as the invoking user, who may not reach duet's own
    install: a pipx install in root's home), removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="duet-collect-"))
    try:
        os.chmod(directory, 0o755)
        install_harness(directory)
        yield directory / "harness" / HARNESS.name
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _collect(argv: list[str], suite: Suite, checkout: Checkout, where: str) -> Captured:
    """pytest's collection in the version's interpreter, as every discovery step runs: as the
    invoking user, without the CI's secrets, in a container of its own
    (:func:`duet_bench.adapters.tools.run_tool` says why)."""
    env = {**allowed_environment(os.environ, checkout.keep_env), **checkout.env, **suite.env}
    if checkout.run_as is not None:
        env = checkout.run_as.environment(env)
    python = checkout.python or ""
    try:
        done = run_job_captured(
            argv,
            name="discovery",
            what=f"{where}: pytest's collection",
            cwd=str(checkout.directory),
            env=env,
            timeout_s=DISCOVERY_TIMEOUT_S,
            run_as=checkout.run_as,
        )
    except FileNotFoundError as e:
        raise ConfigError(
            f"{where}: the interpreter {python} does not exist ({e.strerror})",
            fix="create the version's environment in the build command, or set python",
        ) from e
    except OSError as e:
        raise ConfigError(f"{where}: cannot run {python}: {e}") from e
    if done.returncode is None:
        raise ConfigError(
            f"{where}: pytest did not finish collecting in {DISCOVERY_TIMEOUT_S:.0f} s",
            fix=f"run `{python} -m pytest --collect-only {suite.path}` there to see what hangs",
        )
    return done
