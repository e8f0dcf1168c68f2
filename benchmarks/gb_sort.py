"""A layout-sensitive sort run as a process per iteration: today's defaults against the plan
``duet calibrate`` makes, at equal machine time.

Issue 29, item 6 (the sort target: an unchanged sort of 4,096 integers **<= 6% wide** at the
machine time of today's defaults, through the plan ``calibrate`` makes). A git repository (in a
temporary directory) with a Google Benchmark suite, ``bench.cc`` built as
``tests/adapters/test_google_benchmark.py`` builds it (``g++ -O2 -o bench bench.cc -lbenchmark
-lpthread``, the same command in both commits): ``BM_Sort->Arg(4096)`` copies a vector of 4,096
pseudo-random ints (``std::mt19937``, fixed seed) and ``std::sort``s it. Two commits, ``base``
and ``head``, that differ only in ``NOTES.txt`` (checked): an A/A.

Per trial:

- **defaults**: ``duet compare base head --runs 10`` with a configuration that gives only the
  suite (``[[suite]] adapter = "google-benchmark"``): today's 10 runs x 30 iterations (2
  warm-up). ``--runs 10`` is passed because "measure until decided" may become the default.
- **calibrated**: in a working tree at ``head`` (a branch ``plan-KK``), the suite built, then
  ``duet calibrate --bench gb/BM_Sort/4096 --write`` (its A/A: 20 runs x 30 iterations unless
  ``--calib-runs``/``--calib-iterations`` say otherwise); the ``duet.toml`` it wrote (runs,
  iterations, warm-up, metric, method, min/max runs in the ``[[suite]]`` table) is committed on
  ``plan-KK``, so ``duet compare base plan-KK`` reads it from the candidate's configuration as a
  user's CI would. Its runs are set on the command line (``--runs R``, a fixed design) so that
  the machine time equals the defaults trial's: an iteration of a suite is one invocation of the
  benchmark binary, whose cost is set by ``min_time`` and not by the design, so equal machine
  time is an equal count of invocations per side, ``R = round(10 x (30 + 2) / (I + W))`` with the
  plan's iterations I and warm-up W. When that leaves fewer than 5 runs (with fewer the analysis
  gives no interval: a plan of 300 iterations per run fits once in the defaults' 320
  invocations), the calibrated comparison is 5 runs of ``round(320 / 5) - W`` iterations
  (``--runs 5 --iterations N``): the plan's metric, method and warm-up, its iterations cut to
  the time. The
  machine times both comparisons measured (the sum over runs of the slower side's ``wall_ns``)
  are recorded, so the match is checked, not assumed.

Per comparison: the ratio, the 99% interval and its width ``ci_high - ci_low`` (in % of 1), the
verdict, the deciding metric, the machine time, the note of the report, and the per-process
spread (per run, side and CPU the slowest process's sample over the fastest, the median over
them: the figure the note quotes). Files under ``--out``: the results files gzipped
(``trial-KK-defaults.json.gz``, ``trial-KK-calibrated.json.gz``), the calibration's JSON report
(``trial-KK-calibration.json.gz``) and the ``duet.toml`` it wrote (``trial-KK-duet.toml``), a
line per comparison in ``trials.txt`` (its row in ``trials.jsonl``), and the summary
(``summary.txt``). ``--until HH:MM`` (UTC) starts no trial that the last one's length says would
end later; ``--summarize`` summarizes the rows on disk.

Run from the repository root as root (cgroups): ``python benchmarks/gb_sort.py --out
benchmarks/results/gb-sort --trials 3 --until 17:25``. Every duet command queues behind any
other duet measuring on the machine (``--wait``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from statistics import median
from typing import Any

BUILD = "g++ -O2 -o bench bench.cc -lbenchmark -lpthread"
BENCH = "gb/BM_Sort/4096"
DEFAULT_RUNS = 10
DEFAULT_ITERATIONS = 30
DEFAULT_WARMUP = 2
TARGET_WIDTH_PCT = 6.0
# Fewer successful runs give a point estimate and no interval (duet_bench's analysis).
MIN_RUNS = 5

SOURCE = """// BM_Sort: copy 4,096 pseudo-random ints (a fixed seed) and sort them.
#include <benchmark/benchmark.h>
#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

static std::vector<int> input(std::size_t n) {
    std::mt19937 gen(20261129);
    std::vector<int> v(n);
    for (auto& x : v) x = static_cast<int>(gen());
    return v;
}

