"""Real A/A sequences measured until decided: false verdicts, runs and minutes to a decision.

Issue 30, item 7 (docs/statistics.md, "The evidence"). ``benchmarks/stopping_study.py`` resamples
recorded runs; this script measures **real** sequences one run after the other with duet's own
rule. One git repository is made here with a suite of ``--bench`` identical benchmarks and two
commits that differ in nothing (``base`` and an empty commit on top: A/A);
``duet compare base HEAD --budget B`` measures the suite ``--reps`` times. Every benchmark of a
suite is its own sequence, decided by its own rule from its own runs (docs/statistics.md, "A
suite, round by round"), so one suite of N benchmarks gives N sequences.

Workloads (``--workload``):

- ``c``: a CPU-bound C loop (xorshift, the loop of ``benchmarks/rounds_suite.py``, 2.5 M steps,
  about 5 ms an iteration), every benchmark the same program;
- ``startup``: a start-up-dominated command, this interpreter importing a pure-Python package
  (``--module``, default ``pyparsing``: about 80 ms on the project's VM), every benchmark the
  same command.

The rule runs at the defaults a user gets with a budget: ``--budget`` alone, so the first look
after ``min_runs`` 5, at most ``max_runs`` 40, 99%, threshold 2%, 30 iterations, 2 warm-up,
``metric`` auto, crossover at every iteration. ``duet compare`` without ``--budget`` or
``--max-runs`` is a fixed design of 10 runs, not a measurement until decided. The budget given
(default 10 h) is far more than 40 runs of every benchmark take, so none is cut by it; the script
checks that (``stopped`` of every sequence) and says so.

Per sequence: verdict, runs to the decision, machine time (the runs' own wall time, the longer
side per run: ``analysis.stopping.elapsed_ns``), ratio and interval at the last look, the per-run
standard deviation of the log ratios implied by that interval (``half-width * sqrt(n) / c_n``,
exact for the rule's interval), and the runs the rule would have needed to put the interval inside
the band at that spread. Per suite: ``duet compare``'s wall time (builds included) and the load
average before and after. Writes ``benchmarks/results/sequences/<label>/``: every results.json
(gzipped), ``sequences.json`` (what the tables are made of) and ``summary.md`` (also printed).

Run from the repository root, as root (cgroups):
``python benchmarks/aa_sequences.py --label c-20261129 --workload c --bench 50 --reps 5``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rounds_suite import git  # the same git, as a bench author, in a scratch repository
from scipy.stats import beta

from duet_stats.stopping import stopping_bounds

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "sequences"
MIN_RUNS, MAX_RUNS, CONFIDENCE, THRESHOLD = 5, 40, 0.99, 0.02

LOOP_C = """
#include <stdint.h>
#include <stdio.h>
int main(void) {
    uint64_t x = 88172645463325252ULL, acc = 0;
    for (uint64_t i = 0; i < 2500000; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17; acc += x & 0xff;
    }
    printf("%llu\\n", (unsigned long long)acc);
    return 0;
}
"""


def make_suite(where: Path, workload: str, bench: int, module: str) -> Path:
    """The repository: ``base`` and HEAD, an empty commit on it (nothing changed)."""
    repo = where / "suite"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    if workload == "c":
        (repo / "loop.c").write_text(LOOP_C)
        config = 'isolation = "cgroup"\nbuild = "cc -O2 -o loop loop.c"\n'
        command = "./loop"
    else:
        config = 'isolation = "cgroup"\n'
        command = f"{shlex.quote(sys.executable)} -c {shlex.quote('import ' + module)}"
    config += "".join(
        f'\n[[benchmark]]\nname = "s{i:03d}"\ncommand = {json.dumps(command)}\n'
        for i in range(bench)
    )
    (repo / "duet.toml").write_text(config)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    git(repo, "commit", "-q", "--allow-empty", "-m", "nothing changed")
    return repo


def implied(stopping: dict[str, Any], ci_low: float, ci_high: float) -> tuple[float, int | None]:
    """Per-run s.d. of the log ratios the last look's interval implies, and the runs the rule
    would need at that s.d. and mean for the interval to lie inside the band (None: > 40)."""
    n = int(stopping["looks"][-1]["runs"])
    bounds = stopping_bounds(min_runs=MIN_RUNS, max_runs=MAX_RUNS, confidence=CONFIDENCE)
    half = (math.log(ci_high) - math.log(ci_low)) / 2
    sd = half * math.sqrt(n) / bounds.critical[n - MIN_RUNS]
    mean = (math.log(ci_high) + math.log(ci_low)) / 2
    band = math.log(1 + THRESHOLD)
    for k in range(MIN_RUNS, MAX_RUNS + 1):
        h = bounds.critical[k - MIN_RUNS] * sd / math.sqrt(k)
        if abs(mean) + h < band:
            return sd, k
    return sd, None


def measure(repo: Path, out: Path, budget: str) -> tuple[float, dict[str, Any]]:
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "duet_bench",
            "compare",
            "base",
            "HEAD",
            "--out",
            str(out),
            "--budget",
            budget,
            "--quiet",
            "--no-plots",
            "--fail-on",
            "never",
            # Queue behind another duet measuring on the shared machine instead of failing.
            "--wait",
        ],
        cwd=repo,
        env={
            **os.environ,
            "PYTHONDONTWRITEBYTECODE": "1",
            "XDG_CACHE_HOME": str(repo.parent / "cache"),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    wall_s = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"duet compare failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall_s, json.loads((out / "results.json").read_text())


def sequences_of(doc: dict[str, Any], rep: int) -> list[dict[str, Any]]:
    rows = []
    for b in doc["benchmarks"]:
        a = b["analysis"]
        s = a.get("stopping") or {}
        if not s.get("looks"):
            continue  # an interrupted suite's benchmark short of its first look: no sequence
        sd, needed = implied(s, a["ci_low"], a["ci_high"])
        rows.append(
            {
                "rep": rep,
                "name": b["name"],
                "verdict": a["verdict"],
                "runs": len(b["runs"]),
                "decided_after": s["decided_after"],
                "stopped": s["stopped"],
                "machine_s": s["elapsed_ns"] / 1e9,
                "ratio": a["ratio"],
                "ci_low": a["ci_low"],
                "ci_high": a["ci_high"],
                "metric": a["metric"],
                "per_run_sd": sd,
                "runs_needed": needed,
            }
        )
    return rows


def upper_95(false: int, n: int) -> float:
    """One-sided 95% Clopper-Pearson upper bound of a rate seen ``false`` times in ``n``."""
    return 1.0 if false >= n else float(beta.ppf(0.95, false + 1, n - false))


def quantiles(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.3g}" if values else "-"
    q = statistics.quantiles(values, n=20, method="inclusive")
    return f"{statistics.median(values):.3g} [{q[0]:.3g}, {q[-1]:.3g}]"


def summary(meta: dict[str, Any], rows: list[dict[str, Any]], suites: list[dict[str, Any]]) -> str:
    n = len(rows)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    false = counts.get("regression", 0) + counts.get("improvement", 0)
    undecided = counts.get("inconclusive", 0)
    cut = sum(1 for r in rows if r["stopped"] == "budget spent")
    cut_off = sum(1 for r in rows if r["stopped"] == "stopped before the last run")
    metrics: dict[str, int] = {}
    for r in rows:
        metrics[r["metric"]] = metrics.get(r["metric"], 0) + 1
    lines = [
        f"# {meta['label']}: {n} real A/A sequences measured until decided ({meta['what']})",
        "",
        f"`{meta['command']}`",
        "",
        f"{len(suites)} suites of {meta['bench']} identical benchmarks, `duet compare base HEAD "
        f"--budget {meta['budget']}` (min 5, max 40 runs, 99%, threshold 2%, 30 iterations, "
        f"metric auto), {meta['started']} to {meta['ended']} UTC; "
        f"load average (1 min) {meta['load_min']:.3g}-{meta['load_max']:.3g} "
        "(before and after each suite; other engineers' builds and tests were running).",
        "",
        "| sequences | no change | regression | improvement | inconclusive | "
        "false verdicts, 95% upper bound (Clopper-Pearson) | inconclusive, 95% upper bound | "
        "cut by the budget | interrupted undecided |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {n} | {counts.get('no change', 0)} | {counts.get('regression', 0)} | "
        f"{counts.get('improvement', 0)} | {undecided} | "
        f"{false} ({100 * false / n:.3g}%), <= {100 * upper_95(false, n):.3g}% | "
        f"{undecided} ({100 * undecided / n:.3g}%), <= {100 * upper_95(undecided, n):.3g}% | "
        f"{cut} | {cut_off} |",
        "",
        "| per sequence | median [5%, 95%] | max |",
        "|---|---|---|",
    ]
    for key, label in (
        ("runs", "runs to the end"),
        ("machine_s", "machine time s (the runs' own wall time)"),
        ("per_run_sd", "per-run s.d. of the log ratio (implied by the last interval)"),
    ):
        v = [float(r[key]) for r in rows]
        lines.append(f"| {label} | {quantiles(v)} | {max(v):.3g} |")
    lines += [
        "",
        "Metrics that decided: " + ", ".join(f"{m} {k}" for m, k in sorted(metrics.items())),
        "",
        "| suite | session wall s (builds included) | machine time of its runs s | runs | "
        "verdicts | load before, after |",
        "|---|---|---|---|---|---|",
    ]
    for s in suites:
        got = [r for r in rows if r["rep"] == s["rep"]]
        said: dict[str, int] = {}
        for r in got:
            said[r["verdict"]] = said.get(r["verdict"], 0) + 1
        lines.append(
            f"| {s['rep']} | {s['wall_s']:.3g} | {sum(r['machine_s'] for r in got):.3g} | "
            f"{sum(r['runs'] for r in got)} | "
            + ", ".join(f"{v} x{k}" for v, k in sorted(said.items()))
            + f" | {s['load_before']:.3g}, {s['load_after']:.3g} |"
        )
    odd = [r for r in rows if r["verdict"] != "no change"]
    if odd:
        lines += [
            "",
            "| sequence | verdict | runs | machine time s | ratio [interval] | per-run s.d. | "
            "runs the rule would need at that s.d. and mean | stopped |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in odd:
            lines.append(
                f"| {r['rep']}/{r['name']} | {r['verdict']} | {r['runs']} | "
                f"{r['machine_s']:.3g} | {r['ratio']:.3g} "
                f"[{r['ci_low']:.3g}, {r['ci_high']:.3g}] | {100 * r['per_run_sd']:.3g}% | "
                f"{r['runs_needed'] or '> 40'} | {r['stopped'] or '-'} |"
            )
    return "\n".join(lines) + "\n"


def analyzed(results: Path) -> dict[str, Any]:
    """An interrupted suite's results.json analysed again (``duet analyze --format json``):
    the file written after every run has the runs but not the analysis."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "duet_bench",
            "analyze",
            str(results),
            "--format",
            "json",
            "--allow-incomplete",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1, 2):
        raise SystemExit(f"duet analyze failed ({done.returncode}):\n{done.stderr[-3000:]}")
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def from_results(args: argparse.Namespace, dest: Path) -> None:
    """``--results``: the summary of a suite measured before and interrupted."""
    doc = analyzed(args.results)
    with gzip.open(dest / "suite-0.results.json.gz", "wt") as f:
        f.write(args.results.read_text())
    rows = sequences_of(doc, 0)
    env = doc["environment"]
    before = float(env["load_average"][0])
    after = float((env.get("load_average_after") or [before])[0])
    suites = [{"rep": 0, "wall_s": float("nan"), "load_before": before, "load_after": after}]
    meta = {
        "label": args.label,
        "what": f"{args.what}; interrupted, summarised from its results.json",
        "workload": args.workload,
        "bench": len(doc["benchmarks"]),
        "budget": args.budget,
        "command": " ".join(["python", *sys.argv]),
        "commit": git(ROOT, "rev-parse", "HEAD").strip(),
        "started": doc.get("created", "?"),
        "ended": "interrupted",
        "load_min": min(before, after),
        "load_max": max(before, after),
    }
    write(dest, meta, rows, suites)


