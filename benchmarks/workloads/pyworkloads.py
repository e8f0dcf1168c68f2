"""The four artificial workloads in Python, for the python worker (smaller than the C ones).

Each ``<kind>`` function (``floating`` for *float*, not to shadow the builtin) does one small
unit of work on the state its ``setup_<kind>`` returns; the worker loops it a calibrated number
of times per iteration, the same count on both sides.
``DUET_WORKLOAD_SCALE`` (environment, default 1) multiplies the work of every call, so the
candidate side of a benchmark with a known ratio sets it to 2 (or 1.02 for a 2% slowdown).

- integer: a multiply/xor chain over a small list (L1-sized);
- float: multiply/add chains over a small list of floats;
- cache: a linear read-modify-write walk over a 4 MiB ``array`` (wrapping);
- memory: a random-order read-modify-write walk over a 64 MiB ``array`` (a full-period LCG).
"""

from __future__ import annotations

import os
import random
from array import array

UNIT = 1000  # operations per call at scale 1
MASK64 = (1 << 64) - 1


def _ops() -> int:
    return max(1, round(UNIT * float(os.environ.get("DUET_WORKLOAD_SCALE", "1"))))


class State:
    __slots__ = ("data", "ops", "pos", "sink")

    def __init__(self, data: object, ops: int) -> None:
        self.data, self.ops, self.pos, self.sink = data, ops, 0, 1


def setup_integer() -> State:
    rng = random.Random(42)
    return State([rng.getrandbits(32) | 1 for _ in range(64)], _ops())


def integer(s: State) -> None:
    t, x = s.data, s.sink
    for i in range(s.ops):
        x = ((x ^ t[i & 63]) * 2654435761) & 0xFFFFFFFF
    s.sink = x


def setup_floating() -> State:
    return State([1.0 + (i % 7) * 1e-9 for i in range(64)], _ops())


def floating(s: State) -> None:
    t, a, b = s.data, 1.0, 0.5
    for i in range(s.ops):
        m = t[i & 63]
        a = a * m + 1e-7
        b = b * m - 1e-7
    s.sink = a + b


def setup_cache() -> State:
    return State(array("Q", range((4 << 20) // 8)), _ops())


def cache(s: State) -> None:
    data, n, pos = s.data, (4 << 20) // 8, s.pos
    for _ in range(s.ops):
        data[pos] = (data[pos] + 1) & MASK64
        pos += 8  # one 64-byte line per operation
        if pos >= n:
            pos -= n
    s.pos = pos


def setup_memory() -> State:
    return State(array("Q", bytes(64 << 20)), _ops())


def memory(s: State) -> None:
    # A full-period LCG over the 1 Mi cache lines (Hull-Dobell): a random-order walk that needs
    # no permutation table (building one in Python takes 1.4 s per process start).
    data, pos = s.data, s.pos
    for _ in range(s.ops):
        pos = (pos * 6364136223846793005 + 1442695040888963407) & 0xFFFFF
        data[pos << 3] += 1
    s.pos = pos
