"""How a comparison measures on this machine: the options of where and how the two sides run
(:class:`MachineOptions`), and the one construction of the
:class:`duet_bench.session.SessionOptions` of ``duet compare``, of every round of ``duet bisect``,
and of ``duet run`` and ``duet calibrate``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duet_bench.analysis import AnalysisSettings
from duet_bench.isolation import Request, RunAs
from duet_bench.session import SessionOptions


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
    #: Secret variables (``SECRET_VARIABLES``) the builds and sides keep (``--keep-env``).
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
