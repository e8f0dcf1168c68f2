"""The single duet comment: its body, the HTTP client that posts it, and the upsert.

Three parts, top to bottom:

1. **Body.** The markdown report (:func:`duet_bench.report.markdown.render_markdown`) under a hidden
   marker line ``<!-- duet-report v1 key=K -->``, kept within the provider's size limit: first
   the folded full table goes (the artifact has it), then the rest is cut at a line with a link
   to the artifact. The results file may come from a pull request's own run (the fork-safe
   GitHub pattern downloads it from an unprivileged workflow), so every field that reaches the
   markdown is type-checked first, and a last pass over the rendered text escapes any HTML tag
   but the few the report itself writes and breaks every ``@mention``.
2. **HTTP.** ``urllib`` from the standard library: JSON in and out, no redirects (a redirect
   would carry the token to another host), retries of 5xx, 429 and rate-limited 403 answers
   honouring ``Retry-After``, and the token redacted from every message and exception.
3. **Upsert.** Find the newest comment that carries our marker *and* was written by our own
   identity (following pagination), update it, or create one. A create that failed with a 5xx
   may still have happened, so the comments are listed again before creating again: a flaky
   API never leaves two duet comments.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from http.client import HTTPException
from typing import Any, Literal

from duet_bench.errors import DuetError
from duet_bench.metrics import METRICS
from duet_bench.results import BenchmarkRecord, ResultsDocument

log = logging.getLogger(__name__)

#: The marker that makes a comment ours; ``key`` lets several suites keep one comment each.
MARKER_FORMAT = "<!-- duet-report v1 key={key} -->"
_MARKER = re.compile(r"<!-- duet-report(?: [^\n]*?)? key=([A-Za-z0-9._-]{1,64}) -->")
_KEY = re.compile(r"[A-Za-z0-9._-]{1,64}")
DEFAULT_KEY = "default"

_VERDICTS = ("regression", "improvement", "no change", "inconclusive")


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


def validate_key(key: str) -> str:
    """The comment key, checked: it goes inside an HTML comment, so ``-->`` must be impossible."""
    if not _KEY.fullmatch(key):
        from duet_bench.errors import UsageError

        raise UsageError(
            f"comment key {key!r} is not 1 to 64 letters, digits, '.', '_' or '-'",
            fix="use e.g. --key default or --key parser-suite",
        )
    return key


def marker(key: str) -> str:
    return MARKER_FORMAT.format(key=validate_key(key))


def marker_key(body: str) -> str | None:
    """The key of the marker on the first line of ``body``, or None when it has none."""
    first = body.split("\n", 1)[0].strip()
    m = _MARKER.fullmatch(first)
    return m.group(1) if m else None


# --------------------------------------------------------------------------------------------
# Redaction


class Redactor:
    """Replaces every secret (and its URL-encoded form) by ``***`` in a text."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        forms: set[str] = set()
        for s in secrets:
            # Very short "secrets" would redact ordinary words and hide real errors.
            if s and len(s) >= 4:
                forms.update({s, urllib.parse.quote(s, safe=""), urllib.parse.quote_plus(s)})
        self._forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, "***")
        return text


# --------------------------------------------------------------------------------------------
# HTTP


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    #: Header names in lower case.
    headers: Mapping[str, str]
    data: Any
    url: str


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        # urllib would resend the Authorization header to wherever the redirect points.
        return None


RETRYABLE_5XX = frozenset({500, 502, 503, 504})


