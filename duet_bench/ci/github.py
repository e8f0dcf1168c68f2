"""GitHub: the pull request's issue comments, and the workflow helpers of the composite action.

REST endpoints used (``GITHUB_API_URL``, so GitHub Enterprise Server works too):

- ``GET /user``: who the token writes as. The Actions ``GITHUB_TOKEN`` is an installation
  token and gets 403 "Resource not accessible by integration" here; its comments are written
  by ``github-actions[bot]``.
- ``GET /repos/{owner}/{repo}/issues/{number}/comments?per_page=100``, pages by ``Link``.
- ``POST /repos/{owner}/{repo}/issues/{number}/comments`` and
  ``PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}``, body ``{"body": ...}``.
- ``GET /repos/{owner}/{repo}/pulls/{number}``: the head commit, to refuse posting results
  of another commit in the ``workflow_run`` pattern.

:func:`error_annotations`, :func:`summary` and :func:`outputs` are what ``duet github
annotate|summary|outputs`` print (:mod:`duet_bench.commands.github`), the steps of the composite
action (``action.yml`` at the repository root) that write workflow commands, the job summary and
the step's outputs; ``python -m duet_bench.ci.github`` still runs that command, with a warning.
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from duet_bench import __version__
from duet_bench.ci.body import GITHUB_MAX_BODY, fit
from duet_bench.ci.errors import ApiError, CommentError, NotPosted
from duet_bench.ci.http import Http
from duet_bench.ci.provider import Comment, Identity, Provider
from duet_bench.ci.sanitize import sanitize
from duet_bench.isolation.privileges import open_as_invoking_user
from duet_bench.report.rows import common_confidence, counts, ratio_cell, rows
from duet_bench.results import ResultsDocument

DEFAULT_API_URL = "https://api.github.com"
#: The author of comments made with the Actions ``GITHUB_TOKEN``.
ACTIONS_BOT = "github-actions[bot]"
API_VERSION = "2022-11-28"
#: GitHub shows at most 10 error annotations per step.
MAX_ERROR_ANNOTATIONS = 10
#: ``$GITHUB_STEP_SUMMARY`` takes at most 1 MiB per step; keep a margin for what others add.
STEP_SUMMARY_LIMIT_BYTES = 1024 * 1024 - 16 * 1024

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_PULL_REF = re.compile(r"refs/pull/([0-9]+)/(?:merge|head)")


def _positive_int(x: Any) -> int | None:
    if isinstance(x, bool) or not isinstance(x, int):
        return None
    return x if 0 < x < 2**53 else None


def pr_number_from_event(payload: Any) -> int | None:
    """The pull request number of a GitHub event payload, or None.

    ``pull_request``/``pull_request_target`` carry ``pull_request.number`` (and ``number``);
    ``issue_comment`` on a pull request carries ``issue.number`` with ``issue.pull_request``;
    ``workflow_run`` lists ``workflow_run.pull_requests``, which is empty for a fork's pull
    request and ambiguous when it holds several. Anything else, or any malformed payload,
    gives None: the payload is data, never trusted to be well formed.
    """
    if not isinstance(payload, Mapping):
        return None
    pr = payload.get("pull_request")
    if isinstance(pr, Mapping):
        n = _positive_int(pr.get("number"))
        if n is not None:
            return n
        return _positive_int(payload.get("number"))
    issue = payload.get("issue")
    if isinstance(issue, Mapping) and isinstance(issue.get("pull_request"), Mapping):
        return _positive_int(issue.get("number"))
    run = payload.get("workflow_run")
    if isinstance(run, Mapping):
        prs = run.get("pull_requests")
        if isinstance(prs, list) and len(prs) == 1 and isinstance(prs[0], Mapping):
            return _positive_int(prs[0].get("number"))
    return None


def pr_number_from_ref(ref: str | None) -> int | None:
    m = _PULL_REF.fullmatch(ref or "")
    return _positive_int(int(m.group(1))) if m else None


@dataclass(frozen=True, slots=True)
class Target:
    """Where a GitHub comment goes, from the environment and the options."""

    api_url: str
    repo: str
    number: int
    token: str | None
    details_url: str | None


def target_from_env(env: Mapping[str, str], *, pr: int | None = None) -> Target:
    """Read the coordinates from the Actions environment; raise :class:`NotPosted` with the
    fix when something is missing."""
    api_url = env.get("GITHUB_API_URL") or DEFAULT_API_URL
    repo = env.get("GITHUB_REPOSITORY", "")
    if not _REPO.fullmatch(repo):
        raise NotPosted(
            "GITHUB_REPOSITORY is not set to owner/name" + (f" (it is {repo!r})" if repo else ""),
            fix="run in GitHub Actions, or set GITHUB_REPOSITORY=owner/name",
        )
    number = pr
    if number is None:
        number = _event_number(env.get("GITHUB_EVENT_PATH"))
    if number is None:
        number = pr_number_from_ref(env.get("GITHUB_REF"))
    if number is None:
        event = env.get("GITHUB_EVENT_NAME") or "unknown"
        raise NotPosted(
            f"no pull request to comment on (event {event!r})",
            fix="run on pull_request events, or give the number: duet comment --pr N",
        )
    server = env.get("GITHUB_SERVER_URL")
    run_id = env.get("GITHUB_RUN_ID")
    details = f"{server}/{repo}/actions/runs/{run_id}" if server and run_id else None
    return Target(
        api_url=api_url,
        repo=repo,
        number=number,
        token=env.get("GITHUB_TOKEN") or None,
        details_url=details,
    )


def _event_number(path: str | None) -> int | None:
    if not path:
        return None
    # A path in the environment: under sudo the invoking user's, opened as them (issue 33).

    try:
        with open(open_as_invoking_user(path), encoding="utf-8") as f:
            payload = json.load(f)
    except (OSError, ValueError, RuntimeError):
        return None
    return pr_number_from_event(payload)


class GitHub(Provider):
    name = "github"
    max_body = GITHUB_MAX_BODY
    noun = "pull request"

    def __init__(self, http: Http, *, repo: str, number: int, author: str | None = None) -> None:
        super().__init__(http)
        self.repo = repo
        self.number = number
        self._author = author
        self._repo_path = "/repos/" + "/".join(
            urllib.parse.quote(p, safe="") for p in repo.split("/")
        )

    @classmethod
    def from_target(cls, target: Target, *, author: str | None = None, **http: Any) -> GitHub:
        if not target.token:
            raise NotPosted(
                "no token: GITHUB_TOKEN is not set",
                fix="give the step the job's token: env: GITHUB_TOKEN: ${{ github.token }}",
            )
        client = Http(
            target.api_url,
            headers={
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {target.token}",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": f"duet-bench/{__version__}",
            },
            secrets=[target.token],
            **http,
        )
        return cls(client, repo=target.repo, number=target.number, author=author)

    @property
    def where(self) -> str:
        return f"{self.repo}#{self.number}"

    def identity(self) -> Identity:
        if self._author:
            return Identity(self._author)
        try:
            r = self.http.request("GET", self.http.url("/user"))
        except ApiError as e:
            if e.status in (401, 403, 404):
                # The Actions token is an app installation token: /user is not for it.
                return Identity(ACTIONS_BOT)
            raise
        login = r.data.get("login") if isinstance(r.data, Mapping) else None
        if not isinstance(login, str):
            raise CommentError("GET /user: the answer has no login")
        uid = r.data.get("id")
        return Identity(login, uid if isinstance(uid, int) and not isinstance(uid, bool) else None)

    def comments(self) -> Iterator[Comment]:
        url = self.http.url(f"{self._repo_path}/issues/{self.number}/comments", {"per_page": 100})
        for page in self.pages(url):
            if not isinstance(page.data, list):
                raise CommentError(f"listing the comments of {self.where}: not a JSON list")
            for item in page.data:
                c = _comment(item)
                if c is not None:
                    yield c

    def create(self, body: str) -> Comment:
        url = self.http.url(f"{self._repo_path}/issues/{self.number}/comments")
        r = self.http.request("POST", url, body={"body": body}, idempotent=False)
        return _created(_comment(r.data), "POST")

    def update(self, comment_id: int, body: str) -> Comment:
        url = self.http.url(f"{self._repo_path}/issues/comments/{comment_id}")
        r = self.http.request("PATCH", url, body={"body": body})
        return _created(_comment(r.data), "PATCH")

    def head_sha(self) -> str | None:
        r = self.http.request("GET", self.http.url(f"{self._repo_path}/pulls/{self.number}"))
        head = r.data.get("head") if isinstance(r.data, Mapping) else None
        sha = head.get("sha") if isinstance(head, Mapping) else None
        return sha if isinstance(sha, str) else None

    def not_permitted_fix(self, error: ApiError) -> str:
        if error.status == 401:
            return (
                "the token is invalid or expired; give the step the job's token: "
                "env: GITHUB_TOKEN: ${{ github.token }}"
            )
        if error.status == 404:
            return (
                f"check that {self.repo} has pull request #{self.number} (--pr) and that the "
                "token belongs to this repository"
            )
        return (
            "a pull request from a fork gets a read-only GITHUB_TOKEN: post from a "
            "workflow_run workflow (ci-templates/github/workflows/duet-comment.yml); for "
            "pull requests from branches of this repository give the job "
            "'permissions: pull-requests: write'"
        )


def _comment(item: Any) -> Comment | None:
    if not isinstance(item, Mapping):
        return None
    cid = item.get("id")
    if isinstance(cid, bool) or not isinstance(cid, int):
        return None
    body = item.get("body")
    user = item.get("user")
    login = user.get("login") if isinstance(user, Mapping) else None
    uid = user.get("id") if isinstance(user, Mapping) else None
    url = item.get("html_url")
    return Comment(
        id=cid,
        body=body if isinstance(body, str) else "",
        author=login if isinstance(login, str) else "",
        author_id=uid if isinstance(uid, int) and not isinstance(uid, bool) else None,
        url=url if isinstance(url, str) else None,
    )


def _created(c: Comment | None, method: str) -> Comment:
    if c is None:
        raise CommentError(f"{method}: the API answered without a comment id")
    return c


# --------------------------------------------------------------------------------------------
# Workflow commands and the job summary (the composite action's steps)


def escape_data(text: str) -> str:
    """Escape the message of a workflow command: a newline in a benchmark name must not start
    a command of its own."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def error_annotations(doc: ResultsDocument, *, limit: int = MAX_ERROR_ANNOTATIONS) -> list[str]:
    """``::error`` workflow commands for the regressions (at most ``limit``), and one
    ``::notice`` that counts the rest."""
    items = rows(sanitize(doc))
    shared = common_confidence(items)
    level = f" at {shared * 100:g}% confidence" if shared is not None else ""
    bad = [r for r in items if r.verdict == "regression"]
    out = []
    for r in bad[:limit]:
        message = f"{r.name}: {r.change} (ratio {ratio_cell(r, shared)}{level})"
        out.append(f"::error title={escape_property('duet: regression')}::{escape_data(message)}")
    if len(bad) > limit:
        more = len(bad) - limit
        out.append(
            f"::notice title=duet::{more} more regression{'s' if more > 1 else ''}: "
            "see the job summary"
        )
    return out


