#!/bin/bash
# sudo duet compare on a real two-commit repository whose HEAD does ten times the work: a
# regression (exit 1; under TCG the ratio comes out at 5-6, its interval far from 1), all
# reports written, the sides on two physical cores at every iteration (check_placement),
# nothing left and the cgroup tree's controllers as before, no git ownership error. The tier's
# A/B; its A/A is 40-reload's. The loops are short (1,000 and 10,000 steps): under TCG the
# measuring took 28 s of the job's 46 with twice as many.
# shellcheck source=scripts/guest/jobs/lib.sh disable=SC1091
source "$HOME/src/scripts/guest/jobs/lib.sh"
repo=$HOME/project
rm -rf "$repo"
mkdir -p "$repo"
cd "$repo" || exit 1
git init -q -b main
git config user.name runner
git config user.email runner@duet-guest
printf 'runs = 5\niterations = 5\nwarmup = 1\n\n[[benchmark]]\nname = "loop"\ncommand = "sh work.sh"\n' >duet.toml
work 1000 >work.sh
git add -A && git commit -q -m base
work 10000 >work.sh
git commit -q -am "ten times the work"
before=$(snapshot)
expect_exit 1 sudo "$DUET" compare HEAD~1 HEAD --isolation cgroup --threshold 1 --no-plots \
    --out "$HOME/res/compare"
ls -l "$HOME/res/compare"
for f in results.json report.md junit.xml metrics.txt; do
    [ -s "$HOME/res/compare/$f" ] || { echo "FAIL: $f missing"; exit 1; }
done
grep -q cgroup-v2 "$HOME/res/compare/results.json"
check_placement "$HOME/res/compare/results.json" 5 5  # duet.toml: runs = 5, iterations = 5
[ "$before" = "$(snapshot)" ] || { echo "FAIL: compare left something behind"; exit 1; }
