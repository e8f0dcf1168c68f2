"""The command reference in docs/ is the commands' own --help (sqlite-utils' cog check)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cli_reference_is_up_to_date() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import cli_docs
    finally:
        sys.path.pop(0)
    expected = cli_docs.render()
    actual = (ROOT / "docs" / "cli.md").read_text()
    assert actual == expected, "docs/cli.md is stale: run python scripts/cli_docs.py > docs/cli.md"


def test_help_starts_fast_without_heavy_imports() -> None:
    code = (
        "import sys, time; t=time.perf_counter(); from duet_bench.cli import main\n"
        "heavy=[m for m in ('numpy','scipy','matplotlib','git','arch') if m in sys.modules]\n"
        "print(heavy)"
    )
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", f"heavy modules imported by the CLI: {done.stdout}"
    assert time.perf_counter() - t0 < 10  # a sanity bound, not a timing test
    help_run = subprocess.run(
        [sys.executable, "-m", "duet_bench", "--help"], capture_output=True, text=True, check=True
    )
    assert "Exit codes" in help_run.stdout


def test_readme_links_every_doc_it_names_and_each_link_resolves() -> None:
    root = ROOT
    readme = (root / "README.md").read_text(encoding="utf-8")
    # The first two commands a reader runs stay what they are.
    assert readme.split("\n")[3].startswith("make demo   # a .venv with duet's runtime only")
    assert "\nmake test   # " in readme
    targets = re.findall(r"\]\(([^)#\s]+)\)", readme)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert "docs/images/comment.png" in local
    missing = [t for t in local if not (root / t).exists()]
    assert missing == []
    # Every docs/*.md named outside a code block is a link.
    prose = re.sub(r"```.*?```", "", readme, flags=re.S)
    named = set(re.findall(r"docs/[a-z-]+\.md", prose))
    assert named <= set(local), named - set(local)
