"""Every page of the manual that duet cites exists, and reaches an installed duet.

A message read by a user who installed a wheel must name a file on their machine: messages cite
pages through :func:`duet_bench.manual.cite` (the installed copy), never a literal ``docs/...``
path. Comments and docstrings are read by developers in a checkout: their ``docs/`` paths must exist
there, and so must every other ``.md`` name they mention (no design document outside the
repository: ``DESIGN_DOCS`` is empty).
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

from duet_bench import manual

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "duet_bench"
DOCS = ROOT / "docs"
#: Documents outside the repository that comments may cite: none. What the code relies on is
#: written in the repository's own docs (the method: docs/statistics.md; the prototype's figures:
#: docs/accuracy.md; the rules: docs/architecture.md and tests/README.md), so every citation
#: names a file a developer has in the checkout.
DESIGN_DOCS: set[str] = set()
#: Files duet writes, not pages of the manual.
OUTPUTS = {"report.md"}
MD_NAME = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.md)\b")


def _sources() -> Iterator[Path]:
    for path in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "duet_stats").rglob("*.py")]):
        if "_docs" not in path.parts:
            yield path


def _docstring_nodes(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _citations(tree: ast.AST) -> list[ast.Constant]:
    """The page names given to ``cite(...)`` or ``page(...)``."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("cite", "page")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.append(node.args[0])
    return found


def _texts(path: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(messages, notes): string constants that are not docstrings or page names given to
    cite(), and docstrings + comments."""
    source = path.read_text()
    tree = ast.parse(source)
    docstrings = _docstring_nodes(tree)
    cited = {id(node) for node in _citations(tree)}
    messages, notes = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in cited:
            (notes if id(node) in docstrings else messages).append((node.lineno, node.value))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            notes.append((tok.start[0], tok.string))
    return messages, notes


def test_the_manual_is_the_repository_docs() -> None:
    assert manual.MANUAL_DIR.resolve() == DOCS.resolve()
    assert manual.page("configuration.md") == (DOCS / "configuration.md").resolve()
    with pytest.raises(ValueError, match="not a page of duet's manual"):
        manual.page("nonexistent.md")
    with pytest.raises(ValueError, match="a file name like"):
        manual.page("../README.md")


def test_no_message_cites_a_path_a_user_does_not_have() -> None:
    bad = []
    for path in _sources():
        if path.name == "manual.py":  # its own examples of a page name
            continue
        messages, _ = _texts(path)
        for line, text in messages:
            for name in MD_NAME.findall(text):
                if Path(name).name not in OUTPUTS:
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {name!r} in {text!r}")
    assert not bad, "cite manual pages with duet_bench.manual.cite():\n" + "\n".join(bad)


def test_every_cited_page_exists() -> None:
    cited = [
        (path, node.lineno, node.value)
        for path in _sources()
        for node in _citations(ast.parse(path.read_text()))
    ]
    assert cited, "the test finds no citation at all: it would pass whatever duet cites"
    for path, line, name in cited:
        assert (DOCS / name).is_file(), f"{path.relative_to(ROOT)}:{line} cites {name}"
        manual.page(name)


def test_comments_cite_pages_that_exist() -> None:
    bad = []
    for path in _sources():
        _, notes = _texts(path)
        for line, text in notes:
            for name in MD_NAME.findall(text):
                base = Path(name).name
                if name.startswith("docs/"):
                    ok = (ROOT / name).is_file()
                else:
                    ok = base in DESIGN_DOCS or base in OUTPUTS or (DOCS / name).is_file()
                if not ok:
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert not bad, "\n".join(bad)


#: Files the benchmarks and CI write (not documents to read): cited as outputs, never as pages.
WRITTEN = {"report.md", "summary.md", "crossover-study.md", "metric-study.md"}


def _tracked(*patterns: str) -> list[Path]:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", *patterns], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"not a git checkout: {done.stderr.strip()}")
    return [ROOT / name for name in done.stdout.split()]


def test_the_repository_cites_only_documents_it_has() -> None:
    """Every ``.md`` name in the docs, README, benchmarks, scripts and the tests' comments and
    docstrings is a file of the repository (beside the citing file, at the root or in docs/), or
    a file duet writes: a developer never reads a citation of a page the checkout lacks."""
    texts: list[tuple[Path, int, str]] = []
    for path in _tracked("*.md", "benchmarks/*", "scripts/*"):
        if path.suffix in {".md", ".py", ".c", ".h", ".sh"} and path.is_file():
            texts += [(path, n, line) for n, line in enumerate(path.read_text().splitlines(), 1)]
    for path in _tracked("tests/*.py"):
        texts += [(path, n, text) for n, text in _texts(path)[1]]
    bad = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path, line, text in texts
        for name in MD_NAME.findall(text)
        if Path(name).name not in WRITTEN
        and not any((base / name).is_file() for base in (path.parent, ROOT, DOCS))
    ]
    assert not bad, "\n".join(bad)
