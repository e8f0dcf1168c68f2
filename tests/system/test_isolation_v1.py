"""The cgroup v1 backend against the kernel's real v1 hierarchies."""

from __future__ import annotations

import os
import subprocess
import textwrap
import time
from collections.abc import Iterator

import pytest

from duet_bench.errors import IsolationError
from duet_bench.isolation import Container, Limits, make_sandbox, pid_alive, read_keyed
from duet_bench.isolation.cgroup_v1 import CONTROLLERS, CgroupV1Backend

pytestmark = [pytest.mark.root, pytest.mark.cgroup, pytest.mark.usefixtures("isolation_clean")]

MiB = 1024 * 1024


@pytest.fixture
def backend(v1_root: str) -> Iterator[CgroupV1Backend]:
    with CgroupV1Backend(root=v1_root) as b:
        yield b


def run(
    container: Container, argv: list[str], env: dict[str, str], timeout: float = 30
) -> tuple[int, str]:
    popen = container.spawn(
        argv, env=env, cwd="/", stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    out, _ = popen.communicate(timeout=timeout)
    return popen.returncode, out.decode()


def wait_empty(container: Container, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while container.processes():
        assert time.monotonic() < deadline, f"still running: {container.processes()}"
        time.sleep(0.02)


def test_child_is_in_every_cgroup_and_pinned_before_exec(
    backend: CgroupV1Backend, child_env: dict[str, str], cpu: int
) -> None:
    with backend.container("r001-baseline", cpus=[cpu], mems=None, limits=Limits()) as c:
        # `cat` is the first program the child execs: what it reports about itself is what
        # held from its very first instruction.
        code, out = run(c, ["cat", "/proc/self/cgroup"], child_env)
        assert code == 0
        membership = {
            controller: line.split(":", 2)[2]
            for line in out.splitlines()
            for controller in line.split(":", 2)[1].split(",")
        }
        for controller in CONTROLLERS:
            assert membership[controller].endswith(f"/{backend.parent_name}/r001-baseline"), out
        code, out = run(c, ["cat", "/proc/self/status"], child_env)
        allowed = next(line for line in out.splitlines() if line.startswith("Cpus_allowed_list"))
        assert allowed.split()[-1] == str(cpu)
        with open(os.path.join(c.paths["cpuset"], "cpuset.cpus")) as f:  # type: ignore[attr-defined]
            assert f.read().strip() == str(cpu)


def test_cpu_time_includes_an_orphaned_grandchild(
    backend: CgroupV1Backend, child_env: dict[str, str], python: str, cpu: int
) -> None:
    # The parent burns 0.2 s, starts a grandchild in a new session that burns 0.4 s, and exits
    # without waiting for it: wait4 would never see the grandchild's time (paper, 3.1.1).
    # (The loop body keeps it in user space; reading the CPU clock is a system call.)
    burn = (
        "import time\nt = time.process_time()\n"
        "while time.process_time() - t < {}: sum(range(20000))\n"
    )
    script = burn.format(0.2) + textwrap.dedent(
        f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", {burn.format(0.4)!r}], start_new_session=True)
        """
    )
    with backend.container("r001-candidate", cpus=[cpu], mems=None, limits=Limits()) as c:
        code, _ = run(c, [python, "-c", script], child_env)
        assert code == 0
        wait_empty(c)
        usage = c.usage()
    assert usage.cpu_ns is not None
    assert usage.cpu_ns >= 0.58e9, usage
    assert usage.cpu_user_ns is not None
    assert usage.cpu_system_ns is not None
    # The user/system split is sampled by the kernel; only the total is exact.
    assert abs(usage.cpu_user_ns + usage.cpu_system_ns - usage.cpu_ns) < 0.2 * usage.cpu_ns
    assert usage.cpu_user_ns > usage.cpu_system_ns
    assert not usage.missing


def test_peak_memory_of_a_100_mib_allocation(
    backend: CgroupV1Backend, child_env: dict[str, str], python: str, cpu: int
) -> None:
    with backend.container("r002-baseline", cpus=[cpu], mems=None, limits=Limits()) as c:
        # bytes multiplication writes every byte: the pages are really used, not just mapped.
        code, _ = run(c, [python, "-c", "x = b'x' * (100 * 1024 * 1024)"], child_env)
        assert code == 0
        usage = c.usage()
    assert usage.peak_memory_bytes is not None
    assert usage.peak_memory_bytes >= 100 * MiB
    assert usage.peak_memory_bytes < 400 * MiB
    assert usage.oom_kills == 0
    assert usage.pids_limit_hit is False


def test_memory_limit_leads_to_oom_kill_with_the_kernels_count(
    backend: CgroupV1Backend, child_env: dict[str, str], python: str, cpu: int
) -> None:
    limits = Limits(memory_bytes=64 * MiB)
    with backend.container("r002-candidate", cpus=[cpu], mems=None, limits=limits) as c:
        memory = c.paths["memory"]  # type: ignore[attr-defined]
        with open(os.path.join(memory, "memory.limit_in_bytes")) as f:
            assert int(f.read()) == 64 * MiB
        code, _ = run(c, [python, "-c", "x = b'x' * (256 * 1024 * 1024)"], child_env)
        assert code == -9  # SIGKILL from the OOM killer
        usage = c.usage()
        kernel_count = read_keyed(os.path.join(memory, "memory.oom_control"))["oom_kill"]
    assert kernel_count >= 1
    assert usage.oom_kills == kernel_count
    assert usage.peak_memory_bytes is not None
    assert usage.peak_memory_bytes <= 64 * MiB


def test_pids_max_stops_a_bounded_fork_bomb(
    backend: CgroupV1Backend, child_env: dict[str, str], python: str, cpu: int
) -> None:
    # At most 64 forks, each child sleeping (with stdio closed so the pipe reaches EOF when the
    # parent exits); pids.max lets 16 tasks exist.
    script = textwrap.dedent(
        """
        import os, time
        refused = 0
        for _ in range(64):
            try:
                pid = os.fork()
            except BlockingIOError:
                refused += 1
                continue
            if pid == 0:
                os.closerange(0, 3)
                time.sleep(60)
                os._exit(0)
        print(refused, flush=True)
        """
    )
    with backend.container("r003-baseline", cpus=[cpu], mems=None, limits=Limits(pids_max=16)) as c:
        code, out = run(c, [python, "-c", script], child_env)
        assert code == 0
        assert int(out) >= 64 - 16
        assert 0 < len(c.processes()) <= 16
        usage = c.usage()
        assert usage.pids_limit_hit is True
        c.kill()
        assert c.processes() == []


def test_kill_reaches_a_double_forked_daemon_in_its_own_session(
    backend: CgroupV1Backend, child_env: dict[str, str], python: str, cpu: int
) -> None:
    script = textwrap.dedent(
        """
        import os, sys, time
        r, w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.setsid() if os.getpid() != os.getsid(0) else None
                os.setpgid(0, 0) if os.getpgid(0) != os.getpid() else None
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
    with backend.container("r003-candidate", cpus=[cpu], mems=None, limits=Limits()) as c:
        code, out = run(c, [python, "-c", script], child_env)
        assert code == 0
        daemon = int(out)
        assert pid_alive(daemon)
        assert os.getsid(daemon) == daemon  # its own session and process group
        assert c.processes() == [daemon]
        c.kill()
        assert not pid_alive(daemon)
        assert c.processes() == []


def test_close_removes_every_cgroup_and_is_idempotent(
    v1_root: str, child_env: dict[str, str], cpu: int
) -> None:
    backend = CgroupV1Backend(root=v1_root)
    parents = sorted(set(backend.parents.values()))
    assert all(os.path.isdir(p) for p in parents)
    c = backend.container("r004-baseline", cpus=[cpu], mems=None, limits=Limits(pids_max=8))
    popen = c.spawn(["sleep", "60"], env=child_env, cwd="/", stdout=None, stderr=None)
    paths = sorted(set(c.paths.values()))  # type: ignore[attr-defined]
    assert all(os.path.isdir(p) for p in paths)
    c.close()
    assert popen.wait(timeout=5) == -9
    assert not any(os.path.exists(p) for p in paths)
    c.close()
    usage = c.usage()  # the last reading, taken before removal
    assert usage.cpu_ns is not None
    with pytest.raises(IsolationError, match="closed"):
        c.spawn(["true"], env=child_env, cwd="/", stdout=None, stderr=None)
    # A container still open when the backend closes is closed with it.
    open_one = backend.container("r004-candidate", cpus=[cpu], mems=None, limits=Limits())
    backend.close()
    assert open_one.closed
    assert not any(os.path.exists(p) for p in parents)
    backend.close()


def test_container_with_a_sandbox(
    backend: CgroupV1Backend, child_env: dict[str, str], tmp_path: object, cpu: int
) -> None:
    sandbox = make_sandbox(str(tmp_path), "baseline", share_network=False)
    try:
        with backend.container("r005-baseline", cpus=[cpu], mems=None, limits=Limits()) as c:
            popen = c.spawn(
                ["sh", "-c", "echo $TMPDIR; grep cpuset /proc/self/cgroup; touch /tmp/mine"],
                env=child_env,
                cwd="/",
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                sandbox=sandbox,
            )
            out = popen.communicate(timeout=10)[0].decode().split()
        assert out[0] == "/tmp"
        assert out[1].endswith(f"/{backend.parent_name}/r005-baseline")
        assert os.listdir(sandbox.tmpdir) == ["mine"]
    finally:
        sandbox.remove()


def test_a_failed_join_is_reported_and_nothing_runs(
    backend: CgroupV1Backend, child_env: dict[str, str], cpu: int
) -> None:
    c = backend.container("r006-candidate", cpus=[cpu], mems=None, limits=Limits())
    # Someone removed the cgroup under our feet: the child must not run unconfined.
    for path in set(c.paths.values()):  # type: ignore[attr-defined]
        os.rmdir(path)
    with pytest.raises(IsolationError, match="joining cgroup"):
        c.spawn(["sleep", "60"], env=child_env, cwd="/", stdout=None, stderr=None)
    c.close()  # never raises for cgroups that are already gone


def test_refuses_cpus_outside_the_cpuset(backend: CgroupV1Backend) -> None:
    with pytest.raises(IsolationError, match="not in our cpuset"):
        backend.container("r006-baseline", cpus=[4096], mems=None, limits=Limits())


def test_stale_cleanup_after_a_simulated_crash(
    backend: CgroupV1Backend, child_env: dict[str, str]
) -> None:
    # An invocation that died (its pid is dead) and left a parent, a side cgroup and a live
    # process in it, in every hierarchy.
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert not pid_alive(dead.pid)
    name = f"duet-{dead.pid}-crashed"
    bases = sorted({os.path.dirname(p) for p in backend.parents.values()})
    sides = []
    for base in bases:
        parent = os.path.join(base, name)
        side = os.path.join(parent, "r007-baseline")
        os.mkdir(parent)
        os.mkdir(side)
        if os.path.exists(os.path.join(parent, "cpuset.cpus")):
            for cgroup, source in ((parent, base), (side, parent)):
                for key in ("cpuset.cpus", "cpuset.mems"):
                    with (
                        open(os.path.join(source, key)) as f,
                        open(os.path.join(cgroup, key), "w") as g,
                    ):
                        g.write(f.read())
        sides.append(side)

    def join() -> None:
        for side in sides:
            with open(os.path.join(side, "cgroup.procs"), "w") as f:
                f.write("0")

    orphan = subprocess.Popen(["sleep", "60"], env=child_env, preexec_fn=join)
    try:
        removed = backend.cleanup_stale()
        assert sorted(removed) == sorted(os.path.join(b, name) for b in bases)
        assert orphan.wait(timeout=5) == -9
        assert not any(os.path.exists(os.path.join(b, name)) for b in bases)
        # Our own (live) invocation is never touched.
        assert all(os.path.isdir(p) for p in backend.parents.values())
        assert backend.cleanup_stale() == []
    finally:
        orphan.kill()
        orphan.wait()
