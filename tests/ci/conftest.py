"""Fixtures of the CI tests: the fake API server, CI environments, analysed results files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ci.fakeapi import ACTIONS_TOKEN, GITLAB_TOKEN, FakeApi

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "results-basic.json"

REPO = "acme/app"
PR = 12
HEAD_SHA = "c0ffee" + "0" * 34
PROJECT = "42"
MR = 7

#: A benchmark name written by a hostile pull request.
HOSTILE_NAME = (
    "</details><img src=x onerror=alert(1)> @acme/owners `<b>code</b>` "
    "[click](https://evil.example) ![x](https://evil.example/t.png) | # <!-- -->"
)


@pytest.fixture
def fake_api() -> Iterator[FakeApi]:
    with FakeApi() as api:
        yield api


@pytest.fixture(scope="session")
def analysed_doc() -> dict[str, Any]:
    """results-basic.json with every benchmark analysed (as ``duet compare`` writes it)."""
    from duet_bench import results
    from duet_bench.analysis import AnalysisSettings, analyze_document

    doc = analyze_document(results.load(FIXTURE), AnalysisSettings(reps=2000))
    return results.to_dict(doc)


@pytest.fixture
def results_file(tmp_path: Path, analysed_doc: dict[str, Any]) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(analysed_doc), encoding="utf-8")
    return path


@pytest.fixture
def hostile_doc(analysed_doc: dict[str, Any]) -> dict[str, Any]:
    """The analysed document as a hostile pull request could have rewritten it."""
    doc = json.loads(json.dumps(analysed_doc))
    first = doc["benchmarks"][0]
    first["name"] = HOSTILE_NAME
    first["analysis"]["note"] = "output: <script>alert(1)</script> cc @someone"
    second = doc["benchmarks"][1]
    second["analysis"]["verdict"] = "<img src=x onerror=alert(2)>"
    second["analysis"]["ratio"] = "<b>1.0</b>"
    second["analysis"]["baseline"] = {"median_ns": "![](https://evil.example/b.png)"}
    doc["config"] = {
        "versions": {
            "baseline": {"ref": "main <img src=x>", "commit": "![](//e.co)"},
            "candidate": {"ref": "@acme/owners", "commit": "0123456789abcdef"},
        }
    }
    doc["environment"] = {"isolation": "cgroup-v2 <iframe>", "pair": {"cpus": 3}, "cpu": "x"}
    return doc


@pytest.fixture
def github_env(monkeypatch: pytest.MonkeyPatch, fake_api: FakeApi, tmp_path: Path) -> FakeApi:
    """A pull_request job of GitHub Actions talking to the fake API (GHES layout)."""
    _clear_ci(monkeypatch)
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(
            {
                "action": "synchronize",
                "number": PR,
                "pull_request": {"number": PR, "head": {"sha": HEAD_SHA}},
            }
        )
    )
    fake_api.github_pull(REPO, PR, head_sha=HEAD_SHA)
    for k, v in {
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": fake_api.github_url,
        "GITHUB_SERVER_URL": "https://github.example.com",
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_RUN_ID": "4242",
        "GITHUB_TOKEN": ACTIONS_TOKEN,
    }.items():
        monkeypatch.setenv(k, v)
    return fake_api


@pytest.fixture
def gitlab_env(monkeypatch: pytest.MonkeyPatch, fake_api: FakeApi) -> FakeApi:
    """A merge request pipeline job of GitLab CI talking to the fake API."""
    _clear_ci(monkeypatch)
    fake_api.gitlab_mr(PROJECT, MR, sha=HEAD_SHA)
    for k, v in {
        "GITLAB_CI": "true",
        "CI_API_V4_URL": fake_api.gitlab_url,
        "CI_PROJECT_ID": PROJECT,
        "CI_MERGE_REQUEST_IID": str(MR),
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_JOB_URL": "https://gitlab.example.com/acme/app/-/jobs/99",
        "DUET_GITLAB_TOKEN": GITLAB_TOKEN,
    }.items():
        monkeypatch.setenv(k, v)
    return fake_api


def _clear_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for k in list(os.environ):
        if k.startswith(("GITHUB_", "GITLAB_", "CI_", "DUET_")) or k in ("CI",):
            monkeypatch.delenv(k, raising=False)
