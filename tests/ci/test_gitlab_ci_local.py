"""The GitLab template run for real by gitlab-ci-local (shell executor), ending in a note.

A small repository made here includes ``ci-templates/gitlab/duet.gitlab-ci.yml``; the
merge-request variables point the job at the local fake API. ``duet compare`` is replaced by
a stand-in (``DUET_COMMAND``) that writes a real, ``duet analyze``-able results file from the
committed fixture: what is tested is the job (base and head passed, exit code kept, artifacts,
reports, the note), not the measurement, which has tests of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.ci.conftest import PROJECT, ROOT
from tests.ci.fakeapi import GITLAB_BOT, GITLAB_TOKEN, FakeApi
from tests.ci.test_templates import GITLAB, tool

# At the top, not in the test: the wheelhouse module takes the system's temporary directory
# when it is imported, and inside the test that is the test's own TMPDIR (the leftover check's),
# where the session's wheelhouse was then found left behind when this test ran alone.
from tests.install.wheelhouse import wheelhouse

MR = 7
STAND_IN = """#!/bin/sh
# duet, except that compare copies a results file instead of measuring. Each call is logged
# with whether the token is in its environment and the job it runs in.
printf '%s\\n' "$*" >> "{log}"
printf '%s token=%s job=%s\\n' "$1" "${{DUET_GITLAB_TOKEN:+yes}}" "$CI_JOB_NAME" >> "{log}.env"
if [ "$1" = compare ]; then
    mkdir -p duet-results
    cp "{results}" duet-results/results.json
    "{python}" -m duet_bench analyze duet-results/results.json --format markdown \\
        > duet-results/report.md
    echo '<testsuites name="duet"/>' > duet-results/junit.xml
    echo 'duet_ratio{{benchmark="parse-json"}} 1.05' > duet-results/metrics.txt
    exit 1
