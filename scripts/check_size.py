#!/usr/bin/env python3
"""The size guard of ``make lint``: no module over 500 lines, no function over 100 lines.

A module that long holds more than one job (docs/architecture.md, rule 1: one job per module) and a
function that long more than one step; both are where a reader gets lost and a merge conflicts. ruff
cannot say it: it has no module-length rule (pylint's C0302 is not implemented,
astral-sh/ruff#25001) and PLR0915 counts statements, not lines. So this script does, with the
standard library's ``ast``: a function's size is its lines from ``def`` to its last line
(docstring and nested functions included, decorators not), a module's its physical lines.

The justified exceptions are listed in :data:`EXCEPTIONS`, each with its reason. An entry
that no longer exceeds its limit (or names a file or function that is gone) fails the check
too, so the list only ever shrinks to what is true.

    python scripts/check_size.py                  # duet, stats, benchmarks of this checkout
    python scripts/check_size.py --root DIR duet  # another tree, without the exceptions

Exit 0: within the limits; 1: a violation or a stale exception (each printed as
``path:line: what``); 2: wrong arguments.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MODULE_MAX_LINES = 500
FUNCTION_MAX_LINES = 100
PATHS = ("duet_bench", "duet_stats", "benchmarks")
ROOT = Path(__file__).resolve().parent.parent

_STUDY = "a study script run by hand for docs/accuracy.md, one table after another"

#: ``path`` for a module, ``path::qualified.name`` for a function, relative to the root.
EXCEPTIONS: dict[str, str] = {
    "benchmarks/accuracy.py": _STUDY,
    "benchmarks/accuracy.py::summarize": _STUDY,
    "benchmarks/accuracy.py::tables": _STUDY,
    "benchmarks/metric_study.py": _STUDY,
    "benchmarks/metric_study.py::summarize": _STUDY,
    "duet_bench/harness/duet_barrier.py": (
        "the barrier client is one self-contained file copied into "
        "the measured environment (docs/barrier-protocol.md)"
    ),
}


@dataclass(frozen=True, slots=True)
class Size:
    """One module or function: where it starts and how many lines it has."""

    key: str  # "duet_bench/x.py" or "duet_bench/x.py::Class.method"
    path: str
    line: int
    lines: int
    limit: int
    what: str  # "module" or "function Class.method"


def sizes(root: Path, paths: Sequence[str]) -> Iterator[Size]:
    """Every module and function under ``paths`` (files or directories) of ``root``."""
    for name in paths:
        base = root / name
        files = [base] if base.is_file() else sorted(base.rglob("*.py"))
        for file in files:
            if "__pycache__" in file.parts:
                continue
            rel = file.relative_to(root).as_posix()
            text = file.read_text(encoding="utf-8")
            yield Size(rel, rel, 1, len(text.splitlines()), MODULE_MAX_LINES, "module")
            yield from _functions(rel, ast.parse(text, filename=rel))


def _functions(rel: str, tree: ast.AST) -> Iterator[Size]:
    def visit(node: ast.AST, prefix: str) -> Iterator[Size]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                end = child.end_lineno or child.lineno
                lines = end - child.lineno + 1
                yield Size(
                    f"{rel}::{name}",
                    rel,
                    child.lineno,
                    lines,
                    FUNCTION_MAX_LINES,
                    f"function {name}",
                )
                yield from visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.")
            else:
                yield from visit(child, prefix)

    return visit(tree, "")


def check(root: Path, paths: Sequence[str], exceptions: Mapping[str, str]) -> list[str]:
    """The problems, one line each: oversized modules and functions not in ``exceptions``,
    and entries of ``exceptions`` that are no longer needed."""
    problems = []
    seen: dict[str, Size] = {}
    for size in sizes(root, paths):
        seen[size.key] = size
        if size.lines > size.limit and size.key not in exceptions:
            problems.append(
                f"{size.path}:{size.line}: {size.what} has {size.lines} lines "
                f"(limit {size.limit}); split it, or list {size.key!r} with the reason in "
                "EXCEPTIONS of scripts/check_size.py"
            )
    for key in exceptions:
        listed = seen.get(key)
        if listed is None:
            problems.append(
                f"scripts/check_size.py: EXCEPTIONS lists {key!r}, which does not exist any "
                "more; remove the entry"
            )
        elif listed.lines <= listed.limit:
            problems.append(
                f"{listed.path}:{listed.line}: {listed.what} has {listed.lines} lines now "
                f"(limit {listed.limit}): remove {key!r} from EXCEPTIONS of scripts/check_size.py"
            )
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help=f"files or directories (default: {PATHS})")
    parser.add_argument(
        "--root", type=Path, help="the tree to check, without EXCEPTIONS (default: this checkout)"
    )
    args = parser.parse_args(argv)
    root = args.root or ROOT
    exceptions = EXCEPTIONS if args.root is None else {}
    missing = [p for p in args.paths or PATHS if not (root / p).exists()]
    if missing:
        parser.error(f"no such file or directory under {root}: {', '.join(missing)}")
    problems = check(root, args.paths or PATHS, exceptions)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
