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
#: Where GitHub looks for the action of ``uses: OWNER/duet@REF``: the repository's root.
ACTION = ROOT / "action.yml"
SETUP_ACTION = TEMPLATES / "github" / "setup" / "action.yml"
COMMENT_ACTION = TEMPLATES / "github" / "comment" / "action.yml"
INSTALL_SCRIPT = TEMPLATES / "github" / "scripts" / "install-duet.sh"
PR_WORKFLOW = TEMPLATES / "github" / "workflows" / "duet-pr.yml"
COMMENT_WORKFLOW = TEMPLATES / "github" / "workflows" / "duet-comment.yml"
SHARDED_WORKFLOW = TEMPLATES / "github" / "workflows" / "duet-sharded.yml"
GITLAB = TEMPLATES / "gitlab" / "duet.gitlab-ci.yml"
COMPONENT = TEMPLATES / "gitlab" / "templates" / "duet.yml"
ACTIONS = (ACTION, SETUP_ACTION, COMMENT_ACTION)
WORKFLOWS = (PR_WORKFLOW, COMMENT_WORKFLOW, SHARDED_WORKFLOW)
GITHUB_FILES = (*ACTIONS, *WORKFLOWS)
#: How the templates name the duet repository; users replace OWNER with where it is hosted.
USES_DUET = re.compile(r"^OWNER/duet(/ci-templates/github/(setup|comment))?@v[0-9.]+$")
#: The installed duet command, as the install step's output `duet` names it.
DUET = str(Path(sys.executable).parent / "duet")


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


def test_pull_request_workflows_have_no_write_permission_and_no_secrets() -> None:
    for path in (PR_WORKFLOW, SHARDED_WORKFLOW):
        wf = load(path)
        assert set(wf["on"]) == {"pull_request"}
        assert wf["permissions"] == {"contents": "read"}
        for job in wf["jobs"].values():
            assert set(job.get("permissions", {}).values()) <= {"read", "none"}
            assert "secrets" not in job
        assert "secrets." not in path.read_text()
        for s in _steps(wf):
            if str(s.get("uses", "")).startswith("actions/checkout@"):
                assert s["with"]["fetch-depth"] == 0
                assert s["with"]["persist-credentials"] is False
        duet = [s for s in _steps(wf) if re.fullmatch(r"OWNER/duet@v[0-9.]+", str(s.get("uses")))]
        assert duet, path
        for step in duet:
            assert step["with"]["comment"] == "never"
    for action in ACTIONS:
        assert "secrets." not in action.read_text()


def test_templates_use_duet_from_its_repository() -> None:
    """Every duet step is an action of the duet repository at a tag: no package index."""
    for path in WORKFLOWS:
        uses = [str(s["uses"]) for s in _steps(load(path)) if "uses" in s]
        ours = [u for u in uses if "duet" in u]
        assert ours, path
        assert all(USES_DUET.match(u) for u in ours), ours
        scripts = "\n".join(s.get("run", "") for s in _steps(load(path)))
        assert not re.search(r"\bpip3?\b", scripts), path


def test_comment_workflow_never_checks_out_or_runs_pull_request_code() -> None:
    wf = load(COMMENT_WORKFLOW)
    pr_name = load(PR_WORKFLOW)["name"]
    assert load(SHARDED_WORKFLOW)["name"] == pr_name
    assert set(wf["on"]) == {"workflow_run"}
    assert wf["on"]["workflow_run"]["workflows"] == [pr_name]
    assert wf["on"]["workflow_run"]["types"] == ["completed"]
    assert wf["permissions"] == {"pull-requests": "write", "actions": "read"}
    [job] = wf["jobs"].values()
    assert "github.event.workflow_run.event == 'pull_request'" in job["if"]
    assert "permissions" not in job
    [post] = _steps(wf)
    assert re.fullmatch(r"OWNER/duet/ci-templates/github/comment@v[0-9.]+", post["uses"])
    assert post["with"]["artifact-name"] == load(ACTION)["inputs"]["artifact-name"]["default"]

    action = load(COMMENT_ACTION)
    uses = [str(s["uses"]) for s in _steps(action) if "uses" in s]
    assert not any(u.startswith(("actions/checkout", "./", ".\\")) for u in uses), uses
    [download] = [
        s for s in _steps(action) if str(s.get("uses", "")).startswith("actions/download-artifact@")
    ]
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert download["with"]["name"] == "${{ inputs.artifact-name }}"
    assert action["inputs"]["artifact-name"]["default"] == "duet-results"
    # duet comes from the action's own checkout (or the index), never from the artifact.
    [install] = [s for s in _steps(action) if s.get("id") == "install"]
    assert install["env"]["DUET_SOURCE"] == "${{ github.action_path }}/../../.."
    scripts = "\n".join(s.get("run", "") for s in _steps(action))
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
    for path in ACTIONS:
        for step in _steps(load(path)):
            if "run" in step:
                assert step.get("shell") == "bash", (path, step.get("name"))
    assert set(action["inputs"]) >= {
        "base",
        "head",
        "config",
        "args",
        "python-version",
        "install",
        "duet-version",
        "fail-on",
        "comment",
        "sudo",
        "artifact-name",
        "budget",
        "max-runs",
    }
    assert action["inputs"]["head"]["default"] == "HEAD"
    assert action["inputs"]["comment"]["default"] == "auto"
    for path in ACTIONS:
        a = load(path)
        assert a["inputs"]["install"]["default"] == "action", path
        [install] = [s for s in _steps(a) if s.get("id") == "install"]
        assert "ci-templates/github/scripts/install-duet.sh" in install["run"]
        assert install["env"]["DUET_INSTALL"] == "${{ inputs.install }}"
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


