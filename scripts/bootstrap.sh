#!/bin/sh
# Creates the virtual environment and installs duet-bench with its test and arch extras.
# Works on a fresh Debian machine that has python3, gcc and make; installs python3-venv when
# it is missing and we are root (Debian splits venv/ensurepip out of python3).
set -eu
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "duet needs Python >= 3.11; $PYTHON is $("$PYTHON" --version 2>&1)." >&2
    echo "Fix: install a newer python3 and run 'make test PYTHON=python3.11'." >&2
    exit 3
fi
if ! "$PYTHON" -m venv --help >/dev/null 2>&1 || ! "$PYTHON" -c 'import ensurepip' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        ver=$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
        apt-get update -qq && (apt-get install -y -qq "python${ver}-venv" || apt-get install -y -qq python3-venv)
    else
        echo "The venv module is missing. Fix: sudo apt-get install python3-venv" >&2
        exit 3
    fi
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e ".[dev,arch]"

# Tools the CI-template and accuracy tests use. Each is optional: the tests that need one skip
# with the reason when it is missing, so a registry that is down does not break the install.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    missing=""
    for tool in shellcheck rsync hyperfine; do command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"; done
    if [ -n "$missing" ]; then
        apt-get install -y -qq $missing >/dev/null 2>&1 \
            || (apt-get update -qq && apt-get install -y -qq $missing >/dev/null 2>&1) \
            || echo "bootstrap: could not install$missing with apt; the tests that need them will skip." >&2
    fi
fi
if [ ! -x "$VENV/bin/actionlint" ] && command -v go >/dev/null 2>&1; then
    GOBIN="$(cd "$VENV/bin" && pwd)" go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.7 \
        || echo "bootstrap: could not install actionlint; the workflow lint test will skip." >&2
fi
if [ ! -x "$VENV/node_modules/.bin/gitlab-ci-local" ] && command -v npm >/dev/null 2>&1; then
    npm install --prefix "$VENV" --no-save --no-audit --no-fund --silent gitlab-ci-local@4.64.1 >/dev/null \
        || echo "bootstrap: could not install gitlab-ci-local; the GitLab pipeline test will skip." >&2
fi
