"""Per-side sandboxes: a private /tmp and a private loopback, checked with real namespaces."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from duet_bench.errors import IsolationError
from duet_bench.isolation import Container, Limits, Sandbox, make_sandbox, pid_alive
from duet_bench.isolation.affinity import AffinityBackend

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("isolation_clean")]


@pytest.fixture
def containers() -> Iterator[tuple[Container, Container]]:
    # The sandbox does not depend on cgroups: the affinity backend keeps these tests about it.
    with AffinityBackend() as backend:
        yield (
            backend.container("baseline", cpus=[0], mems=None, limits=Limits()),
            backend.container("candidate", cpus=[0], mems=None, limits=Limits()),
        )


@pytest.fixture
def sandboxes(tmp_path: Path) -> Iterator[tuple[Sandbox, Sandbox]]:
    pair = (
        make_sandbox(str(tmp_path), "baseline", share_network=False),
        make_sandbox(str(tmp_path), "candidate", share_network=False),
    )
    yield pair
    for sandbox in pair:
        sandbox.remove()


def tmp_mounts() -> list[str]:
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if line.split()[4] == "/tmp"]


def run(
    container: Container, sandbox: Sandbox, script: str, env: dict[str, str], python: str
) -> str:
    popen = container.spawn(
        [python, "-c", script],
        env=env,
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        sandbox=sandbox,
    )
    out = popen.communicate(timeout=20)[0].decode()
    assert popen.returncode == 0, out
    return out


def test_make_sandbox_as_root(sandboxes: tuple[Sandbox, Sandbox], tmp_path: Path) -> None:
    a, b = sandboxes
    assert a.mount_namespace
    assert a.network_namespace
    assert a.tmpdir != b.tmpdir
    assert Path(a.tmpdir).parent == tmp_path
    assert a.env_overrides() == {"TMPDIR": "/tmp"}
    shared = make_sandbox(str(tmp_path), "shared", share_network=True)
    assert shared.mount_namespace
    assert not shared.network_namespace
    shared.remove()
    assert not os.path.exists(shared.tmpdir)


def test_each_side_has_a_private_tmp(
    containers: tuple[Container, Container],
    sandboxes: tuple[Sandbox, Sandbox],
    child_env: dict[str, str],
    python: str,
) -> None:
    mounts_before = tmp_mounts()
    write = (
        "import os\n"
        "open('/tmp/secret', 'w').write('baseline')\n"
        "print(os.environ['TMPDIR'], sorted(os.listdir('/tmp')))\n"
    )
    look = "import os\nprint(os.environ['TMPDIR'], sorted(os.listdir('/tmp')))\n"
    assert run(containers[0], sandboxes[0], write, child_env, python).split() == [
        "/tmp",
        "['secret']",
    ]
    assert run(containers[1], sandboxes[1], look, child_env, python).split() == ["/tmp", "[]"]
    assert os.listdir(sandboxes[0].tmpdir) == ["secret"]
    assert os.listdir(sandboxes[1].tmpdir) == []
    assert not os.path.exists("/tmp/secret")
    # The bind mount stayed in the side's namespace: the host's mount table is unchanged.
    assert tmp_mounts() == mounts_before


SERVER = textwrap.dedent(
    """
    import json, socket, sys, time
    port = int(sys.argv[1])
    server = socket.create_server(("127.0.0.1", port))
    bound = time.monotonic()
    # Talk to ourselves over the side's own loopback: it must be up.
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        peer, _ = server.accept()
        client.sendall(b"ping")
        received = peer.recv(4)
        peer.close()
    time.sleep(1.0)  # hold the port while the other side holds it too
    print(json.dumps({"bound": bound, "released": time.monotonic(), "got": received.decode()}))
    server.close()
    """
)


def test_two_servers_bind_the_same_fixed_port(
    containers: tuple[Container, Container],
    sandboxes: tuple[Sandbox, Sandbox],
    child_env: dict[str, str],
    python: str,
) -> None:
    # The host holds the port as well: three listeners on 127.0.0.1:PORT at once.
    with socket.create_server(("127.0.0.1", 0)) as host:
        port = host.getsockname()[1]
        popens = [
            c.spawn(
                [python, "-c", SERVER, str(port)],
                env=child_env,
                cwd="/",
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                sandbox=s,
            )
            for c, s in zip(containers, sandboxes, strict=True)
        ]
        outputs = [p.communicate(timeout=20)[0].decode() for p in popens]
    assert [p.returncode for p in popens] == [0, 0], outputs
    reports = [json.loads(out) for out in outputs]
    assert all(r["got"] == "ping" for r in reports)
    # Both held the port at the same time.
    assert max(r["bound"] for r in reports) < min(r["released"] for r in reports)


def test_shared_network_reaches_the_host(
    containers: tuple[Container, Container], tmp_path: Path, child_env: dict[str, str], python: str
) -> None:
    sandbox = make_sandbox(str(tmp_path), "shared", share_network=True)
    try:
        with socket.create_server(("127.0.0.1", 0)) as host:
            port = host.getsockname()[1]
            script = f"import socket\nsocket.create_connection(('127.0.0.1', {port})).close()\n"
            run(containers[0], sandbox, script, child_env, python)
            host.accept()[0].close()
    finally:
        sandbox.remove()


def test_a_failing_sandbox_setup_is_reported(
    containers: tuple[Container, Container], tmp_path: Path, child_env: dict[str, str]
) -> None:
    broken = Sandbox(tmpdir=str(tmp_path / "gone"), mount_namespace=True, network_namespace=True)
    with pytest.raises(IsolationError, match=r"entering the sandbox: .*bind mount on /tmp"):
        containers[0].spawn(
            ["true"], env=child_env, cwd="/", stdout=None, stderr=None, sandbox=broken
        )


def test_sandbox_checks_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="absolute"):
        Sandbox(tmpdir="relative", mount_namespace=False, network_namespace=False)
    with pytest.raises(ValueError, match="side"):
        make_sandbox(str(tmp_path), "a/b", share_network=False)
    with pytest.raises(IsolationError, match="cannot create"):
        make_sandbox("/proc/no-such-dir", "baseline", share_network=False)


def test_namespaces_need_the_capability_not_only_uid_0(tmp_path: Path) -> None:
    """A container's root without CAP_SYS_ADMIN is uid 0 but may not unshare."""
    from duet_bench.isolation.sandbox import _has_sys_admin
    from duet_bench.machine import Machine

    status = tmp_path / "self" / "status"
    status.parent.mkdir()
    machine = Machine(proc=tmp_path)
    status.write_text("Name:\tx\nCapEff:\t00000000a80425fb\n")  # docker's default set
    assert not _has_sys_admin(machine)
    status.write_text("Name:\tx\nCapEff:\t000001ffffffffff\n")  # full root
    assert _has_sys_admin(machine)
    status.write_text("Name:\tx\n")
    assert not _has_sys_admin(machine)


