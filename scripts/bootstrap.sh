#!/bin/sh
# Creates the virtual environment and installs duet-bench into it, in one of two sizes:
#
#   sh scripts/bootstrap.sh runtime   duet's core install only (what `make demo` needs:
#                                     numpy, click, cloup, GitPython, tomlkit; no plots, no scipy)
#   sh scripts/bootstrap.sh dev       the core, the plots, stats, test and arch extras, and the tools the
#                                     CI-template, install and accuracy tests use (`make test`)
#
# Works on a fresh Debian machine that has python3, gcc and make; installs python3-venv when
# it is missing and we are root (Debian splits venv/ensurepip out of python3).
set -eu
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
SIZE=${1:-dev}
case "$SIZE" in runtime|dev) ;; *)
    echo "bootstrap: unknown size '$SIZE'. Fix: sh scripts/bootstrap.sh runtime|dev" >&2
    exit 2 ;;
esac

# One apt-get at a time among duet's scripts: `make test` starts the guest tier, which may install
# QEMU with apt, beside this bootstrap (dpkg's own lock would make the second one fail at once).
apt_get() {
    if command -v flock >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive flock -w 900 /var/lock/duet-apt.lock apt-get "$@"
    else
        DEBIAN_FRONTEND=noninteractive apt-get "$@"
    fi
}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "duet needs Python >= 3.11; $PYTHON is $("$PYTHON" --version 2>&1)." >&2
    echo "Fix: install a newer python3 and run 'make test PYTHON=python3.11'." >&2
    exit 3
fi
if ! "$PYTHON" -m venv --help >/dev/null 2>&1 || ! "$PYTHON" -c 'import ensurepip' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        ver=$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
        apt_get update -qq && (apt_get install -y -qq "python${ver}-venv" || apt_get install -y -qq python3-venv)
    else
        echo "The venv module is missing. Fix: sudo apt-get install python3-venv" >&2
        exit 3
    fi
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
# The pip of a fresh venv is new enough for an editable install from pyproject.toml (PEP 660,
# pip >= 21.3; Python 3.11 bundles 23.x): upgrading it costs a download the demo does not need.
if [ "$SIZE" = runtime ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e .
    exit 0
fi
# The go and npm tools install beside pip (they write only their own files in the venv):
# `make test` waits for this script before its first tests.
if [ ! -x "$VENV/bin/actionlint" ] && command -v go >/dev/null 2>&1; then
    (GOBIN="$(cd "$VENV/bin" && pwd)" go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.7 \
        || echo "bootstrap: could not install actionlint; the workflow lint test will skip." >&2) &
fi
if [ ! -x "$VENV/node_modules/.bin/gitlab-ci-local" ] && command -v npm >/dev/null 2>&1; then
    (npm install --prefix "$VENV" --no-save --no-audit --no-fund --silent gitlab-ci-local@4.64.1 >/dev/null \
        || echo "bootstrap: could not install gitlab-ci-local; the GitLab pipeline test will skip." >&2) &
fi
# The test environment pins what decides the numbers (tests/constraints.txt says why).
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c tests/constraints.txt \
    -e ".[dev,arch]" || { rc=$?; wait; exit "$rc"; }
wait  # for the go and npm tools above

# Tools the CI-template, install and accuracy tests use. Each is optional: the tests that need
# one skip with the reason when it is missing, so a registry that is down does not break the
# install. sudo and pipx are what tests/install/ tries duet with, as a user would; bubblewrap
# (bwrap) gives the unprivileged tier (tests/system/test_unprivileged.py) its container.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    missing=""
    for pair in shellcheck rsync hyperfine sudo pipx bwrap:bubblewrap; do
        tool=${pair%%:*} package=${pair#*:}
        command -v "$tool" >/dev/null 2>&1 || missing="$missing $package"
    done
    if [ -n "$missing" ]; then
        # shellcheck disable=SC2086  # one word per package, on purpose
        apt_get install -y -qq $missing >/dev/null 2>&1 \
            || (apt_get update -qq && apt_get install -y -qq $missing >/dev/null 2>&1) \
            || echo "bootstrap: could not install$missing with apt; the tests that need them will skip." >&2
    fi
fi
# Google Benchmark (Debian's libbenchmark-dev) for the google-benchmark adapter's end-to-end
# test (tests/adapters/); that test skips with the reason when the library is missing.
if [ ! -f /usr/include/benchmark/benchmark.h ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt_get install -y -qq libbenchmark-dev >/dev/null 2>&1 \
            || (apt_get update -qq && apt_get install -y -qq libbenchmark-dev >/dev/null 2>&1) \
            || echo "bootstrap: could not install libbenchmark-dev with apt; the google-benchmark adapter test will skip." >&2
    else
        echo "bootstrap: libbenchmark-dev not installed (needs root and apt-get); the google-benchmark adapter test will skip." >&2
    fi
fi
# What this script does not install and `make test` needs (README.md): say so now, not as a
# failed test 15 minutes later.
for tool in go cargo npm; do
    command -v "$tool" >/dev/null 2>&1 \
        || echo "bootstrap: $tool is not installed; the tests that need it fail under make test (README.md lists what the machine must have)." >&2
done
py38=""
for candidate in "$HOME"/.pyenv/versions/3.8*/bin/python3.8 /usr/bin/python3.8 /usr/local/bin/python3.8; do
    [ -x "$candidate" ] && py38=$candidate
done
if [ -z "$py38" ]; then
    echo "bootstrap: no Python 3.8 (~/.pyenv/versions/3.8*, /usr/bin, /usr/local/bin); the tests of the worker on the oldest Python fail under make test (README.md)." >&2
fi
