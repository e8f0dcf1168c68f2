"""``duet comment`` on GitHub, end to end through the CLI against the local fake API."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from duet_bench.cli import main
from tests.ci.conftest import HEAD_SHA, PR, REPO
from tests.ci.fakeapi import (
    ACTIONS_BOT,
    ACTIONS_TOKEN,
    MALLORY,
    OCTOCAT,
    PAT_TOKEN,
    FakeApi,
    Fault,
    iter_bodies,
)

MARKER = "<!-- duet-report v1 key=default -->"
COMMENTS = f"/repos/{REPO}/issues/{PR}/comments"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["comment", *args], catch_exceptions=False)


def test_creates_then_updates_the_same_comment(github_env: FakeApi, results_file: Path) -> None:
    first = run(str(results_file))
    assert first.exit_code == 0, first.output
    assert "created the duet comment" in first.stderr
    [comment] = github_env.github_comments(REPO, PR)
    assert comment["body"].startswith(MARKER + "\n## duet: parse-json 5.00% slower")
    assert comment["user"]["login"] == "github-actions[bot]"
    assert "(https://github.example.com/acme/app/actions/runs/4242)" in comment["body"]

    first_doc = json.loads(results_file.read_text())
    first_doc["benchmarks"][0]["name"] = "parse-json-renamed"
    results_file.write_text(json.dumps(first_doc))
    second = run(str(results_file))
    assert second.exit_code == 0, second.output
    assert f"updated the duet comment (key default, id {comment['id']})" in second.stderr
    [after] = github_env.github_comments(REPO, PR)
    assert after["id"] == comment["id"]
    assert "parse-json-renamed" in after["body"]
    assert len(github_env.calls("POST")) == 1
    assert [r.path for r in github_env.calls("PATCH")] == [
        f"/api/v3/repos/{REPO}/issues/comments/{comment['id']}"
    ]
    # The API was reached through GITHUB_API_URL, path prefix included (GHES layout).
    assert all(r.path.startswith("/api/v3/") for r in github_env.calls())
    assert all(r.headers["authorization"] == f"Bearer {ACTIONS_TOKEN}" for r in github_env.calls())
    assert all(r.headers["x-github-api-version"] == "2022-11-28" for r in github_env.calls())

    third = run(str(results_file))
    assert "unchanged the duet comment" in third.stderr
    assert len(github_env.calls("PATCH")) == 1


def test_our_comment_on_a_later_page_is_found(
    github_env: FakeApi, results_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    github_env.per_page_max = 2
    for i in range(5):
        github_env.github_comment(REPO, PR, f"review comment {i}", user=OCTOCAT)
    ours = github_env.github_comment(REPO, PR, MARKER + "\nold report", user=ACTIONS_BOT)
    github_env.github_comment(REPO, PR, "LGTM", user=OCTOCAT)
    result = run(str(results_file))
    assert result.exit_code == 0, result.output
    assert f"updated the duet comment (key default, id {ours})" in result.stderr
    assert github_env.calls("POST") == []
    pages = [r for r in github_env.calls("GET") if "comments" in r.path]
    assert len(pages) == 4  # 7 comments, 2 per page
    # GitHub links the next pages as /repositories/{id}/...; the client follows them.
    assert pages[1].path.startswith("/api/v3/repositories/")


def test_someone_elses_comment_with_our_marker_is_left_alone(
    github_env: FakeApi, results_file: Path
) -> None:
    theirs = github_env.github_comment(REPO, PR, MARKER + "\nfake results", user=MALLORY)
    result = run(str(results_file))
    assert result.exit_code == 0, result.output
    comments = github_env.github_comments(REPO, PR)
    assert [c["user"]["login"] for c in comments] == ["mallory", "github-actions[bot]"]
    assert comments[0]["body"] == MARKER + "\nfake results"
    assert all(str(theirs) not in r.path for r in github_env.calls("PATCH"))


def test_the_newest_of_our_comments_is_updated_and_other_keys_are_kept(
    github_env: FakeApi, results_file: Path
) -> None:
    old = github_env.github_comment(REPO, PR, MARKER + "\nolder", user=ACTIONS_BOT)
    other_key = github_env.github_comment(
        REPO, PR, "<!-- duet-report v1 key=parser -->\nother suite", user=ACTIONS_BOT
    )
    newer = github_env.github_comment(REPO, PR, MARKER + "\nnewer", user=ACTIONS_BOT)
    github_env.github_comment(REPO, PR, MARKER + "\nnewest, not ours", user=MALLORY)
    quoted = github_env.github_comment(REPO, PR, "> " + MARKER + "\nquoting it", user=ACTIONS_BOT)
    assert run(str(results_file)).exit_code == 0
    bodies = {c["id"]: c["body"] for c in github_env.github_comments(REPO, PR)}
    assert bodies[newer].startswith(MARKER + "\n## duet:")
    assert bodies[old] == MARKER + "\nolder"
    assert bodies[other_key].endswith("other suite")
    assert bodies[quoted].startswith("> ")
    assert len(bodies) == 5


def test_a_key_gets_its_own_comment(github_env: FakeApi, results_file: Path) -> None:
    github_env.github_comment(REPO, PR, MARKER + "\ndefault suite", user=ACTIONS_BOT)
    assert run(str(results_file), "--key", "parser").exit_code == 0
    comments = github_env.github_comments(REPO, PR)
    assert len(comments) == 2
    assert comments[1]["body"].startswith("<!-- duet-report v1 key=parser -->\n")


def test_a_personal_token_is_known_by_get_user(
    github_env: FakeApi, results_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", PAT_TOKEN)
    bot = github_env.github_comment(REPO, PR, MARKER + "\nby the bot", user=ACTIONS_BOT)
    mine = github_env.github_comment(REPO, PR, MARKER + "\nby octocat", user=OCTOCAT)
    assert run(str(results_file)).exit_code == 0
    bodies = {c["id"]: c["body"] for c in github_env.github_comments(REPO, PR)}
    assert bodies[bot].endswith("by the bot")
    assert bodies[mine].startswith(MARKER + "\n## duet:")


def test_fork_pull_request_is_a_warning_with_the_fix(
    github_env: FakeApi, results_file: Path
) -> None:
    github_env.github_pull(REPO, PR, head_sha=HEAD_SHA, fork=True)
    result = run(str(results_file))
    assert result.exit_code == 0
    assert "warning: nothing posted" in result.stderr
    assert "Resource not accessible by integration" in result.stderr
    assert "duet-comment.yml" in result.stderr
    assert result.stdout.startswith("::warning title=duet comment::nothing posted")
    assert github_env.github_comments(REPO, PR) == []

    required = run(str(results_file), "--require-comment")
    assert required.exit_code == 3
    assert "duet: error: could not comment on pull request acme/app#12" in required.stderr


def test_502_then_success_creates_exactly_one_comment(
    github_env: FakeApi, results_file: Path
) -> None:
    github_env.fail(Fault("POST", COMMENTS, 502, "<html>502 Bad Gateway</html>"))
    github_env.fail(Fault("GET", COMMENTS, 502, "<html>502 Bad Gateway</html>"))
    result = run(str(results_file))
    assert result.exit_code == 0, result.output
    assert len(github_env.github_comments(REPO, PR)) == 1
    assert len(github_env.calls("POST")) == 2


def test_a_create_that_happened_behind_a_502_is_not_duplicated(
    github_env: FakeApi, results_file: Path
) -> None:
    github_env.fail(Fault("POST", COMMENTS, 502, "Bad Gateway", apply=True))
    result = run(str(results_file))
    assert result.exit_code == 0, result.output
    [_comment] = github_env.github_comments(REPO, PR)
    assert len(github_env.calls("POST")) == 1
    assert "unchanged the duet comment" in result.stderr


def test_rate_limit_with_retry_after_is_waited_out(github_env: FakeApi, results_file: Path) -> None:
    github_env.fail(
        Fault(
            "GET",
            COMMENTS,
            403,
            {"message": "You have exceeded a secondary rate limit.", "status": "403"},
            {"Retry-After": "0"},
        )
    )
    github_env.fail(Fault("POST", COMMENTS, 429, {"message": "slow down"}, {"Retry-After": "0"}))
    assert run(str(results_file)).exit_code == 0
    assert len(github_env.github_comments(REPO, PR)) == 1


def test_oversized_report_is_cut_and_accepted(
    github_env: FakeApi, tmp_path: Path, analysed_doc: dict[str, Any]
) -> None:
    data = json.loads(json.dumps(analysed_doc))
    template = data["benchmarks"][0]
    template["runs"] = template["runs"][:1]
    data["benchmarks"] = [
        dict(template, name=f"benchmark-{i:05d}-" + "x" * 60) for i in range(1500)
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    result = run(str(path))
    assert result.exit_code == 0, result.output
    [comment] = github_env.github_comments(REPO, PR)
    assert len(comment["body"].encode("utf-16-le")) // 2 <= 65536
    assert "Cut to fit the 65,536-character limit" in comment["body"]
    assert (
        "[the CI artifact](https://github.example.com/acme/app/actions/runs/4242)"
        in comment["body"]
    )


def test_hostile_names_reach_the_api_escaped(
    github_env: FakeApi, tmp_path: Path, hostile_doc: dict[str, Any]
) -> None:
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile_doc))
    assert run(str(path)).exit_code == 0
    [body] = list(iter_bodies(github_env, "POST"))
    for needle in ("<img", "<script", "<iframe", "<b>", "![", "](https://evil"):
        assert needle not in body
    assert "@acme" not in body
    assert "@someone" not in body
    assert "&lt;img src=x onerror=alert(1)&gt;" in body


def test_results_of_another_commit_are_not_posted(github_env: FakeApi, results_file: Path) -> None:
    stale = run(str(results_file), "--pr", str(PR), "--expect-head-sha", "1" * 40)
    assert stale.exit_code == 0
    assert f"is at {HEAD_SHA}, but these results are for {'1' * 40}" in stale.stderr
    assert github_env.calls("POST") == []
    fresh = run(str(results_file), "--pr", str(PR), "--expect-head-sha", HEAD_SHA)
    assert fresh.exit_code == 0
    assert len(github_env.github_comments(REPO, PR)) == 1


def test_the_token_never_appears_in_output_or_logs(
    github_env: FakeApi,
    results_file: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    # Retry-After: 0 makes the client retry at once: every attempt (and its log line) happens,
    # without the seconds of back-off and without patching the client's sleep.
    echo = {"message": "proxy saw {authorization}"}
    github_env.fail(Fault("GET", COMMENTS, 500, echo, {"Retry-After": "0"}, times=5))
    result = run(str(results_file), "--require-comment")
    assert result.exit_code == 3
    assert "(after 5 attempts): proxy saw Bearer ***" in result.stderr
    for text in (result.stdout, result.stderr, caplog.text):
        assert ACTIONS_TOKEN not in text

    monkeypatch.setenv("GITHUB_TOKEN", "ghp_wrongTokenWrongToken00000000000000")
    bad = run(str(results_file))
    assert bad.exit_code == 0
    assert "HTTP 401: Bad credentials" in bad.stderr
    assert "ghp_wrongToken" not in bad.output


def test_no_token_is_a_warning(
    github_env: FakeApi, results_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    result = run(str(results_file))
    assert result.exit_code == 0
    assert "no token: GITHUB_TOKEN is not set" in result.stderr
    assert "${{ github.token }}" in result.stderr
    assert github_env.calls() == []


def test_dry_run_prints_and_sends_nothing(github_env: FakeApi, results_file: Path) -> None:
    result = run(str(results_file), "--dry-run", "--key", "suite-a")
    assert result.exit_code == 0
    assert result.stdout.startswith("<!-- duet-report v1 key=suite-a -->\n")
    assert "would create or update the duet comment (key suite-a) on pull request acme/app#12" in (
        result.stderr
    )
    assert github_env.calls() == []


def test_bad_options_are_usage_errors(github_env: FakeApi, results_file: Path) -> None:
    assert run(str(results_file), "--key", "x-->y").exit_code == 2
    assert run(str(results_file), "--expect-head-sha", "zz").exit_code == 2
    assert run(str(results_file), "--pr", "0").exit_code == 2
    missing = run(str(results_file.parent / "nope.json"))
    assert missing.exit_code == 3
    assert "no such file" in missing.stderr


def test_the_event_file_under_sudo_is_read_as_the_invoking_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GITHUB_EVENT_PATH`` is a path in the invoker's environment: under sudo root opens it
    as the user who ran sudo (issue 33), so a root-only file there is not read."""
    import os

    from duet_bench.ci.github import _event_number

    if os.geteuid() != 0:
        pytest.skip("reading as another user needs root")
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    os.chmod(tmp_path, 0o755)
    event = vault / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 4242}, "number": 4242}))
    assert _event_number(str(event)) == 4242  # root for itself reads it
    monkeypatch.setenv("SUDO_UID", "65534")
    monkeypatch.setenv("SUDO_GID", "65534")
    assert _event_number(str(event)) is None