class Http:
    """A small JSON client for one API: base URL, fixed headers, retries, redaction.

    Parameters
    ----------
    base_url
        ``https://api.github.com`` or ``https://gitlab.example.com/api/v4``; every request and
        every pagination link must stay on this scheme, host and port.
    headers
        Sent with every request (the token goes here, never in a URL).
    secrets
        Redacted from every message.
    attempts
        Tries per request for retryable answers (5xx, 429, rate-limited 403, network errors).
    backoff_s
        First wait when the server says nothing; doubles on every retry.
    max_wait_s
        Longest single wait; a server that asks for more is reported instead of waited for.
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        secrets: Iterable[str | None] = (),
        timeout_s: float = 30.0,
        attempts: int = 5,
        backoff_s: float = 1.0,
        max_wait_s: float = 120.0,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise NotPosted(
                f"the API URL {base_url!r} is not an http(s) URL",
                fix="check GITHUB_API_URL / CI_API_V4_URL in the job's environment",
            )
        self.base_url = base_url.rstrip("/")
        self._origin = (parts.scheme, parts.netloc.lower())
        self._headers = dict(headers)
        self.redact = Redactor(secrets)
        self.timeout_s = timeout_s
        self.attempts = attempts
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        self._sleep = sleep or time.sleep
        self._clock = clock or time.time
        self._opener = urllib.request.build_opener(_NoRedirect())

    def url(self, path: str, query: Mapping[str, str | int] | None = None) -> str:
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        return url

    def same_origin(self, url: str) -> bool:
        parts = urllib.parse.urlsplit(url)
        return (parts.scheme, parts.netloc.lower()) == self._origin

    def request(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        idempotent: bool = True,
    ) -> Response:
        """Send one request, retrying what may be retried; raise :class:`ApiError` on an error
        answer and :class:`CommentError` when the server cannot be reached.

        A request that is not ``idempotent`` (a create) is retried only when the server
        certainly did not act on it (429, rate-limited 403); after a 5xx or a lost connection
        the error is raised with ``ambiguous`` set, for the caller to look before retrying.
        """
        if not self.same_origin(url):
            raise CommentError(
                f"refusing to send the token to {self.redact(_origin_of(url))}, which is not "
                f"the API at {self.redact(self.base_url)}",
                fix="the API returned a link to another host; check the API URL variable",
            )
        shown = self.redact(_path_of(url))
        for attempt in range(1, self.attempts + 1):
            try:
                response = self._send(method, url, body)
            except (urllib.error.URLError, HTTPException, OSError) as e:
                reason = getattr(e, "reason", None) or e
                if attempt < self.attempts and idempotent:
                    wait = self._backoff(attempt)
                    log.info("%s %s: %s; retrying in %.0f s", method, shown, reason, wait)
                    self._sleep(wait)
                    continue
                raise CommentError(
                    self.redact(
                        f"{method} {shown}: could not reach {self.base_url}: {reason} "
                        f"({attempt} attempt{'s' if attempt > 1 else ''})"
                    ),
                    fix="check the API URL and the runner's network; re-run the job",
                    ambiguous=not idempotent,
                ) from None
            log.debug("%s %s -> %d", method, shown, response.status)
            if 200 <= response.status < 300:
                return response
            retry_in = self._retry_wait(response, attempt, idempotent=idempotent)
            if retry_in is None or attempt == self.attempts:
                error = self._error(method, shown, response, attempt)
                error.ambiguous = not idempotent and response.status >= 500
                raise error
            if retry_in > self.max_wait_s:
                raise ApiError(
                    self.redact(
                        f"{method} {shown}: HTTP {response.status}: rate limited for "
                        f"{retry_in:.0f} s, longer than duet waits ({self.max_wait_s:.0f} s)"
                    ),
                    status=response.status,
                    fix="re-run the job later",
                )
            log.info("%s %s: HTTP %d; retrying in %.1f s", method, shown, response.status, retry_in)
            self._sleep(retry_in)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, method: str, url: str, body: Any) -> Response:
        data = None
        headers = dict(self._headers)
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json; charset=utf-8"
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=self.timeout_s) as r:
                return _response(r.status, r.headers, r.read(), url)
        except urllib.error.HTTPError as e:
            with e:
                raw = e.read()
            return _response(e.code, e.headers, raw, url)

    def _backoff(self, attempt: int) -> float:
        return float(self.backoff_s * 2 ** (attempt - 1))

    def _retry_wait(self, r: Response, attempt: int, *, idempotent: bool) -> float | None:
        """Seconds to wait before retrying ``r``, or None when it must not be retried.

        GitHub's rules for rate limits: wait ``Retry-After`` seconds when it is given; else,
        with ``x-ratelimit-remaining: 0``, until ``x-ratelimit-reset``; else (a secondary
        limit without either header) at least a minute.
        """
        retry_after = _retry_after(r.headers.get("retry-after"), self._clock())
        limited = r.status == 429 or (r.status == 403 and _rate_limited(r))
        if limited:
            if retry_after is not None:
                return retry_after
            if r.headers.get("x-ratelimit-remaining") == "0":
                reset = _number(r.headers.get("x-ratelimit-reset"))
                if reset is not None:
                    return max(0.0, reset - self._clock()) + 1.0
            return max(60.0, self._backoff(attempt)) if r.status == 403 else self._backoff(attempt)
        if r.status in RETRYABLE_5XX and idempotent:
            return retry_after if retry_after is not None else self._backoff(attempt)
        return None

    def _error(self, method: str, shown: str, r: Response, attempt: int) -> ApiError:
        tries = f" (after {attempt} attempts)" if attempt > 1 else ""
        detail = _server_message(r.data)
        text = f"{method} {shown}: HTTP {r.status}{tries}"
        if detail:
            text += f": {detail}"
        return ApiError(self.redact(text), status=r.status)


def _response(status: int, headers: Any, raw: bytes, url: str) -> Response:
    lowered = {k.lower(): v for k, v in headers.items()} if headers is not None else {}
    text = raw.decode("utf-8", errors="replace")
    data: Any
    try:
        data = json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        data = text
    return Response(status=status, headers=lowered, data=data, url=url)


def _origin_of(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _path_of(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _retry_after(text: str | None, now: float) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date (RFC 9110 10.2.3)."""
    if text is None:
        return None
    seconds = _number(text)
    if seconds is not None:
        return max(0.0, seconds)
    try:
        when = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now)


