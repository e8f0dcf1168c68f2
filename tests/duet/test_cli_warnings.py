"""Warnings on stderr fit the terminal (issue 31): folded at COLUMNS on a terminal or where
COLUMNS is set, one line per message in a CI log without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _duet_schema(tmp_path: Path, **extra: str) -> list[str]:
    # Under "sudo" (SUDO_UID set) a TMPDIR from the invoker is ignored with a long warning.
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "SUDO_UID": "1000"}
    env.update(TMPDIR="/tmp", **extra)
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "schema"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


# Only root ignores the invoker's TMPDIR (a user's duet uses it), hence says so.
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: only root ignores TMPDIR")


@as_root
def test_a_warning_is_folded_at_columns(tmp_path: Path) -> None:
    lines = _duet_schema(tmp_path, COLUMNS="60")
    assert len(lines) >= 3, lines
    assert all(len(line) <= 60 for line in lines), lines
    assert lines[0].startswith("duet: warning: ignoring TMPDIR=")
    assert all(line.startswith("  ") for line in lines[1:]), lines
    # Folded at spaces only: the words read back whole.
    assert " ".join(line.strip() for line in lines).endswith("temporary files go to /tmp")


@as_root
def test_without_columns_a_ci_log_keeps_one_line(tmp_path: Path) -> None:
    lines = _duet_schema(tmp_path)
    assert len(lines) == 1, lines
    assert len(lines[0]) > 100
