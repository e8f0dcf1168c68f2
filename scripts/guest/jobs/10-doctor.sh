#!/bin/bash
# duet doctor as the runner user (no cgroup of its own: affinity-only, for the true reason) and
# under sudo (cgroup v2, a pair on two different physical cores).
# shellcheck source=scripts/guest/jobs/lib.sh disable=SC1091
source "$HOME/src/scripts/guest/jobs/lib.sh"
expect_exit 0 "$DUET" doctor | tee "$HOME/res/doctor-user.txt"
grep -q "affinity-only" "$HOME/res/doctor-user.txt"
if grep -q "shared with processes that are not ours" "$HOME/res/doctor-user.txt"; then
    echo "FAIL: a cgroup that is merely not writable is reported as shared"
    exit 1
fi
grep -q "may not write" "$HOME/res/doctor-user.txt"
expect_exit 0 sudo "$DUET" doctor --require cgroup-v2 | tee "$HOME/res/doctor-sudo.txt"
sudo "$DUET" doctor --format json | tee "$HOME/res/doctor-sudo.json" >/dev/null
"$PY" - "$HOME/res/doctor-sudo.json" <<'PY'
import glob, json, re, sys
doc = json.load(open(sys.argv[1]))
text = json.dumps(doc)
assert "cgroup-v2" in text, text[:500]
print("doctor json keys:", sorted(doc))


def siblings(cpu):
    """The kernel's answer, not duet's: /sys/.../cpuN/topology/thread_siblings_list."""
    path = f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    found = set()
    for part in open(path).read().strip().split(","):
        lo, _, hi = part.partition("-")
        found |= set(range(int(lo), int(hi or lo) + 1))
    return found


# The guest has 2 cores x 2 threads: without SMT siblings this job would test nothing.
online = sorted(
    int(re.search(r"cpu(\d+)/topology$", p).group(1))
    for p in glob.glob("/sys/devices/system/cpu/cpu*/topology")
)
assert len(online) == 4, online
assert all(len(siblings(c)) == 2 for c in online), {c: sorted(siblings(c)) for c in online}
pair = doc["pair"]["cpus"]
assert len(pair) == 2, pair
a, b = pair
# The sides on two different physical cores: neither is the other's SMT sibling.
assert b not in siblings(a), f"pair {pair} shares a core: siblings of {a} are {sorted(siblings(a))}"
# duet's view of the siblings is the kernel's.
for cpu in pair:
    said = set(doc["pair"]["smt_siblings"][str(cpu)])
    assert said == siblings(cpu) - {cpu}, (cpu, said, sorted(siblings(cpu)))
# No third core: the orchestrator goes to the pair's own siblings, never onto a side's CPU.
orchestrator = set(doc["pair"]["orchestrator_cpus"])
assert orchestrator and not orchestrator & set(pair), doc["pair"]
assert orchestrator <= (siblings(a) | siblings(b)) - set(pair), doc["pair"]
print(f"pair {pair} on two physical cores (siblings {sorted(siblings(a))}, {sorted(siblings(b))}),"
      f" orchestrator on {sorted(orchestrator)}")
PY
