"""Inputs that are wrong, end to end through ``python -m duet_bench`` as plain root: a results
file or a configuration that duet refuses with a precise error (exit 3 or 2), never a
traceback.

Moved out of ``test_faults.py`` so that the guest tier does not run them (issue 22): they stop
at parsing, before any cgroup or side exists, run without ``SUDO_*`` (the guest's pytest runs
under sudo; reading a file as the invoking user is ``test_privileges.py``'s), and so exercise
nothing under cgroup v2 and systemd that the host does not; under TCG they took 60 s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.gitrepo import make_repo
from tests.system.test_faults import clean, duet

pytestmark = [pytest.mark.usefixtures("no_leftovers")]

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


def fixture_text() -> str:
    return FIXTURE.read_text()


def newer_schema() -> str:
    return fixture_text().replace('"duet-results/1"', '"duet-results/4"', 1)


def edited_sample() -> str:
    doc = json.loads(fixture_text())
    doc["benchmarks"][1]["runs"][3]["candidate"]["iterations_ns"][2] = "12ms"
    return json.dumps(doc)


def misspelt_field() -> str:
    doc = json.loads(fixture_text())
    doc["benchmarks"][0]["runs"][0]["baseline"]["iteration_ns"] = [1]
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(lambda: fixture_text()[:5000], "truncated (line", id="truncated"),
        pytest.param(newer_schema, "written by a newer duet (duet-results/4)", id="newer"),
        pytest.param(
            edited_sample,
            "benchmarks[1] ('render-page').runs[3].candidate.iterations_ns[2]: expected an "
            "integer number of nanoseconds, got a string '12ms'",
            id="hand-edited-sample",
        ),
        pytest.param(misspelt_field, "unknown field 'iteration_ns'", id="hand-edited-field"),
        pytest.param(lambda: "", "the file is empty", id="empty"),
    ],
)
def test_a_bad_results_file_is_a_precise_error(
    tmp_path: Path, tag: str, content: Callable[[], str], message: str
) -> None:
    path = tmp_path / "results.json"
    path.write_text(content())
    done = duet("analyze", str(path), tag=tag, without_sudo=True)  # tmp_path is root's alone
    clean(done)
    assert done.returncode == 3
    assert message in done.stderr
    assert "fix:" in done.stderr


GOOD_CONFIG = 'runs = 2\niterations = 1\n\n[[benchmark]]\nname = "b"\ncommand = "true"\n'


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(GOOD_CONFIG[:-12], "duet.toml:6:6: not valid TOML", id="truncated"),
        pytest.param(
            GOOD_CONFIG.replace("runs = 2", 'runs = "two"'),
            'duet.toml:1: runs must be an integer, got "two"',
            id="wrong-type",
        ),
        pytest.param(
            GOOD_CONFIG.replace("iterations = 1", "iteration = 1"),
            "did you mean 'iterations'?",
            id="misspelt",
        ),
        pytest.param(
            GOOD_CONFIG.replace("[[benchmark]]", "[benchmark]"),
            "benchmark must be an array of tables ([[benchmark]])",
            id="table",
        ),
        pytest.param(
            'runs = 2\n[[benchmark]]\nname = "b"\n',
            "benchmark[1] 'b': says neither command, python nor native",
            id="no-command",
        ),
    ],
)
def test_a_broken_configuration_is_a_precise_error(
    tmp_path: Path, tag: str, config: str, message: str
) -> None:
    repo = make_repo(tmp_path / "project", [{"duet.toml": config}])
    done = duet(
        "compare", "HEAD", "HEAD", "--quiet", "--out", str(tmp_path / "out"),
        tag=tag, cwd=repo.path, without_sudo=True,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "duet: error: " in done.stderr
