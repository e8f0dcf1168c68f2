"""The options of a session that measures: :class:`SessionOptions` (what
:func:`duet_bench.session.measure` takes), :class:`MachineOptions` (where and how the two sides
run, as the command line gave it), and :func:`session_options`, the one construction of the
session options of ``duet run``, ``duet compare``, every round of ``duet bisect`` and
``duet calibrate``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duet_bench.analysis.model import AnalysisSettings
from duet_bench.defaults import DEFAULT_MAX_FAILURES
from duet_bench.isolation import Request, RunAs
from duet_bench.results import BenchmarkRecord


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """What :func:`duet_bench.session.measure` takes besides the benchmarks: the results file
    ``out``, where and how the sides run, and the settings every benchmark is judged with."""

    out: Path
    isolation: Request = "auto"
    cores: tuple[int, int] | None = None
    share_network: bool = False
    seed: int = 0
    max_failures: int | None = DEFAULT_MAX_FAILURES
    analysis: AnalysisSettings = field(default_factory=AnalysisSettings)
    #: Per benchmark name, the settings it is judged with (:mod:`duet_bench.settings`); ``analysis``
    #: for the others.
    per_benchmark: Mapping[str, AnalysisSettings] = field(default_factory=dict)
    progress: bool = True
    #: The user the sides run as (root drops to it); None: as ourselves.
    run_as: RunAs | None = None
    #: Recorded as the document's ``config`` (the exact commands and options).
    config: Mapping[str, Any] = field(default_factory=dict)
    #: When another duet is measuring on this machine: queue behind it instead of refusing,
    #: for at most ``wait_timeout`` seconds (None: as long as it takes).
    wait: bool = False
    #: Secret variables the sides keep (``--keep-env``; docs/isolation.md).
    keep_env: tuple[str, ...] = ()
    wait_timeout: float | None = None
    #: ``--continue``: per benchmark name, the record of an earlier measurement until decided
    #: that this session extends under the same rule (docs/statistics.md, method 2b).
    earlier: Mapping[str, BenchmarkRecord] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MachineOptions:
    """Where and how the sides run, as the command line gave it (the isolation is a setting
    of the suite: :func:`duet_bench.settings.resolve`)."""

    cores: tuple[int, int] | None = None
    share_network: bool = False
    plan_seed: int = 0
    progress: bool = True
    run_as: RunAs | None = None
    #: Queue behind another duet measuring on this machine instead of refusing, for at most
    #: ``wait_timeout`` seconds (None: as long as it takes).
    wait: bool = False
    #: Variables the builds and sides keep beyond the allow-list (``--keep-env``).
    keep_env: tuple[str, ...] = ()
    wait_timeout: float | None = None


def session_options(
    out: Path,
    machine: MachineOptions,
    *,
    isolation: Request,
    max_failures: int | None,
    analysis: AnalysisSettings,
    config: Mapping[str, Any],
    per_benchmark: Mapping[str, AnalysisSettings] | None = None,
    seed_offset: int = 0,
) -> SessionOptions:
    """The options of a session writing ``out``: ``machine`` with the suite's ``isolation`` and
    ``max_failures``, judged by ``analysis`` (``per_benchmark`` by name), recording ``config``
    as the document's. ``seed_offset`` moves the plan seed (bisect's later rounds: a top-up is
    not the same plan again)."""
    return SessionOptions(
        out=out,
        isolation=isolation,
        cores=machine.cores,
        share_network=machine.share_network,
        seed=machine.plan_seed + seed_offset,
        max_failures=max_failures,
        analysis=analysis,
        per_benchmark=dict(per_benchmark or {}),
        progress=machine.progress,
        run_as=machine.run_as,
        config=config,
        wait=machine.wait,
        keep_env=machine.keep_env,
        wait_timeout=machine.wait_timeout,
    )
