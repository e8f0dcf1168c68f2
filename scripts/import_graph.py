#!/usr/bin/env python3
"""The import graph of duet_bench and duet_stats, read from the source (issue 23's measure).

Every ``import`` and ``from ... import`` of every module is read with the standard library's
``ast`` and sorted by where it sits:

- ``module``: at module level (also inside ``try``/``if`` at module level), run on import;
- ``function``: inside a function (or lambda), run when the function is called;
- ``typing``: under ``if TYPE_CHECKING:``, never run; kept out of the graph below.

An import names the module it loads: ``from duet_bench.report import rows`` is an edge to
``duet_bench.report.rows``, ``from duet_bench.report import Row`` one to ``duet_bench.report``.
The strongly connected components of the graph of module-level and function-level edges are its
import cycles (only components of two modules or more, or a module importing itself).

A function-level import of a module of the packages, or of a third-party package, is classified:

- ``startup``: it defers a heavy package (``--heavy``: numpy, scipy, matplotlib, arch, git by
  default), itself or among what the target imports at module level, that the importing module
  does not already load at module level: moved to the top, it would cost every importer the
  heavy package's import time;
- ``cycle``: the target reaches the importing module back through module-level imports (and the
  ``__init__`` of the packages each one runs first): moved to the top, it would make a
  module-level cycle;
- ``startup+cycle``: both; ``none``: neither (it could move to the top at no cost);
- ``optional``: inside a ``try`` that catches its ``ImportError`` (the package may be missing);
- ``stdlib``: a standard-library module (cheap; not counted as either).

The targets of issue 31 (``--check`` exits 1 while one is above 0):

- ``arrows up``: an import (of any kind, ``TYPE_CHECKING`` ones too) from a module to one of a
  higher layer of :data:`LAYERS` (``--layers``); a module of the packages in no layer is a
  broken target too (a new package takes its place in the list);
- ``loops with types``: the import cycles of every kind of import, ``TYPE_CHECKING`` ones too;
- ``cli importers``: modules that import ``duet_bench.cli`` (``__main__`` aside): the command
  line sits on top;
- ``settings as dicts``: a ``dict[str, Any]`` or ``Mapping[str, Any]`` annotation of a function,
  argument, field or variable whose name speaks of settings (:data:`SETTINGS_NAMES`);
- ``needless function-level imports``: the ``none`` class below.

Sizes are physical lines. A module is *named* by a doc (``--doc``) when the doc holds its path
(``duet_bench/report/rows.py``, with or without ``.py``; ``duet_bench/report/`` for a package)
or its dotted name, or, inside one paragraph or table row together with the heading above it,
its short name in backticks (``rows``, ``rows.py``, ``cgroup_v2/``) beside a name of its package
(recursively: ``cgroup_v2/`` counts for ``duet_bench.isolation.cgroup_v2`` beside
``duet_bench/isolation/``).

    python scripts/import_graph.py                 # this checkout, text
    python scripts/import_graph.py --json          # the same as one JSON document
    python scripts/import_graph.py --root DIR pkg  # another tree and its packages
    python scripts/import_graph.py --check         # exit 1 while a target is above 0

Exit 0: printed (and, with ``--check``, every target met); 1: ``--check`` and a target above 0;
2: wrong arguments (a package that is not a directory of the root).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("duet_bench", "duet_stats")
#: Directories of the packages that are not the packages' modules (mypy excludes them too).
EXCLUDED = ("duet_bench/examples",)
DOC = "docs/architecture.md"
HEAVY = ("numpy", "scipy", "matplotlib", "arch", "git")
KINDS = ("module", "function", "typing")
#: The layers of the packages, top first (docs/architecture.md, "The layers", shows the same
#: table; tests/duet/test_import_graph.py holds the two equal): a module belongs to the layer of
#: the longest prefix that names it (``duet_bench.report`` holds ``duet_bench.report.rows``;
#: ``=duet_bench`` names that module alone); it may import its own layer and those below. One
#: string per layer, its prefixes comma-separated (``--layers`` takes them joined by ``;``).
LAYERS = (
    "duet_bench.__main__,duet_bench.cli",
    "duet_bench.commands,duet_bench.options,duet_bench.demo",
    "duet_bench.report,duet_bench.ci",
    "duet_bench.bisect,duet_bench.compare,duet_bench.session,duet_bench.calibrate,duet_bench.merge",
    "duet_bench.runner,duet_bench.adapters,duet_bench.plan,duet_bench.versions,duet_bench.settings",
    "duet_bench.analysis,duet_bench.results,duet_bench.config,duet_bench.doctor,duet_bench.lock",
    "duet_bench.isolation,duet_bench.environment,duet_bench.topology,duet_bench.files,"
    "duet_bench.dirfd,duet_bench.progress,duet_bench.interrupts,duet_bench.extras,duet_bench.limits",
    "=duet_bench,duet_bench.machine,duet_bench.defaults,duet_bench.metrics,duet_bench.errors,"
    "duet_bench.units,duet_bench.untrusted,duet_bench.manual,duet_stats,duet_bench.harness",
)
#: The words that make an annotated name settings-carrying (``explicit_settings``, ``values``).
SETTINGS_NAMES = re.compile(r"settings|values|options|explicit")
ANY_DICT = re.compile(r"^(dict|Mapping|collections\.abc\.Mapping)\[str, ?Any\]$")
TARGETS = (
    "arrows_up",
    "unlayered",
    "loops_with_types",
    "cli_importers",
    "settings_as_dicts",
    "needless_function_imports",
)


@dataclass(frozen=True, slots=True)
class Import:
    """One imported name: which module imports what, where, and of which kind."""

    importer: str
    line: int
    kind: str  # one of KINDS
    target: str  # a module of the packages, else the top-level name imported
    internal: bool
    #: Inside a ``try`` that catches its ``ImportError``: the import may fail on purpose.
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Module:
    name: str
    path: str
    lines: int
    is_package: bool


@dataclass(slots=True)
class Graph:
    modules: dict[str, Module] = field(default_factory=dict)
    imports: list[Import] = field(default_factory=list)

    def edges(self, kinds: Iterable[str]) -> dict[str, set[str]]:
        """Internal edges of the given kinds, self-loops included."""
        wanted = set(kinds)
        out: dict[str, set[str]] = {name: set() for name in self.modules}
        for imp in self.imports:
            if imp.internal and imp.kind in wanted:
                out[imp.importer].add(imp.target)
        return out


def module_name(relative: Path) -> tuple[str, bool]:
    parts = list(relative.with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def find_modules(root: Path, packages: Sequence[str]) -> Iterator[tuple[Path, str, bool]]:
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if any(relative.is_relative_to(excluded) for excluded in EXCLUDED):
                continue
            name, is_package = module_name(relative)
            yield path, name, is_package


def is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def catches_import_error(node: ast.Try) -> bool:
    """Whether a ``try`` has a handler for ``ImportError`` or ``ModuleNotFoundError``."""
    names = {"ImportError", "ModuleNotFoundError"}
    for handler in node.handlers:
        caught = handler.type
        found = [caught] if not isinstance(caught, ast.Tuple) else caught.elts
        if any(isinstance(n, ast.Name) and n.id in names for n in found):
            return True
    return False


def raw_imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str, bool]]:
    """Every import statement with its kind and whether a ``try`` around it catches its
    ``ImportError`` (an optional import), walking the tree with the context it sits in."""
    stack: list[tuple[ast.AST, str, bool]] = [(tree, "module", False)]
    while stack:
        node, kind, guarded = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, kind, guarded
            continue
        if isinstance(node, ast.If) and is_type_checking(node.test):
            inner = "function" if kind == "function" else "typing"
            stack.extend((child, inner, guarded) for child in node.body)
            stack.extend((child, kind, guarded) for child in node.orelse)
            continue
        if isinstance(node, ast.Try) and catches_import_error(node):
            stack.extend((child, kind, True) for child in node.body)
            rest = [*node.handlers, *node.orelse, *node.finalbody]
            stack.extend((child, kind, guarded) for child in rest)
            continue
        inside = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        child_kind = "function" if inside and kind != "typing" else kind
        stack.extend((child, child_kind, guarded) for child in ast.iter_child_nodes(node))


def resolve_base(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parts = importer.split(".")
    package = parts if is_package else parts[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def targets(
    node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, known: set[str]
) -> Iterator[str]:
    """The modules a statement loads: the deepest module of the packages each name is."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield deepest(alias.name, known)
        return
    base = resolve_base(importer, is_package, node)
    for alias in node.names:
        child = f"{base}.{alias.name}"
        yield child if child in known else deepest(base, known)


