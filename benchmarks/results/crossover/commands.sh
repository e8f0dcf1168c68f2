#!/bin/sh
# The crossover study of benchmarks/results/crossover/README.md (issue 21),
# 2026-11-27 02:57-03:57 UTC, on the shared (busy) VM: R = 10 x I = 30, 20 ms iterations unless
# said. Run from the worktree root; it resumes (a cell on disk is not measured again). The
# per-step logs are run-*.log. The measuring lock was held by other developers' measurements
# 03:05:50-03:15:30 and about 03:35:40-03:38 (the study queued behind them).
S="python benchmarks/crossover_study.py"
# 1. A/A CPU-time width, integer and float, 5 repetitions, both designs interleaved
$S --only aa --workloads integer,float --reps 5
# 2. a 1% slower candidate (integer), 20 trials per design
$S --only slow --workloads integer --trials 20 --slowdown 0.01
# 3. A/A coverage at 2 ms iterations (R = 10 x I = 30): crossover, then 5 more interleaved with the per-run design
$S --only aa --workloads integer --designs iteration --iteration-ms 2 --reps 5 --start 0
$S --only aa --workloads integer --designs run,iteration --iteration-ms 2 --reps 5 --start 5
# 4. known ratios 1.05x and 2x, one repetition per design (integer first)
$S --only ratio --workloads integer --reps 1
# 5. the start-up command: A/A, crossover, sequential method, per-run design
$S --only aa --workloads startup --designs iteration,sequential,run --reps 1
# 4, continued
$S --only ratio --workloads float,cache,memory --reps 1
# the tables
$S --tables
