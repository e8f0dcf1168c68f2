#!/bin/bash
# The runner-like guest tier (docs/platforms.md): boots a guest that looks like a GitHub-hosted
# Linux runner (cgroup v2 under systemd, 1 socket x 2 cores x 2 threads, user `runner` with
# passwordless sudo, jobs run from a systemd service) and runs duet there from THIS checkout:
# doctor, compare on a real repository (an A/B), a systemd reload during a measurement (an A/A),
# and the system tests under sudo. Results and logs come back to $DUET_GUEST_OUT.
#
# The image (Debian, systemd, duet's dependencies, no duet) is cached in $DUET_GUEST_CACHE keyed
# by a hash of its recipe; the checkout is copied in and installed at every run.
#
# Exit codes: 0 passed, or skipped with the reason (no root, no qemu and no way to install it...;
# DUET_REQUIRE_GUEST_TIER=1 turns a skip into exit 3, and CI sets it); 1 a job in the guest
# failed; 3 the guest could not be built or booted. DUET_GUEST_TIER=0 skips the tier.
#
# --image-only: install the host packages and build (or find) the image, then exit.
#
# DUET_GUEST_GATE=PREFIX (`make test`, which runs the tier in the background beside the host's
# tests): the guest never runs beside the host's measuring tests. Before booting, and within
# half a second whenever PREFIX.hold exists (and PREFIX.open does not), the tier parks, saying so
# by PREFIX.parked: between two jobs or in the middle of one. While parked the guest is stopped
# (QMP `stop`, `cont` to unpark; SCHED_IDLE if QMP fails): its vCPUs and clocks stand still, so a
# job stopped mid-way sees no time pass, and the job's time limit does not count the parked
# time. The log says how long it was parked and how much CPU QEMU took meanwhile.
set -euo pipefail
image_only=0
if [ "${1:-}" = --image-only ]; then
    image_only=1
fi

repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/scripts/guest
cache=${DUET_GUEST_CACHE:-/var/cache/duet-guest}
out=${DUET_GUEST_OUT:-$repo/duet-results/guest}
accel=${DUET_GUEST_ACCEL:-auto}   # auto: KVM when it boots the guest, else TCG
# The guest's hard upper bound: even if this script is killed with SIGKILL, QEMU dies then.
# 3600: under `make test` it also idles through the host's measuring tests (DUET_GUEST_GATE).
guest_max_s=${DUET_GUEST_MAX_S:-3600}

