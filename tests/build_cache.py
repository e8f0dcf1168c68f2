"""Builds that several pytest invocations need, made once: kept in pytest's cache directory.

``make test`` runs pytest twice (the tests that do not measure, in two xdist workers, then the
measuring tests: tests/README.md, "What runs where"), and a module-scoped fixture builds again
in each invocation (and worker) that selects one of its tests: criterion's seed crate took 32 s
and 53 s in two invocations of the same ``make test``. :func:`cached_build` keeps such a build under
``.pytest_cache/d/builds/<name>-<key>``, where the key is the SHA-256 of everything the build
reads (the inputs the fixture names: its sources, manifests and the tool's version), so a
changed input makes a new build and a stale one is never used. The build is made in a
temporary sibling directory and renamed into place once complete (an interrupted build leaves
no half directory that passes for done); a lock file serialises builders (xdist workers).
Without the cache plugin (``-p no:cacheprovider``) the build goes to the session's temporary
directory, as a plain module fixture would.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

#: One input of a build: bytes, a text, or a file or directory whose contents are read.
Input = bytes | str | Path


def build_key(inputs: Sequence[Input]) -> str:
    """The SHA-256 (16 hex digits) of the inputs: every byte of a file, every file of a directory
    (by its relative path, in sorted order), every text."""
    digest = hashlib.sha256()
    for item in inputs:
        if isinstance(item, Path):
            files = sorted(p for p in item.rglob("*") if p.is_file()) if item.is_dir() else [item]
            for path in files:
                digest.update(str(path.relative_to(item) if item.is_dir() else path.name).encode())
                digest.update(b"\0")
                digest.update(path.read_bytes())
                digest.update(b"\0")
        else:
            digest.update(item.encode() if isinstance(item, str) else item)
            digest.update(b"\0")
    return digest.hexdigest()[:16]


def cached_build(
    request: pytest.FixtureRequest,
    name: str,
    inputs: Sequence[Input],
    build: Callable[[Path], None],
) -> Path:
    """The directory ``build`` filled, made once for these inputs and reused by every later
    pytest invocation in this checkout. ``build(directory)`` gets an empty directory and must
    raise if the build fails (nothing is kept then)."""
    cache = getattr(request.config, "cache", None)
    if cache is None:
        where = request.getfixturevalue("tmp_path_factory").mktemp(name)
        build(where)
        return Path(where)
    root = Path(cache.mkdir("builds"))
    done = root / f"{name}-{build_key(inputs)}"
    with open(root / f"{done.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_dir():
            return done
        partial = root / f"{done.name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        try:
            build(partial)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        partial.rename(done)
    return done
