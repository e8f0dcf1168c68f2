"""The install step of the GitHub actions, run for real: ``install-duet.sh`` as the action
runs it, from the action's own checkout (``install: action``) and from a package index
(``install: index``, the session's wheelhouse standing in for the index). pip runs offline.

What it must give: a duet in a venv of its own (not the job's Python), a regular install that
keeps working when the checkout is gone, and the manual inside the install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ci.test_templates import INSTALL_SCRIPT
from tests.install.wheelhouse import Wheelhouse, copy_checkout, wheelhouse

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def wheels(request: pytest.FixtureRequest) -> Wheelhouse:
    return wheelhouse(request)


def _install(tmp_path: Path, wheels: Wheelhouse, **env: str) -> dict[str, str]:
    done = subprocess.run(
        ["bash", str(INSTALL_SCRIPT), str(tmp_path / "duet-venv")],
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "DUET_PYTHON": sys.executable,
            **wheels.offline_env(),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # What the action appends to $GITHUB_OUTPUT.
    return dict(line.split("=", 1) for line in done.stdout.splitlines())


@pytest.mark.parametrize("install", ["action", "index"])
def test_install_step(tmp_path: Path, wheels: Wheelhouse, install: str) -> None:
    source = copy_checkout(tmp_path / "action-checkout")
    outputs = _install(
        tmp_path, wheels, DUET_INSTALL=install, DUET_SOURCE=str(source), DUET_VERSION=""
    )
    venv = tmp_path / "duet-venv"
    assert outputs == {"duet": f"{venv}/bin/duet", "python": f"{venv}/bin/python"}
    shutil.rmtree(source)  # the action's checkout may go; the install stays
    done = subprocess.run([outputs["duet"], "--version"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # The manual is inside the install, and messages cite it there.
    done = subprocess.run(
        [
            outputs["python"],
            "-c",
            "from duet_bench import config, manual; print(manual.page('configuration.md')); "
            "print(config.DOCS)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    page, cited = done.stdout.splitlines()
    assert page.startswith(str(venv / "lib")), page
    assert Path(page).is_file()
    assert cited == f"see {page}"
    licenses = list(venv.glob("lib/python3*/site-packages/duet_bench-*.dist-info/licenses/LICENSE"))
    assert len(licenses) == 1


def test_install_step_refuses_a_missing_checkout(tmp_path: Path, wheels: Wheelhouse) -> None:
    done = subprocess.run(
        ["bash", str(INSTALL_SCRIPT), str(tmp_path / "venv")],
        env={"PATH": os.environ["PATH"], "DUET_INSTALL": "action", "DUET_SOURCE": "/nonexistent"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "no duet checkout at '/nonexistent'" in done.stderr
    assert not (tmp_path / "venv").exists()
