"""The leftover check (tests/leftovers.py, tests/conftest.py's ``no_leftovers``) on real pytest
sessions (pytester): each kind of leftover a measuring test can leave is planted by a test
for real, and the check must fail that test naming it; a clean test passes. The outer test
removes what the inner one planted."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import is_root
from tests.leftovers import Snapshot, cgroup_hierarchies, ours_left, read_mounts

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent.parent
CONFTEST = "from tests.conftest import no_leftovers  # noqa: F401\n"


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.syspath_prepend(str(REPO))
    pytester.makeconftest(CONFTEST)
    return pytester


def planted(session: pytest.Pytester, body: str) -> pytest.RunResult:
    """Run one test with ``no_leftovers`` whose body is ``body`` (given ``tmp_path``)."""
    session.makepyfile(
        "import os, subprocess, sys, tempfile\nfrom pathlib import Path\nimport pytest\n\n"
        '@pytest.mark.usefixtures("no_leftovers")\n'
        "def test_it(tmp_path):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    )
    return session.runpytest("-p", "no:cacheprovider")


def test_a_clean_test_passes(session: pytest.Pytester) -> None:
    result = planted(
        session, "subprocess.run(['true'], check=True)\n(tmp_path / 'x').write_text('')"
    )
    result.assert_outcomes(passed=1)


def test_a_process_left_running_is_named_and_killed(session: pytest.Pytester) -> None:
    # A double fork in a new session: not a descendant any more, found by its tag.
    body = "subprocess.run(['setsid', 'sh', '-c', 'sleep 300 &'], check=True)"
    result = planted(session, body)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*left behind:*", "*process * sleep 300*"])


def test_a_temporary_duet_directory_is_named(session: pytest.Pytester) -> None:
    # What duet demo, collect, plots and calibrate make (tempfile, prefix duet-).
    result = planted(session, "tempfile.mkdtemp(prefix='duet-demo-')")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*left behind:*", "*file /tmp/t-*/duet-demo-*"])


def test_a_barrier_file_of_the_test_process_is_named(session: pytest.Pytester) -> None:
    path = Path(f"/dev/shm/duet-{os.getpid()}-leftover-test")
    try:
        result = planted(session, f"Path({str(path)!r}).write_bytes(b'')")
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines([f"*file {path}*"])
    finally:
        path.unlink(missing_ok=True)


def test_a_registered_worktree_and_a_held_slot_under_the_test_are_named(
    session: pytest.Pytester,
) -> None:
    body = (
        "repo = tmp_path / 'repo'\n"
        "git = ['git', '-C', str(repo), '-c', 'user.name=t', '-c', 'user.email=t@t']\n"
        "subprocess.run(['git', 'init', '-q', str(repo)], check=True)\n"
        "subprocess.run([*git, 'commit', '-q', '--allow-empty', '-m', 'x'], check=True)\n"
        "cache = tmp_path / 'xdg' / 'duet' / 'worktrees' / 'abc'\n"
        "cache.mkdir(parents=True)\n"
        "subprocess.run([*git, 'worktree', 'add', '-q', str(cache / 'slot1')], check=True)\n"
        "subprocess.run([*git, 'worktree', 'add', '-q', str(tmp_path / 'mine')], check=True)\n"
        "(cache / 'slot0.lock').write_text('')"
    )
    result = planted(session, body)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*worktree */repo/.git/worktrees/slot1 (a git worktree still registered)*"]
    )
    # A worktree the test made itself (to see duet leave it alone) is not duet's leftover.
    assert "worktrees/mine" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*worktree */xdg/duet/worktrees/abc/slot0.lock (a slot*"])


def test_a_mount_under_the_test_is_named(session: pytest.Pytester) -> None:
    if not is_root():
        pytest.skip("mounting a tmpfs needs root (CI is root: there this test runs)")
    body = (
        "(tmp_path / 'm').mkdir()\n"
        "subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'none', str(tmp_path / 'm')],"
        " check=True)"
    )
    before = {m.mountpoint for m in read_mounts()}
    try:
        result = planted(session, body)
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines(["*mount */m (tmpfs none)*"])
    finally:
        for mount in read_mounts():
            if mount.mountpoint not in before and mount.mountpoint.endswith("/test_it0/m"):
                subprocess.run(["umount", mount.mountpoint], check=True)


def test_a_changed_subtree_control_is_named() -> None:
    path = "/sys/fs/cgroup/cgroup.subtree_control"
    before = Snapshot(frozenset(), frozenset(), frozenset(), ((path, "cpu"),), frozenset())
    after = Snapshot(frozenset(), frozenset(), frozenset(), ((path, "cpu cpuset"),), frozenset())
    left = ours_left(before, after, ours=set(), existing=set(), tag="none")
    assert left == [f"state {path}: 'cpu' before the test, 'cpu cpuset' after it"]
    assert ours_left(before, before, ours=set(), existing=set(), tag="none") == []


def test_another_duets_objects_are_not_ours() -> None:
    # A duet-<pid>-* object of a process that is not a descendant: another developer's duet.
    other = subprocess.Popen(["sleep", "30"])
    try:
        name = f"/sys/fs/cgroup/cpu/duet-{other.pid}-cafe"
        after = Snapshot(
            frozenset({name}),
            frozenset({f"/dev/shm/duet-{other.pid}-x"}),
            frozenset(),
            (),
            frozenset({f"/mnt/duet-{other.pid}-y (tmpfs none)"}),
        )
        empty = Snapshot(frozenset(), frozenset(), frozenset())
        existing = {other.pid}
        assert ours_left(empty, after, ours=set(), existing=existing, tag="none") == []
        # The same objects named after a pid the test had as a descendant are its own.
        left = ours_left(empty, after, ours={other.pid}, existing=existing, tag="none")
        assert len(left) == 3, left
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()


def test_mountinfo_is_read_with_its_escapes_and_optional_fields(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "25 1 0:22 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
        "26 1 0:23 / /sys/fs/cgroup/unified rw master:1 shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
        "27 1 0:24 / /mnt/with\\040space rw - tmpfs my\\040src rw,size=1024k\n"
    )
    mounts = read_mounts(str(info))
    assert [(m.mountpoint, m.fstype, m.source) for m in mounts] == [
        ("/sys/fs/cgroup/cpu,cpuacct", "cgroup", "cgroup"),
        ("/sys/fs/cgroup/unified", "cgroup2", "cgroup2"),
        ("/mnt/with space", "tmpfs", "my src"),
    ]
    assert {"cpu", "cpuacct"} <= mounts[0].super_options


def test_the_cgroup_hierarchies_agree_with_proc_mounts() -> None:
    # A second reading of the machine, from another file of the kernel's.
    with open("/proc/mounts", encoding="utf-8") as f:
        expected = sorted(line.split()[1] for line in f if line.split()[2] in ("cgroup", "cgroup2"))
    assert sorted(m.mountpoint for m in cgroup_hierarchies()) == expected
