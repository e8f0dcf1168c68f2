"""Shared fixtures and the suite's rules (documented in tests/README.md):

- ``measures``: a test that starts duet's runner, a barrier, a worker or a cgroup; it runs serially
  (never beside another test of this suite) and every one of them is checked for leftovers. Derived
  here from what the test uses (the ``no_leftovers`` or ``isolation_clean`` fixture, the ``root``
  or ``cgroup`` marker, a module under tests/system or tests/integration); mark a new kind of test
  ``pytest.mark.measures`` by hand.
- A measuring test that asserts a measured quantity (a verdict, a ratio, a timing bound: found
  from its code by ``tests/budget.py``) fails unless ``tests/budget.toml`` has its chance of
  failing by chance, or an exemption saying why it has none.
- In CI (``CI=true``: ``make test`` and the guest tier set it) a skip fails, unless its whole
  reason is a fact of the CI machine it ran on (``DUET_CI_MACHINE``) listed in
  ``tests/allowed_skips.py``.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests import budget
from tests.allowed_skips import current_machine, why_allowed
from tests.leftovers import Snapshot, ours_left, snapshot

# Hypothesis fails an example that takes over 200 ms by default: a timing, which a loaded 2-vCPU
# machine exceeds by chance (seen: test_topology's round trip, test_plan's crossover plan, at
# load 13-16). No property test here is about time; hangs are pytest-timeout's.
settings.register_profile("duet", deadline=None)
settings.load_profile("duet")

#: Fixtures and markers that say a test measures (see the module docstring).
MEASURING_FIXTURES = frozenset({"no_leftovers", "isolation_clean", "shm_path"})
MEASURING_MARKERS = ("root", "cgroup", "measures")
MEASURING_DIRS = ("system", "integration")
TESTS_DIR = Path(__file__).parent


def measures(item: pytest.Item) -> bool:
    if MEASURING_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    if any(item.get_closest_marker(name) is not None for name in MEASURING_MARKERS):
        return True
    relative = (
        Path(str(item.path)).relative_to(TESTS_DIR) if TESTS_DIR in item.path.parents else None
    )
    return relative is not None and relative.parts[0] in MEASURING_DIRS


#: The node ids tests/budget.toml has, read once per session.
BUDGETED = pytest.StashKey[frozenset[str]]()


@functools.cache
def _measured_assertions(function: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(budget.measured_assertions(function))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if measures(item):
            item.add_marker(pytest.mark.measures)
            if TESTS_DIR / "system" in item.path.parents:
                item.add_marker(pytest.mark.system)
            # Every test that measures is checked for what it leaves (item 2 of issue 22).
            if "no_leftovers" not in item.fixturenames:  # type: ignore[attr-defined]
                item.fixturenames.insert(0, "no_leftovers")  # type: ignore[attr-defined]


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Read from the test's source when it is about to run, not at collection: parsing every
    # measuring test's source took 2-3 s of each invocation's collection here, and the guest's
    # (TCG) pytest, which runs 35 of them, spent longer on the other 100 it deselects.
    function = getattr(item, "function", None)
    if function is None or item.get_closest_marker("measures") is None:
        return
    if BUDGETED not in item.config.stash:
        item.config.stash[BUDGETED] = frozenset(budget.listed())
    if item.nodeid in item.config.stash[BUDGETED]:
        return
    found = _measured_assertions(function)
    if found:
        pytest.fail(
            f"{item.nodeid} asserts a measured quantity, which can fail by chance, and "
            f"tests/budget.toml has no figure for it:\n  " + "\n  ".join(found) + "\nAdd "
            f'[test."{item.nodeid}"] to tests/budget.toml with its chance of failing on a '
            "correct duet and how it was obtained (or [exempt...] with why it cannot fail by "
            "chance); scripts/test_budget.py prints the sum (tests/README.md).",
            pytrace=False,
        )


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """In CI a skip is a failure unless the machine's facts allow it (tests/allowed_skips.py)."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not in_ci() or not report.skipped or hasattr(report, "wasxfail"):
        return
    assert isinstance(report.longrepr, tuple)
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    machine = current_machine()
    if why_allowed(reason, machine) is None:
        report.outcome = "failed"
        report.longrepr = (
            f"skipped in CI (the {machine}) for a reason that is not an allowed fact of that "
            f"machine: {reason!r}. Make the test run here (install what it needs in "
            "scripts/bootstrap.sh, fix the product), or add a pattern matching the whole reason, "
            "with why and where the test runs instead, to tests/allowed_skips.py."
        )


