#!/bin/sh
# Issue 21, item 3: the coverage of the crossover design's 99% interval over 200 real A/A
# intervals (integer and float, 100 repetitions each, R = 10 x I = 30, 20 ms, default settings),
# on the machine as it was (condition `shared`: a guest tier under QEMU/TCG and other developers'
# tests ran beside it; every cell stores its load). Run from the repository root, as root.
.venv/bin/python benchmarks/crossover_study.py --only aa --designs iteration \
    --workloads integer,float --conditions shared --reps 100 \
    --results benchmarks/results/crossover/coverage-20261127
.venv/bin/python benchmarks/crossover_study.py --tables \
    --results benchmarks/results/crossover/coverage-20261127
