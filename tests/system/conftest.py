"""Fixtures for the system tests: real cgroups, real processes, real namespaces.

Tests that need root carry ``pytest.mark.root``, tests that need a cgroup hierarchy carry
``pytest.mark.cgroup``; both are skipped with the reason where the machine does not allow them.
CI runs as root with cgroups, so there they must run: set ``DUET_REQUIRE_SYSTEM_TESTS=1`` to turn
such skips into failures, for root and for each cgroup hierarchy this machine has mounted (a
machine with cgroup v2 only still skips the cgroup v1 tests, with the reason). A comma list
(``root,cgroup-v1,cgroup-v2``) requires exactly those, mounted or not.

Every isolation test uses ``isolation_clean``: afterwards no ``duet-*`` cgroup of this test may
be left in any hierarchy, and no process the test started (recognised by a per-test tag in its
environment, which survives double forks and ``setsid``) may still run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from duet_bench.isolation import PARENT_NAME_RE, pid_alive
from duet_bench.isolation.cgroup_v1 import probe_v1
from tests.leftovers import cgroup_hierarchies, v2_mountpoint

CGROUP_ROOT = "/sys/fs/cgroup"
TAG_VARIABLE = "DUET_TEST_TAG"


Requirement = Literal["root", "cgroup-v1", "cgroup-v2"]


def required(what: Requirement) -> bool:
    """Whether ``DUET_REQUIRE_SYSTEM_TESTS`` forbids skipping a test for lack of ``what``. What
    the machine has mounted is read from /proc/self/mountinfo here, not from duet's probes
    (which the tests check)."""
    value = os.environ.get("DUET_REQUIRE_SYSTEM_TESTS", "")
    if value != "1":
        return what in value.split(",")
    if what == "cgroup-v1":
        return any(m.fstype == "cgroup" for m in cgroup_hierarchies())
    if what == "cgroup-v2":
        return v2_mountpoint() is not None
    return True


def skip_or_fail(reason: str, needs: Requirement = "root") -> None:
    """Skip with ``reason``, or fail when the environment requires what the test ``needs``."""
    if required(needs):
        setting = os.environ["DUET_REQUIRE_SYSTEM_TESTS"]
        pytest.fail(f"{reason} (DUET_REQUIRE_SYSTEM_TESTS={setting} forbids skipping)")
    pytest.skip(reason)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("root") is not None and os.geteuid() != 0:
        skip_or_fail("needs root (cgroups, namespaces)")


def duet_cgroup_dirs() -> set[str]:
    """Every ``duet-*`` directory in every cgroup hierarchy (not descending into them)."""
    found: set[str] = set()
    for mount in cgroup_hierarchies():
        for dirpath, dirnames, _ in os.walk(mount.mountpoint):
            for name in list(dirnames):
                if name.startswith("duet-"):
                    found.add(os.path.join(dirpath, name))
                    dirnames.remove(name)
            if dirpath.count(os.sep) - mount.mountpoint.count(os.sep) >= 4:
                dirnames.clear()
    return found


def tagged_processes(tag: str) -> list[int]:
    """Live processes whose environment carries ``tag``."""
    needle = f"{TAG_VARIABLE}={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if needle in environ.split(b"\0") and pid_alive(int(entry)):
            found.append(int(entry))
    return found


@pytest.fixture
def tag() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory both sides and the test can reach whatever the sandbox (not under /tmp)."""
    path = Path("/var/tmp") / f"dsys-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o777)
    os.chmod(path, 0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def child_env(tag: str) -> dict[str, str]:
    """The environment for every process a test starts: minimal, plus the leak-detection tag."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONDONTWRITEBYTECODE": "1",
        TAG_VARIABLE: tag,
    }


@pytest.fixture
def isolation_clean(tag: str) -> Iterator[None]:
    before = duet_cgroup_dirs()
    yield
    # Ours: named after this process, or after a pid that is dead (the simulated crashes).
    # Other duet processes running on the machine at the same time are left alone.
    left_cgroups = sorted(
        path
        for path in duet_cgroup_dirs() - before
        if (m := PARENT_NAME_RE.match(os.path.basename(path)))
        and (int(m.group(1)) == os.getpid() or not pid_alive(int(m.group(1))))
    )
    deadline = time.monotonic() + 3.0
    while (left_pids := tagged_processes(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left_pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left_cgroups, f"cgroups left behind: {left_cgroups}"
    assert not left_pids, f"processes left running: {left_pids}"


def mounted_v1_controllers() -> set[str]:
    """The controllers of the cgroup v1 hierarchies in /proc/mounts: a fact of the machine,
    read without duet's code (whose probe is what the tests check)."""
    found: set[str] = set()
    with open("/proc/mounts", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 3 and fields[2] == "cgroup":
                found |= set(fields[3].split(","))
    return found


def psi_cgroup2_here() -> str | None:
    """Our own cgroup in a cgroup2 hierarchy, when it has ``cpu.pressure`` (PSI on): a fact
    of the machine read from /proc, not duet's answer."""
    with open("/proc/mounts", encoding="utf-8") as f:
        mounts = [line.split()[1] for line in f if line.split()[2:3] == ["cgroup2"]]
    with open("/proc/self/cgroup", encoding="utf-8") as f:
        own = next((line.strip()[3:] for line in f if line.startswith("0::")), None)
    for mount in mounts:
        if own is not None and os.path.exists(os.path.join(mount, own.lstrip("/"), "cpu.pressure")):
            return os.path.join(mount, own.lstrip("/"))
    return None


@pytest.fixture
def v1_root() -> str:
    """The cgroup root when this machine mounts the cgroup v1 controllers duet needs (cpuset,
    cpu, cpuacct), else skip. Where they are mounted, duet's own probe must accept them: its
    refusal is a product error, and fails the test."""
    lacking = {"cpuset", "cpu", "cpuacct"} - mounted_v1_controllers()
    if lacking:
        skip_or_fail(
            f"cgroup v1 is not usable: no cgroup v1 hierarchy with {', '.join(sorted(lacking))}",
            needs="cgroup-v1",
        )
    probe = probe_v1(CGROUP_ROOT)
    assert probe.ok, f"duet refuses the mounted cgroup v1 hierarchies: {probe.reason}"
    return CGROUP_ROOT


@pytest.fixture
def v2_mount() -> str:
    """The cgroup2 mount point (pure or hybrid layout; from /proc/self/mountinfo), else skip."""
    mount = v2_mountpoint()
    if mount is None:
        skip_or_fail(f"no cgroup2 hierarchy under {CGROUP_ROOT}", needs="cgroup-v2")
    assert mount is not None
    return mount


@pytest.fixture
def python() -> str:
    """An interpreter a side with a private /tmp can execute (not ours when the checkout, and so
    the virtual environment, lies under /tmp): the one duet's runner would choose."""
    from duet_bench.runner import worker_python_for

    return worker_python_for(None)


@pytest.fixture
def cpu() -> int:
    """The CPU tests pin to: the last one we may use (on a machine with more than one CPU,
    "pinned to it" and "not pinned at all" then look different)."""
    return max(os.sched_getaffinity(0))
