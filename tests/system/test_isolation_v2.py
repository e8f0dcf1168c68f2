"""The cgroup v2 backend on the machine's cgroup2 hierarchy, for what that hierarchy offers.

On a hybrid machine (controllers bound to v1, a controller-less cgroup2 at
``/sys/fs/cgroup/unified``) the backend still tracks processes, kills with ``cgroup.kill`` and
reads ``cpu.stat``; it must report the fields it cannot measure, and refuse limits it cannot
enforce. Where the hierarchy has the controllers, the same tests check them too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest

from duet_bench.errors import IsolationError
from duet_bench.isolation import Container, Limits, pid_alive
from duet_bench.isolation.cgroup_v2 import (
    ORCHESTRATOR_LEAF,
    CgroupV2Backend,
    kill_tree,
)

# Also run in the guest tier (cgroup v2 with controllers under systemd, sudo from a user).
pytestmark = [
    pytest.mark.root,
    pytest.mark.cgroup,
    pytest.mark.guest,
    pytest.mark.usefixtures("isolation_clean"),
]


@pytest.fixture
def backend(v2_mount: str) -> Iterator[CgroupV2Backend]:
    # A cgroup2 hierarchy is mounted (v2_mount) and we are root: the backend, asked for no
    # controller, must work there. Its error is the product's and fails the test.
    with CgroupV2Backend(root=v2_mount, require_controllers=()) as b:
        yield b


def spawn(container: Container, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return container.spawn(argv, env=env, cwd="/", stdout=subprocess.PIPE, stderr=None)


DAEMON = textwrap.dedent(
    """
    import os, time
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.setsid()
            os.write(w, str(os.getpid()).encode())
            os.closerange(0, 3)
            time.sleep(60)
            os._exit(0)
        os._exit(0)
    os.close(w)
    os.wait()
    print(os.read(r, 32).decode(), flush=True)
    """
)


def test_child_joins_before_exec(backend: CgroupV2Backend, child_env: dict[str, str]) -> None:
    with backend.container("r001-baseline", cpus=[0], mems=None, limits=Limits()) as c:
        out = spawn(c, ["cat", "/proc/self/cgroup"], child_env).communicate(timeout=10)[0]
        v2_line = next(line for line in out.decode().splitlines() if line.startswith("0::"))
        relative = os.path.relpath(c.path, backend.mount)  # type: ignore[attr-defined]
        assert v2_line == f"0::/{relative}"
        assert os.path.basename(os.path.dirname(c.path)).startswith("duet-")  # type: ignore[attr-defined]


def test_tracks_and_kills_a_double_forked_daemon_with_cgroup_kill(
    backend: CgroupV2Backend, child_env: dict[str, str], python: str
) -> None:
    with backend.container("r001-candidate", cpus=[0], mems=None, limits=Limits()) as c:
        popen = spawn(c, [python, "-c", DAEMON], child_env)
        daemon = int(popen.communicate(timeout=10)[0])
        assert popen.returncode == 0
        assert c.processes() == [daemon]
        assert os.getsid(daemon) == daemon
        c.kill()
        assert not pid_alive(daemon)
        assert c.processes() == []


def test_freeze_and_kill_loop_without_cgroup_kill(
    backend: CgroupV2Backend, child_env: dict[str, str], python: str
) -> None:
    # The path for kernels before 5.14, on a real cgroup: freeze, SIGKILL each task, thaw.
    with backend.container("r002-baseline", cpus=[0], mems=None, limits=Limits()) as c:
        popen = spawn(c, [python, "-c", DAEMON], child_env)
        daemon = int(popen.communicate(timeout=10)[0])
        assert kill_tree(c.path, use_kill_file=False)  # type: ignore[attr-defined]
        assert not pid_alive(daemon)
        with open(os.path.join(c.path, "cgroup.events")) as f:  # type: ignore[attr-defined]
            assert "frozen 0" in f.read()


def test_cpu_time_from_cpu_stat_and_missing_fields(
    backend: CgroupV2Backend, child_env: dict[str, str], python: str
) -> None:
    burn = (
        "import subprocess, sys, time\n"
        "code = 'import time\\nt = time.process_time()\\n"
        "while time.process_time() - t < 0.3: sum(range(20000))'\n"
        "subprocess.Popen([sys.executable, '-c', code], start_new_session=True)\n"
        "exec(code)\n"
    )
    with backend.container("r002-candidate", cpus=[0], mems=None, limits=Limits()) as c:
        popen = spawn(c, [python, "-c", burn], child_env)
        popen.communicate(timeout=20)
        assert popen.returncode == 0
        deadline = time.monotonic() + 10
        while c.processes():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        usage = c.usage()
    assert usage.cpu_ns is not None
    assert usage.cpu_ns >= 0.58e9
    assert usage.cpu_user_ns is not None
    assert usage.cpu_system_ns is not None
    assert usage.cpu_user_ns + usage.cpu_system_ns <= usage.cpu_ns + 1_000_000
    for controller, fields in (
        ("memory", ("peak_memory_bytes", "oom_kills")),
        ("pids", ("pids_limit_hit",)),
    ):
        for field in fields:
            if controller in backend.controllers:
                assert field not in usage.missing
            else:
                assert getattr(usage, field) is None
                assert controller in usage.missing[field]


def test_refuses_limits_it_cannot_enforce(backend: CgroupV2Backend) -> None:
    if "memory" not in backend.controllers:
        with pytest.raises(IsolationError, match="memory controller"):
            backend.container(
                "r003-baseline", cpus=[0], mems=None, limits=Limits(memory_bytes=1 << 30)
            )
    if "pids" not in backend.controllers:
        with pytest.raises(IsolationError, match="pids controller"):
            backend.container("r003-candidate", cpus=[0], mems=None, limits=Limits(pids_max=10))
    if backend.controllers != frozenset({"cpuset", "cpu", "memory", "pids"}):
        assert backend.warning is not None
        assert "cgroup-v2 without" in backend.warning


def test_require_controllers_explains_what_is_missing(v2_mount: str) -> None:
    with open(os.path.join(v2_mount, "cgroup.controllers")) as f:
        offered = set(f.read().split())
    if {"cpuset", "memory"} <= offered:
        pytest.skip("this hierarchy offers the controllers")
    with pytest.raises(IsolationError, match="does not offer") as error:
        CgroupV2Backend(root=v2_mount, require_controllers=("cpuset", "memory"))
    assert error.value.fix


def test_close_removes_the_parent(v2_mount: str, child_env: dict[str, str]) -> None:
    backend = CgroupV2Backend(root=v2_mount, require_controllers=())
    c = backend.container("r004-baseline", cpus=[0], mems=None, limits=Limits())
    popen = c.spawn(["sleep", "60"], env=child_env, cwd="/", stdout=None, stderr=None)
    backend.close()
    assert popen.wait(timeout=5) == -9
    assert not os.path.exists(backend.parent)
    backend.close()


def test_stale_cleanup(backend: CgroupV2Backend, child_env: dict[str, str]) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    base = os.path.dirname(backend.parent)
    stale = os.path.join(base, f"duet-{dead.pid}-crashed")
    side = os.path.join(stale, "r005-baseline")
    os.makedirs(side)

    def join() -> None:
        with open(os.path.join(side, "cgroup.procs"), "w") as f:
            f.write("0")

    orphan = subprocess.Popen(["sleep", "60"], env=child_env, preexec_fn=join)
    try:
        assert backend.cleanup_stale() == [stale]
        assert orphan.wait(timeout=5) == -9
        assert not os.path.exists(stale)
        assert os.path.isdir(backend.parent)
    finally:
        orphan.kill()
        orphan.wait()


# The two placements that need our own cgroup to be somewhere else than the root: run a helper
# process that we first put into a scratch cgroup.
HELPER = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from duet_bench.isolation import Limits
    from duet_bench.isolation.cgroup_v2 import CgroupV2Backend

    def own():
        with open("/proc/self/cgroup") as f:
            return [l for l in f.read().splitlines() if l.startswith("0::")][0][3:]

    report = {"before": own()}
    with CgroupV2Backend(root=sys.argv[1], require_controllers=()) as b:
        report.update(mode=b.mode, parent=b.parent, during=own())
        c = b.container("side", cpus=[0], mems=None, limits=Limits())
        out = c.spawn(["cat", "/proc/self/cgroup"], env=dict(os.environ), cwd="/",
                      stdout=subprocess.PIPE, stderr=None).communicate()[0].decode()
        report["child"] = [l for l in out.splitlines() if l.startswith("0::")][0][3:]
    report.update(after=own(), parent_exists=os.path.exists(report["parent"]))
    print(json.dumps(report))
    """
)


