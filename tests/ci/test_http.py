"""The HTTP client against a real local server: retries, Retry-After, redirects, redaction."""

from __future__ import annotations

import base64
import logging
import socket
import threading
import time

import pytest

from duet_bench.ci.errors import ApiError, CommentError
from duet_bench.ci.http import Http, Redactor, _retry_after, link_next
from tests.ci.fakeapi import ACTIONS_TOKEN, FakeApi, Fault

COMMENTS = "/repos/acme/app/issues/12/comments"


def _client(api: FakeApi, waits: list[float] | None = None, **kw: object) -> Http:
    record = waits if waits is not None else []
    return Http(
        api.github_url,
        headers={"Authorization": f"Bearer {ACTIONS_TOKEN}", "User-Agent": "duet-test"},
        secrets=[ACTIONS_TOKEN],
        sleep=record.append,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def api(fake_api: FakeApi) -> FakeApi:
    fake_api.github_pull("acme/app", 12, head_sha="a" * 40)
    return fake_api


def test_5xx_is_retried_with_backoff(api: FakeApi) -> None:
    api.fail(Fault("GET", COMMENTS, 502, "<html>Bad Gateway</html>", times=2))
    waits: list[float] = []
    r = _client(api, waits).request("GET", api.github_url + COMMENTS)
    assert r.status == 200
    assert waits == [1.0, 2.0]
    assert len(api.calls("GET")) == 3


def test_retry_after_is_honoured_in_real_time(api: FakeApi) -> None:
    api.fail(Fault("GET", COMMENTS, 429, {"message": "slow down"}, {"Retry-After": "1"}))
    http = Http(
        api.github_url, headers={"Authorization": f"Bearer {ACTIONS_TOKEN}", "User-Agent": "t"}
    )
    t0 = time.monotonic()
    assert http.request("GET", api.github_url + COMMENTS).status == 200
    assert time.monotonic() - t0 >= 1.0


def test_secondary_rate_limit_403_waits_what_it_says(api: FakeApi) -> None:
    api.fail(
        Fault(
            "GET",
            COMMENTS,
            403,
            {"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
            {"Retry-After": "7"},
        )
    )
    waits: list[float] = []
    assert _client(api, waits).request("GET", api.github_url + COMMENTS).status == 200
    assert waits == [7.0]


def test_primary_rate_limit_waits_until_the_reset(api: FakeApi) -> None:
    reset = int(time.time()) + 30
    api.fail(
        Fault(
            "GET",
            COMMENTS,
            403,
            {"message": "API rate limit exceeded for installation ID 1."},
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
        )
    )
    waits: list[float] = []
    _client(api, waits, clock=lambda: reset - 30.0).request("GET", api.github_url + COMMENTS)
    assert waits == [31.0]


def test_a_wait_longer_than_allowed_is_reported_not_slept(api: FakeApi) -> None:
    api.fail(Fault("GET", COMMENTS, 429, {"message": "later"}, {"Retry-After": "3600"}))
    waits: list[float] = []
    with pytest.raises(ApiError, match="rate limited for 3600 s") as info:
        _client(api, waits).request("GET", api.github_url + COMMENTS)
    assert info.value.status == 429
    assert waits == []


def test_a_forbidden_answer_is_not_retried(api: FakeApi) -> None:
    api.fail(Fault("GET", COMMENTS, 403, {"message": "Resource not accessible by integration"}))
    with pytest.raises(ApiError, match="HTTP 403: Resource not accessible") as info:
        _client(api).request("GET", api.github_url + COMMENTS)
    assert info.value.status == 403
    assert len(api.calls("GET")) == 1


def test_a_create_is_not_retried_after_a_5xx_but_marked_ambiguous(api: FakeApi) -> None:
    api.fail(Fault("POST", COMMENTS, 502, "Bad Gateway"))
    with pytest.raises(ApiError) as info:
        _client(api).request(
            "POST", api.github_url + COMMENTS, body={"body": "x"}, idempotent=False
        )
    assert info.value.ambiguous
    assert len(api.calls("POST")) == 1


def test_a_create_is_retried_after_429(api: FakeApi) -> None:
    api.fail(Fault("POST", COMMENTS, 429, {"message": "slow"}, {"Retry-After": "0"}))
    r = _client(api).request(
        "POST", api.github_url + COMMENTS, body={"body": "x"}, idempotent=False
    )
    assert r.status == 201


def test_redirects_are_not_followed(api: FakeApi) -> None:
    # urllib would carry the Authorization header along to the other host.
    api.fail(Fault("GET", COMMENTS, 302, "", {"Location": "http://127.0.0.2:9/steal"}))
    with pytest.raises(ApiError) as info:
        _client(api).request("GET", api.github_url + COMMENTS)
    assert info.value.status == 302


def test_links_to_another_host_are_refused(api: FakeApi) -> None:
    http = _client(api)
    with pytest.raises(CommentError, match="refusing to send the token"):
        http.request("GET", "http://evil.example/api/v3/x")
    assert api.calls() == []


def test_unreachable_server_is_retried_then_reported_without_the_token() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    waits: list[float] = []
    http = Http(
        f"http://127.0.0.1:{port}/api/v3",
        headers={"Authorization": f"Bearer {ACTIONS_TOKEN}"},
        secrets=[ACTIONS_TOKEN],
        sleep=waits.append,
        attempts=3,
    )
    with pytest.raises(CommentError, match="could not reach") as info:
        http.request("GET", http.url("/user"))
    assert waits == [1.0, 2.0]
    assert ACTIONS_TOKEN not in str(info.value)


def test_the_token_echoed_by_the_server_is_redacted(
    api: FakeApi, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    api.fail(Fault("GET", COMMENTS, 500, {"message": "upstream rejected {authorization}"}, times=5))
    with pytest.raises(ApiError) as info:
        _client(api).request("GET", api.github_url + COMMENTS)
    text = str(info.value)
    assert "upstream rejected Bearer ***" in text
    assert "(after 5 attempts)" in text
    assert ACTIONS_TOKEN not in text
    assert ACTIONS_TOKEN not in caplog.text
    assert ACTIONS_TOKEN not in repr(info.value.args)


def test_redactor_covers_encoded_forms_and_ignores_tiny_secrets() -> None:
    r = Redactor(["s3cr+t/tok", None, "", "ab"])
    assert r("a s3cr+t/tok b s3cr%2Bt%2Ftok c s3cr%2Bt%2Ftok") == "a *** b *** c ***"
    assert r("ab stays") == "ab stays"


@pytest.mark.parametrize(
    ("header", "now", "seconds"),
    [
        ("0", 0.0, 0.0),
        ("12", 0.0, 12.0),
        (" 3.5 ", 0.0, 3.5),
        ("-4", 0.0, 0.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470.0, 10.0),
        ("soon", 0.0, None),
        (None, 0.0, None),
    ],
)
def test_retry_after_forms(header: str | None, now: float, seconds: float | None) -> None:
    assert _retry_after(header, now) == seconds


@pytest.mark.parametrize(
    ("header", "url"),
    [
        (
            '<https://api.github.com/repositories/1/issues/1/comments?page=2>; rel="next", '
            '<https://api.github.com/repositories/1/issues/1/comments?page=5>; rel="last"',
            "https://api.github.com/repositories/1/issues/1/comments?page=2",
        ),
        (
            '<https://x/a?page=1>; rel="prev", <https://x/a?page=3>; rel="next"',
            "https://x/a?page=3",
        ),
        (
            "<https://gl/api/v4/x?page=2&per_page=100>; rel=next",
            "https://gl/api/v4/x?page=2&per_page=100",
        ),
        ('<https://x/a?page=5>; rel="last"', None),
        ("", None),
        (None, None),
        ("garbage", None),
    ],
)
def test_link_next(header: str | None, url: str | None) -> None:
    assert link_next(header) == url


def test_a_garbled_answer_that_echoes_the_token_is_redacted_from_the_retry_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A broken proxy whose status line repeats the request's credentials: http.client raises
    # BadStatusLine carrying that line, and the client logs it before retrying.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(10)
        port = server.getsockname()[1]

        def serve() -> None:
            for _ in range(2):
                conn, _addr = server.accept()
                with conn:
                    request = b""
                    while b"\r\n\r\n" not in request:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        request += chunk
                    auth = next(
                        (
                            line.split(b":", 1)[1].strip()
                            for line in request.split(b"\r\n")
                            if line.lower().startswith(b"authorization:")
                        ),
                        b"",
                    )
                    conn.sendall(b"HTTP/1.1 garbled " + auth + b"\r\n\r\n")

        thread = threading.Thread(target=serve)
        thread.start()
        try:
            caplog.set_level(logging.DEBUG)
            http = Http(
                f"http://127.0.0.1:{port}/api/v3",
                headers={"Authorization": f"Bearer {ACTIONS_TOKEN}"},
                secrets=[ACTIONS_TOKEN],
                sleep=lambda s: None,
                attempts=2,
            )
            with pytest.raises(CommentError, match="could not reach") as info:
                http.request("GET", http.url("/user"))
        finally:
            thread.join(timeout=10)
    assert "garbled Bearer ***" in str(info.value)
    assert "garbled Bearer ***" in caplog.text
    assert ACTIONS_TOKEN not in caplog.text


@pytest.mark.parametrize(
    "echo",
    ["{authorization_base64}", "basic {authorization_base64} rejected"],
)
def test_the_base64_form_of_an_echoed_token_is_redacted(api: FakeApi, echo: str) -> None:
    api.fail(Fault("GET", COMMENTS, 500, {"message": echo}, times=5))
    with pytest.raises(ApiError) as info:
        _client(api).request("GET", api.github_url + COMMENTS)
    text = str(info.value)
    header = f"Bearer {ACTIONS_TOKEN}".encode()
    assert base64.b64encode(header).decode().rstrip("=") not in text
    for shifted in (b"", b"x", b"xy"):  # the token after any prefix: Basic user:token
        whole = base64.b64encode(shifted + ACTIONS_TOKEN.encode()).decode()
        assert whole[4:-4] not in text
    assert "***" in text


def test_base64_forms_find_the_token_after_any_prefix() -> None:
    r = Redactor([ACTIONS_TOKEN])
    for prefix in (b"", b"x-access-token:", b"u:", b"ab:"):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(prefix + ACTIONS_TOKEN.encode()).decode()
            assert "***" in r(text), (prefix, text)
            assert len(r(text)) < len(text) // 2 + 12
