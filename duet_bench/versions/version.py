"""The record of one side's version: a commit in a worktree, built or not."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duet_bench.results import SIDES, SideName
from duet_bench.versions.refs import FULL_SHA


@dataclass(frozen=True, slots=True)
class Version:
    """One side's version: a commit checked out in a worktree, built or not.

    ``reused`` says nothing was done for it here: after :meth:`Versions.checkout`, the worktree
    already existed (kept by an earlier run, or the other side is at the same commit); after
    :meth:`Versions.build`, the stamp matched and the build was skipped.
    """

    side: SideName
    #: The ref as the user wrote it (``origin/main``, ``HEAD~1``, a sha, a tag).
    ref: str
    #: The full sha it resolved to.
    commit: str
    #: The worktree, outside the user's checkout.
    directory: Path
    build_log: Path | None
    built: bool
    reused: bool
    #: The commit's subject line, for reports.
    subject: str

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {self.side!r}")
        if not FULL_SHA.fullmatch(self.commit):
            raise ValueError(f"commit must be a full sha, got {self.commit!r}")

    def describe(self) -> dict[str, Any]:
        """JSON-ready description for the results document."""
        return {
            "ref": self.ref,
            "commit": self.commit,
            "subject": self.subject,
            "built": self.built,
            "reused": self.reused,
            "build_log": None if self.build_log is None else str(self.build_log),
        }
