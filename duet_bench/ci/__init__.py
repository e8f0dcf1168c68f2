"""Posting the duet report on a pull request (GitHub) or merge request (GitLab).

The last arrow of the pipeline: an analysed results document becomes one comment, created
once and updated on every later push, never duplicated and never someone else's.

- :mod:`duet_bench.ci.comment`: the provider-neutral part: the comment body (the markdown report,
  the hidden marker, the size limits, the last line of defence against markup injected through
  benchmark names), the HTTP client (standard library only, retries, ``Retry-After``, the token
  redacted from every message) and the upsert.
- :mod:`duet_bench.ci.github` and :mod:`duet_bench.ci.gitlab`: where the comment goes, read from the
CI
  environment, and the two REST APIs (issue comments; merge request notes).

The API base URL always comes from the CI environment (``GITHUB_API_URL``, ``CI_API_V4_URL``),
so GitHub Enterprise Server and self-managed GitLab work as they are.
"""
