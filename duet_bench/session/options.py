"""The options of a session that measures: :class:`SessionOptions` (what
:func:`duet_bench.session.measure` takes), :class:`MachineOptions` (where and how the two sides
run, as the command line gave it), and :func:`session_options`, the one construction of the
session options of ``duet run``, ``duet compare``, every round of ``duet bisect`` and
``duet calibrate``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from duet_bench.analysis.model import AnalysisSettings
from duet_bench.defaults import DEFAULT_MAX_FAILURES
from duet_bench.isolation import Request, RunAs
from duet_bench.results import BenchmarkRecord


@dataclass(frozen=True, slots=True)
class MachineOptions:
    """Where and how the sides run, as the command line gave it (the isolation is a setting
    of the suite: :func:`duet_bench.settings.resolve`). The one record of these options: the
    command line builds it (:class:`duet_bench.options.common.MachineGiven`) and a
    :class:`SessionOptions` holds it whole."""

    cores: tuple[int, int] | None = None
    share_network: bool = False
    plan_seed: int = 0
    progress: bool = True
    #: The user the sides run as (root drops to it); None: as ourselves.
    run_as: RunAs | None = None
    #: Queue behind another duet measuring on this machine instead of refusing, for at most
    #: ``wait_timeout`` seconds (None: as long as it takes).
    wait: bool = False
    #: Secret variables the builds and sides keep beyond the allow-list (``--keep-env``;
    #: docs/isolation.md).
    keep_env: tuple[str, ...] = ()
    wait_timeout: float | None = None


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """What :func:`duet_bench.session.measure` takes besides the benchmarks: the results file
    ``out``, where and how the sides run (``machine``), and the settings every benchmark is
    judged with. The properties read ``machine`` (``options.cores`` is
    ``options.machine.cores``; ``seed`` is its ``plan_seed``)."""

    out: Path
    isolation: Request = "auto"
    machine: MachineOptions = field(default_factory=MachineOptions)
    max_failures: int | None = DEFAULT_MAX_FAILURES
    analysis: AnalysisSettings = field(default_factory=AnalysisSettings)
    #: Per benchmark name, the settings it is judged with (:mod:`duet_bench.settings`); ``analysis``
    #: for the others.
    per_benchmark: Mapping[str, AnalysisSettings] = field(default_factory=dict)
    #: Recorded as the document's ``config`` (the exact commands and options).
    config: Mapping[str, Any] = field(default_factory=dict)
    #: ``--continue``: per benchmark name, the record of an earlier measurement until decided
    #: that this session extends under the same rule (docs/statistics.md, method 2b).
    earlier: Mapping[str, BenchmarkRecord] = field(default_factory=dict)

    @property
    def cores(self) -> tuple[int, int] | None:
        return self.machine.cores

    @property
    def share_network(self) -> bool:
        return self.machine.share_network

    @property
    def seed(self) -> int:
        return self.machine.plan_seed

    @property
    def progress(self) -> bool:
        return self.machine.progress

    @property
    def run_as(self) -> RunAs | None:
        return self.machine.run_as

    @property
    def wait(self) -> bool:
        return self.machine.wait

    @property
    def keep_env(self) -> tuple[str, ...]:
        return self.machine.keep_env

    @property
    def wait_timeout(self) -> float | None:
        return self.machine.wait_timeout


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
    if seed_offset:
        machine = replace(machine, plan_seed=machine.plan_seed + seed_offset)
    return SessionOptions(
        out=out,
        isolation=isolation,
        machine=machine,
        max_failures=max_failures,
        analysis=analysis,
        per_benchmark=dict(per_benchmark or {}),
        config=config,
    )
