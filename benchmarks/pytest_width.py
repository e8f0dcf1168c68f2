"""How wide an unchanged pytest-benchmark test comes out, in process, at the defaults (issue 29,
item 3).

A tiny project (a git repository with one commit): ``bench_checksum.py`` with one
pytest-benchmark test, a checksum over 2,000 and 8,000 items, parametrised; ``duet.toml`` has
nothing but the suite (``adapter = "pytest-benchmark"``) and ``python``, this checkout's
interpreter. Each trial is ``duet compare HEAD HEAD`` at the defaults (an A/A: 10 runs x (2
warm-up + 30) iterations, crossover at every iteration, the decided metric); the script prints
and writes, per trial and benchmark, the ratio, the interval and its width (``hi / lo - 1``),
the metric that decided, and two figures of the raw samples that tell where the width comes
from: the spread of the run ratios (standard deviation of the runs' mean log ratios) and the
within-run spread (mean over runs of the per-iteration log ratios' standard deviation).

``--route plain`` measures the same checksum as a plain ``python`` benchmark instead (``duet run
--callable plain_checksum:checksum --setup plain_checksum:data_N``, one run per size, the same
defaults): the same interpreter and iteration without pytest in the process.

Run from the repository root as root (cgroups): ``python benchmarks/pytest_width.py --trials 3
--label before``; the raw ``results.json`` of each trial and the summary go under
``benchmarks/results/pytest-width/<label>/``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

BENCH = """\
import pytest


def checksum(items):
    total = 0
    for x in items:
        total = (total * 31 + x) & 0xFFFFFFFF
    return total


@pytest.mark.parametrize("n", [2000, 8000])
def test_checksum(benchmark, n):
    data = list(range(n))
    assert benchmark(checksum, data) >= 0
"""


PLAIN = """\
from bench_checksum import checksum


def data_2000():
    return list(range(2000))


def data_8000():
    return list(range(8000))
"""


def project(where: Path, python: str) -> Path:
    repo = where / "project"
    repo.mkdir()
    (repo / "bench_checksum.py").write_text(BENCH)
    (repo / "plain_checksum.py").write_text(PLAIN)
    (repo / "duet.toml").write_text(
        f'python = "{python}"\n\n[[suite]]\nadapter = "pytest-benchmark"\n'
        'path = "bench_checksum.py"\nname = "py"\n'
    )
    git = ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "checksum"], check=True)
    return repo


def figures(b: dict) -> dict:
    a = b["analysis"]
    metric = a.get("metric", "wall")
    key = {"wall": "iterations_ns", "cpu": "iteration_cpu_ns"}.get(metric, "iterations_ns")
    runs = [r for r in b["runs"] if r["status"] == "ok"]
    logs = [
        np.log(
            np.array(r["candidate"][key], dtype=float) / np.array(r["baseline"][key], dtype=float)
        )
        for r in runs
    ]
    per_side = {
        side: [float(np.median(r[side][key])) for r in runs] for side in ("baseline", "candidate")
    }
    lo, hi = a["ci_low"], a["ci_high"]
    return {
        "name": b["name"],
        "metric": metric,
        "ratio": a["ratio"],
        "ci_low": lo,
        "ci_high": hi,
        "width": None if lo is None or hi is None else hi / lo - 1,
        "run_sd": float(np.std([x.mean() for x in logs], ddof=1)),
        "within_sd": float(np.mean([x.std(ddof=1) for x in logs])),
        "inner_loops": b.get("settings", {}).get("inner_loops"),
        "median_ns": per_side,
        "note": a.get("note"),
    }


def commands(route: str, python: str, repo: Path, tmp: Path, trial: int) -> list[list[str]]:
    """The duet commands of one trial (their ``--out`` is added by the caller)."""
    duet = [sys.executable, "-m", "duet_bench"]
    if route == "pytest":
        return [[*duet, "compare", "HEAD", "HEAD", "--quiet", "--no-plots", "--fail-on", "never"]]
    return [
        [*duet, "run", "--python-baseline", python, "--python-candidate", python,
         "--callable", "plain_checksum:checksum", "--setup", f"plain_checksum:data_{n}",
         "--baseline-dir", str(repo), "--candidate-dir", str(repo), "--name", f"plain[{n}]",
         "--quiet", "--fail-on", "never"]
        for n in (2000, 8000)
    ]  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--label", required=True)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--route", choices=("pytest", "plain"), default="pytest")
    p.add_argument("--extra", nargs="*", default=[], help="more duet compare options")
    o = p.parse_args()
    out_dir = ROOT / "benchmarks" / "results" / "pytest-width" / o.label
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = []
    with tempfile.TemporaryDirectory(prefix="duet-pytest-width-") as tmp:
        repo = project(Path(tmp), o.python)
        for trial in range(o.trials):
            load = Path("/proc/loadavg").read_text().split()[0]
            start = time.time()
            benchmarks = []
            for k, argv in enumerate(commands(o.route, o.python, repo, Path(tmp), trial)):
                out = Path(tmp) / f"out{trial}-{k}"
                argv += ["--out", str(out), *o.extra]
                done = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=False)
                if done.returncode not in (0, 1):
                    print(done.stdout, done.stderr, file=sys.stderr)
                    return 1
                shutil.copy(out / "results.json", out_dir / f"results-{trial}-{k}.json")
                benchmarks += json.loads((out / "results.json").read_text())["benchmarks"]
            for b in benchmarks:
                f = {"trial": trial, "load_before": float(load),
                     "seconds": round(time.time() - start, 1), **figures(b)}  # fmt: skip
                summary.append(f)
                w = f["width"]
                print(
                    f"trial {trial} {f['name']:<40} {f['metric']:<5} ratio {f['ratio']:.4f} "
                    f"width {'n/a' if w is None else f'{w * 100:.2f}%'} run sd "
                    f"{f['run_sd']:.4f} within sd {f['within_sd']:.4f} load {load}",
                    flush=True,
                )
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    widths = sorted(f["width"] for f in summary if f["width"] is not None)
    if widths:
        print(f"median width {widths[len(widths) // 2] * 100:.2f}% over {len(widths)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