def write(
    dest: Path, meta: dict[str, Any], rows: list[dict[str, Any]], suites: list[dict[str, Any]]
) -> None:
    (dest / "sequences.json").write_text(
        json.dumps({"meta": meta, "suites": suites, "sequences": rows}, indent=1) + "\n"
    )
    text = summary(meta, rows, suites)
    (dest / "summary.md").write_text(text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("--workload", choices=("c", "startup"), default="c")
    parser.add_argument("--module", default="pyparsing", help="the startup workload's import")
    parser.add_argument("--bench", type=int, default=50, help="benchmarks (sequences) per suite")
    parser.add_argument("--reps", type=int, default=1, help="suites measured one after the other")
    parser.add_argument("--budget", default="10h", help="large enough that no sequence is cut")
    parser.add_argument(
        "--results",
        type=Path,
        help="summarise this results.json of an interrupted suite instead of measuring",
    )
    parser.add_argument("--what", default="", help="with --results: what was measured")
    args = parser.parse_args()
    dest = OUT / args.label
    dest.mkdir(parents=True, exist_ok=True)
    if args.results is not None:
        from_results(args, dest)
        return
    rows: list[dict[str, Any]] = []
    suites: list[dict[str, Any]] = []
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="duet-aaseq-") as tmp:
        repo = make_suite(Path(tmp), args.workload, args.bench, args.module)
        command = json.loads(
            (repo / "duet.toml").read_text().split("command = ", 1)[1].split("\n", 1)[0]
        )
        for rep in range(args.reps):
            out = Path(tmp) / f"out-{rep}"
            load_before = os.getloadavg()[0]
            wall_s, doc = measure(repo, out, args.budget)
            load_after = os.getloadavg()[0]
            with gzip.open(dest / f"suite-{rep}.results.json.gz", "wt") as f:
                f.write((out / "results.json").read_text())
            got = sequences_of(doc, rep)
            rows += got
            suites.append(
                {"rep": rep, "wall_s": wall_s, "load_before": load_before, "load_after": load_after}
            )
            said = [r["verdict"] for r in got]
            print(
                f"suite {rep}: {wall_s:.3g} s, load {load_before:.3g}-{load_after:.3g}, "
                f"{said.count('no change')} no change of {len(said)}",
                file=sys.stderr,
                flush=True,
            )
    loads = [s["load_before"] for s in suites] + [s["load_after"] for s in suites]
    meta = {
        "label": args.label,
        "what": "a CPU-bound C loop, about 5 ms an iteration"
        if args.workload == "c"
        else f"a start-up-dominated command: `{command}`",
        "workload": args.workload,
        "bench": args.bench,
        "budget": args.budget,
        "command": " ".join(["python", *sys.argv]),
        "commit": git(ROOT, "rev-parse", "HEAD").strip(),
        "started": started,
        "ended": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "load_min": min(loads),
        "load_max": max(loads),
    }
    write(dest, meta, rows, suites)


if __name__ == "__main__":
    main()