fi
exec "{python}" -m duet_bench "$@"
"""


def _git(repo: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _repo(tmp_path: Path, kind: str) -> tuple[Path, dict[str, str]]:
    """A repository whose HEAD is what GitLab checks out for a pipeline of ``kind``, and the
    merge request variables GitLab gives it, with the expected baseline under ``expected``.

    ``detached``: HEAD is the merge request's head; the baseline is the merge-base.
    ``merged_result``: HEAD is the merge of the head into the target branch, which moved on
    after the fork; the baseline is the target branch's commit, not the merge-base.
    ``merged_result-no-sha``: the same without CI_MERGE_REQUEST_TARGET_BRANCH_SHA: the baseline
    is the merge commit's first parent.
    """
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "app.txt").write_text("v1\n")
    shutil.copy(GITLAB, repo / "duet.gitlab-ci.yml")
    (repo / ".gitlab-ci.yml").write_text("include:\n  - local: duet.gitlab-ci.yml\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    fork = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "feature")
    (repo / "app.txt").write_text("v2\n")
    _git(repo, "commit", "-q", "-am", "head")
    head = _git(repo, "rev-parse", "HEAD")
    variables = {"CI_MERGE_REQUEST_DIFF_BASE_SHA": fork}
    if kind == "detached":
        variables |= {"CI_MERGE_REQUEST_EVENT_TYPE": "detached", "expected": fork}
    else:
        _git(repo, "checkout", "-q", "main")
        (repo / "other.txt").write_text("landed on main after the fork\n")
        _git(repo, "add", ".")
        _git(repo, "commit", "-q", "-m", "main moves on")
        target = _git(repo, "rev-parse", "HEAD")
        _git(repo, "merge", "-q", "--no-ff", "-m", "merge", "feature")
        variables |= {"CI_MERGE_REQUEST_EVENT_TYPE": "merged_result", "expected": target}
        if kind == "merged_result":
            variables["CI_MERGE_REQUEST_TARGET_BRANCH_SHA"] = target
        head = _git(repo, "rev-parse", "HEAD")
    variables["head"] = head
    _git(repo, "remote", "add", "origin", "https://gitlab.example.com/acme/app.git")
    return repo, variables


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["detached", "merged_result", "merged_result-no-sha"])
def test_gitlab_job_posts_a_note(
    tmp_path: Path, fake_api: FakeApi, analysed_doc: dict[str, Any], kind: str
) -> None:
    gcl = tool("gitlab-ci-local")
    if shutil.which("rsync") is None:
        pytest.skip("gitlab-ci-local needs rsync: apt-get install rsync (scripts/bootstrap.sh)")
    repo, mr = _repo(tmp_path, kind)
    base, head = mr.pop("expected"), mr.pop("head")
    assert base != mr["CI_MERGE_REQUEST_DIFF_BASE_SHA"] or kind == "detached"

    results = tmp_path / "results.json"
    results.write_text(json.dumps(analysed_doc))
    log = tmp_path / "argv.log"
    stand_in = tmp_path / "duet-stand-in"
    stand_in.write_text(STAND_IN.format(log=log, results=results, python=sys.executable))
    stand_in.chmod(0o755)
    fake_api.gitlab_mr(PROJECT, MR, sha=head)

    variables = {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_IID": str(MR),
        **mr,
        "CI_API_V4_URL": fake_api.gitlab_url,
        "CI_PROJECT_ID": PROJECT,
        "DUET_GITLAB_TOKEN": GITLAB_TOKEN,
        "DUET_COMMAND": str(stand_in),
    }
    done = _gitlab_ci_local(gcl, repo, tmp_path, variables)
    output = done.stdout + done.stderr
    # The regression fails the job: exit 1 kept after the note was posted.
    assert done.returncode == 1, output
    calls = log.read_text().splitlines()
    assert f"compare {base} {head} --out duet-results --fail-on regression --wait" in calls
    assert "doctor" in calls
    assert any(c.startswith("comment duet-results/results.json --provider gitlab") for c in calls)
    # The merge request's code runs in the duet job, without the token; the note is posted by
    # duet-comment, from the duet job's artifact.
    env = (tmp_path / "argv.log.env").read_text().splitlines()
    assert "compare token= job=duet" in env
    assert "comment token=yes job=duet-comment" in env
    assert not any(line.startswith("comment") and "job=duet-comment" not in line for line in env)

    [note] = fake_api.gitlab_notes(PROJECT, MR)
    assert note["body"].startswith(
        "<!-- duet-report v1 key=default -->\n## duet: parse-json 5.00% slower"
    )
    assert note["author"]["id"] == GITLAB_BOT["id"]
    assert GITLAB_TOKEN not in output

    exported = repo / ".gitlab-ci-local" / "artifacts" / "duet" / "duet-results"
    assert {p.name for p in exported.iterdir()} >= {
        "results.json",
        "report.md",
        "junit.xml",
        "metrics.txt",
    }


def _gitlab_ci_local(
    gcl: str, repo: Path, tmp_path: Path, variables: dict[str, str], timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the duet job, then duet-comment with its artifact, as a merge request pipeline."""
    argv = [gcl, "--force-shell-executor", "--no-color", "--home", str(tmp_path / "home")]
    argv += ["--ignore-predefined-vars", ",".join(k for k in variables if k.startswith("CI_"))]
    for k, v in variables.items():
        argv += ["--variable", f"{k}={v}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CI_", "GITLAB_", "DUET_"))}
    return subprocess.run(
        [*argv, "duet", "duet-comment"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


@pytest.mark.slow
@pytest.mark.measures  # the job's real duet compare
@pytest.mark.usefixtures("fake_api")
def test_gitlab_job_installs_duet_from_a_git_url_and_measures(
    tmp_path: Path, fake_api: FakeApi, request: pytest.FixtureRequest
) -> None:
    """No stand-in: the job installs duet from a git URL and ref (pip offline, from the
    session's wheelhouse), and the real ``duet compare`` measures the merge request."""
    gcl = tool("gitlab-ci-local")
    if shutil.which("rsync") is None:
        pytest.skip("gitlab-ci-local needs rsync: apt-get install rsync (scripts/bootstrap.sh)")
    wheels = wheelhouse(request)
    # The duet project the job installs from: a clone of this checkout's committed state.
    duet_src = tmp_path / "duet-src"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(duet_src)], check=True)
    duet_ref = _git(duet_src, "rev-parse", "HEAD")

    repo, mr = _repo(tmp_path, "detached")
    base, head = mr.pop("expected"), mr.pop("head")
    (repo / "duet.toml").write_text('[[benchmark]]\nname = "noop"\ncommand = "true"\n')
    _git(repo, "add", "duet.toml")
    _git(repo, "commit", "-q", "-m", "duet.toml")
    head = _git(repo, "rev-parse", "HEAD")
    fake_api.gitlab_mr(PROJECT, MR, sha=head)
    jobtmp = tmp_path / "jobtmp"
    jobtmp.mkdir()

    variables = {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_IID": str(MR),
        **mr,
        "CI_API_V4_URL": fake_api.gitlab_url,
        "CI_PROJECT_ID": PROJECT,
        "DUET_GITLAB_TOKEN": GITLAB_TOKEN,
        "DUET_GIT_URL": f"file://{duet_src}",
        "DUET_GIT_REF": duet_ref,
        "DUET_ARGS": "--runs 2 --iterations 1 --warmup 0",
        "DUET_FAIL_ON": "never",
        "DUET_LOCK": str(tmp_path / "duet.lock"),
        "TMPDIR": str(jobtmp),
        **wheels.offline_env(),
    }
    done = _gitlab_ci_local(gcl, repo, tmp_path, variables, timeout_s=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert f"duet: comparing {base} (baseline) with {head} (candidate)" in output
    assert "duet, version " in output
    exported = repo / ".gitlab-ci-local" / "artifacts" / "duet" / "duet-results"
    doc = json.loads((exported / "results.json").read_text())
    assert [b["name"] for b in doc["benchmarks"]] == ["noop"]
    assert doc["config"]["versions"]["baseline"]["commit"] == base
    [note] = fake_api.gitlab_notes(PROJECT, MR)
    assert note["body"].startswith("<!-- duet-report v1 key=default -->")
    # The job's venv went with the job.
    assert list(jobtmp.iterdir()) == []
