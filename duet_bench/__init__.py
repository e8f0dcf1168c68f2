"""duet: A/B performance regression testing for CI.

Two versions of a program run *at the same time*, each alone on its own physical core inside its
own cgroup, and a shared-memory barrier starts every iteration on both sides together, so noise on
a shared machine hits both sides alike and the per-iteration ratio cancels it.

Glossary (these words mean the same thing everywhere in the code, the docs and the output):

baseline
    The old version (BASE commit, "A" in the maths).
candidate
    The new version (HEAD commit, "B" in the maths). A ratio candidate/baseline above 1 means
    the candidate is slower.
side
    One of the two: ``baseline`` or ``candidate``.
run
    A noun: one launch of a fresh pair of processes, one per side, in fresh cgroups.
iteration
    One barrier-synchronised execution of the benchmark's work inside a run. The first
    ``warmup`` iterations of a run are recorded but not analysed.
sample
    One measured duration of one iteration, integer nanoseconds from a monotonic clock.
benchmark
    A named piece of work (a shell command, a Python callable or a native program) measured in
    ``runs`` runs of ``warmup + iterations`` iterations.
verdict
    One of ``regression``, ``improvement``, ``no change``, ``inconclusive``
    (``docs/results-schema.md``).

The data flow, one module per arrow, is the diagram at the top of ``docs/architecture.md`` (the
project's one map of its modules).
"""

__version__ = "0.1.0"
