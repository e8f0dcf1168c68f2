"""Progress on stderr: a bar that moves within a run on a terminal, one line per run in logs,
the terminal's width, and NO_COLOR."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from duet_bench.progress import Progress, say

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_bar_moves_within_a_run_and_fits_the_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    out = Terminal()
    p = Progress(4, label="duet", stream=out)
    p.advance(0.5)
    p.advance(1.0)
    p.step("bench run 1/4 ok · ratio 1.05 so far (CPU time)" + " padding" * 20)
    frames = out.getvalue().split("\r")[1:]
    assert len(frames) == 3
    assert all(len(f) == 59 for f in frames)  # the width less one column: never wraps
    assert frames[0].startswith("duet [###---------------------] 0/4")  # half of the first run
    assert frames[1].startswith("duet [######------------------] 0/4")
    assert frames[2].startswith("duet [######------------------] 1/4")
    assert "bench run 1/4 o" in frames[2]  # cut at the width, not wrapped


def test_a_log_gets_one_line_per_run_and_nothing_within() -> None:
    out = io.StringIO()
    p = Progress(2, label="duet", stream=out)
    p.advance(0.5)
    p.step("a run 1/2 ok")
    p.advance(0.3)
    p.step("a run 2/2 ok")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("duet 1/2 (50%, ")
    assert lines[1].startswith("duet 2/2 (100%, done in ")


def test_a_note_is_said_alike_before_the_bar_and_under_it() -> None:
    """What a session says before its runs (:func:`say`, no bar yet) is the line a note under
    the bar gets, the measured text made harmless for the terminal alike."""
    before, under = io.StringIO(), io.StringIO()
    say("removed duet-1-x\x1b[2J  \n", before)
    Progress(2, label="duet", stream=under).note("removed duet-1-x\x1b[2J  \n")
    assert before.getvalue() == under.getvalue()
    assert before.getvalue() == "removed duet-1-x\n"  # the escape sequence dropped


def _on_a_terminal(argv: list[str], env: dict[str, str]) -> str:
    main_fd, child_fd = pty.openpty()
    proc = subprocess.Popen(argv, stdin=child_fd, stdout=child_fd, stderr=child_fd, env=env)
    os.close(child_fd)
    chunks = []
    while True:
        try:
            data = os.read(main_fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(main_fd)
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("no_color", [False, True])
def test_no_color_is_respected_on_a_terminal(no_color: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if no_color:
        env["NO_COLOR"] = "1"
    text = _on_a_terminal([sys.executable, "-m", "duet_bench", "analyze", str(FIXTURE)], env)
    assert "regression" in text
    assert ("\x1b[" in text) is not no_color
