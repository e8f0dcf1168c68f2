"""Generated mutants: operator swaps, comparison flips and constant changes, listed from the
source of ``duet_stats``, ``duet_bench/analysis`` and the runner's plan of pairs and crossover.

Each mutant replaces one expression node's source text (by byte offset) with the text of the
mutated node; annotations, docstrings, f-strings and the arguments of ``raise`` are left alone
(the first three are not evaluated, the last only changes a message). The sample that CI runs
is chosen by a seeded hash of what each mutant is (file, function, kind, text, occurrence), not
by its position, so that an edit elsewhere in a file leaves the sample of the rest unchanged.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.mutants.engine import ROOT, Mutant

STATS = ("tests/stats/test_ratio.py", "tests/stats/test_guards.py")
ANALYSIS = (
    "tests/duet/test_analysis.py",
    "tests/duet/test_analysis_crossover.py",
    "tests/duet/test_series.py",
)
#: Each mutated file and the tests that should kill its mutants (the fastest that cover it).
TARGETS: dict[str, tuple[str, ...]] = {
    "duet_stats/_resample.py": ("tests/stats/test_ratio.py",),
    "duet_stats/_validate.py": (
        "tests/stats/test_ratio.py",
        "tests/stats/test_winsor.py",
        "tests/stats/test_planning.py",
    ),
    "duet_stats/asymmetry.py": ("tests/stats/test_asymmetry.py",),
    "duet_stats/crossover.py": ("tests/stats/test_crossover.py",),
    "duet_stats/impact.py": ("tests/stats/test_impact.py",),
    "duet_stats/intervals.py": STATS,
    "duet_stats/planning.py": ("tests/stats/test_planning.py",),
    "duet_stats/ratio.py": STATS,
    "duet_stats/sequential.py": ("tests/stats/test_sequential.py",),
    "duet_stats/warmup.py": ("tests/stats/test_warmup.py",),
    "duet_stats/winsor.py": ("tests/stats/test_winsor.py",),
    **{
        f"duet_bench/analysis/{name}.py": ANALYSIS
        for name in (
            "benchmark",
            "choice",
            "estimate",
            "interference",
            "model",
            "runs_needed",
            "series",
            "sides",
            "verdict",
        )
    },
    "duet_bench/plan/runs.py": ("tests/duet/test_plan.py",),
}

#: The areas a score is reported for (docs: tests/README.md, "Mutants").
AREAS = {
    "duet_stats": "duet_stats/",
    "duet_bench/analysis": "duet_bench/analysis/",
    "runner pairing and crossover": "duet_bench/plan/",
}

SEED = "duet-mutants-1"
#: CI runs the mutants whose hash falls below this fraction (22 of the 942 today, whose
#: runs and controls take about 2 minutes of CPU).
SAMPLE_FRACTION = 0.015

_BINOPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
}
_CMPOPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


@dataclass(frozen=True, slots=True)
class _Site:
    function: str
    kind: str
    node: ast.expr
    new: ast.expr


def _mutations(node: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        yield "binop", ast.BinOp(node.left, _BINOPS[type(node.op)](), node.right)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS:
        yield "compare", ast.Compare(node.left, [_CMPOPS[type(node.ops[0])]()], node.comparators)
    elif isinstance(node, ast.BoolOp):
        other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "boolop", ast.BoolOp(other, node.values)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        yield "unary", node.operand
    elif isinstance(node, ast.Constant) and not isinstance(node.value, str | bytes):
        value = node.value
        if isinstance(value, bool):
            yield "constant", ast.Constant(not value)
        elif isinstance(value, int):
            yield "constant", ast.Constant(value + 1)
        elif isinstance(value, float):
            yield "constant", ast.Constant(value * 2.0 if value else 1.0)


def _skipped(tree: ast.Module) -> set[int]:
    """ids of the nodes not to mutate: annotations, docstrings, f-strings, raise arguments,
    ``__all__`` and the module's top-level names of types."""
    skip: set[int] = set()

    def under(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            under(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            # Return annotations; decorators (dataclass options: frozen, slots) are not behaviour.
            if not isinstance(node, ast.ClassDef):
                under(node.returns)
            for decorator in node.decorator_list:
                under(decorator)
        elif isinstance(node, ast.AnnAssign):
            under(node.annotation)
        elif isinstance(node, ast.JoinedStr | ast.Raise) or _names_all(node) or _types(node):
            under(node)
    return skip


def _names_all(node: ast.AST) -> bool:
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
    )


def _types(node: ast.AST) -> bool:
    """TypeVar, NewType and friends: types, not behaviour."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"TypeVar", "NewType", "TypeAlias"}
    )


def _sites(tree: ast.Module) -> Iterator[_Site]:
    skip = _skipped(tree)

    def visit(node: ast.AST, function: str) -> Iterator[_Site]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            function = f"{function}.{node.name}" if function else node.name
        if isinstance(node, ast.expr) and id(node) not in skip:
            for kind, new in _mutations(node):
                yield _Site(function, kind, node, new)
        for child in ast.iter_child_nodes(node):
            yield from visit(child, function)

    yield from visit(tree, "")


def _offsets(source: str) -> list[int]:
    """Byte offset of the start of every line (ast positions are UTF-8 byte columns)."""
    starts = [0]
    for line in source.encode("utf-8").splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def mutants_of(path: str, root: Path = ROOT) -> list[Mutant]:
    """Every generated mutant of the file ``path`` (relative to ``root``)."""
    source = (root / path).read_text(encoding="utf-8")
    data = source.encode("utf-8")
    tree = ast.parse(source)
    starts = _offsets(source)
    seen: dict[tuple[str, str, str, str], int] = {}
    out: list[Mutant] = []
    for site in _sites(tree):
        node = site.node
        assert node.end_lineno is not None
        assert node.end_col_offset is not None
        begin = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        old = data[begin:end].decode("utf-8")
        new = f"({ast.unparse(site.new)})"
        if ast.dump(ast.parse(f"({old})", mode="eval")) == ast.dump(ast.parse(new, mode="eval")):
            continue
        mutated = (data[:begin] + new.encode("utf-8") + data[end:]).decode("utf-8")
        try:
            compile(mutated, path, "exec")
        except SyntaxError:
            continue
        key = (site.function, site.kind, " ".join(old.split()), new)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        ident = hashlib.sha256(
            "\0".join((SEED, path, *key, str(occurrence))).encode("utf-8")
        ).hexdigest()
        line = node.lineno
        out.append(
            Mutant(
                name=f"{path}:{line}:{site.kind}:{ident[:10]}",
                path=path,
                old=old,
                new=new,
                tests=TARGETS[path],
                why=f"{site.function or '<module>'}: {_short(old)} -> {_short(new)}",
                at=begin,
            )
        )
    return out


def _short(text: str, limit: int = 70) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


def all_mutants(root: Path = ROOT) -> list[Mutant]:
    return [m for path in TARGETS for m in mutants_of(path, root)]


def in_sample(m: Mutant) -> bool:
    """Whether ``m`` is in CI's sample: its hash (its name's suffix) below the fraction."""
    ident = m.name.rsplit(":", 1)[1]
    return int(ident, 16) < SAMPLE_FRACTION * 16.0 ** len(ident)


def area_of(m: Mutant) -> str:
    for area, prefix in AREAS.items():
        if m.path.startswith(prefix):
            return area
    raise ValueError(f"{m.path} is in no area of {sorted(AREAS)}")