tier_start=$(date +%s.%N)
phase_start=$tier_start
say() { echo "guest: $*"; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
qemu_cpu_s() {  # CPU seconds QEMU has used so far (0 before it runs)
    local pid
    pid=$(cat "${run:-/nonexistent}/qemu.pid" 2>/dev/null) || { echo 0; return; }
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$pid/stat" 2>/dev/null || echo 0
}
# Each phase's wall time and the CPU time QEMU used in it (the guest competes for the host's
# two CPUs with the host's tests: tests/README.md, "What runs where", counts both).
phase_cpu0=0
phase_done() {
    local took cpu
    took=$(elapsed "$phase_start")
    cpu=$(awk -v a="$phase_cpu0" -v b="$(qemu_cpu_s)" 'BEGIN { if (b < a) print "?"; else printf "%.1f", b - a }')
    say "phase $1 took $took s (QEMU used $cpu s of CPU)"
    echo "$1 $took $cpu" >>"$out/phases.txt"
    phase_start=$(date +%s.%N)
    phase_cpu0=$(qemu_cpu_s)
}
skip() {
    say "SKIPPED: $1"
    if [ "${DUET_REQUIRE_GUEST_TIER:-0}" = 1 ]; then
        say "DUET_REQUIRE_GUEST_TIER=1 forbids skipping"
        exit 3
    fi
    exit 0
}
broken() {
    say "BROKEN (exit 3): $1"
    exit 3
}

[ "${DUET_GUEST_TIER:-1}" = 0 ] && skip "DUET_GUEST_TIER=0"
[ "$(uname -m)" = x86_64 ] || skip "the guest is an x86_64 Debian image; this machine is $(uname -m)"
[ "$(id -u)" = 0 ] || skip "building the image needs root (mmdebstrap, mkfs.ext4 -d); run as root, as CI does"
command -v apt-get >/dev/null || skip "no apt-get: the image is built from this machine's Debian sources"

if [ $image_only = 1 ]; then
    out=$out-image
fi
rm -rf "$out"
mkdir -p "$out" "$cache"

# --- host packages ------------------------------------------------------------------------
newest_kernel() {
    # The newest kernel in /boot that has its initrd and its modules (to copy into the image).
    local v
    for v in $(find /boot -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -V -r); do
        if [ -r "/boot/initrd.img-$v" ] && [ -d "/usr/lib/modules/$v/kernel" ]; then
            echo "$v"
            return
        fi
    done
}
missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
command -v qemu-img >/dev/null || missing+=(qemu-utils)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
[ -n "$(newest_kernel)" ] || missing+=(linux-image-amd64)
if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} (apt-get; qemu-system-x86 may upgrade the host's systemd packages)"
    # flock: one apt-get at a time with scripts/bootstrap.sh, which `make test` runs beside this.
    if ! { flock -w 900 /var/lock/duet-apt.lock apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive flock -w 900 /var/lock/duet-apt.lock apt-get install -y -qq \
            --no-install-recommends "${missing[@]}"; } >"$out/apt.log" 2>&1; then
        tail -5 "$out/apt.log"
        skip "could not install ${missing[*]} (log: $out/apt.log)"
    fi
fi
kver=$(newest_kernel)
[ -n "$kver" ] || skip "no kernel with initrd and modules in /boot even after installing linux-image-amd64"
phase_done host-packages

# --- image (cached) -----------------------------------------------------------------------
python=${PYTHON:-python3}
[ -x "$repo/.venv/bin/python" ] && python=$repo/.venv/bin/python
requirements=$("$python" - "$repo/pyproject.toml" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    project = tomllib.load(f)
build = project["build-system"]["requires"]
extras = project["project"]["optional-dependencies"]


def expand(names):
    # An extra may name duet's own other extras ("duet-bench[plots,stats]"): pip cannot fetch
    # duet from an index, so list what those extras hold instead.
    for req in names:
        if req.startswith("duet-bench["):
            yield from expand(x for e in req[len("duet-bench["):-1].split(",") for x in extras[e])
        else:
            yield req


# duet's own dependencies and the test tools; duet itself is installed at each run.
print("\n".join([*build, *project["project"]["dependencies"], *expand(extras["dev"])]))
PY
)
key=$( {
    cat "$here/build-image.sh" "$here/runner-agent.sh" "$here/runner-agent.service"
    echo "$requirements"
    echo "$kver $(cat /etc/debian_version)"
} | sha256sum | cut -c1-16)
image=$cache/$key/disk.img
exec 9>"$cache/.lock"
# Two tiers at once (two checkouts) build one image, not two.
flock 9
if [ -r "$image" ]; then
    say "image $image (cached)"
    phase_done image-cached
else
    say "building image $image (kernel $kver; a few minutes, then cached)"
    mkdir -p "$cache/$key"
    if [ -n "${DUET_GUEST_GATE:-}" ] && [ ! -e "$repo/.venv/.installed" ]; then
        # `make test` starts this tier beside scripts/bootstrap.sh: the wheels are built with the
        # venv's pip, once it is there (the host stops the tier if its bootstrap fails).
        say "waiting for the host's venv (scripts/bootstrap.sh) to build the wheels with its pip"
        while [ ! -e "$repo/.venv/.installed" ]; do sleep 1; done
        python=$repo/.venv/bin/python
    fi
    wheels=$(mktemp -d "$cache/wheels.XXXXXX")
    echo "$requirements" >"$wheels/requirements.txt"
    # The guest has no network: its venv is filled from wheels built here, where pip already
    # has its index and certificates.
    if ! "$python" -m pip wheel --quiet --wheel-dir "$wheels" -r "$wheels/requirements.txt" \
        >"$out/wheels.log" 2>&1; then
        rm -rf "$wheels"
        tail -5 "$out/wheels.log"
        broken "could not build the wheels of duet's dependencies (log: $out/wheels.log)"
    fi
    if ! "$here/build-image.sh" "$image" "$kver" "$wheels" >"$out/image.log" 2>&1; then
        rm -rf "$wheels"
        tail -20 "$out/image.log"
        broken "could not build the image (log: $out/image.log)"
    fi
    rm -rf "$wheels"
    # Only the newest image is kept: older keys are recipes that no longer exist.
    find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
    phase_done image-build
fi
flock -u 9
if [ $image_only = 1 ]; then
    say "image ready: $image (total $(elapsed "$tier_start") s)"
    exit 0
fi

# --- the gate (DUET_GUEST_GATE) --------------------------------------------------------------
gate=${DUET_GUEST_GATE:-}
qemu_policy() {  # qemu_policy --idle|--other: the scheduling policy of every QEMU thread
    local pid
    pid=$(cat "$run/qemu.pid" 2>/dev/null) || return 0
    chrt --all-tasks "$1" --pid 0 "$pid" >/dev/null 2>&1 ||
        say "could not set QEMU's scheduling policy ($1); it competes with the host's tests"
}
qmp() {  # qmp COMMAND: run one QMP command (stop, cont) on QEMU's monitor socket; 0 if it did
    [ -S "$run/qmp.sock" ] || return 1
    "$python" - "$run/qmp.sock" "$1" <<'PY'
import json, socket, sys

with socket.socket(socket.AF_UNIX) as s:
    s.settimeout(10)
    s.connect(sys.argv[1])
    f = s.makefile("rw")
    json.loads(f.readline())  # the greeting
    for command in ("qmp_capabilities", sys.argv[2]):
        f.write(json.dumps({"execute": command}) + "\n")
        f.flush()
        while True:  # events may come before the answer
            answer = json.loads(f.readline())
            if "return" in answer or "error" in answer:
                break
        if "error" in answer:
            sys.exit(f"{command}: {answer['error']}")
PY
}
guest_pause() {  # the parked guest: its vCPUs stopped, or (if QMP fails) QEMU at SCHED_IDLE
    [ -n "$qemu_pid" ] || return 0
    # An idle guest under TCG still takes CPU: 507 s of CPU in 848 s parked at normal priority,
    # 269 s in 688 s at SCHED_IDLE (rehearsals). Stopped (QMP `stop`) it takes none, and its
    # clocks stop with it (the TSC and timers are the VM's), so no timer of the guest fires late
    # after `cont`; only its wall clock is then behind the host's by the time parked.
    if qmp stop 2>>"$run/qmp.log"; then
        paused=stopped
    else
        say "could not stop the guest's vCPUs through QMP ($(tail -n 1 "$run/qmp.log" 2>/dev/null)); SCHED_IDLE instead"
        qemu_policy --idle
        paused=idle
    fi
}
guest_resume() {
    case $paused in
    stopped) qmp cont 2>>"$run/qmp.log" || broken "could not resume the parked guest (QMP cont: $(tail -n 1 "$run/qmp.log"))" ;;
    idle) qemu_policy --other ;;
    esac
    paused=""
}
paused=""
park() {  # park WHY CONDITION...: wait while CONDITION holds, the host told why; parked_s: how long
    parked_s=0
    [ -n "$gate" ] || return 0
    "${@:2}" || return 0
    park_since=$(date +%s.%N)
    park_cpu0=$(qemu_cpu_s)
    guest_pause
    touch "$gate.parked"
    say "parked: $1${paused:+ (guest $paused)}"
    while "${@:2}"; do
        if [ -n "$qemu_pid" ] && ! kill -0 "$qemu_pid" 2>/dev/null; then
            rm -f "$gate.parked"
            broken "the guest died while parked (serial log: $out/serial-$used.log)"
        fi
        sleep 1
    done
    rm -f "$gate.parked"
    guest_resume
    parked_s=$(elapsed "$park_since")
    echo "parked $parked_s" >>"$out/phases.txt"
    # The phase under way (a job stopped mid-way, or the next one) does not count the parked
    # time, nor QEMU's CPU meanwhile.
    phase_start=$(awk -v a="$phase_start" -v p="$parked_s" 'BEGIN { printf "%.3f", a + p }')
    phase_cpu0=$(awk -v a="$phase_cpu0" -v b="$(qemu_cpu_s)" -v c="$park_cpu0" 'BEGIN { printf "%.1f", a + b - c }')
    say "unparked after $(parked_cpu)"
    park_since=""
}
park_since=""
park_cpu0=0
parked_cpu() {  # how long the guest has been parked, and QEMU's CPU seconds meanwhile
    echo "$(elapsed "$park_since") s; QEMU used $(awk -v a="$park_cpu0" -v b="$(qemu_cpu_s)" 'BEGIN { printf "%.1f", b - a }') s of CPU meanwhile"
}
host_measuring() { [ -e "$gate.hold" ] && [ ! -e "$gate.open" ]; }

