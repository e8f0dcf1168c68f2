#!/bin/sh
# The three conditions for the 2% slower and the known ratios (issue 21, item 7), 2026-11-27
# from about 13:52 UTC, nothing else running. R = 10 x I = 30, 20 ms. Resumes.
S="${PY:-.venv/bin/python} benchmarks/crossover_study.py"
$S --only slow --workloads integer --conditions noise,busy --trials 20 --slowdown 0.02
$S --only ratio --workloads integer,float --conditions noise,busy --reps 1
$S --tables
