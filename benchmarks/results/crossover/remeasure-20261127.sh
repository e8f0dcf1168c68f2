#!/bin/bash
# One sitting: the re-measurement after review. Nothing else is run beside it on purpose.
cd /work/main
D=${D:-/work/remeasure}; B=.venv/bin
W=$(.venv/bin/python -c "import sys; sys.path.insert(0,'benchmarks'); import workloads; print(workloads.build())")
OPS=$(.venv/bin/python -c "import sys; sys.path.insert(0,'benchmarks'); import workloads; print(workloads.calibrate('integer', 20))")
echo "ops $OPS for 20 ms; $(date -u +%T) $(uptime)"
one() { # name, crossover, baseline ops, candidate ops, extra
  local name=$1 x=$2 a=$3 b=$4; shift 4
  $B/duet run --native --baseline "$W --kind integer --ops $a" --candidate "$W --kind integer --ops $b" \
     --crossover $x --name $name --quiet --fail-on never --out $D/$name-$x.json "$@" >/dev/null 2>$D/$name-$x.err
  $B/python - $D/$name-$x.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); a=d["benchmarks"][0]["analysis"]; m=a["metrics"]
print(f'{sys.argv[1].split("/")[-1]:28s} {a["metric"]:4s} {a["ratio"]:.4f} [{a["ci_low"]:.4f}, {a["ci_high"]:.4f}] width {100*(a["ci_high"]-a["ci_low"]):.2f}% {a["verdict"]}; wall {m["wall"]["ratio"]:.4f} [{m["wall"]["ci_low"]:.4f}, {m["wall"]["ci_high"]:.4f}]')
PY
}
for rep in 1 2; do
  for x in iteration run; do one aa-quiet-$rep $x $OPS $OPS; done
done
sh -c 'while :; do :; done' & HOG=$!
for rep in 1 2; do
  for x in iteration run; do one aa-busy-$rep $x $OPS $OPS; done
done
kill $HOG
echo "known ratios $(date -u +%T) $(uptime)"
for x in iteration run; do
  one r105 $x $OPS $(( OPS * 105 / 100 ))
  one r2 $x $OPS $(( OPS * 2 ))
done
echo "demo $(date -u +%T)"
for i in 1 2 3; do $B/duet demo --quiet --out $D/demo-$i 2>/dev/null | grep -E "^ *(the machine as it is|one busy process)" ; done
echo "bench-overhead $(date -u +%T) $(uptime)"
$B/python benchmarks/bench_overhead.py --crossover iteration 2>&1 | tail -15
$B/python benchmarks/bench_overhead.py --crossover run 2>&1 | tail -15
echo "bench-barrier $(date -u +%T) $(uptime)"
$B/python benchmarks/bench_barrier.py --crossover 2>&1 | tail -30
echo "done $(date -u +%T)"
