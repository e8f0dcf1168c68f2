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


#: A right-to-left override, a zero-width space, a word joiner, a BOM and a tag character:
#: each either reorders what follows or shows nothing (issue 33, finding 6).
INVISIBLE = "\u202e\u200b\u2060\ufeff\U000e0041"


def test_a_names_invisible_characters_are_shown_everywhere(tmp_path: Path, tag: str) -> None:
    """Issue 33, finding 6: a bidi override in a benchmark's name reached the stderr line
    ``duet: <name>: ...`` and the markdown, HTML and JUnit reports. Every one of them shows
    each invisible character as U+FFFD instead."""
    name = "safe" + INVISIBLE + "gnp.exe"
    out = tmp_path / "out"
    done = duet(
        "run", "--baseline", "true", "--candidate", "true", "--name", name, "--runs", "2",
        "--iterations", "1", "--isolation", ISOLATION, "--out", str(out), *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 0, done.stderr
    shown = {"stderr": done.stderr, "stdout": done.stdout}
    for path in out.iterdir():
        if path.name != "results.json":  # data: the name as it is, JSON-escaped
            shown[path.name] = path.read_text()
    html = subprocess.run(
        [sys.executable, "-m", "duet_bench", "report", str(out), "--format", "html"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert html.returncode == 0, html.stderr
    shown["html"] = html.stdout
    assert {"report.md", "junit.xml"} <= set(shown)
    for where, text in shown.items():
        found = [f"U+{ord(c):04X}" for c in INVISIBLE if c in text]
        assert not found, f"{where} shows the name's invisible characters {found}"
    assert "safe\ufffd" in shown["stderr"]
    assert "safe" + "\ufffd" * len(INVISIBLE) + "gnp.exe" in shown["junit.xml"]


def test_a_benchmark_name_longer_than_200_characters_is_refused(tmp_path: Path) -> None:
    """Issue 33, finding 6: a 10 kB name was accepted and printed whole. Refused before
    measuring, from ``--name`` and from the configuration, with the limit and the fix."""
    long = "n" * 10_000
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "run", "--baseline", "true", "--candidate", "true",
         "--name", long, "--out", str(tmp_path / "r.json")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--name is 10000 characters long; a benchmark name may have at most 200" in done.stderr
    assert "fix: give a shorter --name" in done.stderr
    assert long not in done.stderr
    assert not (tmp_path / "r.json").exists()

    from duet_bench.config import load_config
    from duet_bench.errors import ConfigError

    config = tmp_path / "duet.toml"
    config.write_text(f'[[benchmark]]\nname = "{long}"\ncommand = "true"\n')
    with pytest.raises(ConfigError, match="is 10000 characters long") as caught:
        load_config(config)
    assert long not in str(caught.value)


def test_a_memory_limit_of_0_is_refused(tmp_path: Path) -> None:
    """Issue 33, finding 6: ``--memory-limit 0`` was accepted and recorded as no limit."""
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "run", "--baseline", "true", "--candidate", "true",
         "--memory-limit", "0", "--out", str(tmp_path / "r.json")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "0 is not a memory limit" in done.stderr
    assert not (tmp_path / "r.json").exists()
