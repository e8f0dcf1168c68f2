"""What makes one python process faster than the next running the same code? (issue 29, item 3)

The in-process route's width at the defaults comes from the spread of the runs' ratios, beyond
what their iterations explain (``benchmarks/results/pytest-width/README.md``): each run starts a
new interpreter on each side, and two interpreters running the same checksum differ in CPU time
per iteration by a few percent. This script asks where that comes from: the address-space
layout (ASLR: stack, heap, mmap and the interpreter's own addresses differ per process) or the
hash seed (``PYTHONHASHSEED``: dicts and sets laid out differently per process).

Per condition (ASLR on or off: ``setarch -R``; hash seed random or fixed at 0), ``--processes``
processes run one after another, each pinned to CPU ``--cpu``, the conditions interleaved in a
random order. Each process times the checksum over 2,000 items (the pytest-width benchmark's
function) by its CPU time, 2 warm-up and 30 measured iterations of about 10 ms, and reports the
mean and standard deviation of its iterations' log CPU time. Per condition: the standard
deviation of the processes' means (``between``), what the iterations' noise alone would give
(``within / sqrt(30)``), and the process effect they leave, ``sqrt(between^2 -
within^2 / 30)``: the standard deviation of a process's speed, which a duet run's ratio inherits
twice (one process per side) when each run starts new ones.

Run from the repository root: ``python benchmarks/pytest_width_process.py --processes 30 --out
benchmarks/results/pytest-width/process``. Nothing of duet runs; no root needed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
reps = int(sys.argv[2])

def checksum(items):
    total = 0
    for x in items:
        total = (total * 31 + x) & 0xFFFFFFFF
    return total

data = list(range(2000))
for line in sys.stdin:  # one iteration per line the parent writes
    start = time.process_time_ns()
    for _ in range(reps):
        checksum(data)
    print(time.process_time_ns() - start, flush=True)
"""

CONDITIONS = [
    {"aslr": aslr, "hash": seed} for aslr in ("on", "off") for seed in ("random", "fixed")
]


def reps_for_10ms(python: str, cpu: int) -> int:
    """Calls of the checksum that take about 10 ms of CPU time (as duet's inner loops aim)."""
    done = subprocess.run(
        [python, "-c", CHILD, str(cpu), "20"],
        input="\n" * 3,
        capture_output=True,
        text=True,
        check=True,
    )
    per_call = min(int(v) for v in done.stdout.split()) / 20
    return max(1, round(10_000_000 / per_call))


def start(python: str, cpu: int, reps: int, condition: dict[str, str]) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.pop("PYTHONHASHSEED", None)
    if condition["hash"] == "fixed":
        env["PYTHONHASHSEED"] = "0"
    prefix = ["setarch", os.uname().machine, "-R"] if condition["aslr"] == "off" else []
    return subprocess.Popen(
        [*prefix, python, "-c", CHILD, str(cpu), str(reps)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def one_pair(python: str, cpu: int, reps: int, condition: dict[str, str]) -> list[list[int]]:
    """Two processes of one condition on one CPU, taking turns an iteration each (2 warm-up, 30
    measured): the machine's speed, which drifts over seconds, is nearly the same for the two
    iterations of a turn, so their ratio keeps what differs between the processes."""
    pair = [start(python, cpu, reps, condition) for _ in range(2)]
    times: list[list[int]] = [[], []]
    try:
        for i in range(32):
            for k in (0, 1) if i % 2 == 0 else (1, 0):
                proc = pair[k]
                assert proc.stdin is not None
                assert proc.stdout is not None
                proc.stdin.write("\n")
                proc.stdin.flush()
                value = int(proc.stdout.readline())
                if i >= 2:
                    times[k].append(value)
    finally:
        for proc in pair:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)
    return times


def summary(pairs: list[list[list[int]]]) -> dict[str, float]:
    """Per pair, the mean log ratio of the second process's iterations to the first's; their
    standard deviation over pairs (``between``) holds twice the variance of one process's speed,
    plus the iterations' noise (``within / sqrt(30)``, from the spread of the per-turn log
    ratios)."""
    ratios = [[math.log(b / a) for a, b in zip(*p, strict=True)] for p in pairs]
    means = [statistics.fmean(r) for r in ratios]
    between = statistics.stdev(means)
    within = statistics.fmean(statistics.stdev(r) for r in ratios)
    explained = within / math.sqrt(len(ratios[0]))
    effect = math.sqrt(max(between**2 - explained**2, 0.0) / 2)
    return {
        "pairs": len(pairs),
        "between_sd": between,
        "within_sd": within,
        "explained_sd": explained,
        "process_effect_sd": effect,
        "largest_pair_ratio": math.exp(max(abs(m) for m in means)),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=30, help="per condition")
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--seed", type=int, default=1, help="of the conditions' order")
    p.add_argument("--out", type=Path, help="a directory for samples.json and summary.txt")
    a = p.parse_args()
    if shutil.which("setarch") is None:
        sys.exit("setarch (util-linux) is needed to run a process without ASLR")
    reps = reps_for_10ms(a.python, a.cpu)
    order = random.Random(a.seed)
    samples: dict[str, list[list[list[int]]]] = {json.dumps(c): [] for c in CONDITIONS}
    started = time.time()
    load = [os.getloadavg()[0]]
    for i in range(a.pairs):
        for c in order.sample(CONDITIONS, len(CONDITIONS)):
            samples[json.dumps(c)].append(one_pair(a.python, a.cpu, reps, c))
        load.append(os.getloadavg()[0])
        print(f"\r{i + 1}/{a.pairs} pairs per condition", end="", file=sys.stderr)
    print(file=sys.stderr)
    lines = [
        f"{a.pairs} pairs per condition, {reps} calls per iteration (about 10 ms), "
        f"CPU {a.cpu}, {time.time() - started:.0f} s, load {min(load):.1f}-{max(load):.1f}",
        "condition             between sd  within/sqrt(30)  process effect sd  largest pair ratio",
    ]
    for key, s in samples.items():
        c, f = json.loads(key), summary(s)
        lines.append(
            f"ASLR {c['aslr']:3}, hash {c['hash']:6}  {f['between_sd']:10.4f}  "
            f"{f['explained_sd']:15.4f}  {f['process_effect_sd']:17.4f}  "
            f"{f['largest_pair_ratio']:18.3f}"
        )
    print("\n".join(lines))
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "samples.json").write_text(json.dumps({"reps": reps, "samples": samples}))
        (a.out / "summary.txt").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