@pytest.fixture(autouse=True, scope="session")
def _own_measuring_lock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every duet this test run starts, in-process or as a subprocess, takes a measuring lock
    of its own (``DUET_LOCK``, see ``duet_bench.lock``): the suite never refuses or waits because a
    real duet measures on the machine, nor because another test run does. Worktrees go to a
    cache of this run's own, which the leftover check watches."""
    patch = pytest.MonkeyPatch()
    lock_dir = tmp_path_factory.mktemp("lock")
    sudo_uid = os.environ.get("SUDO_UID", "")
    if os.geteuid() == 0 and sudo_uid.isdigit():
        # Under sudo (the guest tier) duet opens DUET_LOCK as the invoking user (issue 33):
        # a directory of theirs, outside root's pytest directory.
        lock_dir = Path(tempfile.mkdtemp(prefix="dsuite-lock-", dir="/var/tmp"))
        os.chown(lock_dir, int(sudo_uid), -1)
    patch.setenv("DUET_LOCK", str(lock_dir / "duet.lock"))
    patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    # The sides and builds get an allow-listed environment (duet_bench.isolation.privileges):
    # the leftover checks follow their processes by DUET_TEST_TAG, which they must keep.
    patch.setenv("DUET_KEEP_ENV", "DUET_TEST_TAG")
    yield
    patch.undo()
    if lock_dir.name.startswith("dsuite-lock-"):
        shutil.rmtree(lock_dir, ignore_errors=True)


#: The shortest period of the leftover check's sampling of a test's descendants.
WATCH_PERIOD_S = 0.02


class _Watcher:
    """Samples the test process's descendants while a test runs: a duet started as a subprocess
    has ended by the test's end, and what it left is attributed to it by its pid."""

    def __init__(self) -> None:
        from tests.leftovers import descendants

        self._descendants = descendants
        self.seen: set[int] = set(descendants(os.getpid()))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leftover-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # Every 20 ms, or less often where a sample is dear: at most a tenth of a CPU. On the
        # host a sample takes under 1 ms of CPU; under TCG (the guest tier) Python runs tens of
        # times slower, and a 20 ms period could keep a large part of a vCPU busy through every
        # test (estimated, not measured in the guest). A process seen less often is still found
        # by its tag (tests/leftovers.py, ``tagged``).
        period_s = WATCH_PERIOD_S
        while not self._stop.wait(period_s):
            start_s = time.thread_time()
            self.seen |= set(self._descendants(os.getpid()))
            period_s = max(WATCH_PERIOD_S, 9 * (time.thread_time() - start_s))

    def stop(self) -> set[int]:
        self._stop.set()
        self._thread.join()
        return self.seen | set(self._descendants(os.getpid()))


@pytest.fixture
def no_leftovers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Fails the test when it leaves behind a process it started, a ``duet-*`` cgroup (any
    depth, every hierarchy), a barrier file (``/dev/shm/duet-*``), a work directory
    (``/var/tmp/duet-*``), a temporary ``duet-*`` directory, a worktree slot (cache lock, stamp
    without worktree) or a registered git worktree, a mount, or a changed
    ``cgroup.subtree_control`` (tests/leftovers.py). Only what this test process or its
    descendants made counts: other duets on the machine are left alone. The test gets a
    ``TMPDIR`` of its own (removed afterwards), where its duets' temporary directories go."""
    tag = uuid.uuid4().hex
    monkeypatch.setenv("DUET_TEST_TAG", tag)
    # Short (sockets), and writable by the users a root duet runs builds as, like /tmp.
    tmpdir = Path(tempfile.mkdtemp(prefix="t-", dir="/tmp"))
    tmpdir.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    test_dirs = (tmp_path,)
    try:
        before: Snapshot = snapshot(test_dirs, tmpdir)
        watcher = _Watcher()
        before_children = set(watcher.seen)
        yield
        ours = watcher.stop()
        after = snapshot(test_dirs, tmpdir)
        left = ours_left(
            before,
            after,
            ours=ours,
            existing=before_children,
            tag=tag,
            test_dirs=test_dirs,
            tmpdir=tmpdir,
        )
        assert not left, "left behind:\n" + "\n".join(left)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def is_root() -> bool:
    return os.geteuid() == 0