static void BM_Sort(benchmark::State& state) {
    const std::vector<int> data = input(static_cast<std::size_t>(state.range(0)));
    for (auto _ : state) {
        std::vector<int> v = data;
        std::sort(v.begin(), v.end());
        benchmark::DoNotOptimize(v.data());
        benchmark::ClobberMemory();
    }
}
BENCHMARK(BM_Sort)->Arg(4096);

BENCHMARK_MAIN();
"""

# Only the suite: no runs, iterations or metric, so today's defaults apply.
CONFIG = f"""build = "{BUILD}"

[[suite]]
adapter = "google-benchmark"
path = "bench"
name = "gb"
"""


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}
    done = subprocess.run(["git", *args], cwd=repo, check=True, env=env, capture_output=True)
    return done.stdout.decode()


def make_repo(where: Path) -> Path:
    repo = where / "project"
    repo.mkdir(parents=True)
    (repo / "bench.cc").write_text(SOURCE)
    (repo / "duet.toml").write_text(CONFIG)
    (repo / ".gitignore").write_text("/bench\n")
    (repo / "NOTES.txt").write_text("A sort benchmark.\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    (repo / "NOTES.txt").write_text("A sort benchmark of 4,096 ints.\n")
    git(repo, "commit", "-q", "-am", "NOTES.txt: say the size")
    git(repo, "tag", "head")
    changed = git(repo, "diff", "--name-only", "base", "head").split()
    if changed != ["NOTES.txt"]:
        raise SystemExit(f"base and head differ beyond NOTES.txt: {changed}")
    return repo


def duet(*args: str) -> list[str]:
    return [sys.executable, "-m", "duet_bench", *args]


def compare(
    repo: Path, head: str, runs: int, out: Path, iterations: int | None = None
) -> dict[str, Any]:
    cmd = duet("compare", "base", head, "--runs", str(runs), "--bench", BENCH, "--out", str(out))
    if iterations is not None:
        cmd += ["--iterations", str(iterations)]
    cmd += ["--wait", "--quiet", "--no-plots", "--fail-on", "never"]
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(
            f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    doc: dict[str, Any] = json.loads((out / "results.json").read_text())
    return doc


def calibrate(repo: Path, k: int, o: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The plan for ``head``: build the working tree, calibrate with ``--write``, commit the
    ``duet.toml`` it wrote on ``plan-KK``. Returns the suite table it wrote and the report."""
    branch = f"plan-{k:02d}"
    git(repo, "checkout", "-q", "-b", branch, "head")
    subprocess.run(BUILD, shell=True, cwd=repo, check=True)
    cmd = duet("calibrate", "--bench", BENCH, "--write", "--wait", "--quiet", "--format", "json")
    cmd += ["--runs", str(o.calib_runs), "--iterations", str(o.calib_iterations)]
    cmd += ["--out", str(out)]
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    report = json.loads(done.stdout)
    text = (repo / "duet.toml").read_text()
    (o.out / f"trial-{k:02d}-duet.toml").write_text(text)
    with gzip.open(o.out / f"trial-{k:02d}-calibration.json.gz", "wt") as f:
        json.dump(report, f)
    git(repo, "commit", "-q", "-am", "duet.toml: the plan duet calibrate wrote")
    git(repo, "checkout", "-q", "--detach", "head")
    suite: dict[str, Any] = tomllib.loads(text)["suite"][0]
    return {"branch": branch, "suite": suite, "report": report}


def machine_ns(doc: dict[str, Any]) -> int:
    """The runs' own wall time: per run the slower side's ``wall_ns``, summed."""
    runs = doc["benchmarks"][0]["runs"]
    return sum(max(r["baseline"]["wall_ns"], r["candidate"]["wall_ns"]) for r in runs)


def process_spread(doc: dict[str, Any], metric: str) -> float:
    """Per run, side and CPU the slowest iteration (process) over the fastest, on the deciding
    metric's sample; the median over them."""
    key = "iteration_cpu_ns" if metric == "cpu" else "iterations_ns"
    spreads = []
    for run in doc["benchmarks"][0]["runs"]:
        for side in ("baseline", "candidate"):
            s = run[side]
            values, cpus = s.get(key) or s["iterations_ns"], s.get("iteration_cpus") or []
            for cpu in set(cpus) or {None}:
                on = [v for i, v in enumerate(values) if cpu is None or cpus[i] == cpu]
                if len(on) >= 2 and min(on) > 0:
                    spreads.append(max(on) / min(on))
    return median(spreads) if spreads else float("nan")


def width_pct(m: dict[str, Any]) -> float | None:
    """``ci_high - ci_low`` in % of 1, or None without an interval (too few runs)."""
    if m.get("ci_low") is None or m.get("ci_high") is None:
        return None
    return 100 * (float(m["ci_high"]) - float(m["ci_low"]))