def _step(path: Path, step_id: str) -> dict[str, Any]:
    [step] = [s for s in _steps(load(path)) if s.get("id") == step_id]
    return dict(step)


def test_action_reads_every_line_of_a_multi_line_args(tmp_path: Path) -> None:
    """The compare step, run by bash with a duet that records its arguments."""
    log = tmp_path / "argv"
    fake = tmp_path / "duet"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\n')
    fake.chmod(0o755)
    output = tmp_path / "output"
    env = {
        "PATH": "/usr/bin:/bin",
        "DUET": str(fake),
        "DUET_BASE": "main",
        "DUET_HEAD": "HEAD",
        "DUET_CONFIG": "",
        "DUET_ARGS": "--runs 20\n--shard 1/2\n  --iterations  7\n",
        "DUET_BUDGET": "",
        "DUET_MAX_RUNS": "",
        "DUET_FAIL_ON": "regression",
        "DUET_SUDO": "false",
        "GITHUB_OUTPUT": str(output),
    }
    script = _step(ACTION, "compare")["run"]
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert log.read_text().splitlines() == [
        "compare",
        "main",
        "HEAD",
        "--out",
        "duet-results",
        "--fail-on",
        "regression",
        "--runs",
        "20",
        "--shard",
        "1/2",
        "--iterations",
        "7",
    ]
    assert "exit-code=0" in output.read_text()


