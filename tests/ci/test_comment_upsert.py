"""The upsert against a real local server, with every wait through the client's sleeper."""

from __future__ import annotations

import pytest

from duet_bench.ci import github
from duet_bench.ci.body import marker
from duet_bench.ci.errors import ApiError
from duet_bench.ci.upsert import upsert
from tests.ci.conftest import HEAD_SHA, PR, REPO
from tests.ci.fakeapi import ACTIONS_TOKEN, FakeApi, Fault

COMMENTS = f"/repos/{REPO}/issues/{PR}/comments"
BODY = marker("default") + "\nthe report\n"


@pytest.fixture
def api(fake_api: FakeApi) -> FakeApi:
    fake_api.github_pull(REPO, PR, head_sha=HEAD_SHA)
    return fake_api


def _provider(api: FakeApi, waits: list[float]) -> github.GitHub:
    target = github.Target(
        api_url=api.github_url, repo=REPO, number=PR, token=ACTIONS_TOKEN, details_url=None
    )
    return github.GitHub.from_target(target, sleep=waits.append)


def test_a_create_that_happened_behind_a_502_is_found_after_the_clients_wait(
    api: FakeApi,
) -> None:
    api.fail(Fault("POST", COMMENTS, 502, "Bad Gateway", apply=True))
    waits: list[float] = []
    outcome = upsert(_provider(api, waits), BODY, key="default")
    assert outcome.action == "unchanged"
    assert len(api.github_comments(REPO, PR)) == 1
    # The look-again wait of the upsert goes through the client's sleeper, nothing else.
    assert waits == [1.0]


def test_a_create_that_did_not_happen_is_made_once_after_looking_again(api: FakeApi) -> None:
    api.fail(Fault("POST", COMMENTS, 503, {"message": "unavailable"}))
    waits: list[float] = []
    outcome = upsert(_provider(api, waits), BODY, key="default")
    assert outcome.action == "created"
    assert len(api.github_comments(REPO, PR)) == 1
    assert len(api.calls("POST")) == 2
    assert waits == [1.0]


def test_ambiguous_creates_stop_after_the_attempts(api: FakeApi) -> None:
    api.fail(Fault("POST", COMMENTS, 502, "Bad Gateway", times=3))
    waits: list[float] = []
    with pytest.raises(ApiError, match="HTTP 502") as info:
        upsert(_provider(api, waits), BODY, key="default", attempts=3)
    assert info.value.ambiguous
    assert api.github_comments(REPO, PR) == []
    assert waits == [1.0, 2.0]


def test_the_body_must_carry_the_marker_of_its_key(api: FakeApi) -> None:
    with pytest.raises(ValueError, match="marker of its key"):
        upsert(_provider(api, []), BODY, key="other")
    assert api.calls() == []
