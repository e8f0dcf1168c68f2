#!/bin/bash
# Shared by the jobs (sourced): they run inside the guest as user `runner`, from
# runner-agent.service, with the checkout under test in ~/src and duet in /opt/duet-venv.
set -euo pipefail
DUET=/opt/duet-venv/bin/duet
PY=/opt/duet-venv/bin/python
export DUET PY
mkdir -p "$HOME/res"
# What the jobs measured goes back to the host with their logs, whatever the job's outcome.
trap 'mkdir -p /share/out/res && cp -r "$HOME/res/." /share/out/res/ 2>/dev/null || true' EXIT

# A shell loop of N steps: a tiny CPU-bound benchmark that needs nothing but sh (under TCG one
# step takes about 70 us: 2000 steps are about 0.14 s).
work() { echo "i=0; while [ \$i -lt $1 ]; do i=\$((i+1)); done"; }

expect_exit() {  # expect_exit CODE COMMAND...: run it, fail the job unless it exits with CODE
    local want=$1 rc=0
    shift
    echo "+ $*"
    "$@" || rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL: exit $rc, expected $want: $*"
        exit 1
    fi
}

subtree() { cat "/sys/fs/cgroup/$1/cgroup.subtree_control"; }

# Everything a duet invocation may leave behind, and what it may change: checked after each.
snapshot() {
    echo "root: $(subtree .)"
    echo "system.slice: $(subtree system.slice)"
    find /sys/fs/cgroup -name 'duet-*' -print
    find /dev/shm /var/tmp -maxdepth 1 -name 'duet-*' -print
}
check_placement() {  # check_placement RESULTS RUNS ITERATIONS: isolation cgroup-v2, RUNS runs all
    # ok of ITERATIONS measured iterations each, the sides on two physical cores at every
    # iteration (the kernel's thread_siblings_list), crossover
    "$PY" - "$1" "$2" "$3" <<'PY'
import json, sys
path, expected, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
doc = json.load(open(path))
assert doc["environment"]["isolation"] == "cgroup-v2", doc["environment"]["isolation"]
runs = doc["benchmarks"][0]["runs"]
assert len(runs) == expected and all(r["status"] == "ok" for r in runs), runs
cores = {side: sorted({c for r in runs for c in r[side]["cores"]}) for side in ("baseline", "candidate")}
print(path, "isolation cgroup-v2, cores", cores)
# At every iteration the two sides on two physical cores, by the kernel's
# thread_siblings_list (crossover moves them at every iteration: iteration_cpus).
for r in runs:
    a, b = r["baseline"]["iteration_cpus"], r["candidate"]["iteration_cpus"]
    assert len(a) == len(b) == iterations, (r["index"], a, b)
    for i, (ca, cb) in enumerate(zip(a, b)):
        with open(f"/sys/devices/system/cpu/cpu{ca}/topology/thread_siblings_list") as f:
            text = f.read().strip()
        shared = {int(x) for part in text.split(",") for x in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)}
        assert cb not in shared, (r["index"], i, ca, text, cb)
    # Crossover: the baseline ran on both CPUs of the pair within the run.
    assert len(set(a)) == 2, (r["index"], a)
PY
}
