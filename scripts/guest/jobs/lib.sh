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
