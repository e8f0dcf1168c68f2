"""The cargo adapter end to end: a criterion suite, criterion fetched from crates.io.

Cost: the first build of criterion (``default-features = false``) takes about a minute of CPU
(3 minutes of wall time measured here on a busy 2-CPU machine). It is built once per checkout
(tests/build_cache.py) in a seed crate whose target directory each version's build command
copies, so each version compiles only the small bench crate (the adapter builds every version
in its own target directory: one shared by both would hand back the first version's
executable).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from duet_bench.adapters.cargo import CARGO_FALLBACKS
from tests.aa import assert_not_slowed
from tests.adapters.suites import (
    FIXTURES,
    NO_VERDICT,
    STEPS_BASE,
    STEPS_HEAD,
    check_both_sides_measured,
    check_regression_found,
    compare,
    project,
    settings,
    source,
    tool,
)
from tests.build_cache import cached_build
from tests.integration.gitrepo import GitRepo

# A build per version, then a compare whose subprocess may take its 1800 s.
pytestmark = [
    pytest.mark.usefixtures("no_leftovers"),
    pytest.mark.slow,
    pytest.mark.timeout(2000),
]


CARGO = tool("cargo", CARGO_FALLBACKS)
needs_cargo = pytest.mark.skipif(
    CARGO is None, reason=f"cargo is not on PATH nor in {CARGO_FALLBACKS}"
)


@pytest.fixture(scope="module")
def seed(request: pytest.FixtureRequest) -> Path:
    """A crate like the test's, built once: its target directory (criterion and its
    dependencies compiled) and its Cargo.lock seed both versions of every test. Kept for the
    later pytest invocations of the same checkout (tests/build_cache.py), keyed by the
    manifest, the source and cargo's version."""
    assert CARGO is not None
    cargo = CARGO
    # Another package name: its own bench executable must not pass for a version's (cargo
    # would find it fresh in the copied directory).
    manifest = (
        (FIXTURES / "Cargo.toml")
        .read_text()
        .replace('name = "work"\nversion', 'name = "seed"\nversion')
    )
    bench = source("work.rs", slowed=1, extra="seed")
    version = subprocess.run([cargo, "--version"], capture_output=True, text=True, check=True)

    def build(crate: Path) -> None:
        (crate / "src").mkdir()
        (crate / "benches").mkdir()
        (crate / "Cargo.toml").write_text(manifest)
        (crate / "src" / "lib.rs").write_text("")
        (crate / "benches" / "work.rs").write_text(bench)
        subprocess.run(
            [cargo, "bench", "--no-run", "--quiet"], cwd=crate, check=True, capture_output=True
        )

    return cached_build(request, "cargo-seed", [manifest, bench, version.stdout], build)


def _config(seed: Path, suite_options: str = "iteration_time = 0.02\n") -> str:
    # The build command copies the seed's target directory (times kept: cargo's freshness
    # check reads them), so each version compiles only the small bench crate.
    return (
        settings("auto")
        + f'build = "mkdir -p target && cp -a {seed}/target/. target/"\n'
        + f'\n[[suite]]\nadapter = "cargo"\npath = "."\nname = "crit"\ncargo = "{CARGO}"\n'
        + suite_options
    )


def _project(tmp_path: Path, seed: Path, fixture: str = "work.rs") -> GitRepo:
    base = {
        "Cargo.toml": (FIXTURES / "Cargo.toml").read_text(),
        "Cargo.lock": (seed / "Cargo.lock").read_text().replace('name = "seed"', 'name = "work"'),
        "src/lib.rs": "",
        "benches/work.rs": source(fixture, slowed=STEPS_BASE, extra="removed"),
        "duet.toml": _config(seed),
    }
    head = {"benches/work.rs": source(fixture, slowed=STEPS_HEAD, extra="added")}
    return project(tmp_path, base, head)


def _output(benchmark: dict[str, object]) -> str:
    """The benchmark's output format as the baseline side ran it (``criterion-calls/N``: the
    fixed count N; ``criterion``: criterion's timing)."""
    versions = benchmark["versions"]
    assert isinstance(versions, dict)
    return str(versions["baseline"]["output"])