def test_action_passes_budget_and_max_runs_to_duet_compare(tmp_path: Path) -> None:
    """The inputs budget and max-runs become ``--budget`` and ``--max-runs`` (measure until
    decided), each one argument whatever it holds; empty, neither is passed (the existing test
    above)."""
    log = tmp_path / "argv"
    fake = tmp_path / "duet"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\n')
    fake.chmod(0o755)
    step = _step(ACTION, "compare")
    assert step["env"]["DUET_BUDGET"] == "${{ inputs.budget }}"
    assert step["env"]["DUET_MAX_RUNS"] == "${{ inputs.max-runs }}"
    env = {
        "PATH": "/usr/bin:/bin",
        "DUET": str(fake),
        "DUET_BASE": "main",
        "DUET_HEAD": "HEAD",
        "DUET_CONFIG": "",
        "DUET_ARGS": "",
        "DUET_BUDGET": "10m $(touch pwned)",
        "DUET_MAX_RUNS": "30",
        "DUET_FAIL_ON": "regression",
        "DUET_SUDO": "false",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    argv = log.read_text().splitlines()
    assert argv[argv.index("--budget") + 1] == "10m $(touch pwned)"
    assert argv[argv.index("--max-runs") + 1] == "30"
    assert not (tmp_path / "pwned").exists()


# --------------------------------------------------------------------------------------------
# What the GitLab templates do


_INPUT = r"\$\[\[\s*inputs\.([\w-]+)\s*\]\]"


def _interpolate(node: Any, inputs: dict[str, Any], component: dict[str, str]) -> Any:
    """GitLab's ``$[[ inputs.X ]]`` and ``$[[ component.X ]]`` (spec:component), in keys too;
    a value that is one array input alone becomes that array (``rules: $[[ inputs.rules ]]``)."""
    if isinstance(node, str):
        whole = re.fullmatch(_INPUT, node)
        if whole and isinstance(inputs[whole.group(1)], list):
            return inputs[whole.group(1)]
        node = re.sub(_INPUT, lambda m: str(inputs[m.group(1)]), node)
        return re.sub(r"\$\[\[\s*component\.([\w-]+)\s*\]\]", lambda m: component[m.group(1)], node)
    if isinstance(node, list):
        return [_interpolate(x, inputs, component) for x in node]
    if isinstance(node, dict):
        return {
            _interpolate(k, inputs, component): _interpolate(v, inputs, component)
            for k, v in node.items()
        }
    return node


def _component(inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The component's jobs as GitLab makes them from ``inputs`` (the defaults for the rest),
    outside any component context (as the template)."""
    spec, body = load_all(COMPONENT)
    values = {k: v.get("default", "") for k, v in spec["spec"]["inputs"].items()}
    return _interpolate(body, values | (inputs or {}), {"name": "", "sha": "", "reference": ""})


def test_gitlab_job_is_what_the_issue_asks() -> None:
    ci = load(GITLAB)
    hidden, job = ci[".duet"], ci["duet"]
    assert job["extends"] == ".duet"
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    v = hidden["variables"]
    assert v["GIT_DEPTH"] == "0"
    # Empty: the script picks the baseline by pipeline kind (tests/ci/test_gitlab_ci_local.py).
    assert v["DUET_BASE"] == ""
    assert v["DUET_HEAD"] == "$CI_COMMIT_SHA"
    assert v["DUET_INSTALL"] == "git"
    assert hidden["resource_group"] == "duet"
    script = "\n".join(hidden["script"])
    assert "CI_MERGE_REQUEST_TARGET_BRANCH_SHA" in script
    assert '--fail-on "$DUET_FAIL_ON" --wait' in script
    assert 'spec="git+$url@$ref"' in script
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
    assert spec["spec"]["inputs"]["fail-on"]["options"] == [
        "regression",
        "inconclusive",
        "any",
        "never",
    ]
    assert spec["spec"]["inputs"]["comment"]["options"] == ["auto", "always", "never"]
    assert spec["spec"]["component"] == ["name", "sha", "reference"]
    assert spec["spec"]["inputs"]["duet-git-url"]["default"] == ""
    assert spec["spec"]["inputs"]["duet-git-ref"]["default"] == ""
    job = body["$[[ inputs.job-name ]]"]
    assert job["variables"]["DUET_COMPONENT_REFERENCE"] == "$[[ component.reference ]]"
    assert job["variables"]["DUET_COMPONENT_SHA"] == "$[[ component.sha ]]"
    # The template has no component context: those two are empty there.
    component = _interpolate(body, defaults, {"name": "", "sha": "", "reference": ""})["duet"]
    ci = load(GITLAB)
    included = {**ci[".duet"], **{k: v for k, v in ci["duet"].items() if k != "extends"}}
    assert component == included


def _gitlab_jobs() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(where, measuring job, note job) of the template and of the component."""
    ci = load(GITLAB)
    body = _component()
    template = (
        "template",
        {**ci[".duet"], **{k: v for k, v in ci["duet"].items() if k != "extends"}},
        {**ci[".duet-comment"], **{k: v for k, v in ci["duet-comment"].items() if k != "extends"}},
    )
    return [template, ("component", body["duet"], body["duet-comment"])]


def test_gitlab_note_is_posted_by_a_job_that_runs_no_merge_request_code() -> None:
    for where, measure, note in _gitlab_jobs():
        measuring = "\n".join(measure["script"])
        # The job that builds and runs the merge request's code posts nothing and drops the
        # token before anything of the merge request runs.
        assert " comment " not in measuring, where
        assert measuring.index("unset DUET_GITLAB_TOKEN") < measuring.index('"$duet" doctor')
        assert measuring.index("unset DUET_GITLAB_TOKEN") < measuring.index("set -- compare")
        assert "environment" not in measure, where
        # The note job: no checkout, the results as an artifact, the token's environment.
        assert note["variables"]["GIT_STRATEGY"] == "none", where
        assert note["needs"] == [{"job": "duet", "artifacts": True}], where
        assert note["environment"] == {"name": "duet-note", "action": "access"}, where
        assert note["rules"][0]["when"] == "always", where
        assert "artifacts" not in note, where
        assert "resource_group" not in note, where
        posting = "\n".join(note["script"])
        assert '"$duet" comment duet-results/results.json --provider gitlab' in posting
        # It runs duet and nothing of the repository: no git, no build, no relative program.
        install, post = note["script"]
        assert install == measure["script"][0], where  # the same install lines
        for word in ("compare", "git ", "make", "./", "sh ", "bash", "source", ". "):
            assert word not in post.replace("duet: ", ""), (where, word)


def test_component_note_job_is_the_templates() -> None:
    [(_w, _m, template_note), _] = _gitlab_jobs()
    assert _component()["duet-comment"] == template_note


def test_component_job_name_and_rules_are_inputs() -> None:
    rules = [{"if": '$CI_COMMIT_BRANCH == "main"'}, {"if": "$CI_MERGE_REQUEST_IID"}]
    note_rules = [{"if": "$CI_MERGE_REQUEST_IID", "when": "always"}]
    jobs = _component({"job-name": "perf-parser", "rules": rules, "comment-rules": note_rules})
    assert set(jobs) == {"perf-parser", "perf-parser-comment"}
    assert jobs["perf-parser"]["rules"] == rules
    note = jobs["perf-parser-comment"]
    assert note["needs"] == [{"job": "perf-parser", "artifacts": True}]
    assert note["rules"] == note_rules
    # Two inclusions with two names are two pairs of jobs (GitLab merges jobs by name).
    assert not set(jobs) & set(_component())
    # The defaults are the template's: in merge request pipelines, the note whatever happened.
    spec, _body = load_all(COMPONENT)
    assert spec["spec"]["inputs"]["rules"]["type"] == "array"
    assert _component()["duet"]["rules"] == load(GITLAB)["duet"]["rules"]


@pytest.mark.parametrize("where", ["template", "component"])
def test_gitlab_job_passes_budget_and_max_runs_to_duet_compare(tmp_path: Path, where: str) -> None:
    """DUET_BUDGET and DUET_MAX_RUNS (the component's inputs budget and max-runs) become
    ``--budget`` and ``--max-runs``; empty (the defaults), neither is passed."""
    log = tmp_path / "argv"
    fake = tmp_path / "duet"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = compare ]; then printf "%s\\n" "$@" > {log}; fi\n')
    fake.chmod(0o755)

    def compare(inputs: dict[str, str], variables: dict[str, str]) -> list[str]:
        if where == "component":
            job = _component(inputs)["duet"]
        else:
            ci = load(GITLAB)
            job = {**ci[".duet"], "variables": {**ci[".duet"]["variables"], **variables}}
        env = {
            **{k: str(v) for k, v in job["variables"].items()},
            "DUET_BASE": "base",
            "DUET_HEAD": "head",
            "DUET_COMMAND": str(fake),
            "PATH": "/usr/bin:/bin",
        }
        done = subprocess.run(
            ["sh", "-e", "-c", "\n".join(job["script"])],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return log.read_text().splitlines()

    argv = compare({}, {})
    assert "--budget" not in argv
    assert "--max-runs" not in argv
    argv = compare(
        {"budget": "10m", "max-runs": "30"}, {"DUET_BUDGET": "10m", "DUET_MAX_RUNS": "30"}
    )
    assert argv[argv.index("--budget") + 1] == "10m"
    assert argv[argv.index("--max-runs") + 1] == "30"


def test_gitlab_note_script_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = tool("shellcheck")
    job = load(GITLAB)[".duet-comment"]
    env = "".join(f'{k}="${{{k}:-}}"\n' for k in job["variables"])
    path = tmp_path / "duet-comment.sh"
    path.write_text("#!/bin/sh\n" + env + "\n".join(job["script"]))
    done = subprocess.run([shellcheck, "-s", "sh", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


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
    # actionlint runs shellcheck over workflows only; the composite actions' steps too.
    shellcheck = tool("shellcheck")
    steps = [s for a in ACTIONS for s in _steps(load(a)) if "run" in s]
    for i, step in enumerate(steps):
        path = tmp_path / f"step{i}.sh"
        path.write_text("#!/bin/bash\n" + step["run"])
        done = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True)
        assert done.returncode == 0, (step["name"], done.stdout)
    done = subprocess.run([shellcheck, str(INSTALL_SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


# --------------------------------------------------------------------------------------------
# Linters and schemas


def _github_repo(tmp_path: Path) -> Path:
    """The workflows in a repository that also holds duet's actions where the duet repository
    has them, ``OWNER/duet...@REF`` turned into the local path: so actionlint reads the actions
    (their inputs) as GitHub would fetch them."""
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    for wf in WORKFLOWS:
        text = re.sub(r"OWNER/duet(/[\w/-]+)?@v[0-9.]+", r"./\1", wf.read_text())
        (repo / ".github" / "workflows" / wf.name).write_text(text.replace(".//", "./"))
    shutil.copy(ACTION, repo / "action.yml")
    for action in (SETUP_ACTION, COMMENT_ACTION, INSTALL_SCRIPT):
        target = repo / action.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(action, target)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def test_actionlint(tmp_path: Path) -> None:
    actionlint = tool("actionlint")
    repo = _github_repo(tmp_path)
    done = subprocess.run([actionlint, "-no-color"], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    # It reads the local action: an input the action does not have is an error.
    wf = repo / ".github" / "workflows" / "duet-pr.yml"
    assert "uses: ./\n" in wf.read_text()
    wf.write_text(wf.read_text().replace("comment: never", "comment: never\n          comentt: x"))
    done = subprocess.run([actionlint, "-no-color"], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 1
    assert 'input "comentt" is not defined' in done.stdout


@pytest.mark.parametrize(
    ("schema", "paths"),
    [
        ("vendor.github-workflows", WORKFLOWS),
        ("vendor.github-actions", ACTIONS),
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
    # A component is two YAML documents (spec, then the jobs); the schema takes one at a time,
    # the jobs as GitLab validates them: with the inputs interpolated (rules is an array input).
    import json

    checker = tool("check-jsonschema")
    header, _body = COMPONENT.read_text().split("\n---\n", 1)
    (tmp_path / "spec.yml").write_text(header + "\n")
    (tmp_path / "jobs.yml").write_text(json.dumps(_component()))
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


FAKE_PYTHON = """#!/bin/sh
# python3 -m venv DIR makes a venv whose python records what pip installs and whose duet
# does nothing: enough to see what the component's script installs from.
if [ "$1" = -m ] && [ "$2" = venv ]; then
    mkdir -p "$3/bin"
    printf '#!/bin/sh\\nprintf "%%s\\\\n" "$*" >> "{log}"\\n' > "$3/bin/python"
    printf '#!/bin/sh\\nexit 0\\n' > "$3/bin/duet"
    chmod +x "$3/bin/python" "$3/bin/duet"
fi
"""


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        # The component's own project and commit, with the job token on the same GitLab.
        ({}, "git+https://gitlab-ci-token:job-token@gitlab.example.com/tools/duet.git@c0ffee"),
        (
            {"duet-git-url": "https://mirror.example.org/duet.git", "duet-git-ref": "v0.1.0"},
            "git+https://mirror.example.org/duet.git@v0.1.0",
        ),
        ({"install": "index", "duet-version": "0.1.0"}, "duet-bench==0.1.0"),
    ],
)
def test_component_installs_from_its_own_project(
    tmp_path: Path, inputs: dict[str, str], expected: str
) -> None:
    spec, body = load_all(COMPONENT)
    values = {k: v.get("default", "") for k, v in spec["spec"]["inputs"].items()} | inputs
    context = {
        "name": "duet",
        "sha": "c0ffee",
        "reference": "gitlab.example.com/tools/duet/duet@0.1.0",
    }
    job = _interpolate(body, values, context)["duet"]  # the default job-name
    log = tmp_path / "pip.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(FAKE_PYTHON.replace("{log}", str(log)))
    (bin_dir / "python3").chmod(0o755)
    env = {
        **{k: str(v) for k, v in job["variables"].items()},
        "DUET_BASE": "base",
        "DUET_HEAD": "head",
        "DUET_COMMENT": "never",
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "TMPDIR": str(tmp_path),
        "CI_JOB_ID": "1",
        "CI_JOB_TOKEN": "job-token",
        "CI_SERVER_HOST": "gitlab.example.com",
        "CI_SERVER_PROTOCOL": "https",
    }
    done = subprocess.run(
        ["sh", "-e", "-c", "\n".join(job["script"])],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [install] = [line for line in log.read_text().splitlines() if " install " in line]
    assert install.endswith(f" {expected}"), install
    assert not (tmp_path / "duet-venv-1").exists()  # removed when the job's script ends


def test_template_without_a_git_url_says_what_to_set(tmp_path: Path) -> None:
    job = load(GITLAB)[".duet"]
    env = {**{k: str(v) for k, v in job["variables"].items()}, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        ["sh", "-e", "-c", "\n".join(job["script"])],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "DUET_GIT_URL and DUET_GIT_REF say where to install duet from" in done.stderr


def test_action_steps_ignore_packages_of_the_users_repository(tmp_path: Path) -> None:
    """The workspace is the current directory of every step: a `duet_bench` or `duet_stats`
    package there must not replace duet's own (the duet command does not put the current
    directory on sys.path)."""
    for name in ("duet_bench", "duet_stats"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise ImportError('the user {name}')\n")
    (tmp_path / "duet-results").mkdir()
    (tmp_path / "duet-results" / "report.md").write_text("## duet: no change\n")
    summary = tmp_path / "summary.md"
    [step] = [s for s in _steps(load(ACTION)) if s.get("name") == "Job summary"]
    done = subprocess.run(
        ["bash", "-c", step["run"]],
        cwd=tmp_path,
        env={
            "PATH": "/usr/bin:/bin",
            "DUET": DUET,
            "GITHUB_STEP_SUMMARY": str(summary),
        },
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "## duet: no change" in summary.read_text()


def test_action_outputs_give_later_steps_the_verdict_and_counts(tmp_path: Path) -> None:
    """The Outputs step, run as the action runs it, writes what `outputs:` promises."""
    action = load(ACTION)
    assert {"exit-code", "results", "verdict", "regressions", "improvements"} <= set(
        action["outputs"]
    )
    assert {"inconclusive", "unchanged"} <= set(action["outputs"])
    for name in ("verdict", "regressions", "improvements", "inconclusive", "unchanged"):
        assert action["outputs"][name]["value"] == f"${{{{ steps.outputs.outputs.{name} }}}}"
    (tmp_path / "duet-results").mkdir()
    shutil.copy(
        ROOT / "tests" / "fixtures" / "results-basic.json",
        tmp_path / "duet-results" / "results.json",
    )
    written = tmp_path / "github-output"
    step = _step(ACTION, "outputs")
    done = subprocess.run(
        ["bash", "-c", step["run"]],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "DUET": DUET, "GITHUB_OUTPUT": str(written)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    got = dict(line.split("=", 1) for line in written.read_text().splitlines())
    assert got["verdict"] == "regression"
    # The fixture, analysed: 1 regression, 1 improvement, 1 inconclusive, 2 unchanged, and one
    # benchmark whose every run failed (no verdict, in no count).
    counts = [int(got[k]) for k in ("regressions", "improvements", "inconclusive", "unchanged")]
    assert counts == [1, 1, 1, 2]


def test_action_steps_run_duet_github_and_annotate_regressions(
    tmp_path: Path, results_file: Path
) -> None:
    """The steps after duet compare run the installed `duet github`, not a module of the
    package; the Annotate step, run as the action runs it, prints an ::error per regression."""
    scripts = "\n".join(s.get("run", "") for s in _steps(load(ACTION)))
    assert "duet_bench.ci.github" not in scripts
    for what in ("outputs", "summary", "annotate"):
        assert f'"$DUET" github {what} duet-results/' in scripts
    (tmp_path / "duet-results").mkdir()
    shutil.copy(results_file, tmp_path / "duet-results" / "results.json")
    [step] = [s for s in _steps(load(ACTION)) if s.get("name") == "Annotate regressions"]
    done = subprocess.run(
        ["bash", "-c", step["run"]],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "DUET": DUET},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("::error title=duet%3A regression::parse-json"), done.stdout
    assert done.stderr == ""


def test_action_installs_only_the_extras_its_job_uses() -> None:
    action = load(ACTION)
    # The job runs duet compare, whose artifact carries the plots; scipy is for bca/calibrate.
    assert action["inputs"]["extras"]["default"] == "plots"
    assert _step(ACTION, "install")["env"]["DUET_EXTRAS"] == "${{ inputs.extras }}"
    # The comment action only comments: the core install does that.
    assert "DUET_EXTRAS" not in _step(COMMENT_ACTION, "install")["env"]
    script = INSTALL_SCRIPT.read_text()
    assert 'spec="${spec}[${extras}]"' in script
