"""What the runner's modules share: the invocation's context, a side's state while it runs, and
the names of the work directories of runs.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from duet_bench.isolation import Backend, Container, RunAs
from duet_bench.isolation.sandbox import Sandbox
from duet_bench.results import SideName
from duet_bench.runner.paths import WORKER


@dataclass(frozen=True, slots=True)
class RunnerContext:
    """What every run of an invocation shares."""

    backend: Backend
    #: Private work directory of this invocation. Not under /tmp: a side's sandbox replaces
    #: /tmp, and the side must still see its spec and samples files.
    workdir: Path
    share_network: bool = False
    #: The interpreter that runs the worker of ``command`` benchmarks (ours).
    worker_python: str = sys.executable
    barrier_dir: str = "/dev/shm"
    #: Run the sides as this user (root drops to it before exec); None runs them as we are.
    run_as: RunAs | None = None
    #: The worker file the sides execute (a copy in ``workdir``, see :func:`install_harness`).
    worker: Path = WORKER
    #: Called about once a second while a run is measured, with the share of the run's
    #: iterations (warm-up included) that both sides have finished: progress within a run.
    on_iterations: Callable[[float], None] | None = None
    #: Variables of duet's environment the sides keep beyond the allow-list (``--keep-env``).
    keep_env: tuple[str, ...] = ()


@dataclass(slots=True)
class Side:
    """One side while it runs (mutable, internal to the runner)."""

    name: SideName
    cpu: int
    slot: int
    directory: Path
    container: Container
    sandbox: Sandbox
    samples_path: Path
    stderr_path: Path
    popen: subprocess.Popen[bytes] | None = None
    started_ns: int = 0
    ended_ns: int | None = None
    timed_out: bool = False
    stopped_by: str | None = None


def safe_name(name: str) -> str:
    """``name`` as a directory name: letters, digits and ``-_.`` only, at most 60 of them."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60] or "benchmark"


def remove_tree(path: Path) -> None:
    """Remove a work directory and everything in it; gone already is fine.

    The side directories in it belong to the sides' user: ``shutil.rmtree`` walks them with
    directory descriptors and never follows a link (``shutil.rmtree.avoids_symlink_attacks``
    on Linux), and ``ignore_errors`` changes no mode (docs/isolation.md, "What runs as root").
    """
    import shutil

    if os.geteuid() == 0:
        _take_back(path)
    shutil.rmtree(path, ignore_errors=True)


def _take_back(path: Path) -> None:
    """Make every directory under ``path`` root's and 0700 again before removing it, so that
    nothing of the sides' user (a process left behind, a local user racing the clean-up) can add
    an entry that makes the removal fail and leaves the work directory behind. ``os.fwalk``
    walks with directory descriptors and never follows a link; ``fchown``/``fchmod`` act on the
    directory opened, whatever its name points to meanwhile."""
    with contextlib.suppress(OSError):
        for _, _, _, fd in os.fwalk(path, follow_symlinks=False):
            with contextlib.suppress(OSError):
                os.fchown(fd, 0, 0)
                os.fchmod(fd, 0o700)