@needs_cargo
def test_the_slowed_benchmark_is_a_regression_and_new_and_missing_are_reported(
    tmp_path: Path, seed: Path
) -> None:
    """The CPU-time route, 5 runs of 5 iterations: the 30% slowdown (1.26-1.27 in CPU time,
    the start-up diluting it) is about ten times the width of its 99% interval (2-3% here,
    beside other test runs at load 19-50), so the chance that it is missed is nil; the
    unchanged benchmark fails ``assert_not_slowed`` by chance in about 1 run of 5,000
    (tests/aa.py)."""
    repo = _project(tmp_path, seed)
    done, doc = compare(repo, "base", "HEAD", tmp_path / "out")
    names = {"steady": "steady", "slowed": "slowed", "added": "added", "removed": "removed"}
    check_regression_found(done, doc, "crit", names)
    slowed = next(b for b in doc["benchmarks"] if b["name"] == "crit/slowed")
    # criterion's ns/iter of a loop of tens of microseconds, not the process's milliseconds.
    run = slowed["runs"][0]
    assert all(ns < 2_000_000 for ns in run["candidate"]["iterations_ns"]), run
    # Decided on CPU time: the invocation's, per call of a fixed count chosen at discovery.
    assert slowed["analysis"]["metric"] == "cpu", slowed["analysis"]
    assert all(ns < 2_000_000 for ns in run["candidate"]["iteration_cpu_ns"]), run
    assert _output(slowed).startswith("criterion-calls/"), slowed["versions"]


@needs_cargo
def test_head_against_itself_measures_every_benchmark_on_both_sides(
    tmp_path: Path, seed: Path
) -> None:
    repo = _project(tmp_path, seed)
    done, doc = compare(repo, "HEAD", "HEAD", tmp_path / "out", None, *NO_VERDICT)
    check_both_sides_measured(done, doc)
    assert len(doc["benchmarks"]) == 3


@needs_cargo
def test_groups_parameters_throughput_and_group_settings_are_each_a_benchmark(
    tmp_path: Path, seed: Path
) -> None:
    """A bench target with several groups and ``criterion_group!`` lists (groups.rs): every
    criterion id (``group/function/param``, ``group/param``, ``function``) is a benchmark
    with its own verdict; the candidate slows ``changes/slowed/20000`` by 30%. A group that
    sets its own sample size keeps its count and is still decided on CPU time; one that sets
    its own times keeps criterion's timing and is decided on wall time. Chance of failing: the
    30% slowdown (1.26-1.27 in CPU time) is about ten times the width of its 99% interval
    (2-3.6% at 5 runs here), never missed; the two unchanged CPU-time benchmarks checked fail
    ``assert_not_slowed`` by chance in about 1 run of 5,000 each (tests/aa.py)."""
    repo = _project(tmp_path, seed, "groups.rs")
    done, doc = compare(repo, "base", "HEAD", tmp_path / "out")
    assert done.returncode == 1, done.stdout + done.stderr
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    measured = [
        "sizes/xorshift/10000", "sizes/xorshift/20000", "sizes/30000", "changes/slowed/20000",
        "own/steady", "timed/steady", "steady",
    ]  # fmt: skip
    expected = {f"crit/{n}" for n in [*measured, "changes/added", "changes/removed"]}
    assert set(by_name) == expected, sorted(by_name)
    for name in measured:
        runs = by_name[f"crit/{name}"]["runs"]
        assert runs, name
        assert all(r["status"] == "ok" for r in runs), (name, runs)
    slowed = by_name["crit/changes/slowed/20000"]["analysis"]
    assert slowed["verdict"] == "regression", slowed
    assert slowed["metric"] == "cpu", slowed
    assert 1.1 < slowed["ratio"] < 1.6, slowed
    for name in ("sizes/xorshift/20000", "steady"):
        assert by_name[f"crit/{name}"]["analysis"]["metric"] == "cpu", name
        assert_not_slowed(by_name[f"crit/{name}"])
    # The group's own sample size is the fixed count (500 calls), on CPU time.
    own = by_name["crit/own/steady"]
    assert own["analysis"]["metric"] == "cpu", own["analysis"]
    assert _output(own) == "criterion-calls/500", own["versions"]
    # The group's own times: criterion's timing, no CPU time, decided on wall time.
    timed = by_name["crit/timed/steady"]
    assert timed["analysis"]["metric"] == "wall", timed["analysis"]
    assert not timed["runs"][0]["baseline"].get("iteration_cpu_ns"), timed["runs"][0]
    assert _output(timed) == "criterion", timed["versions"]
    assert by_name["crit/changes/added"]["note"].startswith("new")
    assert by_name["crit/changes/removed"]["note"].startswith("missing")
