"""``pipx install`` of a checkout, then duet as that user and under sudo, for real.

A throwaway user with passwordless sudo (as on GitHub-hosted runners) is created for the test
and removed afterwards, its home with it. It installs duet with the machine's pipx from its own
copy of the checkout (pip offline, from the session's wheelhouse), then:

- ``duet`` works from its PATH (``~/.local/bin``);
- ``sudo duet`` does not: sudo's ``secure_path`` has no ``~/.local/bin`` (the documented
  failure, "sudo: duet: command not found");
- ``sudo "$(command -v duet)" run ...`` does: the form docs/install.md gives. duet measures
  with cgroups as root and runs the measured commands as the user who ran sudo.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.install.wheelhouse import Wheelhouse, wheelhouse

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture(scope="session")
def wheels(request: pytest.FixtureRequest) -> Wheelhouse:
    return wheelhouse(request)


@pytest.fixture
def sudo_user(tmp_path: Path) -> Iterator[str]:
    if os.geteuid() != 0:
        pytest.skip("creating a user needs root")
    for tool in ("useradd", "userdel", "sudo", "pipx"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed; scripts/bootstrap.sh installs it (CI has it)")
    name = "duet-t" + secrets.token_hex(4)
    home = Path("/tmp") / name
    subprocess.run(
        ["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh", name],
        check=True,
    )
    sudoers = Path("/etc/sudoers.d") / name
    try:
        sudoers.write_text(f"{name} ALL=(ALL) NOPASSWD: ALL\n")
        sudoers.chmod(0o440)
        yield name
    finally:
        sudoers.unlink(missing_ok=True)
        # Whatever the user left running (nothing, if duet cleaned up) goes with it.
        subprocess.run(["pkill", "-KILL", "-u", name], check=False)
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
    with pytest.raises(KeyError):
        pwd.getpwnam(name)


def as_user(
    user: str, script: str, env: dict[str, str], timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    """``script`` run by ``sh -l`` as ``user``, as a login would (its own HOME and PATH)."""
    home = pwd.getpwnam(user).pw_dir
    full_env = {
        "HOME": home,
        "USER": user,
        "LOGNAME": user,
        "PATH": f"{home}/.local/bin:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        **env,
    }
    return subprocess.run(
        [
            "runuser",
            "-u",
            user,
            "--",
            "env",
            "-i",
            *(f"{k}={v}" for k, v in full_env.items()),
            "sh",
            "-c",
            script,
        ],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def test_pipx_install_then_sudo(sudo_user: str, wheels: Wheelhouse, tmp_path: Path) -> None:
    lock = Path("/tmp") / f"{sudo_user}.lock"  # a measuring lock of the test's own
    env = {**wheels.offline_env(), "DUET_LOCK": str(lock)}
    # The user's own copy of the checkout, as a clone would be (a build writes into it).
    done = as_user(sudo_user, f'cp -R "{wheels.checkout}" duet && pipx install ./duet', env)
    assert done.returncode == 0, done.stdout + done.stderr

    done = as_user(sudo_user, "command -v duet && duet --version", env)
    assert done.returncode == 0, done.stderr
    path, version = done.stdout.splitlines()
    assert path == f"/tmp/{sudo_user}/.local/bin/duet"
    assert version.startswith("duet, version ")

    # The failure users meet: sudo resets PATH to its secure_path.
    done = as_user(sudo_user, "sudo -n duet --version", env)
    assert done.returncode != 0
    assert "duet: command not found" in done.stderr

    # The documented form: the absolute path of the user's duet, under sudo.
    out = Path("/tmp") / sudo_user / "results.json"
    done = as_user(
        sudo_user,
        f'sudo -n DUET_LOCK="$DUET_LOCK" "$(command -v duet)" run --baseline "id -u" '
        f'--candidate "id -u" --runs 2 --iterations 2 --warmup 0 -q --out "{out}"',
        env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    assert doc["environment"]["isolation"] in ("cgroup-v1", "cgroup-v2")
    # Measured as root, the sides ran as the user who ran sudo.
    assert doc["environment"]["run_as"]["user"] == sudo_user
    # Written by root through directory descriptors and handed to the user who ran sudo, who
    # can then remove it (duet_bench/dirfd.py, docs/isolation.md "What runs as root").
    assert out.stat().st_uid == pwd.getpwnam(sudo_user).pw_uid
    lock.unlink(missing_ok=True)
