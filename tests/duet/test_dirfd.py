"""duet_bench.dirfd as root, on real directories, links and hard links: what root writes where
another user can write (the results directory) never goes through what that user planted
(docs/isolation.md, "What runs as root").

"Another user" is a uid the directories are handed to with ``chown``; no process of theirs is
needed to plant a link (tests/system/test_privileges.py runs the same attacks through sudo).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from duet_bench import dirfd, files
from duet_bench.errors import ResultsError

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the walk differs only for root")

#: Not root, not us: whose directories these tests write in.
OTHER = 65534


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A root-only directory with a root-only file, ``secret``: what a planted link aims at."""
    os.chmod(tmp_path, 0o755)
    directory = tmp_path / "vault"
    directory.mkdir(mode=0o700)
    (directory / "secret").write_text("root's")
    os.chmod(directory / "secret", 0o600)
    return directory


@pytest.fixture
def theirs(tmp_path: Path) -> Path:
    """A directory another user owns (their checkout)."""
    directory = tmp_path / "checkout"
    directory.mkdir()
    os.chown(directory, OTHER, OTHER)
    return directory


def _untouched(vault: Path) -> None:
    assert sorted(os.listdir(vault)) == ["secret"]
    st = os.lstat(vault / "secret")
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_nlink) == (0o600, 0, 1)
    assert (vault / "secret").read_text() == "root's"


@pytest.mark.parametrize("where", ["out", "out/logs"])
def test_a_link_in_another_users_directory_is_not_followed(
    theirs: Path, vault: Path, where: str
) -> None:
    if "/" in where:
        (theirs / "out").mkdir()
        os.chown(theirs / "out", OTHER, OTHER)
    (theirs / where).symlink_to(vault)
    for write in (
        lambda: dirfd.write_file(theirs / where / "secret", "planted"),
        lambda: dirfd.write_file(theirs / where / "results.json", "{}"),
        lambda: os.close(dirfd.create_in_place(theirs / where / "build.log")),
        lambda: dirfd.make_directories(theirs / where / "plots"),
    ):
        with pytest.raises(dirfd.UnsafeLink) as caught:
            write()
        assert caught.value.filename == str(theirs / where)
    _untouched(vault)


def test_the_error_says_what_why_and_what_to_do(theirs: Path, vault: Path) -> None:
    (theirs / "out").symlink_to(vault)
    with pytest.raises(ResultsError) as caught:
        files.make_out_directory(theirs / "out")
    text = str(caught.value)
    assert f"{theirs / 'out'} is a symbolic link in a directory that uid {OTHER} can write" in text
    assert "never follows a link" in text
    assert "isolation.md" in text
    assert "fix: give the path without that link" in text


def test_a_link_only_root_could_make_is_followed(tmp_path: Path) -> None:
    """As ``/var/run -> /run``: in a directory of root's that nobody else can write."""
    os.chmod(tmp_path, 0o755)
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to("real")
    dirfd.write_file(tmp_path / "alias" / "deeper" / "f", "x")
    assert (tmp_path / "real" / "deeper" / "f").read_text() == "x"


def test_a_link_in_a_sticky_world_writable_directory_is_not_followed(
    tmp_path: Path, vault: Path
) -> None:
    """/tmp and /var/tmp: root's, but anyone can put a link there."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "out").symlink_to(vault)
    with pytest.raises(dirfd.UnsafeLink):
        dirfd.write_file(shared / "out" / "secret", "planted")
    _untouched(vault)


def test_a_link_or_hard_link_at_the_last_name_is_replaced(theirs: Path, vault: Path) -> None:
    (theirs / "results.json").symlink_to(vault / "secret")
    dirfd.write_file(theirs / "results.json", "{}")
    # A second name of root's file (where fs.protected_hardlinks lets users make one).
    os.link(vault / "secret", theirs / "report.md")
    dirfd.write_file(theirs / "report.md", "report")
    os.link(vault / "secret", theirs / "build.log")
    with os.fdopen(dirfd.create_in_place(theirs / "build.log"), "wb") as log:
        log.write(b"log")
    assert (theirs / "results.json").read_text() == "{}"
    assert (theirs / "report.md").read_text() == "report"
    assert (theirs / "build.log").read_text() == "log"
    assert not any(p.is_symlink() for p in theirs.iterdir())
    _untouched(vault)


def test_under_sudo_what_root_makes_is_the_invoking_users(
    theirs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUDO_UID", str(OTHER))
    monkeypatch.setenv("SUDO_GID", str(OTHER))
    dirfd.write_file(theirs / "out" / "logs" / "f", "x")
    made = [theirs / "out", theirs / "out" / "logs", theirs / "out" / "logs" / "f"]
    assert [(p.stat().st_uid, p.stat().st_gid) for p in made] == [(OTHER, OTHER)] * 3
    # What was there keeps its owner.
    mine = theirs / "mine"
    mine.mkdir()
    dirfd.write_file(mine / "g", "y")
    assert mine.stat().st_uid == 0


def test_a_relative_path_starts_at_the_working_directory(
    theirs: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(theirs)
    (theirs / "duet-results").symlink_to(vault)
    with pytest.raises(dirfd.UnsafeLink):
        dirfd.write_file(Path("duet-results/results.json"), "{}")
    dirfd.write_file(Path("sub/../results.json"), "{}")
    assert (theirs / "results.json").read_text() == "{}"
    _untouched(vault)
