"""Which paths a side needs from the host's /tmp, and which interpreter runs the worker: a
checkout (and so duet's virtual environment) under /tmp must not be hidden from the sides by
their private /tmp."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from duet_bench.plan import SideSpec
from duet_bench.runner import under_host_tmp, uses_host_tmp, worker_python_for
from duet_bench.runner.paths import why_hidden


def test_the_worker_interpreter_is_taken_from_outside_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert under_host_tmp(str(tmp_path)), "pytest's tmp_path is expected under /tmp"
    in_tmp = tmp_path / "venv-python"
    in_tmp.symlink_to(os.path.realpath(sys.executable))
    # A virtual environment's python is a symlink: in /tmp it is hidden wherever it points.
    assert under_host_tmp(str(in_tmp))
    monkeypatch.setattr(sys, "executable", str(in_tmp))
    chosen = worker_python_for(None)
    assert not under_host_tmp(chosen), chosen
    assert os.access(chosen, os.X_OK)


def test_a_command_side_whose_worker_lives_in_tmp_keeps_the_host_tmp(tmp_path: Path) -> None:
    spec = SideSpec(kind="command", command="true", cwd="/")
    assert not uses_host_tmp(spec, "/usr/bin/python3")
    assert uses_host_tmp(spec, str(tmp_path / "python"))
    # A python side runs its own interpreter: the worker's does not matter.
    py = SideSpec(kind="python", interpreter="/usr/bin/python3", callable="m:f", cwd="/")
    assert not uses_host_tmp(py, str(tmp_path / "python"))


def test_a_program_or_input_under_tmp_keeps_the_host_tmp(tmp_path: Path) -> None:
    program = tmp_path / "prog"
    program.write_text("")
    assert uses_host_tmp(SideSpec(kind="command", command=f"{program} --x", cwd="/"))
    # A file the benchmark creates directly in /tmp is what the private /tmp is for.
    assert not uses_host_tmp(SideSpec(kind="command", command="touch /tmp/new.db", cwd="/"))


def place_outside_tmp() -> str:
    """A writable directory outside the host's /tmp: /var/tmp (FHS: always there, writable by
    everyone, not /tmp), else the home directory or the working directory."""
    for candidate in ("/var/tmp", str(Path.home()), os.getcwd()):
        if os.access(candidate, os.W_OK | os.X_OK) and not under_host_tmp(candidate):
            return candidate
    raise AssertionError("no writable directory outside /tmp: /var/tmp, $HOME and . are not")


def test_a_venv_reached_through_a_symlink_into_tmp_keeps_the_host_tmp(tmp_path: Path) -> None:
    # A build step made `.venv -> /tmp/...`: the venv's python resolves to /usr/bin/python3.x,
    # outside /tmp, yet the kernel goes through /tmp to find it, so a private /tmp hides it.
    real_venv = tmp_path / "venv"
    (real_venv / "bin").mkdir(parents=True)
    (real_venv / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    # The link itself must live outside /tmp for the case to matter, wherever the checkout is
    # (a clone under /tmp is common): a directory of its own in the first place outside /tmp
    # that we may write to.
    outside = Path(tempfile.mkdtemp(prefix="venv-link-test-", dir=place_outside_tmp()))
    link = outside / "venv"
    link.symlink_to(real_venv)
    try:
        python = str(link / "bin" / "python")
        assert not under_host_tmp(os.path.realpath(python)), "resolves outside /tmp"
        assert under_host_tmp(python)
        spec = SideSpec(kind="python", interpreter=python, callable="m:f", cwd="/")
        assert uses_host_tmp(spec)
        why = why_hidden(python)
        assert why is not None
        assert str(real_venv) in why
        assert "private /tmp" in why
    finally:
        link.unlink()
        outside.rmdir()
    assert why_hidden("/usr/bin") is None


@pytest.fixture
def removed_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A working directory that no longer exists: what `rm -rf "$PWD"` in a benchmark leaves
    for the next run."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()


@pytest.mark.usefixtures("removed_cwd")
def test_a_removed_working_directory_is_an_error_that_says_so() -> None:
    from duet_bench.errors import EnvironmentNotReady
    from duet_bench.runner.paths import working_directory

    with pytest.raises(EnvironmentNotReady, match="working directory no longer exists") as e:
        working_directory()
    assert "must not remove its own directory" in str(e.value.fix)


@pytest.mark.usefixtures("removed_cwd")
def test_a_relative_path_in_a_removed_working_directory_is_that_error() -> None:
    """A side's directory given as ``.``: it was a FileNotFoundError from os.path.abspath."""
    from duet_bench.errors import EnvironmentNotReady

    with pytest.raises(EnvironmentNotReady, match="working directory no longer exists"):
        under_host_tmp(".")


def test_duet_started_in_a_removed_directory_says_so(tmp_path: Path) -> None:
    """``duet run`` from a shell whose directory was removed: what, why and the fix, exit 3,
    no traceback (it was one, from runner/paths.py); ``--help`` still answers."""
    gone = tmp_path / "gone"
    gone.mkdir()
    duet = f"{shlex.quote(sys.executable)} -m duet_bench"
    script = (
        f"cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} && "
        f"{duet} run --help >/dev/null && echo help-ok && "
        f"exec {duet} run --baseline true --candidate true --baseline-dir . --candidate-dir . "
        "--runs 2 --out results.json"
    )
    env = {**os.environ, "PWD": str(gone)}
    done = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, check=False, env=env, timeout=60
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout.strip() == "help-ok"
    assert "Traceback" not in done.stderr
    assert f"the current directory ({gone}) no longer exists" in done.stderr
    assert "fix: cd to a directory that exists" in done.stderr
