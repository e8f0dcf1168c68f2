"""A benchmark's stderr reaches the terminal and the CI log shown, never obeyed (issue 25
item 11): no escape sequence, no line a CI runner takes for a workflow command or a log section.
A real ``duet run`` whose side prints them and fails."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from duet_bench.untrusted import for_terminal
from tests.system.test_faults import ISOLATION, QUICK, clean, duet

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"

PAYLOAD = (
    r"printf '\033]0;pwned-title\007\033[31mred\033[0m\n::error::pwned\n  ::add-mask::x\n"
    r"##[error]old form\nsection_start:1:evil\r\033[0Kfolded\n\342\200\256reversed\n' >&2; exit 1"
)


def obeyed(text: str) -> list[str]:
    """What a terminal or a CI runner would act on in ``text``."""
    found = [f"control {c!r}" for c in text if (ord(c) < 32 and c not in "\t\n") or c == "\x7f"]
    found += [f"bidi {c!r}" for c in text if c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067"]
    for line in text.splitlines():
        if line.strip().startswith(("::", "##[")):
            found.append(f"workflow command {line!r}")
    found += re.findall(r"section_(?:start|end):", text)
    return found


@pytest.mark.parametrize("quiet", [True, False], ids=["quiet", "progress"])
def test_a_sides_stderr_is_neutralised_on_the_terminal(
    tmp_path: Path, tag: str, quiet: bool
) -> None:
    quick = QUICK if quiet else tuple(a for a in QUICK if a != "--quiet")
    done = duet(
        "run", "--baseline", PAYLOAD, "--candidate", "true", "--name", "loud", "--runs", "2",
        "--iterations", "1", "--isolation", ISOLATION, "--out", str(tmp_path / "r.json"),
        *quick, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 3, done.stderr
    assert "error::pwned" in done.stderr.replace("\u200b", "")  # shown
    assert obeyed(done.stderr + done.stdout) == []


def test_the_text_report_neutralises_a_benchmark_name(tmp_path: Path) -> None:
    data = json.loads(FIXTURE.read_text())
    data["benchmarks"][0]["name"] = "::error::pwned\x1b]0;t\x07"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "report", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert obeyed(done.stdout) == []


def test_for_terminal_keeps_plain_text() -> None:
    text = "parse: 12 ms\tok\nsecond line: a::b, x ## y"
    assert for_terminal(text) == text
