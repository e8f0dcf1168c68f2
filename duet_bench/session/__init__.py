"""One invocation that measures (:mod:`duet_bench.session.measure`) and its options
(:mod:`duet_bench.session.options`): ``duet run``, ``duet compare``, every round of
``duet bisect``, ``duet calibrate`` and ``duet demo`` measure through :func:`measure`."""

from __future__ import annotations

from duet_bench.session.measure import (
    BARRIER_DIR,
    WORK_ROOT,
    broken_benchmarks,
    continuing,
    failure_details,
    measure,
    raise_if_broken,
    remove_stale_files,
)
from duet_bench.session.options import MachineOptions, SessionOptions, session_options

__all__ = [
    "BARRIER_DIR",
    "WORK_ROOT",
    "MachineOptions",
    "SessionOptions",
    "broken_benchmarks",
    "continuing",
    "failure_details",
    "measure",
    "raise_if_broken",
    "remove_stale_files",
    "session_options",
]