# --- boot ---------------------------------------------------------------------------------
run=$(mktemp -d /var/tmp/duet-guest.XXXXXX)
share=$run/share
mkdir -p "$share/jobs" "$share/out" "$share/src"
# The agent runs as `runner` and writes here through 9p (security_model=none: host permissions).
chmod 0777 "$share" "$share/jobs" "$share/out" "$share/src"
qemu_pid=""

stop_guest() {
    if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
        kill -TERM "$qemu_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$qemu_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$qemu_pid" 2>/dev/null || true
    fi
    if [ -r "$run/qemu.pid" ]; then
        kill -KILL "$(cat "$run/qemu.pid")" 2>/dev/null || true
    fi
    [ -z "$qemu_pid" ] || wait "$qemu_pid" 2>/dev/null || true
    qemu_pid=""
}
finish() {
    local code=$?
    trap - EXIT INT TERM HUP
    # Also when the host stops the tier while it is parked (its tests failed).
    [ -z "$park_since" ] || say "stopped while parked, after $(parked_cpu)"
    stop_guest
    cp -a "$share/out/." "$out/" 2>/dev/null || true
    cp "$run"/serial*.log "$run"/qemu*.log "$out/" 2>/dev/null || true
    rm -rf "$run"
    say "total $(elapsed "$tier_start") s (results and logs: $out)"
    exit "$code"
}
trap finish EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM HUP

