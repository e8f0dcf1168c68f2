"""go suites decided on CPU time: A/A width and a 5% slowdown, wall time against CPU time.

Issue 29, item 2. A Go package with one benchmark (the xorshift loop of
``tests/fixtures/adapters/work_test.go``, 20,000 steps per operation) in a git repository of
two commits: ``base``, and ``head`` where the loop does 5% more steps (21,000). ``duet compare``
with a ``[[suite]] adapter = "go"`` (``benchtime`` the default 100 ms: Go chooses N in the
baseline, every iteration runs N operations), R = 10 runs x I = 20 iterations, crossover at
every iteration (the default), ``metric = "auto"``:

- A/A: ``base`` against ``base``; A/B: ``base`` against ``head`` (true ratio 1.05 for the
  operations; the process's start-up in the CPU sample dilutes it slightly);
- ``quiet``: nothing of ours beside it (the machine is shared: other people's builds and tests
  run, say so with the figures); ``busy``: one more process spinning on the CPUs
  (``python -c 'while True: pass'``, not pinned) through the comparison.

Every comparison's results file holds every metric's analysis of the same runs
(``analysis.metrics``): ``wall`` is Go's ``ns/op`` (what decided go before it had a CPU sample),
``cpu`` the process's CPU time over N operations (what decides now). One line per comparison:
ratio, 99% interval, its width, verdict, per metric; the load average before and after. Each
comparison queues behind any other duet measuring on the machine (``--wait``).

Run from the repository root as root (cgroups): ``python benchmarks/go_cpu.py --out
benchmarks/results/go-cpu`` (``--repeat K`` repeats every cell).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "adapters" / "work_test.go"
GO_MOD = "module example.com/work\n\ngo 1.21\n"
CONFIG = """runs = 10
iterations = 20
warmup = 1
metric = "auto"

[[suite]]
adapter = "go"
path = "work"
go = "{go}"
"""


def source(steps: int) -> str:
    return FIXTURE.read_text().replace("@SLOWED@", str(steps)).replace("@EXTRA@", "BenchmarkX")


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}
    subprocess.run(["git", *args], cwd=repo, check=True, env=env, capture_output=True)


def make_repo(where: Path, go: str) -> Path:
    repo = where / "project"
    (repo / "work").mkdir(parents=True)
    (repo / "go.mod").write_text(GO_MOD)
    (repo / "duet.toml").write_text(CONFIG.format(go=go))
    (repo / "work" / "work_test.go").write_text(source(20_000))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    (repo / "work" / "work_test.go").write_text(source(21_000))
    git(repo, "commit", "-q", "-am", "5% more steps in BenchmarkSlowed")
    git(repo, "tag", "head")
    return repo


def compare(repo: Path, head: str, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "duet_bench", "compare", "base", head, "--out", str(out)]
    cmd += ["--quiet", "--no-plots", "--fail-on", "never", "--wait"]
    cmd += ["--bench", "go-work/BenchmarkSlowed"]
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"duet compare failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return json.loads((out / "results.json").read_text())


def line(cell: str, doc: dict[str, Any]) -> str:
    b = doc["benchmarks"][0]
    a = b["analysis"]
    parts = [cell, f"decided by {a['metric']}"]
    for metric in ("wall", "cpu"):
        m = a["metrics"].get(metric) or {}
        if "ratio" not in m:
            parts.append(f"{metric}: {m.get('missing', 'n/a')}")
            continue
        width = 100 * (m["ci_high"] - m["ci_low"])
        parts.append(
            f"{metric} {m['ratio']:.4f} [{m['ci_low']:.4f}, {m['ci_high']:.4f}] "
            f"width {width:.2f}% {m['verdict']}"
        )
    return " | ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--go", default="/usr/local/go/bin/go")
    o = parser.parse_args()
    o.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="duet-go-cpu-") as tmp:
        repo = make_repo(Path(tmp), o.go)
        for k in range(o.repeat):
            for condition in ("quiet", "busy"):
                for label, head in (("A/A", "base"), ("A/B 1.05", "head")):
                    spinner = None
                    if condition == "busy":
                        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    load0 = os.getloadavg()[0]
                    started = time.strftime("%H:%M:%S", time.gmtime())
                    try:
                        name = f"{condition}-{'aa' if head == 'base' else 'ab'}-{k}"
                        doc = compare(repo, head, Path(tmp) / name)
                    finally:
                        if spinner is not None:
                            spinner.kill()
                            spinner.wait()
                    (o.out / f"{name}.json").write_text(json.dumps(doc))
                    load = f"load {load0:.1f}-{os.getloadavg()[0]:.1f}"
                    cell = f"{started} UTC {condition} {label} ({load})"
                    text = line(cell, doc)
                    print(text, flush=True)
                    with open(o.out / "summary.txt", "a") as f:
                        f.write(text + "\n")


if __name__ == "__main__":
    main()
