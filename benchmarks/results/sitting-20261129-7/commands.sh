#!/bin/sh
# The closing sitting of 2026-11-29's sixth stop (the core's planning without scipy), from
# the repository root, as root, with bench-overhead this time. Each output beside
# this file; the load in load.txt.
set -u
D=benchmarks/results/sitting-20261129-7
L() { echo "sh -c 'i=0; while [ \$i -lt $1 ]; do i=\$((i+1)); done'"; }
uptime > $D/load.txt
.venv/bin/duet run --baseline "$(L 100000)" --candidate "$(L 100000)" --name aa-quiet --out $D/aa-quiet > $D/aa-quiet.txt 2>&1
sh -c 'while :; do :; done' & busy=$!
.venv/bin/duet run --baseline "$(L 100000)" --candidate "$(L 100000)" --name aa-busy --out $D/aa-busy > $D/aa-busy.txt 2>&1
kill $busy
.venv/bin/duet run --baseline "$(L 100000)" --candidate "$(L 100000)" --name aa-run --crossover run --runs 10 --out $D/aa-run > $D/aa-run.txt 2>&1
.venv/bin/duet run --baseline "$(L 100000)" --candidate "$(L 105000)" --name known-1.05 --out $D/known-105 > $D/known-105.txt 2>&1
.venv/bin/duet run --baseline "$(L 100000)" --candidate "$(L 200000)" --name known-2 --out $D/known-2 > $D/known-2.txt 2>&1
.venv/bin/duet demo > $D/demo-1.txt 2>&1
.venv/bin/duet demo > $D/demo-2.txt 2>&1
make bench-barrier > $D/bench-barrier.txt 2>&1
make bench-overhead > $D/bench-overhead.txt 2>&1
uptime >> $D/load.txt
echo done >> $D/load.txt
