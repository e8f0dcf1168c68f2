#!/bin/sh
# The closing sitting of 2026-11-30's second stop (make test's schedule, --pids-limit; nothing of duet's
# measuring changed), from the repository root, as root: the defaults a user gets, both crossover designs
# (every iteration, every run) in the same minutes on an A/A, a known 1.05x and 2x, three demos,
# the barrier and the harness overhead. Each output beside this file; the load in load.txt.
set -u
D=benchmarks/results/sitting-20261130-3
L() { echo "sh -c 'i=0; while [ \$i -lt $1 ]; do i=\$((i+1)); done'"; }
uptime > $D/load.txt
.venv/bin/duet run --baseline "$(L 100000)" --candidate "$(L 100000)" --name aa-quiet --out $D/aa-quiet > $D/aa-quiet.txt 2>&1
sh -c 'while :; do :; done' & busy=$!
.venv/bin/duet run --baseline "$(L 100000)" --candidate "$(L 100000)" --name aa-busy --out $D/aa-busy > $D/aa-busy.txt 2>&1
kill $busy
uptime >> $D/load.txt
for design in iteration run; do
  .venv/bin/duet run --baseline "$(L 100000)" --candidate "$(L 100000)" --name aa-$design --crossover $design --out $D/aa-$design > $D/aa-$design.txt 2>&1
  .venv/bin/duet run --baseline "$(L 100000)" --candidate "$(L 105000)" --name known-1.05-$design --crossover $design --out $D/known-105-$design > $D/known-105-$design.txt 2>&1
  .venv/bin/duet run --baseline "$(L 100000)" --candidate "$(L 200000)" --name known-2-$design --crossover $design --out $D/known-2-$design > $D/known-2-$design.txt 2>&1
done
uptime >> $D/load.txt
for k in 1 2 3; do .venv/bin/duet demo > $D/demo-$k.txt 2>&1; done
make bench-barrier > $D/bench-barrier.txt 2>&1
make bench-overhead > $D/bench-overhead.txt 2>&1
uptime >> $D/load.txt
echo done >> $D/load.txt
