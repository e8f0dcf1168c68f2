#!/bin/bash
# The system tests that need what only the guest has (marker `guest`: cgroup v2 with controllers,
# systemd, sudo from a user), as a CI job runs them on a hosted runner: as root through sudo from
# the runner user (so the sides run as uid 1001), required not to skip what this machine has.
# The other system tests ran on the host (`make pytest`); the guest is 10-20x slower (TCG): a
# variant whose guest path another variant covers is marked `host_only` and not run here.
# sudo resets the environment: CI=true (as a hosted runner sets it) and DUET_CI_MACHINE=guest are
# passed through it, so that a skip fails unless tests/allowed_skips.py allows it in the guest.
# shellcheck source=scripts/guest/jobs/lib.sh disable=SC1091
source "$HOME/src/scripts/guest/jobs/lib.sh"
cd "$HOME/src" || exit 1
sudo env CI=true DUET_CI_MACHINE=guest DUET_REQUIRE_SYSTEM_TESTS=1 "$PY" -m pytest tests/system -m "guest and not host_only" -q -p no:cacheprovider -rs --durations=10 \
    -o timeout=1200 \
    --junitxml=/share/out/system-tests.xml -o junit_family=xunit2
