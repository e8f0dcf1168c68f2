"""What the runner-like guest showed about the cgroup v2 backend (docs/platforms.md), each on the
real hierarchy:

- a cgroup we may not write is reported as such, not as "shared with processes that are not
  ours" (that is a different case, with a different fix);
- in the sibling placement the controllers duet turned on above its parent are turned off again
  when it closes, and only those;
- a side whose cpuset or controllers were changed while it ran fails loudly when its usage is
  read (the runner reads it at the end of every run).

The last two need the cpuset and cpu controllers in the cgroup2 hierarchy (a cgroup v2 machine,
the guest tier); on a hybrid machine whose cgroup2 has no controllers they skip with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from duet_bench.errors import IsolationError
from duet_bench.isolation import Limits
from duet_bench.isolation.cgroup_v2 import CgroupV2Backend, probe_v2
from tests.system.conftest import TAG_VARIABLE

# Also run in the guest tier (cgroup v2 with controllers under systemd, sudo from a user).
pytestmark = [
    pytest.mark.root,
    pytest.mark.cgroup,
    pytest.mark.guest,
    pytest.mark.usefixtures("isolation_clean"),
]

# Someone who is not root and can still run our interpreter on our checkout: the user who ran
# sudo (a checkout in their 0700 home), else nobody.
USER = int(os.environ.get("SUDO_UID", "65534"))


def controllers(path: str, name: str = "cgroup.controllers") -> set[str]:
    with open(os.path.join(path, name)) as f:
        return set(f.read().split())


@pytest.fixture
def scratch(v2_mount: str) -> Iterator[Callable[[str], str]]:
    """Makes cgroups under a scratch cgroup of this test (removed afterwards, deepest first)."""
    top = os.path.join(v2_mount, f"duet-{os.getpid()}-scratch")
    made: list[str] = []

    def make(relative: str) -> str:
        path = os.path.join(top, relative) if relative else top
        os.makedirs(path, exist_ok=True)
        made.append(path)
        return path

    make("")
    yield make
    for path in sorted(set(made), key=len, reverse=True):
        deadline = time.monotonic() + 5
        while os.path.exists(path):
            try:
                os.rmdir(path)
            except OSError:
                assert time.monotonic() < deadline, f"cannot remove {path}"
                time.sleep(0.02)


def joiner(cgroup: str, uid: int | None = None) -> Callable[[], None]:
    def join() -> None:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write("0")
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)

    return join


def probe_as_user(v2_mount: str, cgroup: str) -> dict[str, str]:
    """``probe_v2`` in a forked child that joined ``cgroup`` and became ``USER`` (a fork, not an
    exec: the user may not be able to run our interpreter, e.g. one under /root)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(read_end)
            joiner(cgroup, USER)()
            probe = probe_v2(v2_mount, require_controllers=())
            report = {"ok": probe.ok, "reason": probe.reason, "fix": probe.fix}
            os.write(write_end, json.dumps(report).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    report: dict[str, str] = json.loads(data)
    return report


@pytest.mark.parametrize("delegated", [False, True], ids=["not-writable", "writable-but-shared"])
def test_the_reason_for_no_cgroup_is_the_true_one(
    v2_mount: str,
    scratch: Callable[[str], str],
    python: str,
    child_env: dict[str, str],
    delegated: bool,
) -> None:
    job = scratch("job")
    if delegated:
        # What systemd's Delegate=yes does for a unit's user: the directory and the files that
        # manage it belong to them.
        for name in (".", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
            os.chown(os.path.join(job, name), USER, USER)
    # A process of another user in the same cgroup, as the job shell's siblings on a runner.
    stranger = subprocess.Popen(["sleep", "60"], env=child_env, preexec_fn=joiner(job))
    try:
        report = probe_as_user(v2_mount, job)
    finally:
        stranger.kill()
        stranger.wait()
    assert report["ok"] is False
    relative = "/" + os.path.relpath(job, v2_mount)
    if delegated:
        shared = f"our cgroup {relative} is shared with processes that are not ours"
        assert shared in report["reason"]
    else:
        assert f"we (uid {USER}) may not write our cgroup {relative}" in report["reason"]
        assert "it belongs to uid 0" in report["reason"]
        assert "shared" not in report["reason"]
    assert "sudo" in report["fix"]
    assert "Delegate=yes" in report["fix"]


def need_controllers(v2_mount: str, *names: str) -> None:
    lacking = set(names) - controllers(v2_mount)
    if lacking:
        pytest.skip(
            f"the cgroup2 hierarchy at {v2_mount} offers no {', '.join(sorted(lacking))} "
            "(a hybrid machine: they are bound to cgroup v1); the guest tier runs this"
        )


SIBLING = textwrap.dedent(
    """
    import json, os, sys
    from duet_bench.isolation import Limits
    from duet_bench.isolation.cgroup_v2 import CgroupV2Backend

    root, base = sys.argv[1], sys.argv[2]
    def subtree(path):
        with open(os.path.join(path, "cgroup.subtree_control")) as f:
            return sorted(f.read().split())

    with CgroupV2Backend(root=root, require_controllers=("cpuset", "cpu")) as b:
        b.container("side", cpus=[0], mems=None, limits=Limits()).close()
        report = {"mode": b.mode, "during": subtree(base)}
    report["after"] = subtree(base)
    print(json.dumps(report))
    """
)


def test_the_sibling_mode_turns_off_what_it_turned_on(
    v2_mount: str, scratch: Callable[[str], str], python: str, child_env: dict[str, str]
) -> None:
    need_controllers(v2_mount, "cpuset", "cpu")
    # base/job holds the helper and a stranger: as root, duet's parent goes into base, and
    # cpuset and cpu must be turned on in base (and above) for it.
    base = scratch("")
    job = scratch("job")
    root_before = controllers(v2_mount, "cgroup.subtree_control")
    kept = scratch("configured")  # a sibling whose CPU weight someone set: cpu must stay on
    before = controllers(base, "cgroup.subtree_control")
    assert not {"cpuset", "cpu"} & before
    stranger = subprocess.Popen(["sleep", "60"], env=child_env, preexec_fn=joiner(job))
    try:
        result = subprocess.run(
            [python, "-c", SIBLING, v2_mount, base],
            env={**child_env, "PYTHONPATH": os.pathsep.join(sys.path)},
            preexec_fn=joiner(job),
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == 0, result.stderr.decode()
        report = json.loads(result.stdout)
        assert report["mode"] == "sibling"
        assert {"cpuset", "cpu"} <= set(report["during"])
        assert set(report["after"]) == before

        # The same again, but another cgroup under base comes to use cpu while duet runs.
        helper = SIBLING.replace(
            'report = {"mode"',
            f'open("{kept}/cpu.weight", "w").write("50")\n    report = {{"mode"',
        )
        result = subprocess.run(
            [python, "-c", helper, v2_mount, base],
            env={**child_env, "PYTHONPATH": os.pathsep.join(sys.path)},
            preexec_fn=joiner(job),
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == 0, result.stderr.decode()
        report = json.loads(result.stdout)
        assert set(report["after"]) == before | {"cpu"}
    finally:
        stranger.kill()
        stranger.wait()
        for path, keep in ((base, set()), (v2_mount, root_before)):
            added = {"cpu", "cpuset"} & controllers(path, "cgroup.subtree_control") - keep
            if added:
                with open(os.path.join(path, "cgroup.subtree_control"), "w") as f:
                    f.write(" ".join(f"-{c}" for c in sorted(added)))


@pytest.fixture
def full_backend(v2_mount: str) -> Iterator[CgroupV2Backend]:
    need_controllers(v2_mount, "cpuset", "cpu")
    with CgroupV2Backend(root=v2_mount, require_controllers=("cpuset", "cpu")) as b:
        yield b


def two_cpus() -> tuple[int, int]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs to move a side from one to the other")
    return cpus[-1], cpus[0]


def test_a_side_whose_cpuset_was_changed_fails_loudly(
    full_backend: CgroupV2Backend, child_env: dict[str, str]
) -> None:
    asked, other = two_cpus()
    with full_backend.container("r001-baseline", cpus=[asked], mems=None, limits=Limits()) as c:
        popen = c.spawn(["sleep", "60"], env=child_env, cwd="/", stdout=None, stderr=None)
        assert c.usage().cpu_ns is not None  # as asked: no complaint
        # What systemd does when it re-applies a unit's AllowedCPUs= to our cgroup.
        with open(os.path.join(c.path, "cpuset.cpus"), "w") as f:  # type: ignore[attr-defined]
            f.write(str(other))
        with pytest.raises(IsolationError, match="was changed while it was measured") as error:
            c.usage()
        assert f"its CPUs are {other}, not {asked} as set" in str(error.value)
        assert error.value.fix is not None
        assert "Delegate=yes" in error.value.fix
    assert popen.wait(timeout=5) == -9


def test_a_side_that_lost_its_controllers_fails_loudly(
    full_backend: CgroupV2Backend, child_env: dict[str, str]
) -> None:
    asked, _ = two_cpus()
    with full_backend.container("r002-candidate", cpus=[asked], mems=None, limits=Limits()) as c:
        popen = c.spawn(["sleep", "60"], env=child_env, cwd="/", stdout=None, stderr=None)
        with open(os.path.join(full_backend.parent, "cgroup.subtree_control"), "w") as f:
            f.write("-cpuset")
        with pytest.raises(IsolationError, match=r"controller\(s\) cpuset were taken away"):
            c.usage()
    assert popen.wait(timeout=5) == -9


def test_a_run_whose_side_moved_to_another_cpu_fails_with_exit_3(
    v2_mount: str, tmp_path: Path, tag: str
) -> None:
    need_controllers(v2_mount, "cpuset", "cpu")
    probe = probe_v2()
    # The controllers are there and we are root: duet must choose cgroup v2 (its refusal is
    # the product's error, not a reason to skip).
    assert probe.ok, f"duet would not choose cgroup v2 here: {probe.reason}"
    two_cpus()
    # The candidate moves its own cgroup to another CPU, as a unit's AllowedCPUs= re-applied by
    # systemd would: the run must not be recorded as if it had stayed where duet put it.
    move = (
        f"cg={v2_mount}$(sed -n 's/^0:://p' /proc/self/cgroup); "
        'if [ "$(cat $cg/cpuset.cpus)" = 0 ]; then echo 1; else echo 0; fi > $cg/cpuset.cpus'
    )
    out = tmp_path / "r.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "duet_bench", "run", "--baseline", "true", "--candidate", move,
            "--name", "moved", "--runs", "2", "--iterations", "1", "--warmup", "0",
            "--reps", "1000", "--isolation", "cgroup", "--user", "root", "--quiet",
            "--out", str(out),
        ],
        env={**os.environ, TAG_VARIABLE: tag},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "was changed while it was measured" in done.stderr
    assert "Delegate=yes" in done.stderr
    assert "Traceback" not in done.stderr
    doc = json.loads(out.read_text())
    assert doc["state"]["complete"] is False
