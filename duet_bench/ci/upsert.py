"""The upsert: one duet comment per key, created once, updated after, never duplicated.

Find the newest comment that carries our marker *and* was written by our own identity
(following pagination), update it, or create one. A create that failed with a 5xx may still
have happened, so the comments are listed again before creating again: a flaky API never
leaves two duet comments. A 401/403/404 becomes :class:`~duet_bench.ci.errors.NotPosted`
with the provider's fix.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from duet_bench.ci.body import marker_key, validate_key
from duet_bench.ci.errors import ApiError, CommentError, NotPosted
from duet_bench.ci.provider import Comment, Provider

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the upsert did, and the comment as the API answered it."""

    action: Literal["created", "updated", "unchanged"]
    comment: Comment


def upsert(
    provider: Provider,
    body: str,
    *,
    key: str,
    expect_head_sha: str | None = None,
    attempts: int = 3,
) -> Outcome:
    """Create or update the one comment with our marker for ``key``.

    ``attempts`` is how many times a create that may have happened (an ambiguous failure) is
    looked for and tried again; the waits between go through the provider's client (its
    ``sleep`` and ``backoff_s``).

    Raises
    ------
    NotPosted
        The token may not read or write there (401/403/404), or the pull request's head is not
        ``expect_head_sha``; the message says why and the fix.
    CommentError
        The API kept failing or could not be reached.
    """
    validate_key(key)
    if marker_key(body) != key:
        raise ValueError("the body must start with the marker of its key (use build_body)")
    try:
        if expect_head_sha is not None:
            _check_head(provider, expect_head_sha)
        me = provider.identity()
        for attempt in range(1, attempts + 1):
            ours = [
                c
                for c in provider.comments()
                if marker_key(c.body) == key and provider.is_ours(c, me)
            ]
            if ours:
                newest = max(ours, key=lambda c: c.id)
                if newest.body == body:
                    return Outcome("unchanged", newest)
                return Outcome("updated", provider.update(newest.id, body))
            try:
                return Outcome("created", provider.create(body))
            except CommentError as e:
                # A 5xx or a lost connection on a create: it may have been created. Look again.
                if e.ambiguous and attempt < attempts:
                    log.info("creating the comment failed (%s); listing again before retrying", e)
                    provider.http.sleep(provider.http.backoff_s * attempt)
                    continue
                raise
    except ApiError as e:
        if e.status in (401, 403, 404):
            raise NotPosted(
                f"could not comment on {provider.noun} {provider.where}: {e.message}",
                fix=provider.not_permitted_fix(e),
            ) from None
        raise
    raise AssertionError("unreachable")  # pragma: no cover


def _check_head(provider: Provider, expected: str) -> None:
    head = provider.head_sha()
    if head is None or head.lower() != expected.lower():
        raise NotPosted(
            f"{provider.noun} {provider.where} is at {head or 'an unknown commit'}, but these "
            f"results are for {expected}: not posting results of another commit",
            fix="nothing to do if the branch was pushed again: the newer run will comment",
        )
