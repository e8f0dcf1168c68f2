#!/usr/bin/env python3
"""The suite's false-failure budget (issue 32): each test that asserts a measured quantity,
its chance of failing by chance on a correct duet (``tests/budget.toml``; the model figures are
computed here), and the sum per CI run, which must stay below 1/200.

    python scripts/test_budget.py            # the table and the sum; exit 1 over the target
    python scripts/test_budget.py --readme   # the block tests/README.md shows
    python scripts/test_budget.py --write-readme   # replace that block in tests/README.md

How a figure is obtained, and how a new measuring test is added: tests/budget.py, tests/README.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.budget import TARGET, Figure, load, per_ci_run

README = Path(__file__).resolve().parent.parent / "tests" / "README.md"
BEGIN = "<!-- budget: scripts/test_budget.py --write-readme -->"
END = "<!-- /budget -->"


def sig3(x: float) -> str:
    return f"{x:.3g}"


def readme_block(figures: list[Figure], exempt: int) -> str:
    total = per_ci_run(figures)
    rows = sorted(figures, key=lambda f: f.p * f.per_ci, reverse=True)
    lines = [
        BEGIN,
        f"**{sig3(total)} per CI run** (1 in {total and round(1 / total):,}; target below "
        f"{sig3(TARGET)}), the sum over {len(figures)} tests (and {exempt} exempt), largest first:",
        "",
        "| test | how | chance per run | runs per CI run |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| `{f.test_id}` | {f.how} | {sig3(f.p)} | {f.per_ci} |" for f in rows]
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", action="store_true", help="print tests/README.md's block")
    parser.add_argument("--write-readme", action="store_true", help="rewrite that block")
    args = parser.parse_args(argv)
    figures, exempt = load()
    total = per_ci_run(figures)
    block = readme_block(figures, len(exempt))
    if args.readme:
        print(block)
    elif args.write_readme:
        text = README.read_text(encoding="utf-8")
        start, end = text.find(BEGIN), text.find(END)
        if start < 0 or end < 0:
            print(f"{README}: no {BEGIN} ... {END} block; add one where the sum belongs")
            return 1
        README.write_text(text[:start] + block + text[end + len(END) :], encoding="utf-8")
    else:
        width = max(len(f.test_id) for f in figures)
        for f in sorted(figures, key=lambda f: f.p * f.per_ci, reverse=True):
            print(f"{f.test_id:<{width}}  {f.how:<8}  {sig3(f.p):>8} x {f.per_ci}")
        print(f"{len(exempt)} exempt (no chance failure): " + ", ".join(e.test_id for e in exempt))
    ok = total < TARGET
    print(
        f"per CI run: {sig3(total)} (1 in {total and round(1 / total):,}); target below "
        f"{sig3(TARGET)}: {'met' if ok else 'NOT MET: redesign the largest tests above'}",
        file=sys.stderr,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
