"""Is an iteration noisier inside pytest's process than in a plain interpreter? (issue 29,
item 3)

The same checksum over 8,000 items, timed by CPU time 32 times (the first 2 dropped) per
process, in a plain ``python`` process and inside a running pytest test, alternately, each
pinned to CPU 1, ``--pairs`` times: per process, the standard deviation of the log CPU time of
its iterations (the within-run noise the duet ratio sees) and the median iteration. Without
duet, the barrier or the other side: only what the in-process route itself adds.

Run from the repository root: ``python benchmarks/pytest_width_inprocess.py [--pairs 6]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CORE = """\
import time

def checksum(items):
    total = 0
    for x in items:
        total = (total * 31 + x) & 0xFFFFFFFF
    return total

def iterations(n=8000, count=32, loops=20):
    data = list(range(n))
    out = []
    for _ in range(count):
        start = time.process_time_ns()
        for _ in range(loops):
            checksum(data)
        out.append(time.process_time_ns() - start)
    return out[2:]
"""
PLAIN = "import json, sys\nsys.path.insert(0, '.')\nfrom core import iterations\n"
PLAIN += "print('RESULT ' + json.dumps(iterations()))\n"
TEST = """\
import json
from core import iterations

def test_it(capsys):
    result = iterations()
    with capsys.disabled():
        print("\\nRESULT " + json.dumps(result))
"""


def result(argv: list[str], cwd: str) -> list[float]:
    done = subprocess.run(
        ["taskset", "-c", "1", *argv], cwd=cwd, capture_output=True, text=True, check=True
    )
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT "))
    return [float(x) for x in json.loads(line.removeprefix("RESULT "))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=6)
    o = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="duet-inprocess-") as tmp:
        for name, text in (("core.py", CORE), ("plain.py", PLAIN), ("test_in.py", TEST)):
            (Path(tmp) / name).write_text(text)
        routes = {
            "plain": [sys.executable, "plain.py"],
            "pytest": [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                       "test_in.py"],
        }  # fmt: skip
        sds: dict[str, list[float]] = {k: [] for k in routes}
        medians: dict[str, list[float]] = {k: [] for k in routes}
        for _ in range(o.pairs):
            for route, argv in routes.items():
                x = np.array(result(argv, tmp))
                sds[route].append(float(np.std(np.log(x), ddof=1)))
                medians[route].append(float(np.median(x)) / 1e6)
    for route in routes:
        print(
            f"{route:6} within-process sd of log CPU time per iteration "
            f"{' '.join(f'{s:.3f}' for s in sds[route])} (median {np.median(sds[route]):.3f}); "
            f"median iteration {np.median(medians[route]):.2f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