def _rate_limited(r: Response) -> bool:
    if "retry-after" in r.headers or r.headers.get("x-ratelimit-remaining") == "0":
        return True
    return "rate limit" in _server_message(r.data).lower()


def _server_message(data: Any) -> str:
    """The error text of a GitHub (``message``) or GitLab (``message``/``error``) answer, on
    one line and short: it goes into a log and maybe a CI annotation."""
    text = ""
    if isinstance(data, Mapping):
        for k in ("message", "error", "error_description"):
            v = data.get(k)
            if v:
                text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                break
    elif isinstance(data, str):
        text = data
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:299] + "…"


def link_next(header: str | None) -> str | None:
    """The ``rel="next"`` URL of an RFC 8288 ``Link`` header (GitHub and GitLab pagination)."""
    if not header:
        return None
    for m in re.finditer(r"<([^>]*)>((?:\s*;\s*[^,;]+)*)", header):
        params = m.group(2)
        rel = re.search(r';\s*rel\s*=\s*"?([^";]+)"?', params)
        if rel and "next" in rel.group(1).split():
            return m.group(1)
    return None


# --------------------------------------------------------------------------------------------
# Providers


@dataclass(frozen=True, slots=True)
class Comment:
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
                raise CommentError(f"pagination of {_path_of(url)} does not end")
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


# --------------------------------------------------------------------------------------------
# Upsert


@dataclass(frozen=True, slots=True)
class Outcome:
    action: Literal["created", "updated", "unchanged"]
    comment: Comment


