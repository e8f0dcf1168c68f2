"""The environments of git processes: without the variables that bind git to one repository
(ours and the builds'), and the hardening of GitPython's object reads, which run as root."""

from __future__ import annotations

import os
from collections.abc import Mapping

# Variables that bind a git process to one repository, index or object store
# (`git rev-parse --local-env-vars`). A git hook exports some of them (a pre-commit hook sets
# GIT_INDEX_FILE to the user's index): inherited by `git worktree add`, they make it write the
# new worktree's checkout into the *user's* index. Inherited by a build, they point the build's
# own git commands at the user's checkout. Neither our git processes nor builds see them.
_REPO_LOCAL_GIT_VARS = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_CONFIG",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_PARAMETERS",
        "GIT_DIR",
        "GIT_GRAFT_FILE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_OBJECT_DIRECTORY",
        "GIT_PREFIX",
        "GIT_REPLACE_REF_BASE",
        "GIT_SHALLOW_FILE",
        "GIT_WORK_TREE",
    }
)

# GitPython's object reads (``git cat-file --batch``, ``git version``) run as duet, root under
# sudo: GitPython starts its persistent processes itself and cannot switch users. cat-file runs
# no configured command; these make sure of it: no system or global configuration of root's,
# and the repository's own command settings emptied (``GIT_CONFIG_COUNT``, git >= 2.31).
OBJECT_READS_AS_ROOT = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_COUNT": "2",
    "GIT_CONFIG_KEY_0": "core.fsmonitor",
    "GIT_CONFIG_VALUE_0": "",
    "GIT_CONFIG_KEY_1": "core.hooksPath",
    "GIT_CONFIG_VALUE_1": os.devnull,
}


def clean_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without the variables that tie git to
    one repository or index (see ``_REPO_LOCAL_GIT_VARS``)."""
    source = os.environ if base is None else base
    return {k: v for k, v in source.items() if k not in _REPO_LOCAL_GIT_VARS}
