#!/bin/sh
# The idle-VM run of benchmarks/results/metric/README.md (issue 12), 2026-11-26 08:19-09:25
# (steps 1-3) and 10:53-11:13 (steps 4-5),
# after the run-queue delay of a command's whole process tree came from its cgroup's
# cpu.pressure: R = 10 x I = 30, 20 ms iterations. Nothing else ran on the VM (see each raw
# document's `processes` and load averages). Run from the repository root; it resumes (a cell on
# disk is not measured again). The log is run.log. (The directory keeps the name the run was
# planned under, the evening before.)
D=benchmarks/results/metric/idle-20261125
P=".venv/bin/python benchmarks/metric_study.py --results $D --runs 10 --iterations 30"
# 1. A/A widths of the CPU-bound workloads, 5 repetitions in every condition (40 cells).
$P --only aa --workloads integer,float --reps 5
# 2. Known ratios with the default metric: integer 1.05x and 2x, the start-up command's 2x
#    (one interpreter start against two, through xargs), quiet and busy, 3 repetitions.
$P --only ratio --ratio-workloads integer,startup --ratio-conditions quiet,busy --reps-ratio 3
# 3. Detection of 1% and 2% under the reference noise, 20 trials each (integer).
$P --only slow --slow-workloads integer --slow-conditions noise --trials 20
# 4-5. Run on 2026-11-26 10:53-11:13 UTC, after the rest (the machine idle again): the start-up
#    command's A/A in every condition, and the cache and memory workloads once each.
$P --only aa --workloads startup --reps 2
$P --only aa --workloads cache,memory --reps 1
