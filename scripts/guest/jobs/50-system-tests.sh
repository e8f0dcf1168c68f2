#!/bin/bash
# The system tests as a CI job runs them on a hosted runner: as root through sudo from the
# runner user (so the sides run as uid 1001), required not to skip what this machine has.
# shellcheck source=scripts/guest/jobs/lib.sh disable=SC1091
source "$HOME/src/scripts/guest/jobs/lib.sh"
cd "$HOME/src" || exit 1
sudo env DUET_REQUIRE_SYSTEM_TESTS=1 "$PY" -m pytest tests/system -q -p no:cacheprovider \
    --junitxml=/share/out/system-tests.xml -o junit_family=xunit2
