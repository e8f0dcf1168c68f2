"""The CI templates: what they may do (parsed), and the linters and schemas they must pass.

The security rules are checked by reading the files, so they hold whatever the linters say:
the pull request workflow never gets write permission or secrets, the privileged workflow
never checks out or runs the pull request's code, and no `${{ }}` expression is pasted into a
script (where a branch name or an input could inject shell code).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "ci-templates"
ACTION = TEMPLATES / "github" / "action.yml"
PR_WORKFLOW = TEMPLATES / "github" / "workflows" / "duet-pr.yml"
COMMENT_WORKFLOW = TEMPLATES / "github" / "workflows" / "duet-comment.yml"
GITLAB = TEMPLATES / "gitlab" / "duet.gitlab-ci.yml"
COMPONENT = TEMPLATES / "gitlab" / "templates" / "duet.yml"
GITHUB_FILES = (ACTION, PR_WORKFLOW, COMMENT_WORKFLOW)


def _yaml() -> Any:
    try:
        from ruamel.yaml import YAML
    except ImportError:  # pragma: no cover - the dev extra has it
        pytest.skip(
            "ruamel.yaml is missing: pip install -e '.[dev]' (it reads YAML 1.2: 'on' stays a key)"
        )
    return YAML(typ="safe", pure=True)


def load(path: Path) -> Any:
    return _yaml().load(path.read_text())


def load_all(path: Path) -> list[Any]:
    return list(_yaml().load_all(path.read_text()))


def tool(name: str) -> str:
    """A dev tool from PATH or the virtual environment; skips with the reason when missing."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        node = Path(sys.prefix) / "node_modules" / ".bin" / name
        if node.exists():
            return str(node)
        pytest.skip(f"{name} is not installed; scripts/bootstrap.sh installs it (CI has it)")
    return found


def _steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if "runs" in doc:
        return list(doc["runs"]["steps"])
    return [s for job in doc["jobs"].values() for s in job.get("steps", [])]


# --------------------------------------------------------------------------------------------
# What the GitHub templates may do


def test_no_template_uses_pull_request_target() -> None:
    for path in (*GITHUB_FILES, GITLAB, COMPONENT):
        code = "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")
        )
        assert "pull_request_target" not in code, path


def test_no_expression_is_pasted_into_a_script() -> None:
    for path in GITHUB_FILES:
        for step in _steps(load(path)):
            assert "${{" not in step.get("run", ""), (path.name, step.get("name"))


