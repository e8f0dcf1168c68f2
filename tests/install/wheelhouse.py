"""One wheelhouse per test session: duet's wheel, every dependency's, and the build backend.

The install tests install duet the way users do (pipx, pip into a venv, pip from a git URL),
as other users and from other interpreters; with ``PIP_NO_INDEX=1`` and
``PIP_FIND_LINKS=<wheelhouse>`` they do it in seconds and without a registry. The wheelhouse
and the copy of the checkout it is built from live in a world-readable temporary directory
(users without access to root's files install from it) that is removed at the end of the
session.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.build_cache import cached_build

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Wheelhouse:
    top: Path
    #: A copy of the checkout's tracked files (what a user clones), world-readable.
    checkout: Path
    wheels: Path
    #: duet's own wheel inside ``wheels``.
    wheel: Path

    def offline_env(self) -> dict[str, str]:
        """Environment variables that make pip (and pipx's pip) install from here only."""
        return {
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(self.wheels),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }


_BUILT: list[Wheelhouse] = []


def copy_checkout(target: Path) -> Path:
    """The tracked files of the checkout (as a clone has them), symbolic links kept."""
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if done.returncode != 0:
        # A copy of the checkout without its .git (the guest tier's), or one git refuses: the
        # install tests need what a clone has, and the package index, which such places lack.
        pytest.skip(
            "the checkout is not a git work tree here (git ls-files: "
            f"{done.stderr.decode(errors='replace').strip()}): the install tests need a clone"
        )
    listed = done.stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / os.fsdecode(name)
        dest = target / os.fsdecode(name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            dest.symlink_to(os.readlink(source))
        elif source.exists():  # deleted in the work tree but not yet committed
            shutil.copy2(source, dest)
    return target


#: The temporary directory as the session started (before any test's TMPDIR).
SYSTEM_TMP = tempfile.gettempdir()


def tracked_state() -> str:
    """What the wheel is built from: each tracked file's name and the SHA-256 of its contents in
    the work tree (a link's target), one per line; the build cache's key (tests/build_cache.py)."""
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    lines = []
    for name in filter(None, done.stdout.split(b"\0")):
        source = ROOT / os.fsdecode(name)
        if source.is_symlink():
            lines.append(f"{os.fsdecode(name)} -> {os.readlink(source)}")
        elif source.exists():
            lines.append(f"{os.fsdecode(name)} {hashlib.sha256(source.read_bytes()).hexdigest()}")
    return "\n".join(lines)


def build_wheels(wheels: Path) -> None:
    """duet's wheel, every dependency's and the build backend's into ``wheels``."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    with tempfile.TemporaryDirectory(prefix="duet-wheel-src-") as src:
        done = subprocess.run(
            # Built from a copy: a build writes into its source tree.
            [*pip, "wheel", "--quiet", "--wheel-dir", str(wheels), str(copy_checkout(Path(src)))],
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        pytest.fail(
            f"building the wheelhouse failed (needs the package index once):\n{done.stderr}"
        )
    # The build backend, for installs from a checkout or a git URL with --no-index.
    subprocess.run(
        [*pip, "download", "--quiet", "--dest", str(wheels), "setuptools>=77", "wheel", "pip"],
        capture_output=True,
        text=True,
        check=True,
    )


def wheelhouse(request: pytest.FixtureRequest) -> Wheelhouse:
    """The session's wheelhouse, built on first use (about 20 s from pip's cache) or copied
    from the build cache when a pytest invocation before this one built it for the same
    tracked files, interpreter and pip (``make test`` runs three)."""
    if _BUILT:
        return _BUILT[0]
    # In the system's temporary directory, not a measuring test's own TMPDIR (tests/conftest.py
    # gives each one, and removes it after the test): the wheelhouse serves the whole session.
    top = Path(tempfile.mkdtemp(prefix="duet-wheelhouse-", dir=SYSTEM_TMP))
    request.session.config.add_cleanup(lambda: shutil.rmtree(top, ignore_errors=True))
    top.chmod(0o755)
    checkout = copy_checkout(top / "duet_bench")
    pip_version = subprocess.run(
        [sys.executable, "-m", "pip", "--version"], capture_output=True, text=True, check=True
    ).stdout.split(" from ")[0]
    cached = cached_build(
        request, "wheelhouse", [tracked_state(), sys.version, pip_version], build_wheels
    )
    wheels = top / "wheels"
    shutil.copytree(cached, wheels)
    for path in [top, *top.rglob("*")]:
        if not path.is_symlink():
            mode = path.stat().st_mode
            path.chmod(mode | (0o555 if path.is_dir() or mode & 0o100 else 0o444))
    [wheel] = wheels.glob("duet_bench-*.whl")
    built = Wheelhouse(top=top, checkout=checkout, wheels=wheels, wheel=wheel)
    _BUILT.append(built)
    return built
