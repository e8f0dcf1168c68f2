#!/bin/sh
# The crossover study's missing cells (issue 21, items 4 and 7), 2026-11-27 from about 09:30 UTC,
# on the shared VM while other engineers' editors, installs and targeted test runs were beside it
# (each cell keeps its load and the processes that used CPU). R = 10 x I = 30, 20 ms. Resumes.
S="${PY:-.venv/bin/python} benchmarks/crossover_study.py"
# 4. known ratios 1.05x and 2x on float, cache and memory; the start-up command's 2x
$S --only ratio --workloads float,cache,memory,startup --reps 1
# 7. a 2% slower candidate (integer), 20 trials per design
$S --only slow --workloads integer --trials 20 --slowdown 0.02
# 7. the reference noise: A/A widths (integer, float, 5 repetitions), then the 1% slower, 20 trials
$S --only aa --workloads integer,float --conditions noise --reps 5
$S --only slow --workloads integer --conditions noise --trials 20 --slowdown 0.01
$S --tables