def test_pull_request_workflow_has_no_write_permission_and_no_secrets() -> None:
    wf = load(PR_WORKFLOW)
    assert set(wf["on"]) == {"pull_request"}
    assert wf["permissions"] == {"contents": "read"}
    for job in wf["jobs"].values():
        assert set(job.get("permissions", {}).values()) <= {"read", "none"}
        assert "secrets" not in job
    assert "secrets." not in PR_WORKFLOW.read_text()
    assert "secrets." not in ACTION.read_text()
    [checkout] = [s for s in _steps(wf) if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert checkout["with"]["fetch-depth"] == 0
    assert checkout["with"]["persist-credentials"] is False
    [duet] = [s for s in _steps(wf) if s.get("uses") == "./.github/actions/duet"]
    assert duet["with"]["comment"] == "never"


def test_comment_workflow_never_checks_out_or_runs_pull_request_code() -> None:
    wf = load(COMMENT_WORKFLOW)
    pr_name = load(PR_WORKFLOW)["name"]
    assert set(wf["on"]) == {"workflow_run"}
    assert wf["on"]["workflow_run"]["workflows"] == [pr_name]
    assert wf["on"]["workflow_run"]["types"] == ["completed"]
    assert wf["permissions"] == {"pull-requests": "write", "actions": "read"}
    [job] = wf["jobs"].values()
    assert "github.event.workflow_run.event == 'pull_request'" in job["if"]
    assert "permissions" not in job
    uses = [str(s["uses"]) for s in _steps(wf) if "uses" in s]
    assert not any(u.startswith(("actions/checkout", "./", ".\\")) for u in uses), uses
    [download] = [
        s for s in _steps(wf) if str(s.get("uses", "")).startswith("actions/download-artifact@")
    ]
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert download["with"]["name"] == load(ACTION)["inputs"]["artifact-name"]["default"]
    # duet comes from the package index, never from the artifact or a path.
    assert re.fullmatch(r"duet-bench(==[0-9.]+)?", wf["env"]["DUET_PIP_SPEC"])
    scripts = "\n".join(s.get("run", "") for s in _steps(wf))
    for executes in (
        r"\bsource\b",
        r"(^|\s)\.\s+\"?\$",
        r"\bchmod\b",
        r"\beval\b",
        r"bash\s+\"?\$dir",
    ):
        assert not re.search(executes, scripts, re.MULTILINE), executes
    assert "--expect-head-sha" in scripts
    assert '"$RUN_HEAD_SHA"' in scripts
    assert '[ "$recorded" != "$RUN_HEAD_SHA" ]' in scripts


def test_action_runs_every_script_with_bash_and_has_the_documented_inputs() -> None:
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    for step in _steps(action):
        if "run" in step:
            assert step.get("shell") == "bash", step.get("name")
    assert set(action["inputs"]) >= {
        "base",
        "head",
        "config",
        "args",
        "python-version",
        "duet-version",
        "fail-on",
        "comment",
    }
    assert action["inputs"]["head"]["default"] == "HEAD"
    assert action["inputs"]["comment"]["default"] == "auto"
    scripts = "\n".join(s.get("run", "") for s in _steps(action))
    assert "git rev-parse --verify --quiet 'HEAD^1'" in scripts
    assert '"$DUET" doctor' in scripts
    assert '"$DUET" compare "$base" "$DUET_HEAD" --out duet-results' in scripts
    assert '>> "$GITHUB_STEP_SUMMARY"' in scripts
    assert "duet-results/pr-number" in scripts
    assert "duet-results/head-sha" in scripts
    [upload] = [
        s for s in _steps(action) if str(s.get("uses", "")).startswith("actions/upload-artifact@")
    ]
    assert upload["with"]["path"] == "duet-results/"


# --------------------------------------------------------------------------------------------
# What the GitLab templates do


def _interpolate(node: Any, inputs: dict[str, Any]) -> Any:
    if isinstance(node, str):
        return re.sub(r"\$\[\[\s*inputs\.([\w-]+)\s*\]\]", lambda m: str(inputs[m.group(1)]), node)
    if isinstance(node, list):
        return [_interpolate(x, inputs) for x in node]
    if isinstance(node, dict):
        return {k: _interpolate(v, inputs) for k, v in node.items()}
    return node


def test_gitlab_job_is_what_the_issue_asks() -> None:
    ci = load(GITLAB)
    hidden, job = ci[".duet"], ci["duet"]
    assert job["extends"] == ".duet"
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    v = hidden["variables"]
    assert v["GIT_DEPTH"] == "0"
    assert v["DUET_BASE"] == "$CI_MERGE_REQUEST_DIFF_BASE_SHA"
    assert v["DUET_HEAD"] == "$CI_COMMIT_SHA"
    # The token is the user's masked variable, never a value in the template.
    assert "DUET_GITLAB_TOKEN" not in v
    assert "variables" not in ci
    artifacts = hidden["artifacts"]
    assert artifacts["paths"] == ["duet-results/"]  # expose_as needs the trailing slash
    assert artifacts["expose_as"]
    assert artifacts["when"] == "always"
    assert artifacts["reports"] == {
        "junit": "duet-results/junit.xml",
        "metrics": "duet-results/metrics.txt",
    }


def test_component_is_the_same_job() -> None:
    spec, body = load_all(COMPONENT)
    defaults = {k: v.get("default", "") for k, v in spec["spec"]["inputs"].items()}
    assert spec["spec"]["inputs"]["fail-on"]["options"] == ["regression", "any", "never"]
    assert spec["spec"]["inputs"]["comment"]["options"] == ["auto", "always", "never"]
    component = _interpolate(body, defaults)["duet"]
    ci = load(GITLAB)
    included = {**ci[".duet"], **{k: v for k, v in ci["duet"].items() if k != "extends"}}
    assert component == included


def test_gitlab_script_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = tool("shellcheck")
    job = load(GITLAB)[".duet"]
    # The job's variables are in the environment of the script.
    env = "".join(f'{k}="${{{k}:-}}"\n' for k in job["variables"])
    path = tmp_path / "duet.sh"
    path.write_text("#!/bin/sh\n" + env + "\n".join(job["script"]))
    done = subprocess.run([shellcheck, "-s", "sh", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_action_scripts_pass_shellcheck(tmp_path: Path) -> None:
    # actionlint runs shellcheck over workflows only; the composite action's steps too.
    shellcheck = tool("shellcheck")
    for i, step in enumerate(s for s in _steps(load(ACTION)) if "run" in s):
        path = tmp_path / f"step{i}.sh"
        path.write_text("#!/bin/bash\n" + step["run"])
        done = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True)
        assert done.returncode == 0, (step["name"], done.stdout)


# --------------------------------------------------------------------------------------------
# Linters and schemas


def _github_repo(tmp_path: Path) -> Path:
    """A repository laid out as the README says: workflows and the action under .github."""
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "actions" / "duet").mkdir(parents=True)
    for wf in (PR_WORKFLOW, COMMENT_WORKFLOW):
        shutil.copy(wf, repo / ".github" / "workflows" / wf.name)
    shutil.copy(ACTION, repo / ".github" / "actions" / "duet" / "action.yml")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def test_actionlint(tmp_path: Path) -> None:
    actionlint = tool("actionlint")
    repo = _github_repo(tmp_path)
    done = subprocess.run([actionlint, "-no-color"], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    # It reads the local action: an input the action does not have is an error.
    wf = repo / ".github" / "workflows" / "duet-pr.yml"
    wf.write_text(wf.read_text().replace("comment: never", "comment: never\n          comentt: x"))
    done = subprocess.run([actionlint, "-no-color"], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 1
    assert 'input "comentt" is not defined' in done.stdout


@pytest.mark.parametrize(
    ("schema", "paths"),
    [
        ("vendor.github-workflows", (PR_WORKFLOW, COMMENT_WORKFLOW)),
        ("vendor.github-actions", (ACTION,)),
        ("vendor.gitlab-ci", (GITLAB,)),
    ],
)
def test_check_jsonschema(schema: str, paths: tuple[Path, ...]) -> None:
    checker = tool("check-jsonschema")
    done = subprocess.run(
        [checker, "--builtin-schema", schema, *map(str, paths)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_jsonschema_component(tmp_path: Path) -> None:
    # A component is two YAML documents (spec, then the jobs); the schema takes one at a time.
    checker = tool("check-jsonschema")
    header, body = COMPONENT.read_text().split("\n---\n", 1)
    (tmp_path / "spec.yml").write_text(header + "\n")
    (tmp_path / "jobs.yml").write_text(body)
    done = subprocess.run(
        [
            checker,
            "--builtin-schema",
            "vendor.gitlab-ci",
            str(tmp_path / "spec.yml"),
            str(tmp_path / "jobs.yml"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
