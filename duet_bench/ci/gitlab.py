"""GitLab: the merge request's notes.

REST endpoints used (``CI_API_V4_URL``, so self-managed GitLab works too), with the token in
the ``PRIVATE-TOKEN`` header:

- ``GET /user``: who the token writes as (a project access token is a bot user of its own).
- ``GET /projects/:id/merge_requests/:iid/notes?per_page=100&sort=asc&order_by=created_at``,
  pages by ``Link`` or ``X-Next-Page``; system notes ("added 1 commit") are skipped.
- ``POST /projects/:id/merge_requests/:iid/notes`` and
  ``PUT /projects/:id/merge_requests/:iid/notes/:note_id``, body ``{"body": ...}``.
- ``GET /projects/:id/merge_requests/:iid``: the head commit (``sha``).

``CI_JOB_TOKEN`` cannot write notes; the token is ``DUET_GITLAB_TOKEN``: a project access
token with the ``api`` scope and the Reporter role, in a masked CI/CD variable.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from duet_bench import __version__
from duet_bench.ci.body import GITLAB_MAX_BODY
from duet_bench.ci.errors import ApiError, CommentError, NotPosted
from duet_bench.ci.http import Http
from duet_bench.ci.provider import Comment, Identity, Provider

TOKEN_VARIABLE = "DUET_GITLAB_TOKEN"
TOKEN_FIX = (
    "create a project access token with the 'api' scope and the Reporter role (Settings > "
    "Access tokens) and store it as a masked CI/CD variable DUET_GITLAB_TOKEN; CI_JOB_TOKEN "
    "cannot write merge request notes"
)


@dataclass(frozen=True, slots=True)
class Target:
    """Where a GitLab note goes, from the environment and the options."""

    api_url: str
    project: str
    iid: int
    token: str | None
    details_url: str | None


def target_from_env(env: Mapping[str, str], *, mr: int | None = None) -> Target:
    """Read the coordinates from the GitLab CI environment; raise :class:`NotPosted` with the
    fix when something is missing."""
    api_url = env.get("CI_API_V4_URL", "")
    if not api_url:
        raise NotPosted(
            "CI_API_V4_URL is not set",
            fix="run in GitLab CI, or set CI_API_V4_URL=https://gitlab.example.com/api/v4",
        )
    project = env.get("CI_PROJECT_ID", "")
    if not project:
        raise NotPosted("CI_PROJECT_ID is not set", fix="run in GitLab CI, or set CI_PROJECT_ID")
    iid = mr
    if iid is None:
        raw = env.get("CI_MERGE_REQUEST_IID", "")
        iid = int(raw) if raw.isdecimal() and raw.isascii() and 0 < int(raw) < 2**53 else None
    if iid is None:
        source = env.get("CI_PIPELINE_SOURCE") or "unknown"
        raise NotPosted(
            f"no merge request to comment on (pipeline source {source!r})",
            fix="run the job in merge request pipelines "
            '(rules: - if: $CI_PIPELINE_SOURCE == "merge_request_event"), or give --pr IID',
        )
    job_url = env.get("CI_JOB_URL")
    return Target(
        api_url=api_url,
        project=project,
        iid=iid,
        token=env.get(TOKEN_VARIABLE) or None,
        details_url=f"{job_url}/artifacts/browse" if job_url else None,
    )


class GitLab(Provider):
    name = "gitlab"
    max_body = GITLAB_MAX_BODY
    noun = "merge request"

    def __init__(self, http: Http, *, project: str, iid: int) -> None:
        super().__init__(http)
        self.project = project
        self.iid = iid
        self._mr_path = f"/projects/{urllib.parse.quote(project, safe='')}/merge_requests/{iid}"

    @classmethod
    def from_target(cls, target: Target, **http: Any) -> GitLab:
        if not target.token:
            raise NotPosted(f"no token: {TOKEN_VARIABLE} is not set", fix=TOKEN_FIX)
        client = Http(
            target.api_url,
            headers={
                "Accept": "application/json",
                "PRIVATE-TOKEN": target.token,
                "User-Agent": f"duet-bench/{__version__}",
            },
            secrets=[target.token],
            **http,
        )
        return cls(client, project=target.project, iid=target.iid)

    @property
    def where(self) -> str:
        return f"!{self.iid} of project {self.project}"

    def identity(self) -> Identity:
        r = self.http.request("GET", self.http.url("/user"))
        data = r.data if isinstance(r.data, Mapping) else {}
        username, uid = data.get("username"), data.get("id")
        if not isinstance(username, str) or isinstance(uid, bool) or not isinstance(uid, int):
            raise CommentError("GET /user: the answer has no username and id")
        return Identity(username, uid)

    def comments(self) -> Iterator[Comment]:
        query: dict[str, str | int] = {"per_page": 100, "sort": "asc", "order_by": "created_at"}
        for page in self.pages(self.http.url(f"{self._mr_path}/notes", query)):
            if not isinstance(page.data, list):
                raise CommentError(f"listing the notes of {self.where}: not a JSON list")
            for item in page.data:
                if isinstance(item, Mapping) and item.get("system") is True:
                    continue
                c = _note(item)
                if c is not None:
                    yield c

    def create(self, body: str) -> Comment:
        url = self.http.url(f"{self._mr_path}/notes")
        r = self.http.request("POST", url, body={"body": body}, idempotent=False)
        return _required(_note(r.data), "POST")

    def update(self, comment_id: int, body: str) -> Comment:
        url = self.http.url(f"{self._mr_path}/notes/{comment_id}")
        r = self.http.request("PUT", url, body={"body": body})
        return _required(_note(r.data), "PUT")

    def head_sha(self) -> str | None:
        r = self.http.request("GET", self.http.url(self._mr_path))
        sha = r.data.get("sha") if isinstance(r.data, Mapping) else None
        return sha if isinstance(sha, str) else None

    def not_permitted_fix(self, error: ApiError) -> str:
        if error.status == 404:
            return (
                f"check that project {self.project} has merge request !{self.iid} and that "
                f"{TOKEN_VARIABLE} is a token of this project (or of a member of it)"
            )
        return TOKEN_FIX


def _note(item: Any) -> Comment | None:
    if not isinstance(item, Mapping):
        return None
    nid = item.get("id")
    if isinstance(nid, bool) or not isinstance(nid, int):
        return None
    body = item.get("body")
    author = item.get("author")
    username = author.get("username") if isinstance(author, Mapping) else None
    uid = author.get("id") if isinstance(author, Mapping) else None
    return Comment(
        id=nid,
        body=body if isinstance(body, str) else "",
        author=username if isinstance(username, str) else "",
        author_id=uid if isinstance(uid, int) and not isinstance(uid, bool) else None,
    )


def _required(c: Comment | None, method: str) -> Comment:
    if c is None:
        raise CommentError(f"{method}: the API answered without a note id")
    return c
