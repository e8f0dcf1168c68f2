"""calibrate the pytest-width project's benchmark for a 0.5% threshold, then run the plan."""
import subprocess, sys, tempfile, json, time, shutil
from pathlib import Path
sys.path.insert(0, "/work/main/benchmarks")
import pytest_width as pw
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
duet = ["/work/main/.venv/bin/python", "-m", "duet_bench"]
with tempfile.TemporaryDirectory(prefix="duet-pycal-") as tmp:
    repo = pw.project(Path(tmp), "/work/main/.venv/bin/python")
    bench = "py/bench_checksum.py::test_checksum[2000]"
    t = time.time()
    done = subprocess.run([*duet, "calibrate", "--bench", bench, "--threshold", "0.005", "--out", str(out / "aa"), "--quiet"], cwd=repo, capture_output=True, text=True)
    (out / "calibrate.txt").write_text(done.stdout); (out / "calibrate.err").write_text(done.stderr)
    print("calibrate rc", done.returncode, round(time.time() - t), "s", file=sys.stderr)
    print(done.stderr[-3000:], file=sys.stderr)
