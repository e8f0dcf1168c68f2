"""The runs of one benchmark, the core each side sits on in each run, and the shards of a suite.

Pure logic, no processes. The two vCPUs of a cloud VM are not equal (docs/accuracy.md, "The
prototype": CPU 1 ran 1-2.5 % slower than CPU 0, and fixed sides gave false positives in 3 of 12
A/A comparisons), and their difference changes within a run (tens to hundreds of ms). With
``crossover = "iteration"`` (the default, docs/statistics.md, method 1b) the sides cross over the
two CPUs at every iteration: iteration k of run r (warm-up included) runs the baseline on
``pair[(r + k) % 2]`` and the candidate on the other. With ``crossover = "run"`` the sides keep
their cores for a run and swap them between runs in a randomized, *balanced* order: each side
sits on each core in half of the runs (one extra run either way when R is odd). The sequential
method has no crossover: one side at a time.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from duet_bench.defaults import Method
from duet_bench.errors import UsageError
from duet_bench.plan.spec import BenchmarkSpec
from duet_bench.results import SideName


@dataclass(frozen=True, slots=True)
class RunPlan:
    """One run: the CPU of each side and, for the sequential method, which side goes first.

    With ``crossover`` the sides change CPUs at every iteration: ``cpus`` is where each side runs
    its first iteration (warm-up included), and iteration k runs it on :meth:`cpus_of` ``[k %
    2]``."""

    index: int
    cpus: Mapping[SideName, int]
    order: tuple[SideName, SideName] | None = None
    crossover: bool = False

    def cpus_of(self, side: SideName) -> tuple[int, ...]:
        """The CPUs ``side`` runs on in turn: its own and, crossing over, the other side's."""
        other: SideName = "candidate" if side == "baseline" else "baseline"
        if not self.crossover:
            return (self.cpus[side],)
        return (self.cpus[side], self.cpus[other])

    @property
    def swapped(self) -> bool:
        return self.cpus["baseline"] > self.cpus["candidate"]


def balanced_swaps(runs: int, rng: random.Random) -> list[bool]:
    """``runs`` booleans, half of them True (the odd one drawn at random), in random order."""
    half = runs // 2
    swaps = [False] * half + [True] * half
    if runs % 2:
        swaps.append(rng.random() < 0.5)
    rng.shuffle(swaps)
    return swaps


def plan_runs(
    spec: BenchmarkSpec, pair: Sequence[int], *, seed: int, method: Method | None = None
) -> tuple[RunPlan, ...]:
    """The runs of one benchmark on the core ``pair``.

    Duet: the sides cross over the two CPUs of the pair at every iteration (``crossover =
    "iteration"``), or sit on them for a run and swap, balanced, across runs (``"run"``). Sequential
    (randomized multiple interleaved trials, Abedi and Brecht): both sides run on the same
    CPU one after the other, in a random order per run, and the CPU alternates (balanced) too.
    The seed makes the plan reproducible; it is recorded with the results.
    """
    if len(pair) != 2 or pair[0] == pair[1]:
        raise UsageError(f"a core pair needs two different CPUs, got {list(pair)}")
    rng = random.Random(f"{seed}:{spec.name}")
    swaps = balanced_swaps(spec.runs, rng)
    first, second = pair
    crossover = spec.crossover == "iteration"
    plans = []
    for index, swap in enumerate(swaps):
        if (method or spec.method) == "duet" and crossover:
            # docs/statistics.md, method 1b: iteration k of run r on pair[(r + k) % 2]; the draw of
            # the swaps above still happens, so the sequential order of a plan does not depend on
            # it.
            start: dict[SideName, int] = {
                "baseline": pair[index % 2],
                "candidate": pair[(index + 1) % 2],
            }
            plans.append(RunPlan(index=index, cpus=start, crossover=True))
        elif (method or spec.method) == "duet":
            cpus: dict[SideName, int] = {
                "baseline": second if swap else first,
                "candidate": first if swap else second,
            }
            plans.append(RunPlan(index=index, cpus=cpus))
        else:
            cpu = second if swap else first
            order: tuple[SideName, SideName] = (
                ("candidate", "baseline") if rng.random() < 0.5 else ("baseline", "candidate")
            )
            plans.append(
                RunPlan(index=index, cpus={"baseline": cpu, "candidate": cpu}, order=order)
            )
    return tuple(plans)


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``: the second of four shards (1-based, as CI matrices count)."""
    index, _, count = text.partition("/")
    if not (index.strip().isdigit() and count.strip().isdigit()):
        raise UsageError(f"--shard {text!r} is not of the form i/n", fix="e.g. --shard 1/4")
    i, n = int(index), int(count)
    if not 1 <= i <= n:
        raise UsageError(
            f"--shard {text!r}: i must be between 1 and n", fix=f"use 1/{n} .. {n}/{n}"
        )
    return i, n


def select_shard(names: Sequence[str], shard: tuple[int, int] | None) -> list[str]:
    """The names shard ``i`` of ``n`` measures: every n-th name of the sorted suite, starting at
    the i-th. Deterministic, independent of the order in the configuration, and balanced to
    within one benchmark; the union of all shards is the suite, and no name is in two."""
    ordered = sorted(names)
    if shard is None:
        return ordered
    i, n = shard
    return ordered[i - 1 :: n]