@pytest.mark.parametrize("shared", [False, True], ids=["delegated", "sibling"])
def test_placement_outside_the_root_cgroup(
    v2_mount: str, child_env: dict[str, str], python: str, shared: bool
) -> None:
    # delegated: the helper is alone in its cgroup (a systemd scope with Delegate=yes): it
    # moves itself into a leaf of its parent and back. sibling: a process that is not ours
    # shares the cgroup, so as root the parent goes next to it.
    scratch = os.path.join(v2_mount, f"duet-{os.getpid()}-scratch")
    os.mkdir(scratch)

    def join() -> None:
        with open(os.path.join(scratch, "cgroup.procs"), "w") as f:
            f.write("0")

    stranger = subprocess.Popen(["sleep", "60"], env=child_env, preexec_fn=join) if shared else None
    try:
        result = subprocess.run(
            [python, "-c", HELPER, v2_mount],
            env={**child_env, "PYTHONPATH": os.pathsep.join(sys.path)},
            preexec_fn=join,
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == 0, result.stderr.decode()
        report = json.loads(result.stdout)
    finally:
        if stranger is not None:
            stranger.kill()
            stranger.wait()
        deadline = time.monotonic() + 5
        while True:
            try:
                os.rmdir(scratch)
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.02)
    relative_scratch = "/" + os.path.relpath(scratch, v2_mount)
    assert report["before"] == report["after"] == relative_scratch
    assert not report["parent_exists"]
    parent = "/" + os.path.relpath(report["parent"], v2_mount)
    assert report["child"] == f"{parent}/side"
    if shared:
        assert report["mode"] == "sibling"
        assert os.path.dirname(parent) == os.path.dirname(relative_scratch)
        assert report["during"] == relative_scratch
    else:
        assert report["mode"] == "delegated"
        assert os.path.dirname(parent) == relative_scratch
        assert report["during"] == f"{parent}/{ORCHESTRATOR_LEAF}"
