"""The commits ``duet bisect`` searches: BAD's first-parent line back to GOOD.

A merge on that line is one candidate like any commit (what it brought in is measured as a
whole); the commits of the merged branch are not searched. Bisecting inside a named merge is a
second ``duet bisect`` between the merge's first parent and its second parent's line.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duet_bench.errors import UsageError, VersionError
from duet_bench.isolation import RunAs
from duet_bench.isolation.privileges import popen_user
from duet_bench.versions import clean_environment


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    subject: str
    #: More than one parent: a merge on the first-parent line.
    merge: bool

    @property
    def short(self) -> str:
        return self.sha[:12]


def _git(root: Path, *args: str, run_as: RunAs | None = None) -> str:
    done: subprocess.CompletedProcess[str] = subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
        **_as(run_as),
    )
    if done.returncode != 0:
        raise VersionError(
            f"git {' '.join(args)} failed (exit {done.returncode}): {done.stderr.strip()}",
            fix=f"run `git {' '.join(args)}` in {root} to see why",
        )
    return done.stdout


def _as(run_as: RunAs | None) -> dict[str, Any]:
    """Git as the user builds run as, never as root on their repository (docs/isolation.md,
    "What runs as root")."""
    env = clean_environment()
    return {
        "env": env if run_as is None else run_as.environment(env),
        **popen_user(run_as),
    }


def first_parent_line(
    root: Path,
    good: str,
    bad: str,
    *,
    good_ref: str,
    bad_ref: str,
    run_as: RunAs | None = None,
) -> list[Commit]:
    """GOOD and then every commit of ``git rev-list --first-parent GOOD..BAD``, oldest first
    (BAD last): element 0 is GOOD, element ``i`` the i-th commit after it.

    Raises
    ------
    UsageError
        GOOD and BAD are one commit, GOOD is not an ancestor of BAD, or GOOD is an ancestor
        only through a merged branch (not on BAD's first-parent line).
    """
    if good == bad:
        raise UsageError(
            f"GOOD ({good_ref}) and BAD ({bad_ref}) are the same commit {good[:12]}: there is "
            "nothing between them to search",
            fix="give as GOOD a commit where the benchmark was fast and as BAD a later one "
            "where it is slow",
        )
    ancestor = subprocess.run(
        ["git", "-C", str(root), "merge-base", "--is-ancestor", good, bad],
        capture_output=True,
        check=False,
        **_as(run_as),
    )
    if ancestor.returncode == 1:
        raise UsageError(
            f"GOOD ({good_ref}, {good[:12]}) is not an ancestor of BAD ({bad_ref}, {bad[:12]}): "
            "bisect searches the history that leads from GOOD to BAD",
            fix="check the order (GOOD is the older, fast commit); for two branches use "
            f"`duet compare`, or bisect from their merge base (`git merge-base {good_ref} "
            f"{bad_ref}`)",
        )
    if ancestor.returncode != 0:
        raise VersionError(
            f"git merge-base --is-ancestor failed: {ancestor.stderr.decode(errors='replace')}",
            fix=f"run it in {root} to see why",
        )
    fmt = "%H%x00%P%x00%s"
    lines = _git(
        root,
        "log",
        "--first-parent",
        "--reverse",
        f"--format={fmt}",
        f"{good}..{bad}",
        run_as=run_as,
    )
    commits = []
    for line in lines.splitlines():
        sha, parents, subject = line.split("\x00", 2)
        commits.append(Commit(sha, subject, merge=len(parents.split()) > 1))
    first_parent = (
        _git(root, "rev-parse", f"{commits[0].sha}^1", run_as=run_as).strip() if commits else ""
    )
    if not commits or first_parent != good:
        raise UsageError(
            f"GOOD ({good_ref}, {good[:12]}) is an ancestor of BAD ({bad_ref}) only through a "
            "merged branch: bisect walks BAD's first-parent line (each merge is one step)",
            fix=f"give as GOOD a commit of that line (`git log --first-parent {bad_ref}`), e.g. "
            "the merge that brought GOOD in, or its first parent",
        )
    subject = _git(root, "log", "-1", "--format=%s", good, run_as=run_as).strip()
    return [Commit(good, subject, merge=False), *commits]
