"""duet_bench.files.write_atomic on real files: content, modes, symlinks and failures."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from duet_bench import results
from duet_bench.errors import ResultsError
from duet_bench.files import write_atomic


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """``directory`` cannot be written while inside: mode 0555, and for root (whom modes do not
    stop) the immutable attribute, undone on the way out so tmp_path can be removed."""
    directory.chmod(0o555)
    immutable = False
    try:
        if os.geteuid() == 0:
            chattr = shutil.which("chattr")
            done = chattr and subprocess.run([chattr, "+i", str(directory)], check=False).returncode
            if done != 0:
                pytest.skip("root writes into 0555 directories and chattr +i is not available")
            immutable = True
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
        directory.chmod(0o755)


def test_text_and_bytes_are_written_exactly(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "file.toml"
    write_atomic(path, "a = 1\r\nb = 'é'\n")  # creates the directories; no newline translation
    assert path.read_bytes() == "a = 1\r\nb = 'é'\n".encode()
    write_atomic(path, b"\x00\xff binary")
    assert path.read_bytes() == b"\x00\xff binary"
    assert os.listdir(path.parent) == ["file.toml"]  # no temporary file left


def test_an_existing_file_keeps_its_mode_a_new_one_gets_the_umasks(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.write_text("old")
    kept.chmod(0o640)
    write_atomic(kept, "new")
    assert kept.read_text() == "new"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o640  # not mkstemp's 0600


def test_a_symlink_is_replaced_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text("real")
    link = tmp_path / "link"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert not link.is_symlink()
    assert link.read_text() == "new"
    assert real.read_text() == "real"


def test_a_read_only_directory_raises_oserror_and_leaves_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    path = directory / "duet.toml"
    path.write_text("runs = 5\n")
    with read_only(directory):
        # A plain OSError (EACCES, or EPERM for root's immutable directory), no duet wording.
        with pytest.raises(PermissionError):
            write_atomic(path, "runs = 6\n")
        with pytest.raises(ResultsError, match="could not write the results") as wrapped:
            results.write_atomic(path, "runs = 6\n")
        assert isinstance(wrapped.value.__cause__, PermissionError)
    assert path.read_text() == "runs = 5\n"
    assert os.listdir(directory) == ["duet.toml"]


def test_a_failed_write_removes_the_temporary_file(tmp_path: Path) -> None:
    # A directory in the way: os.replace fails after the temporary file was written.
    path = tmp_path / "taken"
    (path / "inside").mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        write_atomic(path, "x")
    assert sorted(os.listdir(tmp_path)) == ["taken"]
    assert os.listdir(path) == ["inside"]
