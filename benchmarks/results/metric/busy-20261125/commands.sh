#!/bin/sh
# The larger run on the busy machine: R = 10 x I = 30, one repetition; stops between steps when /tmp/ms_stop exists.
cd /work/wt/metricstudy
D=benchmarks/results/metric/busy-20261125
P=".venv/bin/python benchmarks/metric_study.py --results $D --runs 10 --iterations 30 --reps 1 --reps-ratio 1"
step() { [ -e /tmp/ms_stop ] && { echo "stopped before: $*"; exit 0; }; echo "== $*"; $P "$@"; }
step --only aa --workloads integer,float,cache,memory
step --only slow --slow-workloads integer --trials 3
step --only ratio --ratio-workloads integer --ratio-conditions busy
step --only ratio --ratio-workloads startup --ratio-conditions busy
step --only aa --workloads startup --conditions busy,quiet
echo "== done"
