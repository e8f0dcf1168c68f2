"""Why a side could not start, from the kernel's real error: a working directory the benchmark
removed is named as such, not sent to /dev (issue 25 item 11)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from duet_bench.runner.run import _not_started


def test_a_removed_working_directory_is_named_with_the_right_fix(tmp_path: Path) -> None:
    gone = tmp_path / "version"
    gone.mkdir()
    gone.rmdir()  # what `rm -rf "$PWD"` in a benchmark leaves for the next run
    with pytest.raises(FileNotFoundError) as caught:
        subprocess.Popen(["/bin/true"], cwd=gone)
    error = _not_started("baseline", "/bin/true", caught.value)
    assert f"{gone}: No such file or directory" in error.message
    assert error.fix is not None
    assert "/dev" not in error.fix
    assert "must not remove its own directory" in error.fix
