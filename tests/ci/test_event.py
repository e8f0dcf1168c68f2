"""Where the comment goes, read from CI event payloads and environments (fuzzed: the payload
is data, and a malformed one must give "no pull request", never a crash)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duet_bench.ci import github, gitlab
from duet_bench.ci.errors import NotPosted

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=30,
)
KEYS = st.sampled_from(["pull_request", "number", "issue", "workflow_run", "pull_requests", "head"])
EVENTISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=250, deadline=None)
@given(st.one_of(JSON, EVENTISH))
def test_any_payload_gives_a_positive_number_or_none(payload: Any) -> None:
    n = github.pr_number_from_event(payload)
    assert n is None or (type(n) is int and n > 0)


@pytest.mark.parametrize(
    ("payload", "number"),
    [
        ({"action": "opened", "number": 5, "pull_request": {"number": 5}}, 5),
        ({"pull_request": {"id": 1}, "number": 9}, 9),
        ({"pull_request": {"number": True}}, None),
        ({"pull_request": {"number": -3}}, None),
        ({"pull_request": {"number": "5"}}, None),
        ({"issue": {"number": 8, "pull_request": {"url": "..."}}}, 8),
        ({"issue": {"number": 8}}, None),  # a comment on an issue, not a pull request
        ({"workflow_run": {"pull_requests": [{"number": 3}]}}, 3),
        ({"workflow_run": {"pull_requests": []}}, None),  # a fork's pull request
        ({"workflow_run": {"pull_requests": [{"number": 3}, {"number": 4}]}}, None),
        ({"ref": "refs/heads/main"}, None),
        ([], None),
        (None, None),
    ],
)
def test_event_payloads(payload: Any, number: int | None) -> None:
    assert github.pr_number_from_event(payload) == number


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_ref_gives_a_positive_number_or_none(ref: str) -> None:
    n = github.pr_number_from_ref(ref)
    assert n is None or n > 0
    assert github.pr_number_from_ref("refs/pull/17/merge") == 17


def _gh_env(tmp_path: Path, payload: Any, **extra: str) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload))
    env = {
        "GITHUB_REPOSITORY": "acme/app",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_TOKEN": "ghs_x",
    }
    env.update(extra)
    return env


def test_github_target_from_a_pull_request_job(tmp_path: Path) -> None:
    env = _gh_env(
        tmp_path,
        {"pull_request": {"number": 12}},
        GITHUB_API_URL="https://ghe.example.com/api/v3",
        GITHUB_SERVER_URL="https://ghe.example.com",
        GITHUB_RUN_ID="77",
    )
    t = github.target_from_env(env)
    assert (t.api_url, t.repo, t.number, t.token) == (
        "https://ghe.example.com/api/v3",
        "acme/app",
        12,
        "ghs_x",
    )
    assert t.details_url == "https://ghe.example.com/acme/app/actions/runs/77"


def test_github_pr_option_wins_and_ref_is_the_fallback(tmp_path: Path) -> None:
    env = _gh_env(tmp_path, {"ref": "x"}, GITHUB_REF="refs/pull/31/merge")
    assert github.target_from_env(env).number == 31
    assert github.target_from_env(env, pr=4).number == 4
    assert github.target_from_env(env).api_url == "https://api.github.com"


def test_github_without_a_pull_request_says_how_to_give_one(tmp_path: Path) -> None:
    env = _gh_env(tmp_path, {"ref": "refs/heads/main"}, GITHUB_EVENT_NAME="push")
    with pytest.raises(NotPosted, match="no pull request to comment on \\(event 'push'\\)") as info:
        github.target_from_env(env)
    assert "--pr N" in str(info.value)


@pytest.mark.parametrize("repo", ["", "acme", "acme/app/x", "../x/y", "a b/c"])
def test_github_repository_must_be_owner_slash_name(tmp_path: Path, repo: str) -> None:
    with pytest.raises(NotPosted, match="GITHUB_REPOSITORY"):
        github.target_from_env(_gh_env(tmp_path, {}, GITHUB_REPOSITORY=repo), pr=1)


def test_unreadable_event_file_is_no_pull_request(tmp_path: Path) -> None:
    env = _gh_env(tmp_path, {}, GITHUB_EVENT_PATH=str(tmp_path / "missing.json"))
    with pytest.raises(NotPosted):
        github.target_from_env(env)
    (tmp_path / "bad.json").write_bytes(b"\xff{not json")
    env["GITHUB_EVENT_PATH"] = str(tmp_path / "bad.json")
    with pytest.raises(NotPosted):
        github.target_from_env(env)


GITLAB_ENV = {
    "CI_API_V4_URL": "https://gitlab.example.com/api/v4",
    "CI_PROJECT_ID": "42",
    "CI_MERGE_REQUEST_IID": "7",
    "CI_JOB_URL": "https://gitlab.example.com/acme/app/-/jobs/9",
    "DUET_GITLAB_TOKEN": "glpat-x",
}


def test_gitlab_target_from_a_merge_request_pipeline() -> None:
    t = gitlab.target_from_env(GITLAB_ENV)
    assert (t.api_url, t.project, t.iid, t.token) == (
        "https://gitlab.example.com/api/v4",
        "42",
        7,
        "glpat-x",
    )
    assert t.details_url == "https://gitlab.example.com/acme/app/-/jobs/9/artifacts/browse"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(GITLAB_ENV)), st.text(max_size=12)))
def test_gitlab_any_environment_gives_a_target_or_says_why(env: dict[str, str]) -> None:
    fix = None
    try:
        t = gitlab.target_from_env(env)
    except NotPosted as e:
        fix = e.fix
    else:
        assert t.iid > 0
        assert t.project
        assert t.api_url
        return
    assert fix


def test_gitlab_without_a_merge_request_says_which_rule_to_use() -> None:
    env = dict(GITLAB_ENV, CI_MERGE_REQUEST_IID="", CI_PIPELINE_SOURCE="push")
    with pytest.raises(NotPosted, match="pipeline source 'push'") as info:
        gitlab.target_from_env(env)
    assert "merge_request_event" in str(info.value)
