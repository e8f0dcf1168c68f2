"""Installing the harness: the sides run a copy of duet_bench/harness/ in the work directory,
so the copy must be the whole harness, each file importable with only its siblings beside it."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from duet_bench.runner import WORKER, install_harness


def test_every_harness_file_is_installed_beside_the_worker(tmp_path: Path) -> None:
    worker = install_harness(tmp_path)
    assert worker.name == WORKER.name
    assert worker.is_file()
    source = {p.name for p in WORKER.parent.glob("duet_*.py")}
    installed = {p.name for p in worker.parent.iterdir()}
    assert installed == source, "a harness file was left out (or one is not in the source)"
    assert {"duet_worker.py", "duet_barrier.py", "duet_outputs.py", "duet_pytest.py"} <= installed
    for path in worker.parent.iterdir():
        # Readable by whatever user the sides run as.
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
        assert path.read_bytes() == (WORKER.parent / path.name).read_bytes()


def test_each_installed_file_imports_with_only_its_siblings(tmp_path: Path) -> None:
    worker = install_harness(tmp_path)
    # A second install over the first (one work directory, many benchmarks) is fine too.
    assert install_harness(tmp_path) == worker
    for path in sorted(worker.parent.glob("duet_*.py")):
        # -I: no PYTHONPATH, no user site; the harness modules exist nowhere else as top-level
        # modules, so a sibling the copy lacks fails the import.
        done = subprocess.run(
            [
                sys.executable,
                "-I",
                "-c",
                f"import sys; sys.path.insert(0, {str(worker.parent)!r}); import {path.stem}",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"{path.name}: {done.stderr}"
