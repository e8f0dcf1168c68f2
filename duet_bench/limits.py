"""The bounds of every number duet reads, in one table: the command-line options
(:mod:`duet_bench.commands.options`), the configuration (:mod:`duet_bench.config`) and results
files (:mod:`duet_bench.results.read`) check against it, and docs/configuration.md lists it.

A bound is where a value stops making sense for a measurement, far above any real use: beyond
it a number is a typo or an attack, and without it ``--runs 99999999999999999999`` overflowed,
``--timeout 1e308`` became infinity, and ``--runs 1000000000`` exhausted memory planning the runs.
A leaf module: of duet it imports only the other leaf, :mod:`duet_bench.defaults`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from duet_bench.defaults import INTERVAL_RUNS, MIN_RUNS

__all__ = [
    "LIMITS",
    "MAX_COUNTER",
    "MAX_PIDS",
    "MAX_RESULTS_BYTES",
    "MAX_SAMPLE_NS",
    "MIN_PIDS",
    "Limit",
    "pids_problem",
    "problem",
    "runs_problem",
    "show",
]


@dataclass(frozen=True, slots=True)
class Limit:
    """The range of a setting: ``low`` to ``high`` inclusive (``low`` exclusive when
    ``low_open``); integers unless ``number``."""

    low: float
    high: float
    number: bool = False
    low_open: bool = False

    def describe(self) -> str:
        low = f"{self.low:g}" if self.number else f"{int(self.low)}"
        high = f"{self.high:g}" if self.number else f"{int(self.high):,}"
        if self.low_open:
            return f"more than {low} and up to {high}"
        return f"from {low} to {high}"


#: The fewest processes a side may be limited to (``--pids-limit``, ``pids_limit``). duet's own
#: take up to 4 (with a PID namespace the keeper and the init, the worker, the shell that runs a
#: command): at 3 the shell of ``true`` could not be forked, at 2 no side started
#: (docs/isolation.md, "The limits of a side"). 16 leaves the benchmark a dozen.
MIN_PIDS = 16
#: What the floor is for, said when a limit below it is refused.
_PIDS_FLOOR_WHY = (
    "duet's own processes in a side take up to 4 of them (the keeper and the init of its PID "
    "namespace, the worker, the shell that runs a command): below 4 a command benchmark cannot "
    "run, and a little above the benchmark has next to nothing of its own"
)
#: The most: the kernel's largest pid (``PID_MAX_LIMIT`` of a 64-bit Linux); ``pids.max`` refuses
#: a larger number.
MAX_PIDS = 4_194_304

#: Every bounded setting by field name (``timeout_s`` is ``--timeout`` / ``timeout``).
LIMITS: dict[str, Limit] = {
    "runs": Limit(2, 10_000),
    "iterations": Limit(1, 1_000_000),
    "warmup": Limit(0, 100_000),
    "timeout_s": Limit(0, 86_400, number=True, low_open=True),
    "threshold": Limit(0, 10, number=True),
    "max_failures": Limit(0, 10_000),
    "reps": Limit(100, 1_000_000),
    "wait_timeout_s": Limit(0, 604_800, number=True, low_open=True),
    "pids_max": Limit(MIN_PIDS, MAX_PIDS),
}

#: The largest sample a results file may hold: 10^15 ns, about 11.6 days (an iteration is
#: bounded by the timeout, at most a day).
MAX_SAMPLE_NS = 10**15
#: The largest count or total (CPU time, bytes of memory) a results file may hold: int64.
MAX_COUNTER = 2**63 - 1
#: The largest results file duet reads: 256 MiB, about 10,000 runs x 1,000 iterations.
MAX_RESULTS_BYTES = 256 * 2**20


def problem(name: str, value: float) -> str | None:
    """Why ``value`` is out of the bounds of the setting ``name``, or None (also None for a
    setting without bounds here)."""
    limit = LIMITS.get(name)
    if limit is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    too_low = value <= limit.low if limit.low_open else value < limit.low
    if too_low or value > limit.high:
        return f"must be {limit.describe()}, got {show(value)}"
    return None


def runs_problem(runs: int) -> str | None:
    """What is wrong with ``runs`` as a number of runs, or None: the one place of the rule."""
    if runs < MIN_RUNS:
        return f"must be at least {MIN_RUNS}, got {runs} ({INTERVAL_RUNS} or more give an interval)"
    return problem("runs", runs)


def pids_problem(pids: int) -> str | None:
    """What is wrong with ``pids`` as the limit of a side's processes, or None: the one place of
    the rule, shared by ``--pids-limit`` and ``pids_limit``."""
    if pids < MIN_PIDS:
        return (
            f'must be at least {MIN_PIDS} ("none": no limit), got {show(pids)}: {_PIDS_FLOOR_WHY}'
        )
    if pids > MAX_PIDS:
        return (
            f'must be at most {MAX_PIDS:,}, the kernel\'s largest pid ("none": no limit), '
            f"got {show(pids)}"
        )
    return None


def show(value: float) -> str:
    """A number as a message shows it: a float in short form, an integer of more than 24
    digits by its first digits and length."""
    if isinstance(value, float):
        return f"{value:g}"
    text = str(value)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"