# The checkout under test, without its venv, git data and caches (tests build their own repos),
# nor the studies' raw results (benchmarks/results: 790 of its 1300 files, 19 of 24 MB, which
# 00-install copied over 9p under TCG; no guest job or test reads them).
tar -C "$repo" --exclude=./.venv --exclude=./.git --exclude=./duet-results --exclude=./build \
    --exclude=./benchmarks/results \
    --exclude='__pycache__' --exclude=./.pytest_cache --exclude=./.mypy_cache \
    --exclude=./.ruff_cache --exclude=./.hypothesis --exclude='*.egg-info' -cf - . |
    tar -C "$share/src" -xf -
# duet's own modules compiled here (about 0.4 s of the host's CPU) rather than at their first
# import in the guest, under TCG: bookworm's python is a 3.11 like the host's, so it takes them
# (each records its source's size and time, which the tar and 00-install's `cp -a` keep); a
# python of another version ignores them.
"$python" -m compileall -q -j 0 "$share/src/duet_bench" "$share/src/duet_stats" >/dev/null 2>&1 || true
cp -r "$here/jobs" "$run/jobs"

qemu-img create -q -f qcow2 -b "$image" -F raw "$run/overlay.qcow2"

# `mitigations=off`: the guest kernel's CPU vulnerability mitigations (page-table isolation
# among them, which under TCG costs a flush of the emulated TLB at every system call) cost the
# tier a quarter of its time and test nothing of duet's: the tier tests behaviour, never timings.
# Alone on this machine (2026-11-30), the whole tier took 390 s with them off, 525 s on; the
# system tests 211 s (266 s of QEMU's CPU) against 306 s (401 s): docs/platforms.md.
boot() {  # boot ACCEL CPU: start QEMU in the background, set qemu_pid
    local accel_opt=$1 cpu=$2
    rm -f "$run/qemu.pid" "$run/qmp.sock" "$share/out/agent-ready"
    # setpriv --pdeathsig: QEMU (and the timeout around it) die with this script, even by SIGKILL.
    setpriv --pdeathsig KILL -- timeout -k 5 "$guest_max_s" \
        setpriv --pdeathsig KILL -- \
        qemu-system-x86_64 -accel "$accel_opt" -cpu "$cpu" -m 4096 \
        -smp 4,sockets=1,cores=2,threads=2 \
        -kernel "/boot/vmlinuz-$kver" -initrd "/boot/initrd.img-$kver" \
        -append "console=ttyS0 root=/dev/vda rw quiet systemd.show_status=error systemd.unified_cgroup_hierarchy=1 mitigations=off" \
        -drive "file=$run/overlay.qcow2,format=qcow2,if=virtio" \
        -virtfs "local,path=$share,mount_tag=share,security_model=none,id=share" \
        -nic none -serial "file:$run/serial-${accel_opt%%,*}.log" -display none -monitor none \
        -qmp "unix:$run/qmp.sock,server=on,wait=off" \
        -no-reboot -pidfile "$run/qemu.pid" 2>"$run/qemu-${accel_opt%%,*}.log" &
    qemu_pid=$!
}
wait_ready() {  # wait_ready SECONDS: 0 when the agent said ready
    local deadline=$((SECONDS + $1))
    while [ $SECONDS -lt $deadline ]; do
        [ -e "$share/out/agent-ready" ] && return 0
        kill -0 "$qemu_pid" 2>/dev/null || return 1
        sleep 0.5
    done
    return 1
}

