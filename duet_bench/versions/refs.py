"""The syntax of git refs as duet reads it: what cannot be a ref; ancestry (``~N``, ``^N``)."""

from __future__ import annotations

import re
import shlex

from duet_bench.errors import UnknownRef, UsageError

FULL_SHA = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
HEXISH = re.compile(r"[0-9a-fA-F]{4,64}")
# The trailing ancestry operators of a revision (`HEAD~2`, `main^`, `v1^2~3`).
_ANCESTRY = re.compile(r"(?:[~^][0-9]*)*$")
ANCESTRY_STEP = re.compile(r"([~^])([0-9]*)")


def check_ref(ref: str) -> None:
    """Refuse what cannot be a ref before git sees it (an option, a control character)."""
    if not isinstance(ref, str) or not ref.strip():
        raise UsageError(
            "an empty git ref", fix="give a branch, tag or commit, e.g. duet compare main HEAD"
        )
    if ref.startswith("-"):
        raise UsageError(
            f"{ref!r} is not a git ref (it looks like an option)",
            fix="give a branch, tag or commit; put options before BASE and HEAD",
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in ref):
        raise UsageError(
            f"{ref!r} is not a git ref (it holds a control character)",
            fix="give a branch, tag or commit",
        )


def strip_ancestry(ref: str) -> tuple[str, str, int]:
    """``HEAD~2^`` -> (``HEAD``, ``~2^``, 3): the base, the ancestry suffix, and how many
    generations below the base it reaches."""
    match = _ANCESTRY.search(ref)
    assert match is not None  # the pattern matches the empty string at the end
    base, suffix = ref[: match.start()], ref[match.start() :]
    generations = 0
    for op, digits in ANCESTRY_STEP.findall(suffix):
        n = int(digits) if digits else 1
        generations += n if op == "~" else min(n, 1)
    return base, suffix, generations


def default_remote(remotes: list[str]) -> str | None:
    """``origin``, else the only remote, else None."""
    if "origin" in remotes:
        return "origin"
    return remotes[0] if len(remotes) == 1 else None


def unmatched_search(ref: str, where: object) -> UnknownRef:
    """The error for a ``:/text`` ref that matched no commit message. git reads everything
    after ``:/`` as the text, so ``:/text~1`` searches for "text~1": it says so rather than
    that the history is too short."""
    text = ref[2:]
    if not text:
        return UnknownRef(
            "':/' searches the commit messages for the text after it, and there is none",
            fix="give the text (':/fix the parser'), or a branch, tag or commit",
        )
    base, suffix, _ = strip_ancestry(ref)
    if suffix and base != ":/":
        return UnknownRef(
            f"no commit message in {where} matches {text!r}: git reads all of {ref!r} after "
            f"':/' as the text to search for, so {suffix!r} is part of the text, not a step "
            "back through the history",
            fix=f"find the commit first (git rev-parse {shlex.quote(base)}), then give its sha "
            f"followed by {suffix}",
        )
    return UnknownRef(
        f"no commit message in {where} matches {text!r} ({ref!r} names the newest commit, "
        "reachable from any ref, whose message matches that regular expression)",
        fix=f"check the text: git log --all --oneline --grep={shlex.quote(text)} (case and "
        "the characters .*[]^$\\ count); or give a branch, tag or commit",
    )