def figures(doc: dict[str, Any]) -> dict[str, Any]:
    """The deciding metric's figures, and every metric's width (``analysis.metrics``: the
    same runs analysed on wall and CPU time), so that the plan's effect and the metric's can
    be told apart."""
    b = doc["benchmarks"][0]
    a = b["analysis"]
    return {
        "ratio": a["ratio"],
        "ci": (a["ci_low"], a["ci_high"]),
        "width_pct": width_pct(a),
        "verdict": a["verdict"],
        "metric": a["metric"],
        "metric_reason": a.get("metric_reason"),
        "widths_by_metric": {m: width_pct(v) for m, v in (a.get("metrics") or {}).items()},
        "runs": a["runs_used"],
        "iterations": a["iterations"],
        "machine_s": machine_ns(doc) / 1e9,
        "spread": process_spread(doc, a["metric"]),
        "note": b.get("note") or a.get("note"),
    }


def equal_time_design(default_runs: int, iterations: int, warmup: int) -> tuple[int, int]:
    """Runs and iterations of the plan that invoke the binary as often as the defaults do:
    the plan's iterations and fewer runs; when that leaves fewer than ``MIN_RUNS`` runs (a plan
    of many iterations per run), ``MIN_RUNS`` runs of as many iterations as the time allows."""
    budget = default_runs * (DEFAULT_ITERATIONS + DEFAULT_WARMUP)
    runs = round(budget / (iterations + warmup))
    if runs >= MIN_RUNS:
        return runs, iterations
    return MIN_RUNS, max(5, round(budget / MIN_RUNS) - warmup)


def saved(o: argparse.Namespace, name: str, doc: dict[str, Any]) -> None:
    with gzip.open(o.out / f"{name}.json.gz", "wt") as f:
        json.dump(doc, f)


def trial(repo: Path, k: int, o: argparse.Namespace) -> dict[str, Any]:
    row: dict[str, Any] = {"trial": k, "started": time.strftime("%H:%M:%S", time.gmtime())}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="duet-gb-sort-trial-") as tmp:
        load0 = os.getloadavg()[0]
        doc = compare(repo, "head", o.default_runs, Path(tmp) / "defaults")
        saved(o, f"trial-{k:02d}-defaults", doc)
        row["defaults"] = figures(doc) | {"load": (load0, os.getloadavg()[0])}
        load0 = os.getloadavg()[0]
        plan = calibrate(repo, k, o, Path(tmp) / "calibration")
        suite = plan["suite"]
        iterations, warmup = int(suite["iterations"]), int(suite.get("warmup", 0))
        runs, at_equal = equal_time_design(o.default_runs, iterations, warmup)
        row["plan"] = {
            "written": {key: suite[key] for key in sorted(suite) if key not in ("path", "name")},
            "runs_at_equal_time": runs,
            "iterations_at_equal_time": at_equal,
            "impact_factor": plan["report"].get("impact_factor"),
            "load": (load0, os.getloadavg()[0]),
        }
        load0 = os.getloadavg()[0]
        scaled = None if at_equal == iterations else at_equal
        doc = compare(repo, plan["branch"], runs, Path(tmp) / "calibrated", scaled)
        saved(o, f"trial-{k:02d}-calibrated", doc)
        row["calibrated"] = figures(doc) | {"load": (load0, os.getloadavg()[0])}
    row["minutes"] = (time.monotonic() - t0) / 60
    return row


def pct(width: float | None) -> str:
    return "none" if width is None else f"{width:.3g}%"


def design_line(name: str, f: dict[str, Any]) -> str:
    lo, hi = f["ci"]
    interval = "no interval" if lo is None else f"[{lo:.4f}, {hi:.4f}]"
    others = ", ".join(f"{m} {pct(w)}" for m, w in sorted(f["widths_by_metric"].items()))
    return (
        f"{name}: {f['runs']} x {f['iterations']} by {f['metric']} {f['ratio']:.4f} "
        f"{interval} width {pct(f['width_pct'])} {f['verdict']} (widths by metric: {others}), "
        f"machine {f['machine_s']:.3g} s, spread {f['spread']:.3g}x, load {f['load'][0]:.1f}-"
        f"{f['load'][1]:.1f}; note: {f['note'] or '-'}"
    )


