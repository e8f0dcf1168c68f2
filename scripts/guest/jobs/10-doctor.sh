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
import json, sys
doc = json.load(open(sys.argv[1]))
text = json.dumps(doc)
assert "cgroup-v2" in text, text[:500]
print("doctor json keys:", sorted(doc))
PY
