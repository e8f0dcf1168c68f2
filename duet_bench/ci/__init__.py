"""Posting the duet report on a pull request (GitHub) or merge request (GitLab).

The last arrow of the pipeline: an analysed results document becomes one comment, created
once and updated on every later push, never duplicated and never someone else's. Read top to
bottom, one job per module:

- :mod:`duet_bench.ci.sanitize`: the untrusted results document reduced to what the comment
  shows, every field type-checked.
- :mod:`duet_bench.ci.body`: the comment text: the marker (the hidden first line that makes a
  comment ours, and its key; written here, read back by the upsert), markdown report, link to
  the artifact, the last pass against injected markup, the size limits.
- :mod:`duet_bench.ci.http`: the HTTP client (standard library only, retries,
  ``Retry-After``, no redirects, the token redacted from every message).
- :mod:`duet_bench.ci.provider`: what a place to comment must answer, and its records.
- :mod:`duet_bench.ci.upsert`: find our comment and update it, or create one, never two.
- :mod:`duet_bench.ci.errors`: failures of the API (exit 3) and reasons not to post (a warning).
- :mod:`duet_bench.ci.github` and :mod:`duet_bench.ci.gitlab`: where the comment goes, read from
  the CI environment, and the two REST APIs (issue comments; merge request notes).

The API base URL always comes from the CI environment (``GITHUB_API_URL``, ``CI_API_V4_URL``),
so GitHub Enterprise Server and self-managed GitLab work as they are. The names ``duet
comment`` uses are importable from here.
"""

from duet_bench.ci.body import build_body, validate_key
from duet_bench.ci.errors import ApiError, CommentError, NotPosted
from duet_bench.ci.provider import Provider
from duet_bench.ci.upsert import Outcome, upsert

__all__ = [
    "ApiError",
    "CommentError",
    "NotPosted",
    "Outcome",
    "Provider",
    "build_body",
    "upsert",
    "validate_key",
]
