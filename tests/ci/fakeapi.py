"""A local HTTP server that speaks the parts of the GitHub and GitLab REST APIs duet uses.

Real sockets on 127.0.0.1 (``http.server`` in a thread), answers shaped like the documented
examples of each API, and the failures CI meets: pagination across pages (with GitHub's habit
of linking ``/repositories/{id}/...`` instead of the path that was asked), comments of other
people carrying our marker, a fork's read-only token (403 "Resource not accessible by
integration"), 5xx and 429 answers with ``Retry-After``, rate limits.

GitHub is served under ``/api/v3`` (the GitHub Enterprise Server layout, so the client must
take its base URL, path included, from ``GITHUB_API_URL``); GitLab under ``/api/v4``.

Use it as a context manager or through the ``fake_api`` fixture of ``tests/ci/conftest.py``::

    with FakeApi() as api:
        api.github_pull("acme/app", 12, head_sha="ab" * 20)
        ... point GITHUB_API_URL at api.github_url and post ...
        assert api.github_comments("acme/app", 12)[0]["body"].startswith("<!-- duet-report")
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GITHUB_PREFIX = "/api/v3"
GITLAB_PREFIX = "/api/v4"

#: The Actions GITHUB_TOKEN: an installation token, author ``github-actions[bot]``.
ACTIONS_TOKEN = "ghs_fakeActionsToken0123456789abcdefABCDEF"
#: A personal access token of ``octocat``.
PAT_TOKEN = "ghp_fakePersonalToken0123456789abcdefABCD"
#: A GitLab project access token (its bot user).
GITLAB_TOKEN = "glpat-fakeProjectToken0123456789ab"
#: A GitLab user's personal token.
GITLAB_HUMAN_TOKEN = "glpat-fakeHumanToken0123456789abcd"

ACTIONS_BOT = {
    "login": "github-actions[bot]",
    "id": 41898282,
    "node_id": "MDM6Qm90NDE4OTgyODI=",
    "avatar_url": "https://avatars.githubusercontent.com/in/15368?v=4",
    "type": "Bot",
    "site_admin": False,
}
OCTOCAT = {
    "login": "octocat",
    "id": 1,
    "node_id": "MDQ6VXNlcjE=",
    "avatar_url": "https://github.com/images/error/octocat_happy.gif",
    "type": "User",
    "site_admin": False,
}
MALLORY = {
    "login": "mallory",
    "id": 666,
    "node_id": "MDQ6VXNlcjY2Ng==",
    "avatar_url": "https://github.com/images/error/octocat_happy.gif",
    "type": "User",
    "site_admin": False,
}
GITLAB_BOT = {
    "id": 77,
    "username": "project_42_bot_0123456789",
    "name": "duet",
    "state": "active",
    "avatar_url": "https://gitlab.example.com/uploads/-/system/user/avatar/77/avatar.png",
    "web_url": "https://gitlab.example.com/project_42_bot_0123456789",
}
GITLAB_HUMAN = {
    "id": 1,
    "username": "pipin",
    "name": "Pip",
    "state": "active",
    "avatar_url": "https://gitlab.example.com/uploads/user/avatar/1/pipin.png",
    "web_url": "https://gitlab.example.com/pipin",
}

_GITHUB_TOKENS: dict[str, dict[str, Any] | None] = {ACTIONS_TOKEN: None, PAT_TOKEN: OCTOCAT}
_GITHUB_AUTHOR = {ACTIONS_TOKEN: ACTIONS_BOT, PAT_TOKEN: OCTOCAT}
_GITLAB_TOKENS = {GITLAB_TOKEN: GITLAB_BOT, GITLAB_HUMAN_TOKEN: GITLAB_HUMAN}

_NOT_ACCESSIBLE = "Resource not accessible by integration"


@dataclass
class Fault:
    """Answer the next ``times`` requests matching ``method`` and ``path`` (a regex searched
    in the path without the prefix) with ``status``. ``apply`` first carries the request out
    (a create that happened although the answer is a 502). ``{authorization}`` in the body is
    replaced by the request's credentials, as a careless proxy might echo them, and
    ``{authorization_base64}`` by their base64 form (a server that logs the header encoded)."""

    method: str
    path: str
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1
    apply: bool = False


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


class FakeApi:
    def __init__(self, *, per_page_max: int = 100) -> None:
        self.per_page_max = per_page_max
        #: GitLab may leave out the Link header (large collections); X-Next-Page remains.
        self.gitlab_link_header = True
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1001)
        self._clock = itertools.count(0)
        self._gh_comments: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self._gh_pulls: dict[tuple[str, int], dict[str, Any]] = {}
        self._gh_repo_ids: dict[str, int] = {}
        self._gl_notes: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self._gl_mrs: dict[tuple[str, int], dict[str, Any]] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> FakeApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def github_url(self) -> str:
        return self.url + GITHUB_PREFIX

    @property
    def gitlab_url(self) -> str:
        return self.url + GITLAB_PREFIX

    # -- state --------------------------------------------------------------------------------

    def github_pull(self, repo: str, number: int, *, head_sha: str, fork: bool = False) -> None:
        with self._lock:
            self._gh_pulls[(repo, number)] = {"head_sha": head_sha, "fork": fork}
            self._gh_repo_ids.setdefault(repo, 1296269 + len(self._gh_repo_ids))
            self._gh_comments.setdefault((repo, number), [])

    def github_comment(self, repo: str, number: int, body: str, *, user: dict[str, Any]) -> int:
        with self._lock:
            return self._gh_add(repo, number, body, user)["id"]  # type: ignore[no-any-return]

    def github_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for c in self._gh_comments.get((repo, number), [])]

    def gitlab_mr(self, project: str, iid: int, *, sha: str) -> None:
        with self._lock:
            self._gl_mrs[(project, iid)] = {"sha": sha}
            self._gl_notes.setdefault((project, iid), [])

    def gitlab_note(
        self, project: str, iid: int, body: str, *, author: dict[str, Any], system: bool = False
    ) -> int:
        with self._lock:
            return self._gl_add(project, iid, body, author, system=system)["id"]  # type: ignore[no-any-return]

    def gitlab_notes(self, project: str, iid: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(n) for n in self._gl_notes.get((project, iid), [])]

    def fail(self, fault: Fault) -> None:
        with self._lock:
            self.faults.append(fault)

    def calls(self, method: str | None = None) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if method is None or r.method == method]

    # -- internals ----------------------------------------------------------------------------

    def _now(self) -> str:
        t = next(self._clock)
        return f"2024-05-01T12:{t // 60 % 60:02d}:{t % 60:02d}Z"

    def _gh_add(self, repo: str, number: int, body: str, user: dict[str, Any]) -> dict[str, Any]:
        cid = next(self._ids)
        now = self._now()
        c = {
            "id": cid,
            "node_id": f"IC_kwDOfake{cid}",
            "url": f"https://api.github.com/repos/{repo}/issues/comments/{cid}",
            "html_url": f"https://github.com/{repo}/pull/{number}#issuecomment-{cid}",
            "body": body,
            "user": dict(user),
            "created_at": now,
            "updated_at": now,
            "issue_url": f"https://api.github.com/repos/{repo}/issues/{number}",
            "author_association": "NONE" if user["type"] == "Bot" else "CONTRIBUTOR",
            "performed_via_github_app": None,
        }
        self._gh_comments.setdefault((repo, number), []).append(c)
        return c

    def _gl_add(
        self, project: str, iid: int, body: str, author: dict[str, Any], *, system: bool = False
    ) -> dict[str, Any]:
        nid = next(self._ids)
        now = self._now()
        n = {
            "id": nid,
            "type": None,
            "body": body,
            "attachment": None,
            "author": dict(author),
            "created_at": now,
            "updated_at": now,
            "system": system,
            "noteable_id": 5000 + iid,
            "noteable_type": "MergeRequest",
            "project_id": int(project) if project.isdigit() else 42,
            "noteable_iid": iid,
            "resolvable": False,
            "confidential": False,
            "internal": False,
            "imported": False,
            "imported_from": "none",
        }
        self._gl_notes.setdefault((project, iid), []).append(n)
        return n

    def _fault_for(self, method: str, path: str) -> Fault | None:
        for f in self.faults:
            if f.method == method and re.search(f.path, path) and f.times > 0:
                f.times -= 1
                return f
        return None


class _Answer(Exception):
    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.body = body
        self.headers = headers or {}


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "FakeApi/1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def _serve(self, method: str) -> None:
            parts = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(parts.query))
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            with api._lock:
                api.requests.append(Recorded(method, parts.path, query, headers, body))
                fault = api._fault_for(method, parts.path)
            try:
                if fault is not None and not fault.apply:
                    raise self._fault(fault, headers)
                if parts.path.startswith(GITHUB_PREFIX + "/"):
                    status, data, extra = _github(
                        api, method, parts.path[len(GITHUB_PREFIX) :], query, headers, body
                    )
                elif parts.path.startswith(GITLAB_PREFIX + "/"):
                    status, data, extra = _gitlab(
                        api, method, parts.path[len(GITLAB_PREFIX) :], query, headers, body
                    )
                else:
                    raise _Answer(404, {"message": "Not Found"})
                if fault is not None:
                    raise self._fault(fault, headers)
            except _Answer as a:
                status, data, extra = a.status, a.body, a.headers
            self._send(status, data, extra)

        def _fault(self, fault: Fault, headers: dict[str, str]) -> _Answer:
            body = fault.body
            credentials = headers.get("authorization") or headers.get("private-token", "")
            encoded = base64.b64encode(credentials.encode()).decode()

            def echo(text: str) -> str:
                return text.replace("{authorization}", credentials).replace(
                    "{authorization_base64}", encoded
                )

            if isinstance(body, str):
                body = echo(body)
            elif isinstance(body, dict):
                body = {k: echo(v) if isinstance(v, str) else v for k, v in body.items()}
            return _Answer(fault.status, body, dict(fault.headers))

        def _send(self, status: int, data: Any, headers: dict[str, str]) -> None:
            if isinstance(data, str):
                raw = data.encode("utf-8")
                ctype = "text/html; charset=utf-8"
            else:
                raw = b"" if data is None else json.dumps(data).encode("utf-8")
                ctype = "application/json; charset=utf-8"
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(raw)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

    return Handler


def _page(
    api: FakeApi, items: list[dict[str, Any]], query: dict[str, str], default: int
) -> tuple[list[dict[str, Any]], int, int, int]:
    try:
        per_page = max(1, min(int(query.get("per_page", default)), 100, api.per_page_max))
        page = max(1, int(query.get("page", "1")))
    except ValueError as e:
        raise _Answer(400, {"message": "invalid pagination"}) from e
    pages = max(1, -(-len(items) // per_page))
    return items[(page - 1) * per_page : page * per_page], page, per_page, pages


def _github(
    api: FakeApi,
    method: str,
    path: str,
    query: dict[str, str],
    headers: dict[str, str],
    body: Any,
) -> tuple[int, Any, dict[str, str]]:
    auth = headers.get("authorization", "")
    token = auth.split(" ", 1)[1] if auth.lower().startswith(("bearer ", "token ")) else None
    if token not in _GITHUB_TOKENS:
        raise _Answer(
            401,
            {
                "message": "Bad credentials",
                "documentation_url": "https://docs.github.com/rest",
                "status": "401",
            },
        )
    assert token is not None
    if "user-agent" not in headers:
        raise _Answer(403, {"message": "Request forbidden by administrative rules."})
    doc = "https://docs.github.com/rest"
    if path == "/user" and method == "GET":
        user = _GITHUB_TOKENS[token]
        if user is None:
            raise _Answer(
                403,
                {
                    "message": _NOT_ACCESSIBLE,
                    "documentation_url": f"{doc}/users/users#get-the-authenticated-user",
                    "status": "403",
                },
            )
        return 200, dict(user, name="The Octocat", public_repos=2), {}
    with api._lock:
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", path)
        m_alias = re.fullmatch(r"/repositories/(\d+)/issues/(\d+)/comments", path)
        if m_alias:
            ids = {v: k for k, v in api._gh_repo_ids.items()}
            repo_of_id = ids.get(int(m_alias.group(1)))
            if repo_of_id is None:
                raise _Answer(
                    404, {"message": "Not Found", "documentation_url": doc, "status": "404"}
                )
            m_repo, m_number = repo_of_id, int(m_alias.group(2))
        elif m:
            m_repo, m_number = urllib.parse.unquote(m.group(1)), int(m.group(2))
        if m or m_alias:
            key = (m_repo, m_number)
            if key not in api._gh_pulls:
                raise _Answer(
                    404, {"message": "Not Found", "documentation_url": doc, "status": "404"}
                )
            if method == "GET":
                items, page, per_page, pages = _page(api, api._gh_comments[key], query, 30)
                links = []
                repo_id = api._gh_repo_ids[m_repo]
                base = f"{api.github_url}/repositories/{repo_id}/issues/{m_number}/comments"
                if page < pages:
                    links.append(f'<{base}?per_page={per_page}&page={page + 1}>; rel="next"')
                    links.append(f'<{base}?per_page={per_page}&page={pages}>; rel="last"')
                if page > 1:
                    links.append(f'<{base}?per_page={per_page}&page={page - 1}>; rel="prev"')
                    links.append(f'<{base}?per_page={per_page}&page=1>; rel="first"')
                return 200, items, ({"Link": ", ".join(links)} if links else {})
            if method == "POST":
                if api._gh_pulls[key]["fork"] and token == ACTIONS_TOKEN:
                    raise _Answer(
                        403,
                        {
                            "message": _NOT_ACCESSIBLE,
                            "documentation_url": f"{doc}/issues/comments#create-an-issue-comment",
                            "status": "403",
                        },
                    )
                if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                    raise _Answer(422, {"message": "Invalid request.", "status": "422"})
                if len(body["body"]) > 65536:
                    raise _Answer(
                        422,
                        {
                            "message": "Validation Failed",
                            "errors": [
                                {
                                    "resource": "IssueComment",
                                    "code": "unprocessable",
                                    "field": "data",
                                    "message": "Body is too long (maximum is 65536 characters)",
                                }
                            ],
                            "documentation_url": f"{doc}/issues/comments#create-an-issue-comment",
                            "status": "422",
                        },
                    )
                c = api._gh_add(m_repo, m_number, body["body"], _GITHUB_AUTHOR[token])
                return 201, c, {"Location": c["url"]}
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)", path)
        if m and method == "PATCH":
            repo, cid = urllib.parse.unquote(m.group(1)), int(m.group(2))
            for (r, n), comments in api._gh_comments.items():
                for c in comments:
                    if r == repo and c["id"] == cid:
                        if api._gh_pulls[(r, n)]["fork"] and token == ACTIONS_TOKEN:
                            raise _Answer(403, {"message": _NOT_ACCESSIBLE, "status": "403"})
                        if c["user"]["id"] != _GITHUB_AUTHOR[token]["id"]:
                            # Only the author (or an admin) may edit a comment.
                            raise _Answer(
                                403,
                                {
                                    "message": "Must have admin rights to Repository.",
                                    "status": "403",
                                },
                            )
                        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                            raise _Answer(422, {"message": "Invalid request.", "status": "422"})
                        if len(body["body"]) > 65536:
                            raise _Answer(422, {"message": "Validation Failed", "status": "422"})
                        c["body"] = body["body"]
                        c["updated_at"] = api._now()
                        return 200, dict(c), {}
            raise _Answer(404, {"message": "Not Found", "documentation_url": doc, "status": "404"})
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)", path)
        if m and method == "GET":
            repo, number = urllib.parse.unquote(m.group(1)), int(m.group(2))
            pull = api._gh_pulls.get((repo, number))
            if pull is None:
                raise _Answer(
                    404, {"message": "Not Found", "documentation_url": doc, "status": "404"}
                )
            return (
                200,
                {
                    "url": f"https://api.github.com/repos/{repo}/pulls/{number}",
                    "id": 1000 + number,
                    "number": number,
                    "state": "open",
                    "head": {"label": "fork:branch", "ref": "branch", "sha": pull["head_sha"]},
                    "base": {"label": "acme:main", "ref": "main", "sha": "0" * 40},
                },
                {},
            )
    raise _Answer(404, {"message": "Not Found", "documentation_url": doc, "status": "404"})


def _gitlab(
    api: FakeApi,
    method: str,
    path: str,
    query: dict[str, str],
    headers: dict[str, str],
    body: Any,
) -> tuple[int, Any, dict[str, str]]:
    token = headers.get("private-token")
    if token not in _GITLAB_TOKENS:
        raise _Answer(401, {"message": "401 Unauthorized"})
    assert token is not None
    me = _GITLAB_TOKENS[token]
    if path == "/user" and method == "GET":
        return 200, dict(me, bot=me is GITLAB_BOT, is_admin=False), {}
    with api._lock:
        m = re.fullmatch(r"/projects/([^/]+)/merge_requests/(\d+)(/notes(?:/(\d+))?)?", path)
        if not m:
            raise _Answer(404, {"error": "404 Not Found"})
        project, iid = urllib.parse.unquote(m.group(1)), int(m.group(2))
        key = (project, iid)
        if key not in api._gl_mrs:
            raise _Answer(404, {"message": "404 Not found"})
        if m.group(3) is None:
            if method != "GET":
                raise _Answer(405, {"message": "405 Method Not Allowed"})
            return (
                200,
                {"id": 5000 + iid, "iid": iid, "project_id": 42, "sha": api._gl_mrs[key]["sha"]},
                {},
            )
        note_id = m.group(4)
        if note_id is None and method == "GET":
            notes = api._gl_notes[key]
            if query.get("sort", "desc") == "desc":
                notes = list(reversed(notes))
            items, page, per_page, pages = _page(api, notes, query, 20)
            base = f"{api.gitlab_url}/projects/{m.group(1)}/merge_requests/{iid}/notes"
            keep = {k: v for k, v in query.items() if k not in ("page", "per_page")}
            extra = "".join(f"&{k}={v}" for k, v in sorted(keep.items()))
            links = [
                f'<{base}?page=1&per_page={per_page}{extra}>; rel="first"',
                f'<{base}?page={pages}&per_page={per_page}{extra}>; rel="last"',
            ]
            if page < pages:
                links.insert(0, f'<{base}?page={page + 1}&per_page={per_page}{extra}>; rel="next"')
            out = {
                "X-Page": str(page),
                "X-Per-Page": str(per_page),
                "X-Next-Page": str(page + 1) if page < pages else "",
                "X-Prev-Page": str(page - 1) if page > 1 else "",
                "X-Total": str(len(notes)),
                "X-Total-Pages": str(pages),
            }
            if api.gitlab_link_header:
                out["Link"] = ", ".join(links)
            return 200, items, out
        if note_id is None and method == "POST":
            if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                raise _Answer(400, {"error": "body is missing"})
            if len(body["body"]) > 1_000_000:
                raise _Answer(
                    400, {"message": {"note": ["is too long (maximum is 1000000 characters)"]}}
                )
            return 201, api._gl_add(project, iid, body["body"], me), {}
        if note_id is not None and method == "PUT":
            for n in api._gl_notes[key]:
                if n["id"] == int(note_id):
                    if n["author"]["id"] != me["id"]:
                        raise _Answer(403, {"message": "403 Forbidden"})
                    n["body"] = body["body"]
                    n["updated_at"] = api._now()
                    return 200, dict(n), {}
            raise _Answer(404, {"message": "404 Note Not Found"})
    raise _Answer(405, {"message": "405 Method Not Allowed"})


def iter_bodies(api: FakeApi, method: str) -> Iterator[str]:
    """The comment bodies sent with ``method`` requests."""
    for r in api.calls(method):
        if isinstance(r.body, dict) and isinstance(r.body.get("body"), str):
            yield r.body["body"]