def test_a_pid_namespace_needs_the_mount_namespace(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mount namespace"):
        Sandbox(
            tmpdir=str(tmp_path), mount_namespace=False, network_namespace=False, pid_namespace=True
        )


def test_in_a_pid_namespace_the_program_ends_as_before(
    containers: tuple[Container, Container], sandboxes: tuple[Sandbox, Sandbox]
) -> None:
    """The ``Popen`` duet holds is the namespace's keeper: it ends as the program ends (its exit
    status, or killed by the same signal), the program is PID 2 with its own ``/proc``, and a
    daemon the program leaves stays in the container, with the namespace's init, until the
    container is closed (as before the namespace). Exact answers."""
    c, sandbox = containers[0], sandboxes[0]
    assert sandbox.pid_namespace
    env = {"PATH": "/usr/bin:/bin"}

    def start(script: str) -> subprocess.Popen[bytes]:
        return c.spawn(["/bin/sh", "-c", script], env=env, cwd="/", stdout=subprocess.PIPE,
                       stderr=None, sandbox=sandbox)  # fmt: skip

    p = start("echo $$ $(ls /proc | grep -c '^[0-9]*$'); exit 7")
    pid, count = p.communicate(timeout=20)[0].split()
    assert pid == b"2"
    assert int(count) <= 5  # the init, itself, the $(...) subshell, ls, grep
    assert p.returncode == 7
    p = start("kill -SEGV $$")
    p.communicate(timeout=20)
    assert p.returncode == -11
    p = start("sleep 600 >/dev/null & echo started")
    assert p.communicate(timeout=20)[0] == b"started\n"
    assert p.returncode == 0
    left = c.processes()  # the init and the sleep, in the host's view
    assert len(left) == 2, left
    c.close()
    assert not [pid for pid in left if pid_alive(pid)]  # a zombie for the host's init is dead


def test_in_a_pid_namespace_a_signal_to_the_group_reaches_the_program(
    containers: tuple[Container, Container], sandboxes: tuple[Sandbox, Sandbox]
) -> None:
    """duet stops a job with SIGTERM to its process group (``jobs.stop_group``): the program
    gets it once, directly, and handles it; the keeper and the init only wait. Exact."""
    script = "trap 'echo got TERM; exit 3' TERM; echo ready; while :; do sleep 1; done"
    p = containers[0].spawn(
        ["/bin/sh", "-c", script],
        env={"PATH": "/usr/bin:/bin"}, cwd="/", stdout=subprocess.PIPE, stderr=None,
        sandbox=sandboxes[0],
    )  # fmt: skip
    assert p.stdout is not None
    assert p.stdout.readline() == b"ready\n"
    os.killpg(p.pid, 15)
    assert p.communicate(timeout=20)[0] == b"got TERM\n"
    assert p.returncode == 3
