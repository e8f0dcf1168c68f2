"""Shared fixtures: leftovers are asserted, never assumed."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator

import pytest


def duet_cgroups() -> list[str]:
    found: list[str] = []
    for base in glob.glob("/sys/fs/cgroup/*/"):
        found += glob.glob(os.path.join(base, "duet-*"))
    return sorted(found)


def duet_shm_files() -> list[str]:
    return sorted(glob.glob("/dev/shm/duet-*"))


def duet_workdirs() -> list[str]:
    return sorted(glob.glob("/var/tmp/duet-*"))


def _owner_gone(path: str) -> bool:
    """``duet-<pid>-...``: whether the invocation that made it has ended. Another duet running
    at the same time (a developer's, a concurrent test run) owns live entries legitimately."""
    parts = os.path.basename(path).split("-")
    if len(parts) < 3 or not parts[1].isdigit():
        return True
    return not os.path.exists(f"/proc/{parts[1]}")


def _leaked(paths: list[str]) -> set[str]:
    return {p for p in paths if _owner_gone(p)}


@pytest.fixture(autouse=True, scope="session")
def _own_measuring_lock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every duet this test run starts, in-process or as a subprocess, takes a measuring lock
    of its own (``DUET_LOCK``, see ``duet.lock``): the suite never refuses or waits because a
    real duet measures on the machine, nor because another test run does."""
    patch = pytest.MonkeyPatch()
    patch.setenv("DUET_LOCK", str(tmp_path_factory.mktemp("lock") / "duet.lock"))
    yield
    patch.undo()


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    """Fails the test when it leaves a duet cgroup, barrier file or work directory behind."""
    before = (_leaked(duet_cgroups()), _leaked(duet_shm_files()), _leaked(duet_workdirs()))
    yield
    after = (_leaked(duet_cgroups()), _leaked(duet_shm_files()), _leaked(duet_workdirs()))
    left = [sorted(a - b) for a, b in zip(after, before, strict=True)]
    assert not any(left), f"left behind: cgroups {left[0]}, shm {left[1]}, workdirs {left[2]}"


def is_root() -> bool:
    return os.geteuid() == 0