used=""
park "the host's tests are measuring" host_measuring
if [ "$accel" != tcg ] && [ -w /dev/kvm ]; then
    boot kvm host
    if wait_ready 60; then
        used=kvm
    elif ! kill -0 "$qemu_pid" 2>/dev/null; then
        say "KVM cannot run this guest (QEMU: $(grep -m1 -i error "$run/qemu-kvm.log" || tail -n 1 "$run/qemu-kvm.log")): using TCG"
        stop_guest
    else
        say "KVM did not boot the guest within 60 s (see serial-kvm.log): using TCG"
        stop_guest
    fi
fi
if [ -z "$used" ]; then
    [ "$accel" = kvm ] && broken "DUET_GUEST_ACCEL=kvm but KVM could not boot the guest"
    # vendor=GenuineIntel: with QEMU's default AMD vendor the guest sees no SMT siblings.
    boot tcg,thread=multi max,vendor=GenuineIntel
    if ! wait_ready 300; then
        # On a loaded host (load 13-15 on 2 CPUs, QEMU given 80 s of CPU in 290 s) the guest
        # reached its login prompt but its agent never started: a unit timed out on the
        # guest's wall clock. Once more, from a fresh overlay; the first console is kept.
        say "the guest's agent was not ready within 300 s (host load $(cut -d' ' -f1-3 /proc/loadavg); serial log: $out/serial-tcg-1.log): booting again"
        stop_guest
        mv "$run/serial-tcg.log" "$run/serial-tcg-1.log" 2>/dev/null || true
        rm -f "$run/overlay.qcow2"
        qemu-img create -q -f qcow2 -b "$image" -F raw "$run/overlay.qcow2"
        boot tcg,thread=multi max,vendor=GenuineIntel
        wait_ready 600 || broken "the guest did not boot, twice (serial logs: $out/serial-tcg*.log)"
    fi
    used=tcg
fi
say "guest up with $used ($(head -1 "$share/out/agent-ready"))"
phase_done boot

# --- jobs, as user runner inside runner-agent.service -------------------------------------
failed=()
run_job() {  # run_job NAME TIMEOUT_S
    local name=$1 limit=$2 deadline rc
    park "the host's tests are measuring" host_measuring
    cp "$run/jobs/$name.sh" "$share/jobs/.$name.tmp"
    mv "$share/jobs/.$name.tmp" "$share/jobs/$name.sh"
    deadline=$((SECONDS + limit))
    while [ ! -e "$share/out/$name.rc" ]; do
        park "the host's tests are measuring (job $name stopped mid-way)" host_measuring
        deadline=$((deadline + ${parked_s%.*}))
        if ! kill -0 "$qemu_pid" 2>/dev/null; then
            cat "$share/out/$name.log" 2>/dev/null || true
            broken "the guest died during job $name (serial log: $out/serial-$used.log)"
        fi
        if [ $SECONDS -ge $deadline ]; then
            cat "$share/out/$name.log" 2>/dev/null || true
            broken "job $name did not finish within $limit s"
        fi
        sleep 0.5
    done
    rc=$(cat "$share/out/$name.rc")
    if [ "$rc" = 0 ]; then
        say "job $name passed"
    else
        say "job $name FAILED (exit $rc); its log:"
        sed 's/^/    /' "$share/out/$name.log"
        failed+=("$name")
    fi
    phase_done "$name"
}
run_job 00-install 600
run_job 10-doctor 300
run_job 30-compare 900
run_job 40-reload 900
# The system tests take most of the tier under TCG: they start as soon as `40-reload` ends,
# beside the host's tests that do not measure, and stop (parked) while the host measures.
run_job 50-system-tests "${DUET_GUEST_SYSTEM_TESTS_S:-1800}"

# --- power off ----------------------------------------------------------------------------
cp "$run/jobs/99-poweroff.sh" "$share/jobs/99-poweroff.sh"
for _ in $(seq 120); do kill -0 "$qemu_pid" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$qemu_pid" 2>/dev/null; then
    say "the guest did not power off within 60 s: killing QEMU (pid $qemu_pid)"
fi
stop_guest
phase_done poweroff

if [ -r "$share/out/system-tests.xml" ]; then
    "$python" - "$share/out/system-tests.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET

suite = ET.parse(sys.argv[1]).getroot()
suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
tests, failures, errors, skipped = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
passed = tests - failures - errors - skipped
print(f"guest: system tests in the guest (as runner, under sudo): {passed} passed, "
      f"{failures} failed, {errors} errors, {skipped} skipped")
PY
fi
if [ ${#failed[@]} -gt 0 ]; then
    say "FAILED jobs: ${failed[*]}"
    exit 1
fi
say "all jobs passed"
