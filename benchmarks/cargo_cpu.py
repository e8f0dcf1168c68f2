"""cargo (criterion): A/A width and a 5% slowdown, criterion's timing (wall time) against the
fixed-count CPU-time route (issue 29, item 2 for cargo).

One git repository with a criterion bench target of two benchmarks, the xorshift loop of
``tests/fixtures/adapters/work.rs``: ``aa`` is the same in both commits (A/A), ``five`` does 5%
more steps in HEAD (20,000 -> 21,000). Two suites over the same target in one ``duet.toml``:

- ``wall``: criterion's own timing, the adapter's previous defaults (``warm_up_time = 0.1``,
  ``measurement_time = 0.2``, ``sample_size = 10``): criterion's ``ns/iter``, wall time decides;
- ``cpu``: the default route, a fixed count of calls per iteration chosen at discovery
  (``iteration_time = 0.1``), the invocation's CPU time per call; ``metric = "auto"``.

``duet compare base HEAD`` at R = 10 runs x I = 20 iterations (warm-up 1), once per condition:
``as-found`` (the machine as it is) and ``busy`` (plus one process spinning on the CPU,
unpinned, started before and stopped after the compare). The compare queues behind any other
duet measuring on the machine (``--wait``): the sides never share the cores with another
duet's sides, only with whatever else runs. Printed: per suite and benchmark the
deciding metric, the ratio, the 99% interval and its width (ci_high - ci_low, in % of 1), the
verdict. The results files go to ``benchmarks/results/cargo-cpu/<condition>.json.gz``.

Run: ``python benchmarks/cargo_cpu.py [--conditions as-found,busy] [--seed DIR]``. criterion is
built once into a seed crate (about 2 minutes of CPU; ``--seed`` reuses one this script made);
each compare takes 5-10 minutes of wall time on the shared VM.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "adapters"
OUT = ROOT / "benchmarks" / "results" / "cargo-cpu"

STEPS_BASE, STEPS_HEAD = 20_000, 21_000

BENCH = """use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn work(steps: u64) -> u64 {
    let steps = black_box(steps);
    let (mut x, mut acc) = (88172645463325252u64, 0u64);
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        acc = acc.wrapping_add(x & 0xff);
    }
    acc
}

fn benches(c: &mut Criterion) {
    c.bench_function("aa", |b| b.iter(|| work(20000)));
    c.bench_function("five", |b| b.iter(|| work(@STEPS@)));
}

criterion_group!(group, benches);
criterion_main!(group);
"""


def cargo() -> str:
    for candidate in (shutil.which("cargo"), os.path.expanduser("~/.cargo/bin/cargo")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("cargo is not on PATH nor in ~/.cargo/bin")


def build_seed(where: Path) -> Path:
    """A crate named ``seed`` with criterion built: its target directory seeds each version."""
    crate = where / "seed"
    (crate / "src").mkdir(parents=True)
    (crate / "benches").mkdir()
    manifest = (FIXTURES / "Cargo.toml").read_text()
    (crate / "Cargo.toml").write_text(
        manifest.replace('name = "work"\nversion', 'name = "seed"\nversion')
    )
    (crate / "src" / "lib.rs").write_text("")
    (crate / "benches" / "work.rs").write_text(BENCH.replace("@STEPS@", "1"))
    subprocess.run([cargo(), "bench", "--no-run", "--quiet"], cwd=crate, check=True)
    return crate


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=duet", "-c", "user.email=duet@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def make_repo(where: Path, seed: Path) -> Path:
    repo = where / "project"
    (repo / "src").mkdir(parents=True)
    (repo / "benches").mkdir()
    (repo / "Cargo.toml").write_text((FIXTURES / "Cargo.toml").read_text())
    lock = (seed / "Cargo.lock").read_text().replace('name = "seed"', 'name = "work"')
    (repo / "Cargo.lock").write_text(lock)
    (repo / "src" / "lib.rs").write_text("")
    (repo / "benches" / "work.rs").write_text(BENCH.replace("@STEPS@", str(STEPS_BASE)))
    (repo / "duet.toml").write_text(
        'runs = 10\niterations = 20\nwarmup = 1\nmetric = "auto"\n'
        f'build = "mkdir -p target && cp -a {seed}/target/. target/"\n'
        f'\n[[suite]]\nadapter = "cargo"\npath = "."\nname = "cpu"\ncargo = "{cargo()}"\n'
        f'\n[[suite]]\nadapter = "cargo"\npath = "."\nname = "wall"\ncargo = "{cargo()}"\n'
        "warm_up_time = 0.1\nmeasurement_time = 0.2\nsample_size = 10\n"
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    (repo / "benches" / "work.rs").write_text(BENCH.replace("@STEPS@", str(STEPS_HEAD)))
    git(repo, "commit", "-q", "-am", "five: 5% more steps")
    return repo


def compare(repo: Path, out: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "compare", "base", "HEAD", "--out", str(out),
         "--quiet", "--no-plots", "--fail-on", "never", "--wait"],
        cwd=repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"duet compare exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    doc: dict[str, Any] = json.loads((out / "results.json").read_text())
    return doc


def summary(condition: str, doc: dict[str, Any], load: str) -> None:
    print(f"\n## {condition} (load average before: {load})\n")
    print(
        "| benchmark | metric | ratio | 99% interval | width | verdict | wall ratio | CPU ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for b in doc["benchmarks"]:
        a = b.get("analysis") or {}
        if "ratio" not in a:
            print(f"| {b['name']} | - | - | - | - | {b.get('note') or 'failed'} | | |")
            continue
        metrics = a.get("metrics", {})
        other = [
            f"{metrics[m]['ratio']:.4f}" if "ratio" in metrics.get(m, {}) else "-"
            for m in ("wall", "cpu")
        ]
        width = 100 * (a["ci_high"] - a["ci_low"])
        print(
            f"| {b['name']} | {a['metric']} | {a['ratio']:.4f} | "
            f"{a['ci_low']:.4f}-{a['ci_high']:.4f} | {width:.2f}% | {a['verdict']} | "
            f"{other[0]} | {other[1]} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conditions", default="as-found,busy")
    parser.add_argument("--seed", type=Path, help="a seed crate an earlier run built")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="duet-cargo-cpu-") as tmp:
        where = Path(tmp)
        seed = args.seed or build_seed(where)
        repo = make_repo(where, seed)
        for condition in args.conditions.split(","):
            load = Path("/proc/loadavg").read_text().split()[:3]
            spinner = None
            if condition == "busy":
                spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            try:
                doc = compare(repo, where / f"out-{condition}")
            finally:
                if spinner is not None:
                    spinner.kill()
                    spinner.wait()
            with gzip.open(OUT / f"{condition}.json.gz", "wt") as f:
                json.dump(doc, f)
            summary(condition, doc, " ".join(load))


if __name__ == "__main__":
    main()
