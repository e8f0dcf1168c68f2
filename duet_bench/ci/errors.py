"""Why a comment was not posted: the API or the network failed (exit 3), or a known,
configuration-level reason stopped it (a warning).

:class:`CommentError` and its :class:`ApiError` are failures of the service: the API kept
failing, could not be reached, or answered something unexpected. :class:`NotPosted` is the
user's situation (no pull request in this job, no token, a read-only token, results of another
commit): ``duet comment`` prints it with its fix and exits 0 unless ``--require-comment``.
"""

from __future__ import annotations

from duet_bench.errors import DuetError


class CommentError(DuetError):
    """Posting failed for a reason that is not the user's configuration: the API kept failing
    (5xx after retries), could not be reached, or answered something unexpected (exit 3).

    ``ambiguous`` is true when a request that changes something may or may not have been
    carried out (a 5xx or a lost connection after a create was sent)."""

    def __init__(self, message: str, *, fix: str | None = None, ambiguous: bool = False) -> None:
        super().__init__(message, fix=fix)
        self.ambiguous = ambiguous


class ApiError(CommentError):
    """An HTTP error answer of the API, after any retries."""

    def __init__(
        self, message: str, *, status: int, fix: str | None = None, ambiguous: bool = False
    ) -> None:
        super().__init__(message, fix=fix, ambiguous=ambiguous)
        self.status = status


class NotPosted(DuetError):
    """Nothing was posted for a known, configuration-level reason: no pull request in this
    job, no token, a token that may not write (a fork's pull request), or results for another
    commit. ``duet comment`` prints it as a warning and exits 0 unless ``--require-comment``."""
