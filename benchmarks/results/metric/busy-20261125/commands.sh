#!/bin/sh
# The larger run of benchmarks/results/metric/README.md (issue 12), 2026-11-25 10:02-10:5x
# UTC, on the busy VM: R = 10 x I = 30, 20 ms iterations, one repetition. Run from the worktree
# root; it resumes (a cell on disk is not measured again). The log is run.log.
D=benchmarks/results/metric/busy-20261125
P=".venv/bin/python benchmarks/metric_study.py --results $D --runs 10 --iterations 30 --reps 1 --reps-ratio 1"
$P --only aa --workloads integer,float,cache,memory
$P --only slow --slow-workloads integer --trials 3
$P --only ratio --ratio-workloads integer --ratio-conditions busy
$P --only ratio --ratio-workloads startup --ratio-conditions busy
$P --only aa --workloads startup --conditions busy
$P --only aa --workloads startup --conditions quiet
# The second A/A repetition (10:41-10:51), one condition per invocation:
for c in quiet busy noise asym; do
  .venv/bin/python benchmarks/metric_study.py --results $D --runs 10 --iterations 30 --reps 2 --only aa --workloads integer,float,cache,memory --conditions $c
done
