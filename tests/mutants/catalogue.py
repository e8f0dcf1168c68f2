"""The hand-written mutants: behaviours a broken duet could get wrong while every line still
looks right. Every one must be killed (``scripts/mutants.py --hand``; tests/README.md,
"Mutants"). Each names the tests that should kill it: the fastest that can, so that the tier
stays within its minutes of CI.

A mutant's ``old`` text must occur exactly once in its file: when a refactor moves or changes
the line, the tier fails and says so, instead of testing nothing. Then rewrite the mutant so
that it breaks the same behaviour in the new code.
"""

from __future__ import annotations

from tests.mutants.engine import Mutant

ANALYSIS = ("tests/duet/test_analysis.py",)
ANALYSIS_X = ("tests/duet/test_analysis_crossover.py",)
EXPANDED = ("tests/stats/test_guards.py::test_expanded_confidence_reference_values",)

HAND: tuple[Mutant, ...] = (
    # The six of issue 32.
    Mutant(
        name="sides-swapped",
        path="duet_bench/runner/run.py",
        old='side_spec = bench.baseline if s.name == "baseline" else bench.candidate',
        new='side_spec = bench.candidate if s.name == "baseline" else bench.baseline',
        tests=("tests/integration/test_run.py::test_python_benchmark_in_two_interpreters",),
        why="each side runs the other side's program: a regression reads as an improvement",
        measures=True,
    ),
    Mutant(
        name="crossover-skipped",
        path="duet_bench/runner/run.py",
        old="crossing = plan.crossover and len(names) == len(SIDES)",
        new="crossing = False",
        tests=(
            "tests/integration/test_crossover.py::"
            "test_a_command_aa_crosses_at_every_iteration[affinity]",
        ),
        why="the sides never change CPUs: a core difference lands in the ratio",
        measures=True,
    ),
    Mutant(
        name="run-dropped",
        path="duet_bench/analysis/series.py",
        old=(
            "        for r in ok:\n"
            "            for name in SIDES:\n"
            "                values = getattr(r.side(name), attr)"
        ),
        new=(
            "        for r in ok[1:]:\n"
            "            for name in SIDES:\n"
            "                values = getattr(r.side(name), attr)"
        ),
        tests=ANALYSIS + ANALYSIS_X,
        why="the analysis silently leaves out the first successful run",
    ),
    Mutant(
        name="interval-quantiles-wrong",
        path="duet_stats/_resample.py",
        old="[(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0]",
        new="[1.0 - confidence, confidence]",
        tests=("tests/stats/test_ratio.py::test_percentile_bounds_are_the_two_tail_quantiles",),
        why="the percentile interval reads the 1% and 99% quantiles for 99%: a 98% interval",
    ),
    Mutant(
        name="barrier-releases-one-side-early",
        path="duet_bench/harness/duet_barrier.py",
        old=(
            "        while w[peer] < g:\n"
            "            if w[W_ABORT]:\n"
            "                raise self._aborted()\n"
            "            n -= 1\n"
            "            if not n:\n"
            "                self._wait_long("
        ),
        new=(
            "        while w[peer] < g - 1:\n"
            "            if w[W_ABORT]:\n"
            "                raise self._aborted()\n"
            "            n -= 1\n"
            "            if not n:\n"
            "                self._wait_long("
        ),
        tests=(
            "tests/duet/test_barrier.py::test_release_rule_matches_the_model",
            "tests/duet/test_barrier.py::test_two_processes_meet_every_iteration",
        ),
        why="a Python side leaves the barrier when its peer is one generation behind",
        measures=True,
    ),
    Mutant(
        name="barrier-releases-one-side-early-c",
        path="duet_bench/harness/duet_barrier.h",
        old="while (atomic_load_explicit(&peer->generation, memory_order_acquire) < g) {",
        new="while (atomic_load_explicit(&peer->generation, memory_order_acquire) < g - 1) {",
        tests=("tests/duet/test_barrier_c.py::test_c_and_python_meet_every_iteration",),
        why="a C side (native benchmarks) leaves the barrier when its peer is a generation behind",
        measures=True,
    ),
    Mutant(
        name="verdict-threshold-inverted",
        path="duet_bench/analysis/verdict.py",
        old="if ci_low > 1.0 and ratio >= band_high:",
        new="if ci_low > 1.0 and ratio < band_high:",
        tests=ANALYSIS,
        why="a regression is called below the threshold and not above it",
    ),
    # The verdict and the exit codes.
    Mutant(
        name="improvement-threshold-inverted",
        path="duet_bench/analysis/verdict.py",
        old="if ci_high < 1.0 and ratio <= band_low:",
        new="if ci_high < 1.0 and ratio >= band_low:",
        tests=ANALYSIS,
        why="an improvement is called inside the band and not beyond it",
    ),
    Mutant(
        name="no-change-band-not-reciprocal",
        path="duet_bench/analysis/verdict.py",
        old="band_low = 1.0 / band_high",
        new="band_low = 1.0 - threshold",
        tests=("tests/duet/test_analysis.py::test_the_band_edges_are_exactly_reciprocal",),
        why="the improvement band is 1 - t instead of 1/(1 + t): not symmetric in log space",
    ),
    Mutant(
        name="regression-does-not-fail",
        path="duet_bench/analysis/verdict.py",
        old='"regression": {"regression"},',
        new='"regression": set(),',
        tests=("tests/duet/test_exit_codes.py::test_analyze_exits_by_the_table",),
        why="--fail-on regression (the default) exits 0 on a regression",
    ),
    Mutant(
        name="exit-code-ignores-verdicts",
        path="duet_bench/commands/finish.py",
        old="return Outcome.FAILS if fails_on(doc, fail_on) else Outcome.OK",
        new="return Outcome.OK",
        tests=("tests/duet/test_exit_codes.py::test_analyze_exits_by_the_table",),
        why="the CLI exits 0 whatever the verdicts",
    ),
    # The ratio's direction and the crossover in the analysis.
    Mutant(
        name="analysis-ratio-inverted",
        path="duet_bench/analysis/estimate.py",
        old="log_ratios = np.log(b / a)\n    if a.shape[0] < 2:",
        new="log_ratios = np.log(a / b)\n    if a.shape[0] < 2:",
        tests=ANALYSIS,
        why="the log ratios kept with the estimate (runs needed, plots) are baseline/candidate",
    ),
    Mutant(
        name="analysis-ignores-the-crossover",
        path="duet_bench/analysis/estimate.py",
        old="assignment=assignment,\n            rng=rng_for(name, settings.seed),",
        new="assignment=None,\n            rng=rng_for(name, settings.seed),",
        tests=ANALYSIS_X,
        why="the interval of a crossed-over duet weighs the two CPU assignments by their counts",
    ),
    Mutant(
        name="crossover-weighting-of-odd-iterations",
        path="duet_stats/crossover.py",
        old="balanced = np.where(both, (mean0 + mean1) / 2.0, kept.mean(axis=1))",
        new="balanced = kept.mean(axis=1)",
        tests=("tests/stats/test_crossover.py",),
        why="with an odd iteration count one assignment weighs more: a core difference leaks in",
    ),
    Mutant(
        name="crossover-plan-stays-on-one-cpu",
        path="duet_bench/plan/runs.py",
        old="return (self.cpus[side], self.cpus[other])",
        new="return (self.cpus[side], self.cpus[side])",
        tests=("tests/duet/test_plan.py",),
        why="a crossing side is moved back to its own CPU: no crossover at all",
    ),
    Mutant(
        name="run-crossover-unbalanced",
        path="duet_bench/plan/runs.py",
        old="swaps = [False] * half + [True] * half",
        new="swaps = [False] * (2 * half)",
        tests=("tests/duet/test_plan.py",),
        why="--crossover run never swaps the CPUs: each side keeps one CPU in every run",
    ),
    # Winsorization.
    Mutant(
        name="winsor-replaces-both-extremes",
        path="duet_stats/winsor.py",
        old="replace_high = high_qualifies & ~replace_low",
        new="replace_high = high_qualifies",
        tests=("tests/stats/test_winsor.py",),
        why="two values of a run are replaced: the paper's rule allows one",
    ),
    Mutant(
        name="winsor-range-includes-the-extreme",
        path="duet_stats/winsor.py",
        old="high_qualifies = high_excess > fraction * (second_highest - lowest)",
        new="high_qualifies = high_excess > fraction * (highest - lowest)",
        tests=("tests/stats/test_winsor.py",),
        why="the outlier is judged against a range that contains itself: fewer qualify",
    ),
    # The expanded percentile interval.
    Mutant(
        name="expanded-percentile-without-the-sqrt-correction",
        path="duet_stats/intervals.py",
        old="half = NormalDist().cdf(-math.sqrt(runs / (runs - 1)) * t)",
        new="half = NormalDist().cdf(-t)",
        tests=EXPANDED,
        why="Hesterberg's factor sqrt(n / (n - 1)) is left out: the interval is too narrow",
    ),
    Mutant(
        name="expanded-percentile-degrees-of-freedom",
        path="duet_stats/intervals.py",
        old="t = t_quantile_two_sided(confidence, runs - 1)",
        new="t = t_quantile_two_sided(confidence, runs)",
        tests=EXPANDED,
        why="the t quantile has n degrees of freedom instead of n - 1",
    ),
    # How many runs would decide.
    Mutant(
        name="runs-needed-distance-to-the-band",
        path="duet_bench/analysis/runs_needed.py",
        old="target = distance if distance >= band else band - distance",
        new="target = distance if distance >= band else band + distance",
        tests=(
            "tests/duet/test_analysis.py::"
            "test_runs_needed_shrinks_the_interval_to_the_deciding_edge",
        ),
        why="an estimate inside the band is judged against the far band edge",
    ),
    Mutant(
        name="runs-needed-between-run-variance",
        path="duet_stats/planning.py",
        old="per_run = (iterations * c.between_run_var + c.within_run_var) / iterations",
        new="per_run = (c.between_run_var + c.within_run_var) / iterations",
        tests=("tests/stats/test_planning.py",),
        why="the between-run variance is divided by the iterations too: too few runs advised",
    ),
    # The results file.
    Mutant(
        name="results-file-written-without-its-last-run",
        path="duet_bench/results/write.py",
        old='out["runs"] = [_run_dict(r) for r in b.runs]',
        new='out["runs"] = [_run_dict(r) for r in b.runs[:-1]]',
        tests=("tests/duet/test_results.py",),
        why="a saved results file loses its last run",
    ),
    Mutant(
        name="results-file-read-without-its-first-run",
        path="duet_bench/results/read.py",
        old='runs = tuple(_run(rd, r, f"{where}.runs[{i}]") for i, r in enumerate(runs_raw))',
        new='runs = tuple(_run(rd, r, f"{where}.runs[{i}]") for i, r in enumerate(runs_raw[1:]))',
        tests=("tests/duet/test_results.py",),
        why="reading a results file drops its first run",
    ),
)
