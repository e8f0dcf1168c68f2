"""The duet paper's four artificial workloads (section 4.4), for the accuracy experiments.

- ``duet_workload.c``: the C program (native duet benchmark, ``--once`` for command benchmarks,
  pyperf and hyperfine, ``--bare`` for a loop timed without duet, ``--calibrate``), built with
  ``gcc -O2`` into ``benchmarks/workloads/build/`` by :func:`build`.
- ``pyworkloads.py``: the same four in Python, smaller, for the python worker.

An operation count makes the work proportional: the same workload with ``k`` times the count
is a benchmark with a known ratio ``k``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
HARNESS = HERE.parent.parent / "duet_bench" / "harness"
BUILD = HERE / "build"
SOURCE = HERE / "duet_workload.c"
KINDS = ("integer", "float", "cache", "memory")
CFLAGS = ("-O2", "-Wall", "-Wextra", "-Werror")


def build(build_dir: Path = BUILD) -> Path:
    """Compile ``duet_workload`` (only when a source is newer than the binary); return it."""
    binary = build_dir / "duet_workload"
    sources = [SOURCE, HARNESS / "duet_barrier.h"]
    if binary.exists() and all(binary.stat().st_mtime >= s.stat().st_mtime for s in sources):
        return binary
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise RuntimeError("no C compiler: install gcc (apt-get install gcc)")
    build_dir.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_suffix(".tmp")
    subprocess.run(
        [cc, *CFLAGS, f"-I{HARNESS}", "-o", str(tmp), str(SOURCE), "-lm"],
        check=True,
        capture_output=True,
        text=True,
    )
    tmp.replace(binary)
    return binary


def calibrate(kind: str, target_ms: float, *, cpu: int | None = None) -> int:
    """The op count of a ``target_ms`` iteration of ``kind`` on this machine (alone, pinned to
    ``cpu`` when given)."""
    binary = build()
    argv = [str(binary), "--kind", kind, "--calibrate", str(target_ms)]
    done = subprocess.run(
        argv,
        check=True,
        capture_output=True,
        text=True,
        preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None,
    )
    return int(json.loads(done.stdout.strip().splitlines()[-1])["ops"])


def command(kind: str, ops: int, *, fill: bool = False, once: bool = False) -> str:
    """The shell command of a native (or, with ``once``, command-mode) benchmark."""
    words = [str(build()), "--kind", kind, "--ops", str(int(ops))]
    if fill:
        words.append("--fill")
    if once:
        words.append("--once")
    return " ".join(words)
