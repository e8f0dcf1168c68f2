"""What a place to comment must answer (:class:`Provider`), and the records it answers with.

One pull request (GitHub) or merge request (GitLab): who our token writes as, every comment
across all pages, create, update, the head commit, and the fix for a refused request. The
upsert (:mod:`duet_bench.ci.upsert`) works on this interface only; :mod:`duet_bench.ci.github`
and :mod:`duet_bench.ci.gitlab` implement it over their REST APIs.
"""

from __future__ import annotations

import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

from duet_bench.ci.errors import ApiError, CommentError
from duet_bench.ci.http import Http, Response, link_next, path_of


@dataclass(frozen=True, slots=True)
class Comment:
    """One comment (GitHub) or note (GitLab) of the pull/merge request."""

    id: int
    body: str
    #: Login (GitHub) or username (GitLab) of the author.
    author: str
    author_id: int | None = None
    url: str | None = None


@dataclass(frozen=True, slots=True)
class Identity:
    """Who our token writes as."""

    login: str
    id: int | None = None


class Provider(ABC):
    """Where the comment goes: one pull request or merge request."""

    #: ``github`` or ``gitlab``.
    name: str
    #: The longest body the API accepts, in characters.
    max_body: int
    #: What people call the thing commented on: ``pull request`` or ``merge request``.
    noun: str

    def __init__(self, http: Http) -> None:
        self.http = http

    @property
    @abstractmethod
    def where(self) -> str:
        """``acme/app#12`` or ``project 42 !7``, for messages."""

    @abstractmethod
    def identity(self) -> Identity: ...

    @abstractmethod
    def comments(self) -> Iterator[Comment]:
        """Every comment of the pull/merge request, oldest first, across all pages."""

    @abstractmethod
    def create(self, body: str) -> Comment: ...

    @abstractmethod
    def update(self, comment_id: int, body: str) -> Comment: ...

    @abstractmethod
    def head_sha(self) -> str | None:
        """The commit the pull/merge request's head points to now."""

    @abstractmethod
    def not_permitted_fix(self, error: ApiError) -> str:
        """What to do about a 401/403/404 answer."""

    def is_ours(self, comment: Comment, me: Identity) -> bool:
        if me.id is not None and comment.author_id is not None:
            return comment.author_id == me.id
        return comment.author.casefold() == me.login.casefold()

    def pages(self, url: str) -> Iterator[Response]:
        """GET ``url`` and every following page (``Link: rel="next"``, else GitLab's
        ``X-Next-Page``), refusing links to another host."""
        seen: set[str] = set()
        next_url: str | None = url
        while next_url is not None:
            if next_url in seen or len(seen) >= 1000:
                raise CommentError(f"pagination of {path_of(url)} does not end")
            seen.add(next_url)
            r = self.http.request("GET", next_url)
            yield r
            next_url = link_next(r.headers.get("link"))
            if next_url is None:
                page = (r.headers.get("x-next-page") or "").strip()
                if page.isdigit():
                    next_url = _with_query(r.url, page=page)


def _with_query(url: str, **params: str) -> str:
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    query.update(params)
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
