"""The build cache of the tests (tests/build_cache.py) on real pytest sessions (pytester): a
build is made once for its inputs and reused by a later session, a changed input makes a new
one, a failed build leaves nothing that passes for done, and without the cache plugin each
session builds in its own temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent.parent

TEST = """
from pathlib import Path
import pytest
from tests.build_cache import cached_build

LOG = Path({log!r})

@pytest.fixture
def built(request):
    def build(where):
        with LOG.open("a") as f:
            f.write("built\\n")
        if {fail!r}:
            (where / "half").write_text("half")
            raise RuntimeError("the build failed")
        (where / "out").write_text({content!r})
    return cached_build(request, "thing", [{content!r}], build)

def test_it(built):
    assert (built / "out").read_text() == {content!r}
"""


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.syspath_prepend(str(REPO))
    return pytester


def run(
    session: pytest.Pytester, log: Path, content: str, *args: str, fail: bool = False
) -> pytest.RunResult:
    session.makepyfile(test_it=TEST.format(log=str(log), content=content, fail=fail))
    return session.runpytest(*args)


def test_a_build_is_made_once_and_reused_by_a_later_session(
    session: pytest.Pytester, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    run(session, log, "one").assert_outcomes(passed=1)
    run(session, log, "one").assert_outcomes(passed=1)
    assert log.read_text() == "built\n"
    run(session, log, "two").assert_outcomes(passed=1)  # another input: another build
    assert log.read_text() == "built\nbuilt\n"
    builds = session.path / ".pytest_cache" / "d" / "builds"
    kept = [p.name for p in builds.iterdir() if p.is_dir()]
    assert len(kept) == 2, kept
    assert all(name.startswith("thing-") for name in kept), kept


def test_a_failed_build_is_not_kept(session: pytest.Pytester, tmp_path: Path) -> None:
    log = tmp_path / "log"
    run(session, log, "one", fail=True).assert_outcomes(errors=1)
    builds = session.path / ".pytest_cache" / "d" / "builds"
    assert [p.name for p in builds.iterdir() if p.is_dir()] == []
    run(session, log, "one").assert_outcomes(passed=1)  # built again, and kept this time
    assert log.read_text() == "built\nbuilt\n"


def test_without_the_cache_plugin_every_session_builds(
    session: pytest.Pytester, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    run(session, log, "one", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    run(session, log, "one", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert log.read_text() == "built\nbuilt\n"