def deepest(dotted: str, known: set[str]) -> str:
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return parts[0]


def build(root: Path, packages: Sequence[str]) -> Graph:
    graph = Graph()
    found = list(find_modules(root, packages))
    for path, name, is_package in found:
        text = path.read_text(encoding="utf-8")
        relative = path.relative_to(root).as_posix()
        graph.modules[name] = Module(name, relative, len(text.splitlines()), is_package)
    known = set(graph.modules)
    for path, name, is_package in found:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, kind, guarded in raw_imports(tree):
            seen: set[str] = set()
            for target in targets(node, name, is_package, known):
                if target in seen:
                    continue
                seen.add(target)
                internal = target in known
                graph.imports.append(Import(name, node.lineno, kind, target, internal, guarded))
    graph.imports.sort(key=lambda imp: (imp.importer, imp.line, imp.target))
    return graph


def strongly_connected(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the components that are cycles, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    components.append(sorted(component))
    return sorted(components, key=lambda c: (-len(c), c))


def with_packages(
    edges: Mapping[str, set[str]], modules: Mapping[str, Module]
) -> dict[str, set[str]]:
    """``edges`` and what each import also runs: the ``__init__`` of every package above the
    module it loads (``import a.b.c`` runs ``a`` and ``a.b`` first)."""
    out: dict[str, set[str]] = {}
    for importer, loaded in edges.items():
        out[importer] = set(loaded)
        for target in loaded:
            parts = target.split(".")
            out[importer] |= {".".join(parts[:end]) for end in range(1, len(parts))} & set(modules)
        out[importer].discard(importer)
    return out


def closure(start: str, edges: Mapping[str, set[str]]) -> set[str]:
    """Every module reachable from ``start`` (``start`` included)."""
    seen = {start}
    todo = [start]
    while todo:
        for child in edges.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def heavy_loaded(
    start: str, graph: Graph, edges: Mapping[str, set[str]], heavy: set[str]
) -> set[str]:
    """The heavy packages loading ``start`` loads through module-level imports."""
    reached = closure(start, edges)
    loaded = {start} & heavy
    for imp in graph.imports:
        if imp.kind == "module" and not imp.internal and imp.importer in reached:
            loaded |= {imp.target} & heavy
    return loaded


def classify(graph: Graph, heavy: set[str]) -> list[dict[str, object]]:
    """Every function-level import, with why it may be inside a function."""
    top = graph.edges(["module"])
    loads = with_packages(top, graph.modules)
    component = {
        name: i
        for i, members in enumerate(strongly_connected(graph.edges(["module", "function"])))
        for name in members
    }
    rows: list[dict[str, object]] = []
    for imp in graph.imports:
        if imp.kind != "function":
            continue
        if not imp.internal and imp.target in sys.stdlib_module_names:
            label, defers = "stdlib", set[str]()
        elif imp.optional:
            label, defers = "optional", set[str]()
        else:
            defers = heavy_loaded(imp.target, graph, top, heavy) - heavy_loaded(
                imp.importer, graph, top, heavy
            )
            cycle = imp.internal and imp.importer in closure(imp.target, loads)
            label = "+".join(
                name for name, on in (("startup", bool(defers)), ("cycle", cycle)) if on
            )
            label = label or "none"
        inside = imp.importer in component and component[imp.importer] == component.get(imp.target)
        rows.append({**asdict(imp), "class": label, "defers": sorted(defers), "in_cycle": inside})
    return rows


def layer_of(module: str, layers: Sequence[str]) -> int | None:
    """The index of the layer ``module`` belongs to (0 is the top), None for none."""
    best: tuple[int, int] | None = None
    for index, layer in enumerate(layers):
        for prefix in filter(None, layer.split(",")):
            exact = prefix.startswith("=")
            name = prefix.lstrip("=")
            matches = module == name or (not exact and module.startswith(name + "."))
            if matches and (best is None or len(name) > best[0]):
                best = (len(name), index)
    return None if best is None else best[1]


def arrows_up(graph: Graph, layers: Sequence[str]) -> list[dict[str, object]]:
    """Every import, of any kind, from a module to one of a higher layer."""
    rows: list[dict[str, object]] = []
    for imp in graph.imports:
        if not imp.internal:
            continue
        low, high = layer_of(imp.importer, layers), layer_of(imp.target, layers)
        if low is not None and high is not None and high < low:
            rows.append({**asdict(imp), "from_layer": low, "to_layer": high})
    return rows


def annotated_names(tree: ast.Module) -> Iterator[tuple[str, ast.expr, int]]:
    """Every annotated name of a module: functions (their return), arguments, fields, variables."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.returns is not None:
                yield node.name, node.returns, node.lineno
            arguments = node.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                if arg.annotation is not None:
                    yield arg.arg, arg.annotation, arg.lineno
        elif isinstance(node, ast.AnnAssign):
            target = node.target
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
            yield name, node.annotation, node.lineno


def settings_as_dicts(root: Path, graph: Graph) -> list[str]:
    """``module:line name``: each settings-carrying name annotated ``dict[str, Any]`` or
    ``Mapping[str, Any]``."""
    found: list[str] = []
    for module in sorted(graph.modules.values(), key=lambda m: m.name):
        tree = ast.parse((root / module.path).read_text(encoding="utf-8"), filename=module.path)
        for name, annotation, line in annotated_names(tree):
            text = ast.unparse(annotation).strip("'\"")
            if SETTINGS_NAMES.search(name.lower()) and ANY_DICT.match(text):
                found.append(f"{module.name}:{line} {name}")
    return sorted(found, key=lambda row: (row.split(":")[0], int(row.split(":")[1].split()[0])))


def targets_of(
    root: Path, graph: Graph, layers: Sequence[str], function_imports: list[dict[str, object]]
) -> dict[str, list[object]]:
    """Issue 31's targets, each as what breaks it (every list should be empty)."""
    cli = sorted(
        {
            imp.importer
            for imp in graph.imports
            if imp.target == "duet_bench.cli" and imp.importer != "duet_bench.__main__"
        }
    )
    return {
        "arrows_up": list(arrows_up(graph, layers)),
        "unlayered": [name for name in sorted(graph.modules) if layer_of(name, layers) is None],
        "loops_with_types": list(strongly_connected(graph.edges(KINDS))),
        "cli_importers": [*cli],
        "settings_as_dicts": list(settings_as_dicts(root, graph)),
        "needless_function_imports": [
            f"{row['importer']}:{row['line']} -> {row['target']}"
            for row in function_imports
            if row["class"] == "none"
        ],
    }


def blocks(doc: str) -> list[str]:
    """The doc's paragraphs and table rows, each with the heading above it."""
    out: list[str] = []
    heading = ""
    paragraph: list[str] = []
    for line in [*doc.splitlines(), ""]:
        if line.startswith("#"):
            heading = line
        if line.lstrip().startswith("|") or line.startswith("#") or not line.strip():
            if paragraph:
                out.append(heading + "\n" + " ".join(paragraph))
                paragraph = []
            if line.lstrip().startswith("|"):
                out.append(heading + "\n" + line)
            continue
        paragraph.append(line)
    return out


def named_in(block: str, module: str, modules: Mapping[str, Module], loose: bool = False) -> bool:
    """Whether ``block`` names ``module`` (see the module docstring); ``loose``: the short name
    may also stand as a plain word (``model, values, load`` beside ``duet_bench/config/``)."""
    path = module.replace(".", "/")
    dotted = re.escape(module) + r"(?![\w.])"
    if module in modules and modules[module].is_package:
        if re.search(re.escape(path) + r"/", block) or re.search(dotted, block):
            return True
    elif re.search(re.escape(path) + r"(\.py)?(?![\w/])", block) or re.search(dotted, block):
        return True
    if "." not in module:
        return False
    parts = module.split(".")
    for start in range(1, len(parts) - 1):  # a partial path: `calibrate/designs`
        suffix = re.escape("/".join(parts[start:]))
        if re.search(r"(?<![\w/])" + suffix + r"(\.py|/)?(?![\w/])", block):
            return True
    parent, short = module.rsplit(".", 1)
    quoted = r"`" + re.escape(short) + r"(\.py|/)?`"
    word = loose and "." in parent and re.search(rf"\b{short}\b", block) is not None
    if not word and not re.search(quoted, block):
        return False
    return named_in(block, parent, modules, loose)


def undocumented(graph: Graph, doc: str, loose: bool = False) -> list[str]:
    texts = blocks(doc)
    return [
        name
        for name in sorted(graph.modules)
        if not any(named_in(text, name, graph.modules, loose) for text in texts)
    ]


def report(
    graph: Graph,
    heavy: set[str],
    doc: str | None,
    root: Path = ROOT,
    layers: Sequence[str] = LAYERS,
) -> dict[str, object]:
    both = graph.edges(["module", "function"])
    function_imports = classify(graph, heavy)
    sizes = [module.lines for module in graph.modules.values()]
    counts: dict[str, int] = {}
    for row in function_imports:
        counts[str(row["class"])] = counts.get(str(row["class"]), 0) + 1
    sccs = strongly_connected(both)
    return {
        "modules": len(graph.modules),
        "lines": {
            "median": statistics.median(sizes) if sizes else 0,
            "min": min(sizes, default=0),
            "max": max(sizes, default=0),
            "total": sum(sizes),
            "under_60": sum(1 for size in sizes if size < 60),
        },
        "imports": {kind: sum(1 for i in graph.imports if i.kind == kind) for kind in KINDS},
        "internal_imports": {
            kind: sum(1 for i in graph.imports if i.kind == kind and i.internal) for kind in KINDS
        },
        "cycles": sccs,
        "cycles_module_level": strongly_connected(graph.edges(["module"])),
        "function_level": {
            "total": len(function_imports),
            "by_class": dict(sorted(counts.items())),
            "in_cycle": sum(1 for row in function_imports if row["in_cycle"]),
        },
        "function_imports": function_imports,
        "targets": targets_of(root, graph, layers, function_imports),
        "undocumented": None if doc is None else undocumented(graph, doc),
        "undocumented_loose": None if doc is None else undocumented(graph, doc, loose=True),
        "sizes": {m.name: m.lines for m in sorted(graph.modules.values(), key=lambda m: m.name)},
    }


def text(result: Mapping[str, object]) -> str:
    lines_ = result["lines"]
    assert isinstance(lines_, dict)
    out = [
        f"modules: {result['modules']}; lines: median {lines_['median']}, min {lines_['min']}, "
        f"max {lines_['max']}, total {lines_['total']}, under 60 lines: {lines_['under_60']}",
        f"imports (all, internal): {result['imports']}, {result['internal_imports']}",
    ]
    for title, key in (
        ("cycles (module+function level)", "cycles"),
        ("cycles (module level only)", "cycles_module_level"),
    ):
        cycles = result[key]
        assert isinstance(cycles, list)
        out.append(f"{title}: {len(cycles)} (sizes {[len(c) for c in cycles]})")
        out.extend(f"  [{len(c)}] " + " ".join(c) for c in cycles)
    level = result["function_level"]
    assert isinstance(level, dict)
    out.append(
        f"function-level imports: {level['total']}, by class {level['by_class']};"
        f" {level['in_cycle']} are edges inside a cycle above (@)"
    )
    rows = result["function_imports"]
    assert isinstance(rows, list)
    for row in rows:
        if row["class"] != "stdlib":
            defers = f" (defers {', '.join(row['defers'])})" if row["defers"] else ""
            at = "@" if row["in_cycle"] else " "
            where = f"{row['importer']}:{row['line']} -> {row['target']}"
            out.append(f"  {at} {row['class']:<13} {where}{defers}")
    out.extend(targets_text(result))
    missing = result["undocumented"]
    if missing is not None:
        assert isinstance(missing, list)
        loose = result["undocumented_loose"]
        assert isinstance(loose, list)
        out.append(
            f"modules the doc never names: {len(missing)} (path, dotted or `name` beside its"
            f" package); {len(loose)} not even as a plain word beside its package (*)"
        )
        out.extend(f"  {name}{' *' if name in loose else ''}" for name in missing)
    return "\n".join(out)


def targets_text(result: Mapping[str, object]) -> list[str]:
    """The targets section of the text: each count, then what breaks it."""
    found = result["targets"]
    assert isinstance(found, dict)
    out = [
        "targets (issue 31; each should be 0): "
        + ", ".join(f"{key.replace('_', ' ')} {len(found[key])}" for key in TARGETS)
    ]
    for key in TARGETS:
        for row in found[key]:
            if isinstance(row, dict):
                kind = "" if row["kind"] == "module" else f" ({row['kind']})"
                row = f"{row['importer']}:{row['line']} -> {row['target']}{kind}"
            elif isinstance(row, list):
                row = " ".join(row)
            out.append(f"  {key.replace('_', ' ')}: {row}")
    return out


def broken(result: Mapping[str, object]) -> list[str]:
    """The targets above 0."""
    found = result["targets"]
    assert isinstance(found, dict)
    return [key for key in TARGETS if found[key]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("packages", nargs="*", default=list(PACKAGES))
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--doc", default=DOC, help="relative to the root; '' for none")
    parser.add_argument("--heavy", default=",".join(HEAVY), help="comma-separated top-level names")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--layers",
        default=";".join(LAYERS),
        help="top first, ';' between layers, ',' between"
        " the prefixes of one ('=NAME': that module alone)",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 while a target is above 0")
    args = parser.parse_args(argv)
    missing = [p for p in args.packages if not (args.root / p).is_dir()]
    if missing:
        parser.error(f"not a package directory under {args.root}: {', '.join(missing)}")
    graph = build(args.root, args.packages)
    doc_path = args.root / args.doc if args.doc else None
    doc = doc_path.read_text(encoding="utf-8") if doc_path and doc_path.is_file() else None
    heavy = {name for name in args.heavy.split(",") if name}
    result = report(graph, heavy, doc, args.root, args.layers.split(";"))
    print(json.dumps(result, indent=1) if args.json else text(result))
    failed = broken(result)
    if args.check and failed:
        print(
            f"import_graph: targets above 0: {', '.join(failed)}: each line under 'targets' names"
            " an import or an annotation to change (or a module to give a layer in LAYERS)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
