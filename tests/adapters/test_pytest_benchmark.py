"""The pytest-benchmark adapter on a real suite (tests/fixtures/adapters/pytest_suite): real
pytest, real pytest-benchmark (installed by the dev extra) and an interpreter without it, real
worker processes through a real barrier, and ``duet run``/``duet compare`` end to end."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from duet_bench.adapters.base import Checkout
from duet_bench.adapters.pytest_benchmark import ADAPTER, HARNESS, PytestOptions
from duet_bench.analysis import AnalysisSettings
from duet_bench.config import load_config
from duet_bench.config.model import Suite
from duet_bench.errors import ConfigError
from duet_bench.harness import duet_barrier as db
from duet_bench.plan import for_suite
from duet_bench.session import MachineOptions, SessionOptions
from duet_bench.session import measure as measure_session
from tests.conftest import is_root
from tests.duet import test_barrier as shared
from tests.duet.test_barrier import Processes, old_pythons, two_cpus
from tests.duet.test_worker import check_complete_samples, finish, read_samples, write_spec
from tests.integration.gitrepo import make_repo

shm_path = shared.shm_path
processes = shared.processes

SUITE = Path(__file__).resolve().parent.parent / "fixtures" / "adapters" / "pytest_suite"
WORKER = HARNESS.parent / "duet_worker.py"
BENCHMARKS = (
    "bench_lifecycle.py::test_fixture_alive",
    "bench_lifecycle.py::test_pedantic_setup_and_teardown",
    "bench_workload.py::test_checksum",
    "bench_workload.py::test_checksum_sizes[100]",
    "bench_workload.py::test_checksum_sizes[400]",
    "bench_workload.py::test_drain",
)
ISOLATION = "cgroup" if is_root() else "affinity"


# -- interpreters ------------------------------------------------------------------------------


def _venv(directory: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(directory)],
        check=True,
        capture_output=True,
    )
    return directory / "bin" / "python"


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An interpreter with the standard library only: no pytest."""
    python = _venv(tmp_path_factory.mktemp("bare") / "venv")
    missing = subprocess.run([python, "-c", "import pytest"], capture_output=True, check=False)
    assert missing.returncode != 0, "the bare environment must not see pytest"
    return str(python)


