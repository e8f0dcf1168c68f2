"""What else runs on the machine: the load average and the CPU time stolen by the hypervisor."""

from __future__ import annotations

import os
from pathlib import Path

from duet_bench.environment.record import Record
from duet_bench.machine import read_text_or_reason

__all__ = ["load_average", "read_load_average", "read_steal"]


def load_average(proc: str | Path = "/proc") -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages from ``<proc>/loadavg``.

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
    path = Path(proc) / "loadavg"
    fields = path.read_text(encoding="ascii").split()
    if len(fields) < 3:
        raise ValueError(f"{path} holds {' '.join(fields)!r}, not three load averages")
    try:
        return float(fields[0]), float(fields[1]), float(fields[2])
    except ValueError:
        raise ValueError(f"{path} does not start with three numbers: {fields[:3]}") from None


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
    text, reason = read_text_or_reason(proc / "stat")
    steal: int | None = None
    total: int | None = None
    if text is not None:
        line = next((ln for ln in text.splitlines() if ln.startswith("cpu ")), None)
        if line is None:
            reason = f"{proc / 'stat'} has no aggregate 'cpu' line"
        else:
            numbers = [int(x) for x in line.split()[1:] if x.isdigit()]
            if len(numbers) < 8:
                reason = f"{proc / 'stat'} has no steal column (kernel older than 2.6.11)"
            else:
                # user nice system idle iowait irq softirq steal; guest time is already
                # counted in user, so the first eight columns are the whole.
                steal, total = numbers[7], sum(numbers[:8])
    fraction = steal / total if steal is not None and total else None
    return {
        "ticks": rec.get("steal.ticks", steal, reason),
        "total_ticks": rec.get("steal.total_ticks", total, reason),
        "fraction_since_boot": rec.get(
            "steal.fraction_since_boot", fraction, reason or "no CPU time counted yet"
        ),
        "user_hz": os.sysconf("SC_CLK_TCK"),
    }
