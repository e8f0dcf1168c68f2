"""duet installed as documented, beside the packages that once broke it (issue 13).

duet-bench's import packages were called ``duet`` and ``stats``. PyPI has an unrelated ``duet``
(an async library): ``pip install duet==0.2.9`` into duet-bench's venv overwrote
``duet/__init__.py``, so that ``duet --version`` said "duet, version 0.2.9", and uninstalling
it removed duet-bench's file. A user's project with a top-level ``stats`` package on the path
shadowed duet's own. The packages are now ``duet_bench`` and ``duet_stats`` (the command stays
``duet``); these tests hold that, for real: a fresh venv with duet-bench installed from the
checkout's wheel (offline, from the session's wheelhouse), then

- PyPI's ``duet`` installed beside it (from the package index: skipped with the reason when it
  is unreachable) and uninstalled again, and
- a user's project with its own ``stats/`` and ``duet/`` packages in the current directory and
  on ``PYTHONPATH``.

Each time duet must still name its own version and measure a tiny A/A comparison.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from duet_bench import __version__
from tests.install.wheelhouse import Wheelhouse, wheelhouse

# Each test ends with a real `duet run`: serial, checked for leftovers.
pytestmark = [pytest.mark.slow, pytest.mark.measures]

#: PyPI's unrelated ``duet``, the version shown to break duet-bench's old layout.
PYPI_DUET = "duet==0.2.9"


@pytest.fixture(scope="module")
def venv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with duet-bench installed from the checkout's wheel, as docs/install.md
    says (``python3 -m venv ~/.duet && ~/.duet/bin/pip install ...``)."""
    wheels: Wheelhouse = wheelhouse(request)
    venv = tmp_path_factory.mktemp("beside") / "duet-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    _run(venv / "bin" / "pip", "install", "--quiet", str(wheels.wheel), env=wheels.offline_env())
    return venv


def _run(
    *argv: str | os.PathLike[str], cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with this environment plus ``env``; fail with its output when it exits
    non-zero."""
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done


def _duet_still_works(venv: Path, where: Path, env: Mapping[str, str] | None = None) -> None:
    """``duet --version`` names duet-bench's version, and ``duet run`` of a tiny A/A
    comparison (affinity isolation, 2 runs x 3 iterations) measures and exits 0, in ``where``
    (``--fail-on never``: the A/A's verdict is not what these tests are about)."""
    version = _run(venv / "bin" / "duet", "--version", cwd=where, env=env).stdout
    assert version.strip() == f"duet, version {__version__}"
    out = where / "duet-results.json"
    _run(
        venv / "bin" / "duet", "run", "--baseline", "true", "--candidate", "true",
        "--isolation", "affinity", "--runs", "2", "--iterations", "3", "--quiet",
        "--fail-on", "never", "--out", out, cwd=where, env=env,
    )  # fmt: skip
    assert out.is_file()
    out.unlink()


def test_pypi_duet_installed_and_removed_beside_it(venv: Path, tmp_path: Path) -> None:
    downloads = tmp_path / "downloads"
    fetched = subprocess.run(
        [venv / "bin" / "pip", "download", "--no-deps", "--dest", downloads, PYPI_DUET],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if fetched.returncode != 0:
        last = (fetched.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"the package index is unreachable here (pip download {PYPI_DUET}: {last})")
    pip = venv / "bin" / "pip"
    python = venv / "bin" / "python"
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(downloads)}

    _run(pip, "install", "--quiet", PYPI_DUET, env=offline)
    _duet_still_works(venv, tmp_path)
    # `import duet` is PyPI's package, whole (not one file of it over ours, or the reverse).
    imported = _run(python, "-c", "import duet, duet.api; print(duet.__file__)", cwd=tmp_path)
    assert Path(imported.stdout.strip()).parent.name == "duet"
    listed = _run(pip, "show", "--files", "duet").stdout
    assert "duet_bench" not in listed, listed

    _run(pip, "uninstall", "--yes", "duet")
    _duet_still_works(venv, tmp_path)
    gone = subprocess.run([python, "-c", "import duet"], capture_output=True, text=True)
    assert "No module named 'duet'" in gone.stderr, gone.stderr
    _run(python, "-c", "import duet_bench.cli, duet_stats")


def test_a_user_project_with_its_own_stats_and_duet_packages(venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    imported = tmp_path / "imported.txt"
    for name in ("stats", "duet"):
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text(
            f"with open({str(imported)!r}, 'a') as f:\n"
            f"    f.write({name!r} + '\\n')\n"
            f"raise RuntimeError('the user\\'s {name} package was imported by duet-bench')\n"
        )
    # The project's packages shadow any other of their names: on PYTHONPATH, and in the
    # current directory (sys.path[0] of `python -m`).
    user = {"PYTHONPATH": str(project)}
    probe = subprocess.run(
        [venv / "bin" / "python", "-c", "import stats"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, **user},
    )
    assert "the user's stats package was imported" in probe.stderr  # the trap is armed
    imported.unlink()

    _duet_still_works(venv, project, env=user)
    version = _run(venv / "bin" / "python", "-m", "duet_bench", "--version", cwd=project, env=user)
    assert version.stdout.strip() == f"duet, version {__version__}"
    assert not imported.exists(), imported.read_text()
