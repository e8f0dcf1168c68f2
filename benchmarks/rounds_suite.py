"""A suite of 10 benchmarks measured until decided: round by round against one after the other.

Issue 30, item 3 (docs/statistics.md, "A suite, round by round"). One git repository made here:
10 CPU-bound C loops (xorshift, the loop of tests/integration/test_compare.py, 2-6 M steps, about
3-8 ms an iteration); at HEAD three of them (``b3``, ``b6``, ``b9``) do 5% more steps, the other
seven are unchanged (A/A). ``duet compare base HEAD --max-runs 40 --budget B`` measures the suite:

- ``rounds``: this checkout (a round gives every undecided benchmark one more run);
- ``one-by-one``: the same command with the session of the commit given by ``--before`` (default:
  the parent of the round-by-round work, whose benchmarks were measured one after the other,
  each until decided, with the budget left divided by the benchmarks still to measure), from a
  ``git archive`` of it in a temporary directory, imported first through ``PYTHONPATH``.

The two alternate (``rounds``, ``one-by-one``, ``rounds``, ...) ``--reps`` times in one sitting.
Per benchmark: runs and machine time to the end (``analysis.stopping``: ``decided_after``,
``elapsed_ns``, the runs' own wall time) and the verdict; per suite: the machine time of all runs
and the session's wall time (``duet compare``'s, builds included, printed apart). Writes
``benchmarks/results/rounds/<label>/`` : every results.json (gzipped), ``runs.json`` (what the
table is made of) and ``summary.md`` (also printed). Medians are over the repetitions of one
sitting; the machine is shared (say what else ran).

Run from the repository root, as root (cgroups):
``python benchmarks/rounds_suite.py --label generous --budget 10m --reps 3``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "rounds"
BEFORE = "4b64b05049ac9e660674463e7c2f8ec99bec3ef1"

WORK_C = """
#include <stdint.h>
#include <stdio.h>
int main(void) {
    uint64_t x = 88172645463325252ULL, acc = 0;
    for (uint64_t i = 0; i < STEPS; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17; acc += x & 0xff;
    }
    printf("%llu\\n", (unsigned long long)acc);
    return 0;
}
"""
#: Steps of each benchmark at ``base``; at HEAD the CHANGED ones do 5% more.
STEPS = {f"b{i}": 2_000_000 + 400_000 * i for i in range(10)}
CHANGED = ("b3", "b6", "b9")


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def make_suite(where: Path) -> Path:
    """The repository: ``base`` and HEAD (three loops 5% longer)."""
    repo = where / "suite"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    build = " && ".join(f"cc -O2 -o {n} {n}.c" for n in STEPS)
    config = f'iterations = 20\nwarmup = 2\nisolation = "cgroup"\nbuild = "{build}"\n'
    config += "".join(f'\n[[benchmark]]\nname = "{n}"\ncommand = "./{n}"\n' for n in STEPS)
    (repo / "duet.toml").write_text(config)
    for name, steps in STEPS.items():
        (repo / f"{name}.c").write_text(WORK_C.replace("STEPS", str(steps)))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    for name in CHANGED:
        (repo / f"{name}.c").write_text(WORK_C.replace("STEPS", str(round(STEPS[name] * 1.05))))
    git(repo, "commit", "-q", "-am", "three loops 5% slower")
    return repo


def snapshot(commit: str, where: Path) -> Path:
    """The package as it was at ``commit`` (``git archive``), to import first."""
    dest = where / "before"
    dest.mkdir()
    archive = subprocess.run(
        ["git", "archive", commit, "duet_bench", "duet_stats"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def measure(repo: Path, out: Path, budget: str, before: Path | None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if before is not None:
        env["PYTHONPATH"] = str(before)
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
            "--max-runs",
            "40",
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
        env={**env, "XDG_CACHE_HOME": str(repo.parent / "cache")},
        capture_output=True,
        text=True,
        check=False,
    )
    wall_s = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"duet compare failed ({done.returncode}):\n{done.stderr[-3000:]}")
    doc = json.loads((out / "results.json").read_text())
    per = {}
    for b in doc["benchmarks"]:
        a = b["analysis"]
        stopping = a.get("stopping") or {}
        per[b["name"]] = {
            "runs": len(b["runs"]),
            "decided_after": stopping.get("decided_after"),
            "elapsed_s": (stopping.get("elapsed_ns") or 0) / 1e9,
            "verdict": a.get("verdict"),
            "ratio": a.get("ratio"),
        }
    return {"wall_s": wall_s, "benchmarks": per}


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def summary(label: str, budget: str, reps: list[dict[str, Any]], load: str) -> str:
    modes = ("rounds", "one-by-one")
    lines = [
        f"# {label}: a suite of 10 until decided, --max-runs 40 --budget {budget}",
        "",
        f"{len(reps) // 2} repetitions of each, alternating, one sitting; {load}",
        "",
        "| benchmark | truth | mode | runs (median) | machine time s (median) | verdicts |",
        "|---|---|---|---|---|---|",
    ]
    for name in STEPS:
        truth = "5% slower" if name in CHANGED else "A/A"
        for mode in modes:
            got = [r["benchmarks"][name] for r in reps if r["mode"] == mode]
            verdicts: dict[str, int] = {}
            for g in got:
                verdicts[str(g["verdict"])] = verdicts.get(str(g["verdict"]), 0) + 1
            said = ", ".join(f"{v} x{n}" for v, n in sorted(verdicts.items()))
            lines.append(
                f"| {name} | {truth} | {mode} | {median([g['runs'] for g in got]):.3g} | "
                f"{median([g['elapsed_s'] for g in got]):.3g} | {said} |"
            )
    lines += [
        "",
        "| mode | runs of the suite (median) | machine time of all runs s (median) | "
        "session wall s, builds included (median) | benchmarks decided (median) |",
        "|---|---|---|---|---|",
    ]
    totals: dict[str, float] = {}
    for mode in modes:
        got = [r for r in reps if r["mode"] == mode]
        runs = median([sum(b["runs"] for b in r["benchmarks"].values()) for r in got])
        machine = median([sum(b["elapsed_s"] for b in r["benchmarks"].values()) for r in got])
        wall = median([r["wall_s"] for r in got])
        decided = median(
            [sum(b["decided_after"] is not None for b in r["benchmarks"].values()) for r in got]
        )
        totals[mode] = machine
        lines.append(f"| {mode} | {runs:.3g} | {machine:.3g} | {wall:.3g} | {decided:.3g} |")
    lines += [
        "",
        f"Machine time of all runs, rounds / one-by-one: "
        f"{totals['rounds'] / totals['one-by-one']:.3g} (ratio of the medians).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("--budget", default="10m")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--before", default=BEFORE, help="the one-after-the-other commit")
    args = parser.parse_args()
    dest = OUT / args.label
    dest.mkdir(parents=True, exist_ok=True)
    reps: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="duet-rounds-") as tmp:
        where = Path(tmp)
        repo = make_suite(where)
        before = snapshot(args.before, where)
        load_before = os.getloadavg()
        for i in range(args.reps):
            for mode in ("rounds", "one-by-one"):
                out = where / f"{mode}-{i}"
                got = measure(repo, out, args.budget, before if mode == "one-by-one" else None)
                got |= {"mode": mode, "rep": i}
                reps.append(got)
                with gzip.open(dest / f"{mode}-{i}.results.json.gz", "wt") as f:
                    f.write((out / "results.json").read_text())
                shutil.rmtree(out)
                print(f"{mode} {i}: {got['wall_s']:.3g} s", file=sys.stderr)
        load_after = os.getloadavg()
    load = (
        f"load average (1, 5, 15 min) {', '.join(f'{x:.3g}' for x in load_before)} before, "
        f"{', '.join(f'{x:.3g}' for x in load_after)} after"
    )
    (dest / "runs.json").write_text(
        json.dumps(
            {
                "budget": args.budget,
                "before": args.before,
                "after": git(ROOT, "rev-parse", "HEAD").strip(),
                "load": load,
                "reps": reps,
            },
            indent=1,
        )
        + "\n"
    )
    text = summary(args.label, args.budget, reps, load)
    (dest / "summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