@pytest.fixture(scope="module")
def pytest_only_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An interpreter with pytest (ours, linked in through a .pth file) and without
    pytest-benchmark: what a project that never installed the plugin has."""
    root = tmp_path_factory.mktemp("pytest-only")
    python = _venv(root / "venv")
    site = Path(pytest.__file__).resolve().parent.parent
    linked = root / "linked"
    linked.mkdir()
    for entry in site.iterdir():
        base = entry.name.split("-")[0].removesuffix(".py").lower()
        if base in {"pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "pygments"}:
            (linked / entry.name).symlink_to(entry)
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "pytest-only.pth").write_text(f"{linked}\n")
    probe = subprocess.run(
        [python, "-c", "import pytest\ntry:\n import pytest_benchmark\nexcept ImportError:\n"
         " print('without')"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert probe.stdout.strip() == "without", probe.stderr
    return str(python)


def with_benchmark_plugin() -> str:
    """Our interpreter, where pytest-benchmark really is installed (the dev extra)."""
    import pytest_benchmark  # noqa: F401  (fails the test when the dev extra is missing)

    return sys.executable


@pytest.fixture
def suite_copy(tmp_path: Path) -> Path:
    target = tmp_path / "version"
    shutil.copytree(SUITE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


#: A CI job's pytest options (a person's defaults, like addopts) must not reach a measurement.
FOREIGN_ADDOPTS = {"PYTEST_ADDOPTS": "--no-such-option"}


def suite(path: str = ".", filter: str | None = None, **options: Any) -> Suite:
    return Suite(
        adapter="pytest-benchmark",
        name="pb",
        path=path,
        filter=filter,
        options=PytestOptions(**options),
        env=FOREIGN_ADDOPTS,
    )


# -- discovery ---------------------------------------------------------------------------------


@pytest.mark.parametrize("plugin", ["installed", "absent"])
def test_discovery_lists_exactly_the_benchmark_tests(
    suite_copy: Path, plugin: str, request: pytest.FixtureRequest
) -> None:
    python = (
        with_benchmark_plugin()
        if plugin == "installed"
        else request.getfixturevalue("pytest_only_python")
    )
    found = ADAPTER.discover(suite(), Checkout(suite_copy, python))
    # test_not_a_benchmark is left out; each parametrisation is its own benchmark.
    assert found == BENCHMARKS
    # Names are relative to the version's directory, wherever the test path points.
    nested = ADAPTER.discover(suite("version"), Checkout(suite_copy.parent, python))
    assert nested == tuple(f"version/{name}" for name in BENCHMARKS)
    # The filter is pytest's -k expression.
    picked = ADAPTER.discover(suite(filter="sizes or drain"), Checkout(suite_copy, python))
    assert picked == BENCHMARKS[3:]
    # Discovery writes nothing into the checkout (no .pytest_cache).
    assert not (suite_copy / ".pytest_cache").exists()


def test_discovery_at_each_version_sees_added_and_removed_tests(suite_copy: Path) -> None:
    (suite_copy / "bench_new.py").write_text("def test_new(benchmark):\n    benchmark(int)\n")
    (suite_copy / "bench_lifecycle.py").unlink()
    found = ADAPTER.discover(suite(), Checkout(suite_copy, with_benchmark_plugin()))
    assert found == ("bench_new.py::test_new", *BENCHMARKS[2:])


def test_discovery_failures_say_what_pytest_said(suite_copy: Path, bare_python: str) -> None:
    python = with_benchmark_plugin()
    with pytest.raises(ConfigError, match="pytest cannot be imported") as missing:
        ADAPTER.discover(suite(), Checkout(suite_copy, bare_python))
    assert "pip install" in str(missing.value)

    (suite_copy / "bench_broken.py").write_text("import no_such_module_here\n")
    with pytest.raises(ConfigError, match="could not collect") as broken:
        ADAPTER.discover(suite(), Checkout(suite_copy, python))
    assert "no_such_module_here" in str(broken.value)

    with pytest.raises(ConfigError, match="file or directory not found"):
        ADAPTER.discover(suite("benchmarks"), Checkout(suite_copy, python))
    with pytest.raises(ConfigError, match="does not exist"):
        ADAPTER.discover(suite(), Checkout(suite_copy, str(suite_copy / "no" / "python")))
    with pytest.raises(ConfigError, match="none is configured"):
        ADAPTER.discover(suite(), Checkout(suite_copy, None))


def test_a_filter_that_matches_nothing_is_an_empty_suite(suite_copy: Path) -> None:
    found = ADAPTER.discover(
        suite(filter="no_such_test"), Checkout(suite_copy, with_benchmark_plugin())
    )
    assert found == ()


# -- the benchmark configuration ---------------------------------------------------------------


def test_each_test_becomes_a_python_benchmark_run_by_the_driver() -> None:
    s = Suite(
        adapter="pytest-benchmark",
        name="pb",
        path="benchmarks",
        options=PytestOptions(args=("-p", "myplugin")),
        settings={"runs": 7, "threshold": 0.05},
        env={"MODE": "fast"},
    )
    b = ADAPTER.benchmark(s, "benchmarks/test_x.py::test_y[a b]")
    assert b.name == "pb/benchmarks/test_x.py::test_y[a b]"
    assert (b.kind, b.callable, b.setup) == ("python", "duet_pytest:run", None)
    assert (b.runs, b.threshold) == (7, 0.05)
    assert dict(b.env) == {
        "MODE": "fast",
        "DUET_PYTEST_NODEID": "benchmarks/test_x.py::test_y[a b]",
        "DUET_PYTEST_ARGS": "-p myplugin",
    }
    assert ADAPTER.name == "pytest-benchmark"
    assert "fixtures" in ADAPTER.iteration
    with pytest.raises(ConfigError, match="not a pytest node id"):
        ADAPTER.benchmark(s, "test_x.py")


def test_the_driver_parses_as_python_3_8() -> None:
    # It runs in the measured environment, whose python may be old (like duet_worker.py).
    ast.parse(HARNESS.read_text(), filename=HARNESS.name, feature_version=(3, 8))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(HARNESS.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    }
    assert "duet_bench" not in imported
    assert imported <= set(sys.stdlib_module_names) | {"pytest"}


@pytest.mark.parametrize("python", old_pythons() or [None])
def test_the_driver_runs_on_python_3_8(
    processes: Processes, shm_path: str, tmp_path: Path, suite_copy: Path, python: str | None
) -> None:
    if python is None:
        pytest.skip("no python3.8 on this machine (pyenv or /usr/bin)")
    # That python has no pytest: discovery and the worker's driver get as far as saying so.
    with pytest.raises(ConfigError, match="pytest cannot be imported"):
        ADAPTER.discover(suite(), Checkout(suite_copy, python))
    with db.create(shm_path):
        results = run_both(
            processes,
            tmp_path,
            shm_path,
            suite_copy,
            ("bench_workload.py::test_checksum", "bench_workload.py::test_checksum"),
            python,
        )
    assert 3 in {code for code, _, _ in results}, results
    errors = [read_samples(tmp_path / f"samples-{slot}.jsonl")[-1]["error"] for slot in (0, 1)]
    assert any("pytest cannot be imported" in e for e in errors), errors


# -- the worker and the driver -----------------------------------------------------------------


def start(
    processes: Processes,
    spec: Path,
    *,
    python: str,
    cwd: Path,
    nodeid: str,
    cpu: int = -1,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    process = processes.start(
        [python, str(WORKER), str(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env={**os.environ, "DUET_PYTEST_NODEID": nodeid, **(env or {})},
    )
    if cpu >= 0:
        os.sched_setaffinity(process.pid, {cpu})
    return process


def python_spec(tmp_path: Path, barrier: str, slot: int, directory: Path, **fields: Any) -> Path:
    return write_spec(
        tmp_path,
        barrier,
        slot,
        kind="python",
        callable="duet_pytest:run",
        sys_path=[str(directory)],
        **fields,
    )


def run_both(
    processes: Processes,
    tmp_path: Path,
    barrier: str,
    directory: Path,
    nodeids: tuple[str, str],
    python: str,
    env: dict[str, str] | None = None,
    **fields: Any,
) -> list[tuple[int, str, str]]:
    cpus = two_cpus()
    workers = [
        start(
            processes,
            python_spec(tmp_path, barrier, slot, directory, **fields),
            python=python,
            cwd=directory,
            nodeid=nodeids[slot],
            cpu=cpus[slot],
            env=env,
        )
        for slot in (0, 1)
    ]
    return [finish(worker, timeout_s=120) for worker in workers]


@pytest.mark.parametrize("plugin", ["installed", "absent"])
@pytest.mark.parametrize(
    "nodeid",
    [
        "bench_workload.py::test_checksum",  # a fixture provides the data
        "bench_workload.py::test_checksum_sizes[400]",  # parametrised, keyword argument
        "bench_workload.py::test_drain",  # pedantic with a setup
    ],
)
def test_each_kind_of_benchmark_test_runs_under_the_barrier(
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
    suite_copy: Path,
    nodeid: str,
    plugin: str,
    request: pytest.FixtureRequest,
) -> None:
    python = (
        with_benchmark_plugin()
        if plugin == "installed"
        else request.getfixturevalue("pytest_only_python")
    )
    with db.create(shm_path) as orchestrator:
        results = run_both(
            processes, tmp_path, shm_path, suite_copy, (nodeid, nodeid), python, inner_loops=2
        )
        assert orchestrator.generations() == (6, 6)
    for slot, (code, out, err) in enumerate(results):
        assert code == 0, err
        assert out == ""  # pytest's report goes to stderr, which the runner keeps
        assert "1 passed" in err
        lines = read_samples(tmp_path / f"samples-{slot}.jsonl")
        check_complete_samples(
            lines, ("baseline", "candidate")[slot], lines[0]["pid"], 2, 4, inner=2
        )
    assert not (suite_copy / ".pytest_cache").exists()


def events(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_fixtures_stay_alive_through_every_iteration(
    processes: Processes, shm_path: str, tmp_path: Path, suite_copy: Path
) -> None:
    logs = [tmp_path / "log-0", tmp_path / "log-1"]
    cpus = two_cpus()
    with db.create(shm_path):
        workers = [
            start(
                processes,
                python_spec(tmp_path, shm_path, slot, suite_copy, inner_loops=3),
                python=with_benchmark_plugin(),
                cwd=suite_copy,
                nodeid="bench_lifecycle.py::test_fixture_alive",
                cpu=cpus[slot],
                env={"DUET_TEST_LOG": str(logs[slot]), **FOREIGN_ADDOPTS},
            )
            for slot in (0, 1)
        ]
        for worker in workers:
            code, _, err = finish(worker, timeout_s=120)
            assert code == 0, err
    for log in logs:
        # Set up once, 3 calls in each of the 2 + 4 iterations, the rest of the test after
        # the benchmark returned, torn down once.
        assert events(log) == [
            "fixture-setup",
            *["call alive"] * 18,
            "test-after-benchmark",
            "fixture-teardown",
        ]


def test_pedantic_setup_runs_before_each_wait_and_teardown_after(
    processes: Processes, shm_path: str, tmp_path: Path, suite_copy: Path
) -> None:
    log = tmp_path / "log"
    nodeid = "bench_lifecycle.py::test_pedantic_setup_and_teardown"
    with db.create(shm_path):
        results = run_both(
            processes,
            tmp_path,
            shm_path,
            suite_copy,
            (nodeid, "bench_workload.py::test_drain"),
            with_benchmark_plugin(),
            env={"DUET_TEST_LOG": str(log)},
            inner_loops=1,
        )
    assert [code for code, _, _ in results] == [0, 0], results
    # pedantic's rounds=3 and warmup_rounds=1 are pytest-benchmark's; duet runs its own 2 + 4
    # iterations, each call with a fresh setup before the barrier and its teardown after.
    expected = []
    for n in range(6):
        expected += [f"setup {n}", f"call {n}", f"teardown {n}"]
    assert events(log) == expected
    samples = read_samples(tmp_path / "samples-0.jsonl")
    assert samples[-1] == {"done": True, "inner_loops": 1}


def calibrate(tmp_path: Path, directory: Path, nodeid: str, python: str) -> dict[str, Any]:
    spec = python_spec(tmp_path, "", 0, directory, target_iteration_ns=2_000_000)
    done = subprocess.run(
        [python, str(WORKER), "--calibrate", str(spec)],
        cwd=directory,
        env={**os.environ, "DUET_PYTEST_NODEID": nodeid},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "1 passed" in done.stderr  # the test ran, its report on stderr, not in the answer
    (line,) = done.stdout.splitlines()
    result: dict[str, Any] = json.loads(line)
    return result


@pytest.mark.measures  # it times the driver's calls: not beside another test
def test_calibration_runs_the_test_and_times_its_function(tmp_path: Path, suite_copy: Path) -> None:
    python = with_benchmark_plugin()
    small = calibrate(tmp_path, suite_copy, "bench_workload.py::test_checksum_sizes[100]", python)
    # As many calls as make the 2 ms target (how many depends on the machine's load).
    assert small["inner_loops"] >= 1
    assert small["inner_loops"] * small["per_call_ns"] >= 2_000_000
    # A setup prepares one call: one call per iteration, as pytest-benchmark requires.
    assert (
        calibrate(tmp_path, suite_copy, "bench_workload.py::test_drain", python)["inner_loops"] == 1
    )


FAILING = textwrap.dedent(
    """
    import pytest

    def test_fails_first(benchmark):
        assert 1 + 1 == 3
        benchmark(int)

    def boom():
        raise ValueError("boom in the benchmarked function")

    def test_function_raises(benchmark):
        benchmark(boom)

    def test_fails_after(benchmark):
        assert benchmark(int) == 1

    def test_never_calls(benchmark):
        pass

    def test_no_fixture():
        pass

    def test_skipped(benchmark):
        pytest.skip("not on this platform")

    def test_twice(benchmark):
        benchmark(int)
        benchmark(int)
    """
)


@pytest.mark.parametrize(
    ("nodeid", "code", "message", "partner_code"),
    [
        ("bench_fail.py::test_fails_first", 3, "failed in its call", 5),
        ("bench_fail.py::test_function_raises", 3, "ValueError: boom in the benchmarked", 5),
        ("bench_fail.py::test_fails_after", 3, "failed in its call after the benchmark ran", 0),
        ("bench_fail.py::test_never_calls", 3, "requested the benchmark fixture but never", 5),
        ("bench_fail.py::test_no_fixture", 3, "without requesting the benchmark fixture", 5),
        ("bench_fail.py::test_skipped", 3, "was skipped (Skipped: not on this platform)", 5),
        ("bench_fail.py::test_twice", 3, "after the benchmark ran", 0),
        ("bench_fail.py::test_gone", 3, "does not exist at this version", 5),
        ("bench_import.py::test_x", 3, "could not be collected", 5),
    ],
)
def test_failures_explain_themselves_and_stop_the_other_side(
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
    suite_copy: Path,
    nodeid: str,
    code: int,
    message: str,
    partner_code: int,
) -> None:
    (suite_copy / "bench_fail.py").write_text(FAILING)
    (suite_copy / "bench_import.py").write_text("import no_such_module_here\n")
    with db.create(shm_path):
        results = run_both(
            processes,
            tmp_path,
            shm_path,
            suite_copy,
            (nodeid, "bench_workload.py::test_checksum"),
            with_benchmark_plugin(),
        )
    (failed_code, _, failed_err), (other_code, _, other_err) = results
    assert failed_code == code, failed_err
    error = read_samples(tmp_path / "samples-0.jsonl")[-1]["error"]
    assert message in error, error
    # The side that failed before the end aborted the barrier: the other stopped at its next
    # wait (exit 5), its pytest reporting the test as failed, not hanging.
    assert other_code == partner_code, other_err
    if partner_code == 5:
        assert "aborted" in read_samples(tmp_path / "samples-1.jsonl")[-1]["error"]


def test_without_pytest_the_worker_says_so(
    processes: Processes, shm_path: str, tmp_path: Path, suite_copy: Path, bare_python: str
) -> None:
    with db.create(shm_path):
        results = run_both(
            processes,
            tmp_path,
            shm_path,
            suite_copy,
            ("bench_workload.py::test_checksum", "bench_workload.py::test_checksum"),
            bare_python,
        )
    assert {code for code, _, _ in results} <= {3, 5}
    assert results[0][0] == 3 or results[1][0] == 3
    errors = [read_samples(tmp_path / f"samples-{slot}.jsonl")[-1]["error"] for slot in (0, 1)]
    assert any("pytest cannot be imported" in e and "pip install pytest" in e for e in errors)


def test_without_a_node_id_the_driver_says_what_to_set(
    processes: Processes, shm_path: str, tmp_path: Path, suite_copy: Path
) -> None:
    with db.create(shm_path):
        results = run_both(
            processes,
            tmp_path,
            shm_path,
            suite_copy,
            ("", ""),
            with_benchmark_plugin(),
        )
    assert 3 in {code for code, _, _ in results}
    errors = [read_samples(tmp_path / f"samples-{slot}.jsonl")[-1]["error"] for slot in (0, 1)]
    assert any("DUET_PYTEST_NODEID is not set" in e for e in errors)


# -- end to end --------------------------------------------------------------------------------


def duet(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", *args, "--quiet", "--reps", "2000"],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def slower(directory: Path) -> None:
    """Twice the work. These tests check that the driver measures each version's own code, not
    the sensitivity of the method: an in-process python benchmark's run ratios spread 0.7-1.4
    on a day the host slows one vCPU at a time (one CI run left a 30% slower variant
    inconclusive at 10 runs), while a doubling is decided at any run count used here."""
    workload = directory / "workload.py"
    workload.write_text(workload.read_text().replace("ROUNDS = 10", "ROUNDS = 20"))


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_duet_run_detects_the_slower_variant(tmp_path: Path) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(SUITE, base)
    shutil.copytree(SUITE, head)
    slower(head)
    out = tmp_path / "r.json"
    done = duet(
        "run", "--python-baseline", with_benchmark_plugin(),
        "--python-candidate", with_benchmark_plugin(), "--callable", "duet_pytest:run",
        "--baseline-dir", str(base), "--candidate-dir", str(head), "--name", "checksum",
        "--runs", "10", "--iterations", "20", "--isolation", ISOLATION, "--out", str(out),
        cwd=tmp_path, env={"DUET_PYTEST_NODEID": "bench_workload.py::test_checksum"},
    )  # fmt: skip
    # An in-process python benchmark has a large run effect here (the per-run ratios of one CI
    # run of a 30% slower variant: 1.35, 0.87, 1.37, 1.32, 1.34, 1.23, 1.36, 0.91, 1.12, 0.81:
    # the host slowing one vCPU for a while, the side on it paying), hence twice the work.
    assert done.returncode == 1, done.stdout + done.stderr
    analysis = json.loads(out.read_text())["benchmarks"][0]["analysis"]
    assert analysis["verdict"] == "regression"
    assert 1.6 < analysis["ratio"] < 2.5  # twice the work


def settings_toml(extra: str = "") -> str:
    return (
        f'runs = 10\niterations = 20\nwarmup = 1\nisolation = "{ISOLATION}"\n'
        f"python = {json.dumps(with_benchmark_plugin())}\n{extra}"
    )


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_the_adapters_benchmarks_measured_by_duet(tmp_path: Path) -> None:
    # What the suite framework does with the adapter: discover at a version, turn each name
    # into a BenchmarkConfig, and measure the specs of both versions.
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(SUITE, base)
    shutil.copytree(SUITE, head)
    slower(head)
    s = suite(filter="checksum_sizes")
    names = ADAPTER.discover(s, Checkout(base, with_benchmark_plugin()))
    assert names == BENCHMARKS[3:5]
    placeholder = '\n[[benchmark]]\nname = "placeholder"\npython = "workload:checksum"\n'
    loaded = load_config(Path("duet.toml"), text=settings_toml(placeholder))
    config = dataclasses.replace(loaded, benchmarks=(ADAPTER.benchmark(s, names[1]),))
    specs = [s.spec for s in for_suite(config, baseline_dir=base, candidate_dir=head)]
    doc = measure_session(
        specs,
        SessionOptions(
            out=tmp_path / "r.json",
            isolation=ISOLATION,
            machine=MachineOptions(progress=False),
            analysis=AnalysisSettings(reps=2000),
        ),
    )
    (record,) = doc.benchmarks
    assert record.name == "pb/bench_workload.py::test_checksum_sizes[400]"
    assert all(run.ok for run in record.runs)
    assert record.analysis is not None
    assert record.analysis.verdict == "regression"
    assert record.analysis.ratio is not None
    assert 1.6 < record.analysis.ratio < 2.5  # twice the work


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_duet_compare_measures_each_commits_own_benchmark(tmp_path: Path) -> None:
    # A [[benchmark]] entry runs the driver like any python callable; the node id comes from
    # the environment, which duet passes on to the sides (a configuration may not set DUET_
    # variables: a [[suite]] entry, through the adapter, is the way to name the test).
    # Two commits, the second doing twice the work, each in its own worktree: an A/A of HEAD
    # against itself (this test before) could not fail when a side measured the other's code.
    # Chance failure: the doubling must leave its 99% interval above 1.02; with the per-run
    # ratios of this benchmark spread over 0.7-1.4 (a relative SD of about 0.2, see slower()),
    # 10 runs give a standard error near 0.065 and the bound sits 15 of them above 1.02:
    # below 1 CI run in 10^6.
    toml = settings_toml('\n[[benchmark]]\nname = "checksum"\npython = "duet_pytest:run"\n')
    files = {p.name: p.read_text() for p in SUITE.iterdir() if p.is_file()}
    repo = make_repo(tmp_path / "project", [{**files, "duet.toml": toml}])
    slower(repo.path)
    repo.commit({"workload.py": (repo.path / "workload.py").read_text()}, "twice the work")
    out = tmp_path / "out"
    done = duet(
        "compare", "HEAD~1", "HEAD", "--out", str(out), "--no-plots",
        cwd=repo.path, env={"DUET_PYTEST_NODEID": "bench_workload.py::test_checksum"},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    result = json.loads((out / "results.json").read_text())["benchmarks"][0]
    assert result["analysis"]["verdict"] == "regression", result["analysis"]
    assert 1.6 < result["analysis"]["ratio"] < 2.5  # twice the work
