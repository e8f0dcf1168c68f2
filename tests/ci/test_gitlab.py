"""``duet comment`` on GitLab, end to end through the CLI against the local fake API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from duet_bench.cli import main
from tests.ci.conftest import HEAD_SHA, MR, PROJECT
from tests.ci.fakeapi import GITLAB_BOT, GITLAB_HUMAN, GITLAB_TOKEN, FakeApi, Fault

MARKER = "<!-- duet-report v1 key=default -->"
NOTES = f"/projects/{PROJECT}/merge_requests/{MR}/notes"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["comment", *args], catch_exceptions=False)


def test_creates_then_updates_one_note(gitlab_env: FakeApi, results_file: Path) -> None:
    first = run(str(results_file))
    assert first.exit_code == 0, first.output
    [note] = gitlab_env.gitlab_notes(PROJECT, MR)
    assert note["body"].startswith(MARKER + "\n## duet:")
    assert note["author"]["id"] == GITLAB_BOT["id"]
    assert "(https://gitlab.example.com/acme/app/-/jobs/99/artifacts/browse)" in note["body"]
    assert f"on merge request !{MR} of project {PROJECT}" in first.stderr

    second = run(str(results_file), "--key", "default")
    assert second.exit_code == 0
    assert "unchanged the duet comment" in second.stderr
    data = json.loads(results_file.read_text())
    data["benchmarks"][0]["name"] = "renamed"
    results_file.write_text(json.dumps(data))
    third = run(str(results_file))
    assert "updated the duet comment" in third.stderr
    [after] = gitlab_env.gitlab_notes(PROJECT, MR)
    assert after["id"] == note["id"]
    assert "renamed" in after["body"]
    puts = gitlab_env.calls("PUT")
    assert [r.path for r in puts] == [f"/api/v4{NOTES}/{note['id']}"]
    assert all(r.headers["private-token"] == GITLAB_TOKEN for r in gitlab_env.calls())
    assert all("authorization" not in r.headers for r in gitlab_env.calls())


def test_pagination_system_notes_and_other_authors(gitlab_env: FakeApi, results_file: Path) -> None:
    gitlab_env.per_page_max = 2
    gitlab_env.gitlab_note(PROJECT, MR, "added 1 commit", author=GITLAB_HUMAN, system=True)
    mine = gitlab_env.gitlab_note(PROJECT, MR, MARKER + "\nold", author=GITLAB_BOT)
    for i in range(3):
        gitlab_env.gitlab_note(PROJECT, MR, f"review {i}", author=GITLAB_HUMAN)
    theirs = gitlab_env.gitlab_note(PROJECT, MR, MARKER + "\nnot ours", author=GITLAB_HUMAN)
    result = run(str(results_file))
    assert result.exit_code == 0, result.output
    notes = {n["id"]: n for n in gitlab_env.gitlab_notes(PROJECT, MR)}
    assert notes[mine]["body"].startswith(MARKER + "\n## duet:")
    assert notes[theirs]["body"] == MARKER + "\nnot ours"
    assert gitlab_env.calls("POST") == []
    lists = [r for r in gitlab_env.calls("GET") if r.path.endswith("/notes")]
    assert [r.query.get("page", "1") for r in lists] == ["1", "2", "3"]
    assert lists[0].query["sort"] == "asc"


def test_x_next_page_alone_is_enough(gitlab_env: FakeApi, results_file: Path) -> None:
    # Some GitLab versions omit the Link header on large collections; X-Next-Page remains.
    gitlab_env.per_page_max = 1
    gitlab_env.gitlab_note(PROJECT, MR, "hello", author=GITLAB_HUMAN)
    mine = gitlab_env.gitlab_note(PROJECT, MR, MARKER + "\nold", author=GITLAB_BOT)
    gitlab_env.gitlab_link_header = False
    assert run(str(results_file)).exit_code == 0
    assert gitlab_env.calls("POST") == []
    assert gitlab_env.gitlab_notes(PROJECT, MR)[1]["id"] == mine
    assert gitlab_env.gitlab_notes(PROJECT, MR)[1]["body"].startswith(MARKER + "\n## duet:")


def test_job_token_alone_cannot_post_and_says_what_to_do(
    gitlab_env: FakeApi, results_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DUET_GITLAB_TOKEN")
    monkeypatch.setenv("CI_JOB_TOKEN", "glcbt-64_jobtokenjobtoken")
    result = run(str(results_file))
    assert result.exit_code == 0
    assert "no token: DUET_GITLAB_TOKEN is not set" in result.stderr
    assert "'api' scope" in result.stderr
    assert "CI_JOB_TOKEN" in result.stderr
    assert "::warning" not in result.stdout  # not GitHub Actions
    assert gitlab_env.calls() == []
    assert run(str(results_file), "--require-comment").exit_code == 3


def test_a_wrong_token_is_a_warning_without_the_token(
    gitlab_env: FakeApi, results_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DUET_GITLAB_TOKEN", "glpat-wrongwrongwrongwrong")
    result = run(str(results_file))
    assert result.exit_code == 0
    assert "HTTP 401: 401 Unauthorized" in result.stderr
    assert "glpat-wrong" not in result.output


def test_a_missing_merge_request_is_a_warning(gitlab_env: FakeApi, results_file: Path) -> None:
    result = run(str(results_file), "--pr", "999")
    assert result.exit_code == 0
    assert "HTTP 404" in result.stderr
    assert "!999" in result.stderr


def test_project_path_ids_are_url_encoded(
    gitlab_env: FakeApi, results_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitlab_env.gitlab_mr("acme/app", MR, sha=HEAD_SHA)
    monkeypatch.setenv("CI_PROJECT_ID", "acme/app")
    assert run(str(results_file)).exit_code == 0
    assert len(gitlab_env.gitlab_notes("acme/app", MR)) == 1
    assert (
        gitlab_env.calls("POST")[0].path == f"/api/v4/projects/acme%2Fapp/merge_requests/{MR}/notes"
    )


def test_502_then_success(gitlab_env: FakeApi, results_file: Path) -> None:
    gitlab_env.fail(Fault("GET", "/user$", 502, "<html>502</html>"))
    gitlab_env.fail(Fault("POST", "/notes$", 503, {"message": "503 Service Unavailable"}))
    assert run(str(results_file)).exit_code == 0
    assert len(gitlab_env.gitlab_notes(PROJECT, MR)) == 1


def test_expect_head_sha_uses_the_merge_request(gitlab_env: FakeApi, results_file: Path) -> None:
    assert run(str(results_file), "--expect-head-sha", HEAD_SHA).exit_code == 0
    assert len(gitlab_env.gitlab_notes(PROJECT, MR)) == 1
    stale = run(str(results_file), "--expect-head-sha", "2" * 40)
    assert "not posting results of another commit" in stale.stderr
