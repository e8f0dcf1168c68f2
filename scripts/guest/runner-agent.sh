#!/bin/bash
# Inside the guest: a stand-in for the GitHub Actions runner service. It runs as user `runner`
# in runner-agent.service, so every job's shell lives in that service's cgroup (and `sudo` leaves
# it there), as on a hosted runner. The host drops job scripts into /share/jobs/NAME.sh; each is
# run once, in name order, its output going to /share/out/NAME.log and its exit code to
# /share/out/NAME.rc (written last, by rename, so the host never reads a half-written code).
set -u
jobs=/share/jobs
out=/share/out
until [ -d "$jobs" ] && [ -d "$out" ]; do sleep 0.2; done
{
    echo "ready $(date -u +%FT%TZ) uptime $(cut -d' ' -f1 /proc/uptime) s"
    echo "cgroup $(cat /proc/self/cgroup)"
} >"$out/agent-ready.tmp"
mv "$out/agent-ready.tmp" "$out/agent-ready"
while true; do
    for job in "$jobs"/*.sh; do
        [ -e "$job" ] || continue
        name=$(basename "$job" .sh)
        [ -e "$out/$name.rc" ] && continue
        (cd "$HOME" && exec bash "$job") >"$out/$name.log" 2>&1 </dev/null
        echo $? >"$out/$name.rc.tmp"
        mv "$out/$name.rc.tmp" "$out/$name.rc"
    done
    sleep 0.2
done
