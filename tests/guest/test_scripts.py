"""The guest tier's scripts (scripts/guest/), short of booting the guest: that is `make
guest-tier` (called by `make test`), which takes minutes and needs root."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

GUEST = Path(__file__).parent.parent.parent / "scripts" / "guest"
SCRIPTS = sorted(GUEST.glob("*.sh")) + sorted((GUEST / "jobs").glob("*.sh"))


def test_the_scripts_pass_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed; scripts/bootstrap.sh installs it (CI has it)")
    assert len(SCRIPTS) >= 9
    done = subprocess.run(
        [shellcheck, "-x", "-s", "bash", *map(str, SCRIPTS)],
        cwd=GUEST.parent.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(("require", "code"), [("0", 0), ("1", 3)])
def test_a_skip_says_why_and_can_be_forbidden(tmp_path: Path, require: str, code: int) -> None:
    env = {
        **os.environ,
        "DUET_GUEST_TIER": "0",
        "DUET_REQUIRE_GUEST_TIER": require,
        "DUET_GUEST_OUT": str(tmp_path / "out"),
    }
    done = subprocess.run(
        ["bash", str(GUEST / "run-tier.sh")], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == code, done.stdout + done.stderr
    assert "guest: SKIPPED: DUET_GUEST_TIER=0" in done.stdout
    assert not (tmp_path / "out").exists()