def summary(report: str | None, *, limit_bytes: int = STEP_SUMMARY_LIMIT_BYTES) -> str:
    """The markdown for ``$GITHUB_STEP_SUMMARY``: the report, within GitHub's size limit."""
    if report is None:
        return "## duet\n\nduet wrote no report: see the job log for what failed.\n"
    return fit(
        report.rstrip("\n"),
        head="",
        footer="",
        max_length=limit_bytes,
        details_url=None,
        container="a job summary",
        measure=lambda s: len(s.encode("utf-8")),
    ).lstrip("\n")


def outputs(doc: ResultsDocument) -> list[str]:
    """``name=value`` lines for ``$GITHUB_OUTPUT``: the verdict of the whole comparison and the
    count per verdict, for the steps after the action (``steps.duet.outputs.verdict``)."""
    if any(b.analysis is None for b in doc.benchmarks):
        from duet_bench.analysis import AnalysisSettings, analyze_document

        doc = analyze_document(doc, AnalysisSettings())
    c = counts(rows(doc))
    order = ("regression", "improvement", "inconclusive", "no change")
    verdict = next((v for v in order if c.get(v)), "")
    return [
        f"verdict={verdict}",
        f"regressions={c.get('regression', 0)}",
        f"improvements={c.get('improvement', 0)}",
        f"inconclusive={c.get('inconclusive', 0)}",
        f"unchanged={c.get('no change', 0)}",
    ]


def deprecated_entry() -> NoReturn:
    """``python -m duet_bench.ci.github``, what action.yml ran before ``duet github``, kept for
    workflows that copied its steps: a warning that names ``duet github`` (on stderr, whose
    lines GitHub also reads as workflow commands), then ``python -m duet_bench github`` with the
    same arguments in this process (exec: its exit code is the command's)."""
    text = (
        "`python -m duet_bench.ci.github` is deprecated: run `duet github` with the same arguments"
    )
    if os.environ.get("GITHUB_ACTIONS") == "true":  # ``text`` has nothing to escape (%, CR, LF)
        print(f"::warning title=duet::{text}", file=sys.stderr, flush=True)
    else:
        print(f"duet: warning: {text}", file=sys.stderr, flush=True)
    os.execv(sys.executable, [sys.executable, "-m", "duet_bench", "github", *sys.argv[1:]])


if __name__ == "__main__":  # pragma: no cover - tests run it as a process
    deprecated_entry()
