"""``duet calibrate`` on a suite's benchmark: a real Google Benchmark binary (Debian's
libbenchmark-dev) whose benchmark takes one of two times per process, found by discovery in the
working tree, measured as an A/A through the adapter's command and sample, and its plan written
into the ``[[suite]]`` table, where ``duet compare``'s discovery then finds it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from duet_bench.adapters.expand import expand_config
from duet_bench.calibrate import AAData
from duet_bench.calibrate.steps import timing
from duet_bench.config import load_config
from duet_bench.config.writer import edit_text
from duet_bench.plan import for_suite
from tests.conftest import is_root

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.timeout(600)]

ISOLATION = "cgroup" if is_root() else "affinity"

#: One benchmark whose time per operation is one of two levels, chosen once per process (the
#: parity of its pid): a process per iteration with a bimodal time, as a layout-sensitive
#: benchmark's is. ``BM_Other`` is there so that discovery has more than one to choose from.
BENCH_CC = r"""
#include <benchmark/benchmark.h>
#include <unistd.h>

static const int kLevel = (getpid() % 2) ? 3 : 1;

static void BM_Bimodal(benchmark::State& state) {
  for (auto _ : state) {
    unsigned x = 0;
    for (int i = 0; i < 2000 * kLevel; ++i) benchmark::DoNotOptimize(x += i);
  }
}
BENCHMARK(BM_Bimodal);

static void BM_Other(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(state.iterations());
}
BENCHMARK(BM_Other);

BENCHMARK_MAIN();
"""

CONFIG = """\
# A suite, no [[benchmark]] (this comment must survive --write).
crossover = "iteration"

[[suite]]
adapter = "google-benchmark"
path = "bench"
name = "gb"
min_time = 0.005
iterations = 30  # overwritten by calibrate --write
"""


def _toolchain_missing() -> str | None:
    if shutil.which("g++") is None:
        return "g++ is not installed"
    probe = subprocess.run(
        ["g++", "-x", "c++", "-", "-o", "/dev/null", "-lbenchmark", "-lpthread"],
        input="#include <benchmark/benchmark.h>\nBENCHMARK_MAIN();\n",
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return (
            "Google Benchmark is not installed (apt-get install libbenchmark-dev; "
            f"scripts/bootstrap.sh dev does it as root): {probe.stderr.strip()[:200]}"
        )
    return None


MISSING = _toolchain_missing()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if MISSING is not None:
        pytest.skip(MISSING)
    (tmp_path / "bench.cc").write_text(BENCH_CC)
    subprocess.run(
        ["g++", "-O2", "-o", "bench", "bench.cc", "-lbenchmark", "-lpthread"],
        cwd=tmp_path,
        check=True,
    )
    (tmp_path / "duet.toml").write_text(CONFIG)
    return tmp_path


def test_calibrate_plans_a_suite_benchmark_and_compare_uses_the_plan(project: Path) -> None:
    """The shape of the answer only (the machine is shared): the A/A ran the adapter's command
    for the one benchmark named, gave a plan, and the plan is in the suite's table, comments
    kept, where discovery hands it to every benchmark of the suite. Nothing is asserted about a
    measured value, so nothing here fails by chance."""
    out = project / "cal"
    done = subprocess.run(
        [
            sys.executable, "-m", "duet_bench", "calibrate", "--bench", "gb/BM_Bimodal",
            "--runs", "6", "--iterations", "10", "--isolation", ISOLATION, "--reps", "500",
            "--out", str(out), "--write", "--quiet", "--format", "json",
        ],
        cwd=project, capture_output=True, text=True, timeout=500, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    c = json.loads(done.stdout)
    assert "--benchmark_filter=^BM_Bimodal$" in c["context"]["command"]["command"]
    rec = c["recommended"]
    assert rec["runs"] >= 10
    assert rec["iterations"] >= 5
    assert c["impact_factor"]["log_ratio"]["plain"] > 0
    assert c["written"] == f"{project / 'duet.toml'} (suite 'gb': every benchmark it finds)"
    written = (project / "duet.toml").read_text()
    assert "# A suite, no [[benchmark]] (this comment must survive --write)." in written
    assert f"iterations = {rec['iterations']}  # overwritten by calibrate --write" in written
    # duet compare's discovery: every benchmark of the suite gets the plan.
    config, _found = expand_config(
        load_config(project / "duet.toml"), baseline_dir=project, candidate_dir=project
    )
    planned = {p.spec.name: p.spec for p in for_suite(config, baseline_dir=project,
                                                     candidate_dir=project)}  # fmt: skip
    assert set(planned) == {"gb/BM_Bimodal", "gb/BM_Other"}
    # Where calibrate also recommends measuring until decided (min_runs and max_runs written
    # beside runs: its A/A's spread decides, so either can happen), a benchmark's runs are
    # then its max_runs (plan.spec: "runs is then its max_runs"); else the fixed runs.
    table = tomllib.loads(written)["suite"][0]
    assert table["runs"] == rec["runs"]
    for spec in planned.values():
        if "max_runs" in table:
            assert spec.until_decided is not None
            assert (spec.until_decided.min_runs, spec.runs) == (
                table["min_runs"],
                table["max_runs"],
            )
        else:
            assert spec.until_decided is None
            assert spec.runs == rec["runs"]
        assert (spec.iterations, spec.warmup) == (rec["iterations"], rec["warmup"])
        assert spec.method == rec["method"]


def test_a_suite_table_gets_the_values_in_place() -> None:
    """The writer, on text: the second [[suite]] table, its comment and the other tables kept."""
    text = (
        'runs = 10\n\n[[suite]]\nadapter = "go"\npath = "./a"\n\n'
        '[[suite]]  # the second\nadapter = "go"\npath = "./b"\niterations = 30 # here\n'
    )
    new = edit_text(text, form="duet", benchmark=None, values={"iterations": 90, "runs": 12},
                    suite=1)  # fmt: skip
    assert new == (
        'runs = 10\n\n[[suite]]\nadapter = "go"\npath = "./a"\n\n'
        '[[suite]]  # the second\nadapter = "go"\npath = "./b"\niterations = 90 # here\n'
        "runs = 12\n"
    )


def test_a_run_costs_processes_not_samples_when_the_sample_is_per_operation() -> None:
    """Samples of 50 µs per operation inside iterations that start 20 ms apart (a process per
    iteration), runs of 30 iterations lasting 0.7 s: the start-up is 0.1 s, 5 iterations, not
    the 13,400 "iterations" of 50 µs the samples alone would make it."""
    rng = np.random.default_rng(3)
    base = rng.lognormal(np.log(50e3), 0.2, (10, 30))
    cand = rng.lognormal(np.log(50e3), 0.2, (10, 30))
    data = AAData(
        "gb/BM_Sort", "duet", base, cand, np.zeros((10, 0)), np.zeros((10, 0)), (0, 1) * 5,
        wall_ns=np.full((10, 2), 0.7e9), iteration_period_ns=20e6,
    )  # fmt: skip
    t = timing(data, 0)
    assert t.mean_iteration_ns == 20e6
    assert t.startup_ns == pytest.approx(0.1e9)
    assert t.startup_iterations == pytest.approx(5.0)
    # A sample that is the iteration's wall time keeps today's figures.
    same = timing(replace(data, iteration_period_ns=float(np.maximum(base, cand).mean())), 0)
    assert same.mean_iteration_ns == pytest.approx(float(np.maximum(base, cand).mean()))
