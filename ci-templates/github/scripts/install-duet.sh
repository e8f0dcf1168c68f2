#!/usr/bin/env bash
# Installs duet into a virtual environment of its own, never into the job's Python, and prints
# the paths of that duet and its interpreter as `duet=...` and `python=...` lines (for
# $GITHUB_OUTPUT). Shared by the duet action (action.yml) and the comment action
# (comment/action.yml) of the duet repository.
#
#   install-duet.sh VENV
#
# Environment:
#   DUET_PYTHON   the interpreter that creates the venv (Python >= 3.11)
#   DUET_INSTALL  action: from DUET_SOURCE, the checkout of duet the action runs from
#                 (GitHub puts it at $GITHUB_ACTION_PATH); index: duet-bench from the package
#                 index (pip's, or PIP_INDEX_URL), once it is published there
#   DUET_SOURCE   the duet checkout (for action)
#   DUET_VERSION  the duet-bench version (for index; empty: the newest)
#   DUET_EXTRAS   extras to install with the core, comma-separated (plots, stats, arch); empty
#                 for the core alone, which runs, reports, comments and merges (docs/install.md)
set -euo pipefail
venv=$1
case "${DUET_INSTALL:-action}" in
  action)
    if [ ! -f "${DUET_SOURCE:-}/pyproject.toml" ]; then
      echo "::error title=duet::no duet checkout at '${DUET_SOURCE:-}' (DUET_SOURCE): the action installs duet from its own checkout. Fix: use the action as 'uses: OWNER/duet@REF', or set install: index" >&2
      exit 2
    fi
    spec=$DUET_SOURCE ;;
  index)
    spec="duet-bench${DUET_VERSION:+==$DUET_VERSION}" ;;
  *)
    echo "::error title=duet::install is '${DUET_INSTALL}'; use action (from the action's own checkout) or index (from the package index)" >&2
    exit 2 ;;
esac
extras=${DUET_EXTRAS:-}
extras=${extras// /}
if [ -n "$extras" ]; then
  if ! [[ "$extras" =~ ^[a-z]+(,[a-z]+)*$ ]]; then
    echo "::error title=duet::extras is '$extras'; give a comma-separated list of plots, stats, arch (or nothing)" >&2
    exit 2
  fi
  spec="${spec}[${extras}]"
fi
"${DUET_PYTHON:-python3}" -m venv "$venv"
# A regular (not editable) install: the venv keeps working when the checkout goes away.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec" >&2
"$venv/bin/duet" --version >&2
echo "duet=$venv/bin/duet"
echo "python=$venv/bin/python"
