"""``duet calibrate`` of the pytest-width project's checksum over 2,000 items at a 0.5% threshold.

The project is ``benchmarks/pytest_width.py``'s (``project``). Run from the repository root as
root: ``python benchmarks/results/pytest-width/calibrate-20261129/pycal.py OUT``; the report goes
to ``OUT/calibrate.txt``, duet's log to ``OUT/calibrate.err``, the A/A's results under ``OUT/aa``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "benchmarks"))

import pytest_width  # noqa: E402

BENCH = "py/bench_checksum.py::test_checksum[2000]"


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="duet-pycal-") as tmp:
        repo = pytest_width.project(Path(tmp), sys.executable)
        started = time.time()
        argv = [sys.executable, "-m", "duet_bench", "calibrate", "--bench", BENCH]
        argv += ["--threshold", "0.005", "--out", str(out / "aa"), "--quiet"]
        done = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=False)
        (out / "calibrate.txt").write_text(done.stdout)
        (out / "calibrate.err").write_text(done.stderr)
        print(f"calibrate exit {done.returncode} in {time.time() - started:.0f} s")
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
