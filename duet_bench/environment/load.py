"""What else runs on the machine: the load average and the CPU time stolen by the hypervisor."""

from __future__ import annotations

import os
from pathlib import Path

from duet_bench.environment.record import Record
from duet_bench.machine import Machine

__all__ = ["load_average", "read_load_average", "read_steal"]


def load_average(proc: str | Path = "/proc") -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages from ``<proc>/loadavg``
    (:meth:`duet_bench.machine.Machine.load_average`).

    Parameters
    ----------
    proc : str or Path
        The procfs root.

    Returns
    -------
    tuple of float
        ``(1 min, 5 min, 15 min)``.

    Raises
    ------
    OSError
        If the file cannot be read.
    ValueError
        If it does not start with three numbers.
    """
    return Machine(proc=Path(proc)).load_average()


def read_load_average(proc: Path, rec: Record) -> object:
    """The record's ``load_average``: ``[1 min, 5 min, 15 min]``, or None with the reason."""
    try:
        loads: list[float] | None = list(load_average(proc))
        why = ""
    except FileNotFoundError:
        loads, why = None, f"{proc / 'loadavg'} does not exist"
    except OSError as exc:
        loads, why = None, f"cannot read {proc / 'loadavg'}: {exc.strerror or exc}"
    except ValueError as exc:
        loads, why = None, str(exc)
    return rec.get("load_average", loads, why)


def read_steal(proc: Path, rec: Record) -> dict[str, object]:
    """The record's ``steal``: ticks stolen since boot, of how many, in ticks of ``user_hz``."""
    ticks, reason = Machine(proc=proc).cpu_ticks_or_reason()
    steal = ticks.steal if ticks is not None else None
    total = ticks.total if ticks is not None else None
    fraction = steal / total if steal is not None and total else None
    return {
        "ticks": rec.get("steal.ticks", steal, reason),
        "total_ticks": rec.get("steal.total_ticks", total, reason),
        "fraction_since_boot": rec.get(
            "steal.fraction_since_boot", fraction, reason or "no CPU time counted yet"
        ),
        "user_hz": os.sysconf("SC_CLK_TCK"),
    }
