"""Shared fixtures and the suite's rules (documented in tests/README.md):

- ``measures``: a test that starts duet's runner, a barrier, a worker or a cgroup; it runs serially
  (never beside another test of this suite) and every one of them is checked for leftovers. Derived
  here from what the test uses (the ``no_leftovers`` or ``isolation_clean`` fixture, the ``root``
  or ``cgroup`` marker, a module under tests/system or tests/integration); mark a new kind of test
  ``pytest.mark.measures`` by hand.
- In CI (``CI=true``: ``make test`` and the guest tier set it) a skip fails, unless its whole
  reason is a fact of the CI machine it ran on (``DUET_CI_MACHINE``) listed in
  ``tests/allowed_skips.py``.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.allowed_skips import current_machine, why_allowed
from tests.leftovers import Snapshot, ours_left, snapshot

# Hypothesis fails an example that takes over 200 ms by default: a timing, which a loaded 2-vCPU
# machine exceeds by chance (seen: test_topology's round trip, test_plan's crossover plan, at
# load 13-16). No property test here is about time; hangs are pytest-timeout's.
settings.register_profile("duet", deadline=None)
settings.load_profile("duet")

#: Fixtures and markers that say a test measures (see the module docstring).
MEASURING_FIXTURES = frozenset({"no_leftovers", "isolation_clean"})
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
    patch.setenv("DUET_LOCK", str(tmp_path_factory.mktemp("lock") / "duet.lock"))
    patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    yield
    patch.undo()


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
        while not self._stop.wait(0.02):
            self.seen |= set(self._descendants(os.getpid()))

    def stop(self) -> set[int]:
        self._stop.set()
        self._thread.join()
        return self.seen | set(self._descendants(os.getpid()))


@pytest.fixture
def no_leftovers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fails the test when it leaves behind a process it started, a ``duet-*`` cgroup (any
    depth, every hierarchy), a barrier file (``/dev/shm/duet-*``), a work directory
    (``/var/tmp/duet-*``) or a worktree slot (cache lock, stamp without worktree). Only what
    this test process or its descendants made counts: other duets on the machine are left alone."""
    tag = uuid.uuid4().hex
    monkeypatch.setenv("DUET_TEST_TAG", tag)
    before: Snapshot = snapshot()
    watcher = _Watcher()
    before_children = set(watcher.seen)
    yield
    ours = watcher.stop()
    left = ours_left(before, snapshot(), ours=ours, existing=before_children, tag=tag)
    assert not left, "left behind:\n" + "\n".join(left)


def is_root() -> bool:
    return os.geteuid() == 0
