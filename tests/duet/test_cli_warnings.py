"""Warnings on stderr fit the terminal (issue 31): folded at the terminal's width (COLUMNS
first) when stderr is a terminal, one line per message in a CI log or a captured stderr."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

# Only root ignores the invoker's TMPDIR (a user's duet uses it), hence warns about it.
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: only root ignores TMPDIR")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    # Under "sudo" (SUDO_UID set) a TMPDIR from the invoker is ignored with a long warning.
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "SUDO_UID": "1000"}
    return {**env, "TMPDIR": "/tmp", **extra}


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other end is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@as_root
def test_on_a_terminal_a_warning_is_folded_at_its_width(tmp_path: Path) -> None:
    main, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "duet_bench", "schema"],
            env=_env(tmp_path, COLUMNS="60"),
            stdout=subprocess.DEVNULL,
            stderr=terminal,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
        os.close(terminal)
        text = _read_all(main).decode()
    finally:
        os.close(main)
    assert done.returncode == 0, text
    lines = text.replace("\r\n", "\n").splitlines()
    assert len(lines) >= 3, lines
    assert all(len(line) <= 60 for line in lines), lines
    assert lines[0].startswith("duet: warning: ignoring TMPDIR=/tmp")
    assert all(line.startswith("  ") for line in lines[1:]), lines
    # Folded at spaces only: the words read back whole.
    assert " ".join(line.strip() for line in lines).endswith("temporary files go to /tmp")


@as_root
def test_a_captured_stderr_keeps_one_line_even_with_columns(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "schema"],
        env=_env(tmp_path, COLUMNS="60"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert len(lines[0]) > 100
