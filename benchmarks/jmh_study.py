"""The JMH adapter against JMH alone: A/A width, a known 5% and a known 2x.

The fixture JMH project (tests/fixtures/adapters/jmh) in a git history of three versions:
``v0`` (Work.ROUNDS = 2000), ``v5`` (2100: 5% more work) and ``v2x`` (4000). For each pair
(v0 v0, v0 v5, v0 v2x):

- duet: ``duet compare A B`` on ``bench.WorkBenchmark.mix`` (runs, iterations, warm-up as
  below; JMH -w/-r 100 ms), the ratio and its 99% interval from results.json;
- JMH alone, one version after the other, as a developer would: ``java -jar benchmarks.jar
  WorkBenchmark -f RUNS -wi WARMUP -i ITERATIONS -w 100ms -r 100ms -bm avgt -tu ns`` for A, then
  for B; the ratio of JMH's scores, and JMH's own 99.9% error on each.

``--busy`` adds one busy process (a Python spin loop, unpinned) for the whole sitting. The raw
outputs go to benchmarks/results/jmh/<label>/; a summary line per pair is printed and written to
summary.json there.

    python benchmarks/jmh_study.py --label loaded [--busy] [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.gitrepo import make_repo  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "adapters" / "jmh"
WORK = "src/main/java/bench/Work.java"
VERSIONS = {"v0": 2000, "v5": 2100, "v2x": 4000}
PAIRS = (("v0", "v0"), ("v0", "v5"), ("v0", "v2x"))


def project(where: Path, runs: int, iterations: int, warmup: int) -> Path:
    files = {
        str(p.relative_to(FIXTURE)): p.read_text()
        for p in sorted(FIXTURE.rglob("*"))
        if p.is_file()
    }
    config = (
        f'runs = {runs}\niterations = {iterations}\nwarmup = {warmup}\nisolation = "cgroup"\n'
        'metric = "wall"\n\n[[suite]]\nadapter = "jmh"\npath = "."\nname = "jvm"\n'
        'filter = "WorkBenchmark"\nwarmup_time = 0.1\nmeasurement_time = 0.1\n'
    )
    repo = None
    for tag, rounds in VERSIONS.items():
        text = files[WORK].replace("ROUNDS = 2000;", f"ROUNDS = {rounds};")
        if repo is None:
            repo = make_repo(where / "project", [{**files, WORK: text, "duet.toml": config}])
        else:
            repo.commit({WORK: text}, f"Work.ROUNDS = {rounds}")
        repo.tag(tag, "HEAD")
    assert repo is not None
    return repo.path


def duet(repo: Path, a: str, b: str, out: Path) -> dict[str, object]:
    begin = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "compare", a, b, "--out", str(out), "--quiet",
         "--no-plots", "--fail-on", "never", "--wait"],
        cwd=repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    (out.parent / f"{out.name}.log").write_text(done.stdout + done.stderr)
    if not (out / "results.json").is_file():
        raise SystemExit(f"duet compare {a} {b} wrote no results.json:\n{done.stdout}{done.stderr}")
    doc = json.loads((out / "results.json").read_text())
    bench = doc["benchmarks"][0]
    a_ = bench["analysis"]
    return {
        "ratio": a_["ratio"], "ci_low": a_["ci_low"], "ci_high": a_["ci_high"],
        "verdict": a_["verdict"], "seconds": round(time.monotonic() - begin),
    }  # fmt: skip


def jmh_alone(
    repo: Path, tag: str, runs: int, iterations: int, warmup: int, out: Path
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "worktree", "add", "-q", "--detach", tmp, tag], cwd=repo, check=True)
        try:
            subprocess.run(["mvn", "-B", "-q", "-DskipTests", "package"], cwd=tmp, check=True,
                           capture_output=True)  # fmt: skip
            result = out.with_suffix(".json")
            done = subprocess.run(
                ["java", "-jar", "target/benchmarks.jar", "WorkBenchmark", "-f", str(runs),
                 "-wi", str(warmup), "-i", str(iterations), "-w", "100ms", "-r", "100ms",
                 "-bm", "avgt", "-tu", "ns", "-rf", "json", "-rff", str(result)],
                cwd=tmp, capture_output=True, text=True, check=True,
            )  # fmt: skip
            out.write_text(done.stdout)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", tmp], cwd=repo, check=True)
    primary = json.loads(result.read_text())[0]["primaryMetric"]
    return {"score_ns": primary["score"], "error_ns": primary["scoreError"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", required=True)
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    results = ROOT / "benchmarks" / "results" / "jmh" / args.label
    results.mkdir(parents=True, exist_ok=True)
    busy = None
    if args.busy:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    summary: dict[str, object] = {
        "label": args.label, "busy": args.busy, "runs": args.runs,
        "iterations": args.iterations, "warmup": args.warmup,
        "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_before": os.getloadavg(), "pairs": {},
    }  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="duet-jmh-study-"))
    try:
        repo = project(work, args.runs, args.iterations, args.warmup)
        for a, b in PAIRS:
            key = f"{a}-{b}"
            d = duet(repo, a, b, work / key)
            shutil.copy(work / key / "results.json", results / f"duet-{key}.json")
            shutil.copy(work / f"{key}.log", results / f"duet-{key}.log")
            ja = jmh_alone(
                repo, a, args.runs, args.iterations, args.warmup, results / f"jmh-{key}-A.txt"
            )
            jb = jmh_alone(
                repo, b, args.runs, args.iterations, args.warmup, results / f"jmh-{key}-B.txt"
            )
            ratio = jb["score_ns"] / ja["score_ns"]
            # JMH's errors are 99.9% half-widths; the ratio's relative half-width, combined.
            rel = math.hypot(ja["error_ns"] / ja["score_ns"], jb["error_ns"] / jb["score_ns"])
            row = {"duet": d, "jmh_alone": {"A": ja, "B": jb, "ratio": ratio, "rel_error": rel}}
            summary["pairs"][key] = row  # type: ignore[index]
            print(f"{key}: duet {d['ratio']:.4g} [{d['ci_low']:.4g}, {d['ci_high']:.4g}] "
                  f"{d['verdict']} ({d['seconds']} s); JMH alone {ratio:.4g} +- {rel:.3g} (99.9%)",
                  flush=True)  # fmt: skip
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        summary["end"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        summary["load_after"] = os.getloadavg()
        (results / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
