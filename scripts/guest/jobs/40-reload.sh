#!/bin/bash
# systemd at work during a measurement: a daemon-reload, a transient unit with CPU, cpuset and
# memory settings, a journald restart. The A/A run must still pass (duet verifies after every
# run that its sides' cpusets and controllers were the ones it set). It is also the tier's A/A
# (exit 0): its sides on two cores at every iteration, nothing left behind (30-compare is the A/B).
# shellcheck source=scripts/guest/jobs/lib.sh disable=SC1091
source "$HOME/src/scripts/guest/jobs/lib.sh"
out=$HOME/res/reload.json
rm -f "$out"
before=$(snapshot)
sudo "$DUET" run --baseline "$(work 2000)" --candidate "$(work 2000)" --name reload \
    --runs 8 --iterations 5 --warmup 1 --reps 1000 --threshold 1 --isolation cgroup --out "$out" &
pid=$!
runs() { sudo cat "$out" 2>/dev/null | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["benchmarks"][0]["runs"]))' 2>/dev/null || echo 0; }
for _ in $(seq 600); do [ "$(runs)" -ge 1 ] && break; sleep 0.5; done
echo "runs before systemd acts: $(runs)"
sudo systemctl daemon-reload
sudo systemd-run --quiet --unit=duet-guest-probe -p AllowedCPUs=0 -p CPUWeight=50 -p MemoryMax=100M sleep 2
sudo systemctl restart systemd-journald
sudo systemctl daemon-reload
after=$(runs)
echo "runs after: $after"
# Not vacuous: at least one run (8 x 5 iterations, about 4 s each under TCG; systemd's acts take
# about 20 s) must start after systemd acted, for duet to verify its sides after it.
[ "$after" -lt 8 ] || { echo "FAIL: the run ended before systemd finished acting: make it longer"; exit 1; }
rc=0
wait "$pid" || rc=$?
[ "$rc" = 0 ] || { echo "FAIL: duet run exited $rc during systemd activity"; exit 1; }
echo "duet run exited 0 through daemon-reload, a transient unit and a journald restart"
check_placement "$out" 8 5
[ "$before" = "$(snapshot)" ] || { echo "FAIL: the run left something behind"; exit 1; }