def upsert(
    provider: Provider,
    body: str,
    *,
    key: str,
    expect_head_sha: str | None = None,
    attempts: int = 3,
    sleep: Callable[[float], None] | None = None,
) -> Outcome:
    """Create or update the one comment with our marker for ``key``.

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
                    (sleep or time.sleep)(provider.http.backoff_s * attempt)
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


# --------------------------------------------------------------------------------------------
# Body

GITHUB_MAX_BODY = 65_536
GITLAB_MAX_BODY = 1_000_000

_DETAILS_OPEN = "<details><summary>All benchmarks</summary>"
_DETAILS_CLOSE = "</details>"
# The only tags the report writes itself, without attributes; any other "<" becomes "&lt;".
_NOT_OUR_TAG = re.compile(r"<(?!(?:/?(?:details|summary|sub|sup|b|i|em|strong)|br ?/?)>)")
_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")
_URL = re.compile(r"https?://[^\s<>()\[\]\"'`\\]+")
_HEX = re.compile(r"[0-9a-fA-F]{4,64}")


def body_length(text: str) -> int:
    """Characters as the strictest API counts them: UTF-16 code units (an emoji counts 2)."""
    return len(text.encode("utf-16-le")) // 2


def neutralize(markdown: str) -> str:
    """The last line of defence: escape every HTML tag but the report's own, break mentions.

    :func:`duet_bench.report.escape.markdown_text` already escapes what comes from the measured
    code; this pass makes sure that a field it does not cover cannot add markup either.
    """
    return _MENTION.sub("@&#8203;", _NOT_OUR_TAG.sub("&lt;", markdown))


def safe_url(url: str | None) -> str | None:
    """``url`` when it is a plain http(s) URL that cannot break out of a markdown link."""
    if url and _URL.fullmatch(url):
        return url
    return None


def sanitize(doc: ResultsDocument) -> ResultsDocument:
    """A copy of ``doc`` holding only what the markdown report shows, each field of the type
    it must have. A results file from a pull request's own run is untrusted input: a string
    where a number belongs must neither crash the renderer nor reach the comment unescaped."""
    versions = doc.config.get("versions")
    clean_versions: dict[str, Any] = {}
    if isinstance(versions, Mapping):
        for side in ("baseline", "candidate"):
            v = versions.get(side)
            if isinstance(v, Mapping):
                commit = v.get("commit")
                ref = v.get("ref")
                clean_versions[side] = {
                    "commit": commit
                    if isinstance(commit, str) and _HEX.fullmatch(commit)
                    else None,
                    "ref": ref if isinstance(ref, str) else None,
                }
    env = doc.environment
    clean_env: dict[str, Any] = {}
    for k in ("isolation", "machine_kind"):
        if isinstance(env.get(k), str):
            clean_env[k] = env[k]
    cpu = env.get("cpu")
    if isinstance(cpu, Mapping) and isinstance(cpu.get("model"), str):
        online = cpu.get("online")
        clean_env["cpu"] = {
            "model": cpu["model"],
            "online": online if _is_int(online) else "?",
        }
    pair = env.get("pair")
    if isinstance(pair, Mapping) and isinstance(pair.get("cpus"), list):
        cpus = [c for c in pair["cpus"] if _is_int(c)]
        if cpus:
            clean_env["pair"] = {"cpus": cpus}
    return replace(
        doc,
        config={"versions": clean_versions} if clean_versions else {},
        environment=clean_env,
        benchmarks=tuple(_sanitize_benchmark(b) for b in doc.benchmarks),
    )


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _positive(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    value = float(x)
    return value if math.isfinite(value) and value > 0 else None


def _sanitize_benchmark(b: BenchmarkRecord) -> BenchmarkRecord:
    a = b.analysis
    if a is None:
        return b
    confidence = _positive(a.get("confidence"))
    raw_threshold = a.get("threshold")
    threshold = (
        float(raw_threshold)
        if not isinstance(raw_threshold, bool)
        and isinstance(raw_threshold, int | float)
        and math.isfinite(raw_threshold)
        and raw_threshold >= 0
        else None
    )
    verdict = a.get("verdict")
    note = a.get("note")

    def count(x: Any) -> int:
        return x if _is_int(x) and x >= 0 else 0

    def side(s: Any) -> dict[str, Any] | None:
        if not isinstance(s, Mapping):
            return None
        return {
            "geomean_ns": _positive(s.get("geomean_ns")),
            "median_ns": _positive(s.get("median_ns")),
        }

    def metric_estimate(m: Any) -> dict[str, Any] | None:
        if not isinstance(m, Mapping):
            return None
        if isinstance(m.get("missing"), str):
            return {"missing": m["missing"]}
        v = m.get("verdict")
        return {
            "ratio": _positive(m.get("ratio")),
            "ci_low": _positive(m.get("ci_low")),
            "ci_high": _positive(m.get("ci_high")),
            "verdict": v if v in _VERDICTS else None,
        }

    raw_metrics = a.get("metrics")
    metrics = (
        {k: e for k in METRICS if (e := metric_estimate(raw_metrics.get(k))) is not None}
        if isinstance(raw_metrics, Mapping)
        else None
    )
    raw_interference = a.get("interference")
    interference = None
    if isinstance(raw_interference, Mapping):
        share = _positive(raw_interference.get("share"))
        interference = {
            "share": min(share, 1.0) if share is not None else 0.0,
            "runq_ns": _positive(raw_interference.get("runq_ns")),
        }
    metric = a.get("metric")

    clean: dict[str, Any] = {
        "ratio": _positive(a.get("ratio")),
        "ci_low": _positive(a.get("ci_low")),
        "ci_high": _positive(a.get("ci_high")),
        "confidence": confidence if confidence is not None and confidence < 1 else None,
        "threshold": threshold,
        "verdict": verdict if verdict in _VERDICTS else None,
        "runs_used": count(a.get("runs_used")),
        "runs_failed": count(a.get("runs_failed")),
        "baseline": side(a.get("baseline")),
        "candidate": side(a.get("candidate")),
        "note": note if isinstance(note, str) else None,
        "metric": metric if metric in METRICS else None,
        "metric_reason": a["metric_reason"] if isinstance(a.get("metric_reason"), str) else None,
        "metrics": metrics,
        "interference": interference,
        "disagreement": a["disagreement"] if isinstance(a.get("disagreement"), str) else None,
    }
    return replace(b, analysis=clean)


def build_body(
    doc: ResultsDocument,
    *,
    key: str = DEFAULT_KEY,
    max_length: int = GITHUB_MAX_BODY,
    details_url: str | None = None,
) -> str:
    """The comment: marker line, the markdown report, a link to the full results, and within
    ``max_length`` (see :func:`fit`)."""
    from duet_bench.report.markdown import render_markdown

    if any(b.analysis is None for b in doc.benchmarks):
        from duet_bench.analysis import AnalysisSettings, analyze_document

        doc = analyze_document(doc, AnalysisSettings())
    url = safe_url(details_url)
    report = neutralize(render_markdown(sanitize(doc))).rstrip("\n")
    footer = (
        f"<sub>Full results, raw samples and plots: [the CI artifact]({url})</sub>" if url else ""
    )
    return fit(report, head=marker(key), footer=footer, max_length=max_length, details_url=url)


def fit(
    report: str,
    *,
    head: str,
    footer: str,
    max_length: int,
    details_url: str | None,
    container: str = "a comment",
    measure: Callable[[str], int] = body_length,
) -> str:
    """``head``, ``report`` and ``footer`` joined, cut to ``max_length`` if needed.

    First the folded table of every benchmark goes (the changed ones are above it); then the
    report is cut after a whole line, with a note that says where the rest is. An HTML
    ``<details>`` left open by the cut is closed, so the footer stays visible.
    """

    def join(text: str, note: str = "") -> str:
        return head + "\n" + "\n\n".join(p for p in (text, note, footer) if p) + "\n"

    whole = join(report)
    if measure(whole) <= max_length:
        return whole
    where = (
        f"[the CI artifact]({details_url})"
        if details_url
        else "`duet-results/report.md` of the CI job"
    )
    folded_note = f"_The table of all benchmarks did not fit in {container}: it is in {where}._"
    without_table = _drop_full_table(report)
    if without_table != report:
        candidate = join(without_table, folded_note)
        if measure(candidate) <= max_length:
            return candidate
    cut_note = (
        f"**Cut to fit the {max_length:,}-character limit of {container}:** the whole report "
        f"is in {where}."
    )
    lines = without_table.split("\n")
    # Binary search for the most lines that fit with the note.
    lo, hi = 0, len(lines)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(join(_close_details("\n".join(lines[:mid])), cut_note)) <= max_length:
            lo = mid
        else:
            hi = mid - 1
    if lo > 0:
        return join(_close_details("\n".join(lines[:lo]).rstrip()), cut_note)
    # Not even the first line fits (a tiny limit): cut inside it, never inside an entity.
    budget = max_length - measure(join("", cut_note)) - 4
    first = _cut_text(lines[0], max(budget, 0))
    return join(first, cut_note)[: max(max_length, 0)]


def _drop_full_table(report: str) -> str:
    start = report.find(_DETAILS_OPEN)
    if start < 0:
        return report
    end = report.find(_DETAILS_CLOSE, start)
    if end < 0:
        return report[:start].rstrip()
    return (report[:start].rstrip() + "\n\n" + report[end + len(_DETAILS_CLOSE) :].lstrip()).strip()


def _close_details(text: str) -> str:
    missing = text.count("<details>") - text.count("</details>")
    return text + "\n\n</details>" * max(missing, 0)


def _cut_text(text: str, budget: int) -> str:
    s = text[:budget]
    amp = s.rfind("&")
    if amp >= 0 and ";" not in s[amp:]:
        s = s[:amp]
    return s + "…"
