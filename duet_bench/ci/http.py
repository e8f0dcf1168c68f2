"""The HTTP client that talks to the GitHub or GitLab API, with the token kept safe.

``urllib`` from the standard library: JSON in and out, no redirects (a redirect would carry the
token to another host), no request off the API's own scheme, host and port (pagination links
included), retries of 5xx, 429 and rate-limited 403 answers honouring ``Retry-After`` and
GitHub's rate-limit headers, and the token redacted from every message and exception. The
waits go through an injected ``sleep`` and ``clock``, so tests run them without waiting.
"""

from __future__ import annotations

import base64
import email.utils
import json
import logging
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any

from duet_bench.ci.errors import ApiError, CommentError, NotPosted

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Redaction


class Redactor:
    """Replaces every secret (its raw, URL-encoded and base64 forms) by ``***`` in a text."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        forms: set[str] = set()
        for s in secrets:
            # Very short "secrets" would redact ordinary words and hide real errors.
            if s and len(s) >= 4:
                forms.update({s, urllib.parse.quote(s, safe=""), urllib.parse.quote_plus(s)})
                forms.update(base64_forms(s))
        self._forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, "***")
        return text


def base64_forms(secret: str) -> set[str]:
    """What ``secret`` looks like inside any base64 text (standard and URL-safe alphabets):
    encoded after 0, 1 or 2 other bytes (``Basic`` credentials put ``user:`` before it), less
    the characters that also depend on the bytes around it. Forms under 8 characters are left
    out: they would redact ordinary words."""
    data = secret.encode()
    forms = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + data).decode().rstrip("=")
        start = (0, 2, 3)[shift]
        end = (8 * (shift + len(data))) // 6
        form = encoded[start:end]
        if len(form) >= 8:
            forms.update({form, form.replace("+", "-").replace("/", "_")})
    return forms


# --------------------------------------------------------------------------------------------
# HTTP


@dataclass(frozen=True, slots=True)
class Response:
    """One answer of the API: its JSON decoded (text when it is not JSON, None when empty)."""

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
    sleep, clock
        How to wait and what time it is (``time.sleep``, ``time.time``); tests pass their own
        so that retries need no real waiting. The upsert waits through ``sleep`` too.
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
        self.sleep = sleep or time.sleep
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
        shown = self.redact(path_of(url))
        for attempt in range(1, self.attempts + 1):
            try:
                response = self._send(method, url, body)
            except (urllib.error.URLError, HTTPException, OSError) as e:
                # The reason may quote what the server sent (a garbled status line), so it is
                # redacted here, before the retry's log line, and kept on one line.
                reason = self.redact(" ".join(str(getattr(e, "reason", None) or e).split()))
                if attempt < self.attempts and idempotent:
                    wait = self._backoff(attempt)
                    log.info("%s %s: %s; retrying in %.0f s", method, shown, reason, wait)
                    self.sleep(wait)
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
            self.sleep(retry_in)
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


def path_of(url: str) -> str:
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
