"""The mutation tier in CI (tests/README.md, "Mutants"): the hand-written mutants that do not
measure and the generated sample run in the parallel group, the measuring mutants in the serial
one. Each fails when a mutant survives (or the sample's score falls), naming it."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mutants.catalogue import HAND
from tests.mutants.engine import (
    GUARD_EXIT,
    ROOT,
    MutantError,
    check_applies,
    copy_of_checkout,
    mutated_text,
    run_mutant,
    run_tests,
)
from tests.mutants.generate import TARGETS, all_mutants

SCRIPT = ROOT / "scripts" / "mutants.py"


def _tier(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=1700,
    )


def test_every_hand_written_mutant_applies_exactly_once() -> None:
    assert len({m.name for m in HAND}) == len(HAND)
    for m in HAND:
        check_applies(m)
        for test in m.tests:
            assert (ROOT / test.split("::")[0]).is_file(), (m.name, test)
    # The six behaviours of issue 32 are there.
    names = {m.name for m in HAND}
    assert {
        "sides-swapped",
        "crossover-skipped",
        "run-dropped",
        "interval-quantiles-wrong",
        "barrier-releases-one-side-early",
        "verdict-threshold-inverted",
    } <= names


def test_a_mutant_that_no_longer_matches_is_an_error() -> None:
    (m,) = [m for m in HAND if m.name == "verdict-threshold-inverted"]
    with pytest.raises(MutantError, match="occurs 0 times"):
        mutated_text("nothing here", m)
    with pytest.raises(MutantError, match="occurs 2 times"):
        mutated_text(m.old + m.old, m)


def test_the_generated_mutants_cover_every_target_and_change_their_file() -> None:
    mutants = all_mutants()
    assert {m.path for m in mutants} == set(TARGETS)
    assert len({m.name for m in mutants}) == len(mutants)
    for m in mutants[::50]:
        check_applies(m)


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def test_a_mutant_breaks_the_copy_only_and_the_guard_refuses_the_checkout() -> None:
    (m,) = [m for m in HAND if m.name == "verdict-threshold-inverted"]
    target = ROOT / m.path
    before = _digest([target])
    with copy_of_checkout() as copy:
        outcome = run_mutant(copy, m)
        assert outcome.status == "killed", outcome
        # The copy got its file back; the checkout never changed.
        assert (copy / m.path).read_bytes() == target.read_bytes()
        assert _digest([target]) == before
        # Run from the checkout with the copy named as the root: the guard stops the run.
        env = {**os.environ, "DUET_MUTANT_ROOT": str(copy)}
        env.pop("PYTHONPATH", None)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "tests.mutants.guard", "--collect-only", "-q",
             "tests/mutants/test_mutants.py", f"--basetemp={copy.parent / 'pytest'}",
             "-p", "no:cacheprovider"],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        assert done.returncode == GUARD_EXIT, done.stdout + done.stderr
        assert "not from the mutated copy" in done.stdout + done.stderr
        # And in the copy, the copy is imported: the guard lets the run go on.
        first = "tests/mutants/test_mutants.py::test_every_hand_written_mutant_applies_exactly_once"
        rc, out = run_tests(copy, [first], 120)
        assert rc == 0, out


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_hand_written_mutants_that_do_not_measure_die() -> None:
    done = _tier("--hand", "--quiet-only", "--jobs", "1")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_generated_sample_keeps_its_score() -> None:
    done = _tier("--generated", "sample", "--jobs", "1")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.measures
@pytest.mark.timeout(1800)
def test_the_measuring_mutants_die() -> None:
    """Each mutant's tests measure, one at a time (this test runs in the serial group). A
    mutant counts as killed when its tests fail; their chance of failing unmutated is each
    test's own (their docstrings), and a failing control run is an error, not a kill."""
    done = _tier("--hand", "--measuring-only", "--jobs", "1")
    assert done.returncode == 0, done.stdout + done.stderr