def trial_lines(row: dict[str, Any]) -> str:
    p = row["plan"]
    w = p["written"]
    plan = ", ".join(f"{key} = {w[key]}" for key in w)
    return "\n".join(
        [
            f"trial {row['trial']:02d} {row['started']} UTC, {row['minutes']:.1f} min",
            "  " + design_line("defaults", row["defaults"]),
            f"  plan written: {plan}; run at equal machine time as {p['runs_at_equal_time']} x "
            f"{p.get('iterations_at_equal_time', w['iterations'])} (calibration load "
            f"{p['load'][0]:.1f}-{p['load'][1]:.1f})",
            "  " + design_line("calibrated", row["calibrated"]),
        ]
    )


def design_summary(design: str, fs: list[dict[str, Any]]) -> list[str]:
    widths = [f["width_pct"] if f["width_pct"] is not None else float("inf") for f in fs]
    verdicts: dict[str, int] = {}
    for f in fs:
        verdicts[str(f["verdict"])] = verdicts.get(str(f["verdict"]), 0) + 1
    lines = [
        f"{design}: widths median {median(widths):.3g}%, max {max(widths):.3g}%; verdicts "
        + ", ".join(f"{v} {c}" for v, c in sorted(verdicts.items()))
        + f"; machine time median {median(f['machine_s'] for f in fs):.3g} s; deciding metric "
        + "/".join(f["metric"] for f in fs)
        + f"; spread median {median(f['spread'] for f in fs):.3g}x"
    ]
    for metric in sorted({m for f in fs for m in f["widths_by_metric"]}):
        ws = [f["widths_by_metric"].get(metric) for f in fs]
        known = [w for w in ws if w is not None]
        if known:
            lines.append(
                f"  on {metric}: widths median {median(known):.3g}%, max {max(known):.3g}% "
                f"({len(known)} of {len(ws)} with an interval)"
            )
    return lines


def summary(rows: list[dict[str, Any]]) -> str:
    lines = [f"{len(rows)} trials, {sum(r['minutes'] for r in rows):.0f} min"]
    for design in ("defaults", "calibrated"):
        lines += design_summary(design, [r[design] for r in rows])
    met = sum((r["calibrated"]["width_pct"] or 1e9) <= TARGET_WIDTH_PCT for r in rows)
    ratio = median(r["calibrated"]["machine_s"] / r["defaults"]["machine_s"] for r in rows)
    lines.append(
        f"calibrated plan <= {TARGET_WIDTH_PCT:g}% wide in {met} of {len(rows)} trials "
        f"(machine time calibrated/defaults median {ratio:.3g})"
    )
    return "\n".join(lines)


def fits(minutes: float, until: str) -> bool:
    """Whether a trial of ``minutes`` started now ends before ``until`` (HH:MM, UTC, today)."""
    now = time.gmtime()
    hours, mins = (int(x) for x in until.split(":"))
    left = hours * 60 + mins - (now.tm_hour * 60 + now.tm_min + now.tm_sec / 60)
    return minutes < left


def run_trials(o: argparse.Namespace) -> None:
    rows_file = o.out / "trials.jsonl"
    rows = [json.loads(ln) for ln in rows_file.read_text().splitlines()] if o.summarize else []
    if not o.summarize:
        with tempfile.TemporaryDirectory(prefix="duet-gb-sort-") as tmp:
            repo = make_repo(Path(tmp))
            for k in range(o.first, o.first + o.trials):
                if rows and o.until and not fits(rows[-1]["minutes"], o.until):
                    print(f"trial {k:02d} would end after {o.until} UTC: stopped", flush=True)
                    break
                row = trial(repo, k, o)
                rows.append(row)
                text = trial_lines(row)
                print(text, flush=True)
                with open(o.out / "trials.txt", "a") as f:
                    f.write(text + "\n")
                with open(rows_file, "a") as f:
                    f.write(json.dumps(row) + "\n")
        rows = [json.loads(ln) for ln in rows_file.read_text().splitlines()]
    text = summary(rows)
    print(text, flush=True)
    (o.out / "summary.txt").write_text(text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--first", type=int, default=0, help="number of the first trial")
    parser.add_argument(
        "--default-runs",
        type=int,
        default=DEFAULT_RUNS,
        help="runs of the defaults trial (fewer only for a smoke test of this script)",
    )
    parser.add_argument("--calib-runs", type=int, default=20)
    parser.add_argument("--calib-iterations", type=int, default=30)
    parser.add_argument("--until", default="", help="HH:MM UTC: start no trial ending later")
    parser.add_argument("--summarize", action="store_true", help="summarize the trials on disk")
    o = parser.parse_args()
    # A kill (SIGTERM) ends it as Ctrl-C would: the temporary repository goes with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    o.out.mkdir(parents=True, exist_ok=True)
    run_trials(o)


if __name__ == "__main__":
    main()
